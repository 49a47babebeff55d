"""Running suites: scores, intervals, pass@k, tokens, provenance, parallel modes, reverify."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest

from rlvr.agents import FixedPolicy
from rlvr.agents.kinds import AGENT_KINDS, agent_kind, register_agent
from rlvr.leaderboards import (
    ReverifyError,
    SuiteError,
    load_suite,
    parse_suite,
    reverify,
    run_suite,
)
from rlvr.leaderboards import results as results_module
from rlvr.leaderboards import runner as runner_module
from rlvr.leaderboards.provenance import traces_digest
from rlvr.leaderboards.results import bootstrap_means, per_task_scores, percentile_interval
from rlvr.leaderboards.suites import Bootstrap
from tests.leaderboards.leaderboard_support import (
    GUESS_ENV,
    SPLIT_ENV,
    TOY_SUITE,
    YES_ENV,
    CountingPolicy,
    fixed_yes_verifier,
    write_toy_suite,
)


@pytest.fixture
def toy(tmp_path: Path):
    return load_suite(write_toy_suite(tmp_path))


def test_oracle_scores_one_and_random_scores_less(toy) -> None:
    oracle = run_suite(toy, "oracle", parallel="serial")
    assert oracle.score == 1.0 and (oracle.ci_low, oracle.ci_high) == (1.0, 1.0)
    assert oracle.pass_at_k == {"1": 1.0, "2": 1.0}
    random = run_suite(toy, "random", parallel="serial")
    assert random.score < 0.5
    yes = random.env(YES_ENV)
    assert 0.0 < yes.score < 1.0  # random words sometimes include "yes"
    assert yes.ci_low < yes.score < yes.ci_high
    assert yes.pass_at_k["2"] >= yes.pass_at_k["1"]
    assert yes.episodes == 30 * 2 and yes.judged == 60 and yes.infra_errors == 0
    assert len(random.traces[YES_ENV]) == 60


def test_result_records_what_reproduces_it(toy) -> None:
    result = run_suite(toy, "oracle", name="the oracle", parallel="serial")
    record = result.to_record()
    assert record["name"] == "the oracle"
    assert record["suite_fingerprint"] == toy.fingerprint()
    assert record["suite"]["envs"][0]["seed"] == 11
    assert record["agent"]["spec"] == "oracle"
    assert record["agent"]["sampling"]["temperature"] == 1.0
    assert record["agent"]["policy"].endswith("OraclePolicy")
    code = record["code"]
    assert code["rlvr_gym"] and code["python"] and code["gymnasium"]
    assert code["git"] is None or len(code["git"]["commit"]) == 40
    yes = result.env(YES_ENV)
    assert yes.verifier == {
        "name": "tests.leaderboards.leaderboard_support.YesVerifier",
        "version": "1",
        "declared": True,
    }
    assert yes.entry_point == "rlvr.envs.verifiable:VerifiableEnv"
    add = result.env("lbtest/Add-v0")
    assert add.verifier["version"].startswith("rlvr-gym ")  # a lambda declares no version
    assert len(add.dataset_hash) == 64
    assert add.dataset_hash != yes.dataset_hash
    first = result.traces[YES_ENV][0]
    assert first.seed == 11 and first.task_hash is not None
    assert first.messages[-1] == {"role": "assistant", "content": "yes"}


def test_same_seed_same_tasks_and_intervals(toy) -> None:
    a = run_suite(toy, "random", parallel="serial")
    b = run_suite(toy, "random", parallel="serial")
    assert [e.dataset_hash for e in a.envs] == [e.dataset_hash for e in b.envs]
    assert (a.score, a.ci_low, a.ci_high) == (b.score, b.ci_low, b.ci_high)
    other = run_suite(parse_suite(TOY_SUITE.replace("seed = 11", "seed = 99")), "random")
    assert other.env(YES_ENV).dataset_hash != a.env(YES_ENV).dataset_hash


def test_parallel_modes_give_identical_results(toy, monkeypatch) -> None:
    monkeypatch.setattr(runner_module, "SHARD_EPISODES", 16)  # several shards per env
    serial = run_suite(toy, "random:3", parallel="serial")
    threads = run_suite(toy, "random:3", parallel="threads", workers=3)
    processes = run_suite(toy, "random:3", parallel="processes", workers=2)
    assert processes.run["parallel"] == "processes" and processes.run["workers"] == 2
    for other in (threads, processes):
        assert other.score == serial.score
        assert [e.score for e in other.envs] == [e.score for e in serial.envs]
        assert [e.dataset_hash for e in other.envs] == [e.dataset_hash for e in serial.envs]
        for label, records in serial.traces.items():
            assert [r.to_dict() for r in other.traces[label]] == [r.to_dict() for r in records]


def test_auto_parallelism_by_agent_kind(toy) -> None:
    assert runner_module._choose_mode("auto", agent_kind("random")) == "processes"
    assert runner_module._choose_mode("auto", agent_kind("openai:http://x")) == "threads"
    assert runner_module._choose_mode("auto", agent_kind("hf:runs/tiny")) == "serial"
    assert runner_module._choose_mode("auto", None) == "serial"
    with pytest.raises(ValueError, match="built once and shared"):
        run_suite(toy, CountingPolicy(), parallel="processes")
    with pytest.raises(ValueError, match="built once and shared"):  # refused before loading it
        run_suite(toy, "hf:/no/such/model", parallel="processes")
    with pytest.raises(ValueError, match="parallel must be one of"):
        run_suite(toy, "oracle", parallel="gpu")


def test_bench_runs_an_agent_kind_as_its_table_entry_says(toy) -> None:
    saved = dict(AGENT_KINDS)
    built: list[str] = []

    def build(argument: str) -> FixedPolicy:
        built.append(argument)
        return FixedPolicy("yes")

    try:
        for parallelism, shared in [("threads", False), ("serial", True), ("processes", False)]:
            built.clear()
            register_agent("yes", build, "says yes", parallelism=parallelism, shared=shared)
            result = run_suite(toy, "yes:loud", workers=2)
            assert result.run["parallel"] == parallelism and result.env(YES_ENV).score == 1.0
            shards = len(toy.envs)  # each env's 40 or 30 tasks fit in one shard
            expected = {"threads": 1 + shards, "serial": 1, "processes": 1}  # workers: their own
            assert built == ["loud"] * expected[parallelism]
    finally:
        AGENT_KINDS.clear()
        AGENT_KINDS.update(saved)


def test_token_counts_come_from_the_policy(toy) -> None:
    result = run_suite(toy, CountingPolicy(), name="counting")
    yes = result.env(YES_ENV)
    assert yes.score == 1.0
    assert yes.completion_tokens == 3 * 60 and yes.prompt_tokens == 10 * 60
    assert result.completion_tokens == 3 * (80 + 60)
    assert run_suite(toy, "oracle").completion_tokens is None  # scripted: unknown, not zero


def test_held_out_split_and_indexed_tasks() -> None:
    suite = parse_suite(
        f'name = "s"\nsplit = "test"\nepisodes = 12\nindex_tasks = true\n'
        f'[[envs]]\nid = "{SPLIT_ENV}"\n'
    )
    result = run_suite(suite, "oracle", parallel="serial")
    ids = [record.task_id for record in result.traces[SPLIT_ENV]]
    assert all("/test/" in task_id for task_id in ids)
    assert [task_id.rsplit("/", 1)[1] for task_id in ids] == [str(i) for i in range(12)]
    assert result.score == 1.0


def test_progress_bar_counts_every_episode(toy, capsys) -> None:
    run_suite(toy, "oracle", parallel="processes", workers=2, progress=True)
    err = capsys.readouterr().err
    assert "140/140" in err  # (40 + 30) tasks x 2 samples, reported from worker processes


def test_bootstrap_interval_is_seeded_and_covers_the_mean() -> None:
    scores = per_task_scores([])
    assert scores.size == 0
    values = __import__("numpy").array([0.0, 1.0] * 20)
    settings = Bootstrap(resamples=500, seed=1)
    a = bootstrap_means(values, settings, "env")
    assert (a == bootstrap_means(values, settings, "env")).all()
    assert not (a == bootstrap_means(values, replace(settings, seed=2), "env")).all()
    assert math.isclose(a.mean(), 0.5, abs_tol=0.03)


def test_reverify_rejudges_with_the_fixed_verifier(toy) -> None:
    # The random agent says "yes" among other words: the lax verifier accepts that.
    old = run_suite(toy, "random", parallel="serial")
    old.id = 1
    lax = old.env(YES_ENV)
    assert lax.score > 0 and lax.verifier["version"] == "1"
    with fixed_yes_verifier():
        new = reverify(old, parallel="processes", workers=2)
    fixed = new.env(YES_ENV)
    assert fixed.verifier["version"] == "2"
    assert fixed.score < lax.score  # "maybe yes no" no longer passes
    assert new.reverified_from == 1
    assert new.env("lbtest/Add-v0").score == old.env("lbtest/Add-v0").score
    assert fixed.dataset_hash == lax.dataset_hash  # same tasks, re-judged
    replies = [[m for m in r.messages if m["role"] == "assistant"] for r in old.traces[YES_ENV]]
    again = [[m for m in r.messages if m["role"] == "assistant"] for r in new.traces[YES_ENV]]
    assert again == replies  # the agent's replies are kept, only the verdicts change
    strict = [r.total_reward for r in new.traces[YES_ENV]]
    expected = [float(m[0]["content"].split() == ["yes"]) for m in replies]
    assert strict == expected


def test_reverify_refuses_when_the_tasks_changed(toy) -> None:
    old = run_suite(toy, "oracle", parallel="serial")
    for tampered in old.traces[YES_ENV][:2]:  # both samples of task 0, as a changed env would
        tampered.task_id = "some other task"
    with pytest.raises(ReverifyError, match="differ from those the result was scored on"):
        reverify(old, parallel="serial")
    restamp(old)  # as if the env, not the trace, had changed since the run
    with pytest.raises(ReverifyError, match="now poses task"):
        reverify(old, parallel="serial")


def restamp(result) -> None:
    """Record the current traces as those the result was scored on (tests edit them in place)."""
    for env in result.envs:
        env.traces_digest = traces_digest(result.traces[env.label])


def test_multi_turn_env_runs_and_replays() -> None:
    suite = parse_suite(f'name = "g"\nsplit = false\nepisodes = 20\n[[envs]]\nid = "{GUESS_ENV}"\n')
    result = run_suite(suite, "oracle", parallel="processes", workers=2)
    assert result.score == 1.0
    records = result.traces[GUESS_ENV]
    assert max(record.turns for record in records) > 1  # binary search needs several guesses
    again = reverify(result, parallel="serial")
    assert [r.to_dict() for r in again.traces[GUESS_ENV]] == [r.to_dict() for r in records]
    # Keep only each episode's first guess: those episodes now end unsolved and truncated.
    for record in records:
        first = next(i for i, m in enumerate(record.messages) if m["role"] == "assistant")
        record.messages = record.messages[: first + 1]
    restamp(result)
    cut = reverify(result, parallel="serial")
    for record in cut.traces[GUESS_ENV]:
        solved_at_once = record.verdict["status"] == "correct"
        assert record.truncated is not solved_at_once
        assert record.total_reward == float(solved_at_once)
    assert cut.score < 1.0


@pytest.mark.parametrize("name", ["math", "sql", "code", "web", "repo"])
def test_builtin_suite_with_real_envs(name: str) -> None:
    """Each built-in suite, shrunk to 3 tasks per env: the oracle scores 1.0 and a re-judge
    reproduces every episode. Suites naming envs not on this branch yet must say which."""
    import gymnasium as gym

    suite = load_suite(name).with_episodes(3)
    missing = [env.id for env in suite.envs if env.id not in gym.registry]
    if missing:
        with pytest.raises(SuiteError, match=f"{missing[0]} is not registered"):
            run_suite(suite, "oracle")
        return
    result = run_suite(suite, "oracle", parallel="serial")
    assert result.score == 1.0, [(e.label, e.score) for e in result.envs]
    assert all(env.infra_errors == 0 and len(env.dataset_hash) == 64 for env in result.envs)
    again = reverify(result, parallel="serial")
    for label, records in result.traces.items():
        assert [r.to_dict() for r in again.traces[label]] == [r.to_dict() for r in records]


def test_bootstrap_interval_covers_the_true_mean_at_its_confidence() -> None:
    """Coverage on synthetic data: 95% intervals of Bernoulli(0.3) tasks hold 0.3 ~95% of runs."""
    import numpy as np

    rng = np.random.default_rng(7)
    trials, hits = 300, 0
    for trial in range(trials):
        values = (rng.random(60) < 0.3).astype(float)
        low, high = percentile_interval(
            bootstrap_means(values, Bootstrap(resamples=400, seed=trial), "env"), 0.95
        )
        hits += low <= 0.3 <= high
    assert 0.91 <= hits / trials <= 0.99


def test_bootstrap_memory_is_bounded_in_chunks(monkeypatch) -> None:
    import numpy as np

    values = np.arange(10, dtype=float)
    monkeypatch.setattr(results_module, "BOOTSTRAP_CHUNK", 25)  # 2 replicates per draw
    settings = Bootstrap(resamples=101, seed=4)
    chunked = bootstrap_means(values, settings, "env")
    assert chunked.shape == (101,) and (chunked == bootstrap_means(values, settings, "env")).all()
    assert math.isclose(chunked.mean(), 4.5, abs_tol=0.3)


def test_pass_at_k_is_the_exact_expectation_and_skips_tasks_with_fewer_than_k() -> None:
    import itertools

    import numpy as np

    from rlvr.rollout.records import EpisodeRecord
    from rlvr.rollout.reports import EvalReport

    def record(episode: int, sample: int, reward: float, infra: bool = False) -> EpisodeRecord:
        return EpisodeRecord(episode, sample, 0, "t", [], [reward], None, infra, False)

    outcomes = [1, 0, 0, 1, 0]  # task 0: 2 of 5 samples correct
    report = EvalReport("x", [record(0, s, float(o)) for s, o in enumerate(outcomes)])
    for k in range(1, 6):
        exact = np.mean([any(c) for c in itertools.combinations(outcomes, k)])
        assert math.isclose(report.pass_at_k(k), exact)
    # Task 1 has one judged sample of two (an infra error): it cannot inform pass@2.
    report.episodes += [record(1, 0, 1.0), record(1, 1, 0.0, infra=True)]
    assert math.isclose(report.pass_at_k(2), 1 - (3 * 2) / (5 * 4))
    assert math.isclose(report.pass_at_k(1), (0.4 + 1.0) / 2)


def test_reverify_refuses_when_verifiers_now_fail_and_keeps_old_failures(toy, monkeypatch) -> None:
    from tests.leaderboards.leaderboard_support import YesVerifier

    good = YesVerifier.verify

    def sandbox_down(self, response, task):
        raise RuntimeError("sandbox down")

    old = run_suite(toy, "fixed:yes", parallel="serial")
    old.id = 1
    monkeypatch.setattr(YesVerifier, "verify", sandbox_down)
    with pytest.raises(ReverifyError, match="infrastructure errors.*left as it was"):
        reverify(old, parallel="serial")  # would have replaced a 1.0 with an unjudged result
    # Episodes that already failed in the original run may fail again: they stay excluded.
    broken = run_suite(toy, "fixed:yes", parallel="serial")
    assert broken.env(YES_ENV).infra_errors == 60 and math.isnan(broken.env(YES_ENV).score)
    assert reverify(broken, parallel="serial").env(YES_ENV).infra_errors == 60
    monkeypatch.setattr(YesVerifier, "verify", good)
    assert reverify(broken, parallel="serial").env(YES_ENV).score == 1.0


def test_reverify_refuses_incomplete_traces(toy) -> None:
    old = run_suite(toy, "oracle", parallel="serial")
    old.traces[YES_ENV] = old.traces[YES_ENV][:-1]
    with pytest.raises(ReverifyError, match="59 stored episodes, not the 60"):
        reverify(old, parallel="serial")
    del old.traces[YES_ENV]
    with pytest.raises(ReverifyError, match="0 stored episodes"):
        reverify(old, parallel="serial")


def test_reverify_refuses_a_trace_edited_in_the_store(toy, tmp_path: Path) -> None:
    import sqlite3

    from rlvr.leaderboards import ResultStore

    path = tmp_path / "r.sqlite"
    with ResultStore(path) as store:
        result_id = store.add(run_suite(toy, "fixed:no", parallel="serial"))
        assert reverify(store.get(result_id), parallel="serial").score == 0.0  # untouched: fine
    with sqlite3.connect(path) as db:  # someone "fixes" a reply by hand
        db.execute(
            "UPDATE traces SET record = json_set(record, '$.messages[1].content', 'yes') "
            "WHERE result_id = ? AND env_label = ? AND episode = 0 AND sample = 0",
            (result_id, YES_ENV),
        )
    with ResultStore(path) as store, pytest.raises(ReverifyError, match="edited or damaged"):
        reverify(store.get(result_id), parallel="serial")
