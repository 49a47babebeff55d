"""Evaluation runner and scripted baselines (no torch needed)."""

from __future__ import annotations

import gymnasium as gym
import pytest

from rlvr.agents import Completion, FixedPolicy, OraclePolicy, RandomPolicy, SamplingParams
from rlvr.agents.kinds import make_policy
from rlvr.envs import register_task_env
from rlvr.rollout.episodes import evaluate, play_episodes
from rlvr.rollout.records import Start
from rlvr.rollout.reports import _pass_at_k
from rlvr.rollout.tasks import distinct_tasks
from tests.envs.toy_envs import CAPITALS, GuessNumberEnv, exact_match


@pytest.fixture(scope="module")
def env_ids() -> dict[str, str]:
    register_task_env("rlvrtest/EvalCapitals-v0", CAPITALS, exact_match, override=True)
    if "rlvrtest/EvalGuess-v0" not in gym.registry:
        gym.register("rlvrtest/EvalGuess-v0", entry_point=GuessNumberEnv, max_episode_steps=6)
    return {"single": "rlvrtest/EvalCapitals-v0", "multi": "rlvrtest/EvalGuess-v0"}


def test_oracle_solves_everything(env_ids):
    for env_id in env_ids.values():
        report = evaluate(env_id, OraclePolicy(), episodes=12, batch_size=5)
        assert report.success_rate == 1.0 and report.mean_reward == 1.0
        assert len(report.episodes) == 12 and report.infra_errors == 0


def test_fixed_reply_scores_what_it_deserves(env_ids):
    report = evaluate(env_ids["single"], FixedPolicy("Paris"), episodes=40, seed=0)
    france = [r for r in report.episodes if "France" in r.messages[0]["content"]]
    assert france and all(r.total_reward == 1.0 for r in france)
    assert report.success_rate == pytest.approx(len(france) / 40)


def test_multi_turn_traces_hold_every_turn(env_ids):
    report = evaluate(env_ids["multi"], FixedPolicy("1"), episodes=6)
    for record in report.episodes:
        solved = record.task_id == "guess-1"
        assert record.turns == (1 if solved else 6)
        assert record.truncated is not solved
        assert sum(m["role"] == "assistant" for m in record.messages) == record.turns


def test_same_seed_same_tasks_and_samples_share_a_task(env_ids):
    first = evaluate(env_ids["single"], RandomPolicy(seed=1), episodes=8, seed=3)
    second = evaluate(env_ids["single"], FixedPolicy("x"), episodes=8, seed=3)
    assert [r.task_id for r in first.episodes] == [r.task_id for r in second.episodes]
    grouped = evaluate(env_ids["single"], FixedPolicy("x"), episodes=3, samples_per_task=4)
    for episode in range(3):
        ids = {r.task_id for r in grouped.episodes if r.episode == episode}
        assert len(ids) == 1


def test_distinct_tasks_ask_each_task_of_a_small_split_once(env_ids):
    seeded = evaluate(env_ids["single"], FixedPolicy("x"), episodes=20, seed=7)
    assert len({r.messages[0]["content"] for r in seeded.episodes}) == 5  # asked 4 times each
    seeds = distinct_tasks(env_ids["single"], 20, seed=7)
    assert len(seeds) == 5 and seeds[0] == 7 and seeds == sorted(set(seeds))
    report = evaluate(env_ids["single"], FixedPolicy("x"), episodes=5, seeds=seeds)
    assert [r.seed for r in report.episodes] == seeds
    asked = [r.messages[0]["content"] for r in report.episodes]
    assert sorted(asked) == sorted(task["prompt"] for task in CAPITALS)
    assert distinct_tasks(env_ids["single"], 3, seed=7) == seeds[:3]
    # pinned: the first distinct task indexes of the source
    assert distinct_tasks(env_ids["single"], 20, pin=True) == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="one seed per episode"):
        evaluate(env_ids["single"], FixedPolicy("x"), episodes=4, seeds=seeds)


def test_pass_at_k():
    assert _pass_at_k(n=5, c=0, k=1) == 0.0
    assert _pass_at_k(n=5, c=5, k=3) == 1.0
    assert _pass_at_k(n=4, c=1, k=1) == pytest.approx(0.25)
    assert _pass_at_k(n=4, c=1, k=2) == pytest.approx(0.5)  # 1 - C(3,2)/C(4,2)


def test_infra_errors_are_excluded_from_scores():
    def flaky(reply, task):
        if "Peru" in task.prompt:
            raise TimeoutError("db down")
        return exact_match(reply, task)

    register_task_env("rlvrtest/Flaky-v0", CAPITALS, flaky, override=True)
    report = evaluate("rlvrtest/Flaky-v0", OraclePolicy(), episodes=30)
    assert report.infra_errors > 0
    assert report.mean_reward == 1.0  # the errored episodes are dropped, not counted as 0
    assert len(report.judged) == 30 - report.infra_errors


def test_agent_specs():
    assert isinstance(make_policy("oracle"), OraclePolicy)
    assert make_policy("fixed:hello world").generate([[]], n=2)[0][1].text == "hello world"
    assert isinstance(make_policy("random:7"), RandomPolicy)
    with pytest.raises(ValueError, match="unknown agent 'gpt'"):
        make_policy("gpt")


def test_oracle_must_be_attached_in_order():
    with pytest.raises(RuntimeError, match="attach"):
        OraclePolicy().generate([[{"role": "user", "content": "hi"}]])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"temperature": -1}, "temperature"),
        ({"top_p": 0}, "top_p"),
        ({"max_new_tokens": 0}, "max_new_tokens"),
        ({"stop": "</answer>"}, "tuple of non-empty strings"),
        ({"stop": ("</answer>", "")}, "tuple of non-empty strings"),
    ],
)
def test_sampling_params_validation(kwargs, message):
    with pytest.raises(ValueError, match=message):
        SamplingParams(**kwargs)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["rlvr/Nope-v0"], "doesn't exist"),
        (["rlvrtest/EvalCapitals-v0", "--kwargs", '{"nope": 1}'], "unknown argument(s) nope=1"),
        (["rlvrtest/EvalCapitals-v0", "--agent", "gpt"], "unknown agent 'gpt'"),
    ],
)
def test_rlvr_eval_reports_bad_input_in_one_line(env_ids, capsys, arguments, message):
    from rlvr.cli import main

    assert main(["eval", *arguments, "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err


def test_the_loop_shows_the_actor_each_running_record_and_stops_an_episode_it_gives_up(env_ids):
    """`play_episodes`' actor contract: it sees each running episode's record, one reply each;
    None stops that episode (truncated) while the others go on."""
    envs = [gym.make(env_ids["multi"]) for _ in range(3)]
    seen: list[tuple[int, int, int]] = []

    def act(active, records):
        seen.extend((i, record.episode, record.turns) for i, record in zip(active, records))
        return [None if i == 1 else Completion("0") for i in active]  # 0 is never the secret

    records = play_episodes(envs, [Start(7, 0, 1), Start(8, 0, 2), Start(9, 1, 2)], act)
    assert [(r.episode, r.sample, r.seed) for r in records] == [(7, 0, 1), (8, 0, 2), (9, 1, 2)]
    assert [r.turns for r in records] == [6, 0, 6] and all(r.truncated for r in records)
    assert records[1].messages[-1]["role"] == "user"  # stopped before a reply: the task alone
    assert seen[:3] == [(0, 7, 0), (1, 8, 0), (2, 9, 0)] and seen[3:5] == [(0, 7, 1), (2, 9, 1)]
    with pytest.raises(RuntimeError, match="gave 1 replies for 3 running episodes"):
        play_episodes(envs, [Start(0, 0, 0)] * 3, lambda active, records: [Completion("1")])
