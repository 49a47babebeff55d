"""Regression tests for the holes an adversarial review found in the leaderboards (one section per
hole): side files whose figures their traces do not support, values that crash or hang the
board, stored rows edited by hand, Elo ratings on the edge of their own intervals, and a page
that repeated numbers and miscounted its sections."""

from __future__ import annotations

import copy
import html
import json
import math
import re
import sqlite3
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from rlvr.cli import main
from rlvr.envs import register_task_env
from rlvr.leaderboards import ResultStore, load_suite, parse_suite, run_suite
from rlvr.leaderboards.arena import (
    ArenaResult,
    ArenaSuite,
    PairGames,
    fit_elo,
    load_arena,
    rate,
)
from rlvr.leaderboards.errors import InvalidResultError, SuiteError
from rlvr.leaderboards.results import BenchResult, rescored
from rlvr.leaderboards.unsaved import save_unsaved
from rlvr.leaderboards.views import arena_table, terminal_table
from rlvr.leaderboards.webpage import Board, index_page
from rlvr.rollout.records import EpisodeRecord
from tests.leaderboards.leaderboard_support import ADD_ENV, YES_ENV, write_toy_suite

HALF_ENV = "lbtest/Half-v0"
"""Every reply earns 0.5: partial credit, so pass@1 (a full solve) is not the score."""


@pytest.fixture(scope="module")
def random_run(tmp_path_factory) -> BenchResult:
    """A random agent's run of the toy suite (Add-v0: 40 tasks x 2 samples; Yes-v0: 30 x 2)."""
    suite = load_suite(write_toy_suite(tmp_path_factory.mktemp("suite")))
    return run_suite(suite, "random", parallel="serial")


@pytest.fixture
def side_file(tmp_path: Path, random_run: BenchResult) -> dict[str, Any]:
    """What `rlvr bench` saves beside a busy store, as JSON data to edit."""
    return json.loads(save_unsaved(random_run, tmp_path / "board.sqlite").read_text())


def import_file(tmp_path: Path, capsys, content: dict[str, Any] | str) -> tuple[int, str, Path]:
    """`rlvr leaderboard import` of `content` written to a file: exit status, stderr, store."""
    path = tmp_path / "side.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    db = tmp_path / "board.sqlite"
    capsys.readouterr()
    code = main(["leaderboard", "import", str(path), "--db", str(db)])
    return code, capsys.readouterr().err, db


def assert_refused(tmp_path: Path, capsys, content: dict[str, Any] | str, *messages: str) -> None:
    """Refused at once, in one line naming the file and every one of `messages`; no store."""
    started = time.monotonic()
    code, err, db = import_file(tmp_path, capsys, content)
    assert time.monotonic() - started < 30  # counts of 10**12 are checked, never iterated
    assert code == 1, err
    assert err.startswith(f"error: {tmp_path / 'side.json'}: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for message in messages:
        assert message in err, err
    assert not db.exists()  # nothing imported, not even a store created


def edited(payload: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of `payload` with the value at `path` (keys and list indexes joined by '/'; a '~'
    in a key stands for a '/' of an env label) replaced by `value` (or deleted, for `DELETE`)."""
    changed = copy.deepcopy(payload)
    *parents, last = (key.replace("~", "/") for key in path.split("/"))
    target: Any = changed
    for key in parents:
        target = target[int(key)] if isinstance(target, list) else target[key]
    index: Any = int(last) if isinstance(target, list) else last
    if value is DELETE:
        del target[index]
    else:
        target[index] = value
    return changed


DELETE = object()


def rewritten(
    tmp_path: Path,
    run: BenchResult,
    edit: Callable[[BenchResult], None],
    name: str = "forged",
) -> Path:
    """A side file as someone would write it who edited the result and its traces and then
    recomputed every figure and digest with rlvr's own code: consistent throughout."""
    forged = copy.deepcopy(run)
    edit(forged)
    return save_unsaved(rescored(forged), tmp_path / name)


def perfect(result: BenchResult) -> None:
    for records in result.traces.values():
        for record in records:
            record.rewards = [1.0] * len(record.rewards)


# --- import recomputes every figure from the traces --------------------------------------------


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        ("result/score", 1.0, "score is 1.0"),
        ("result/ci_high", 0.99, "ci_high is 0.99"),
        ("result/pass_at_k/2", 1.0, "pass_at_k.2 is 1.0"),
        ("result/envs/0/score", 1.0, "envs[0].score is 1.0"),
        ("result/envs/0/ci_low", -0.5, "envs[0].ci_low is -0.5"),
        ("result/envs/1/success_rate", 1.0, "envs[1].success_rate is 1.0"),
        ("result/envs/1/pass_at_k/1", 0.5, "envs[1].pass_at_k.1 is 0.5"),
        ("result/envs/0/dataset_hash", "0" * 64, "envs[0].dataset_hash"),
        ("result/suite_fingerprint", "0" * 64, "suite_fingerprint"),
        ("result/extra", "junk", "extra is 'junk'"),
    ],
)
def test_an_edited_figure_is_refused_naming_the_field(
    tmp_path: Path, capsys, side_file, path, value, field
) -> None:
    assert_refused(tmp_path, capsys, edited(side_file, path, value), field)


def test_traces_rewritten_to_full_marks_with_the_digest_emptied_are_refused(
    tmp_path: Path, capsys, side_file
) -> None:
    forged = copy.deepcopy(side_file)
    for records in forged["traces"].values():
        for record in records:
            record["rewards"] = [1.0]
    for env in forged["result"]["envs"]:
        env["traces_digest"] = ""  # on main, an empty digest skipped the traces check
    assert_refused(tmp_path, capsys, forged, "envs[0].traces_digest is missing")
    del forged["result"]["envs"][0]["traces_digest"]
    assert_refused(tmp_path, capsys, forged, "envs[0].traces_digest is missing")


def test_traces_rewritten_with_their_digest_but_not_their_figures_are_refused(
    tmp_path: Path, capsys, random_run
) -> None:
    forged = json.loads(rewritten(tmp_path, random_run, perfect).read_text())
    forged["result"] = json.loads(save_unsaved(random_run, tmp_path / "x").read_text())["result"]
    for env, again in zip(forged["result"]["envs"], rescored_envs(forged)):
        env["traces_digest"] = again["traces_digest"]  # the digest alone matches the traces
    assert_refused(
        tmp_path, capsys, forged, "figures that its traces do not give: ci_high is 0.", "traces 1.0"
    )


def rescored_envs(payload: dict[str, Any]) -> list[dict[str, Any]]:
    result = BenchResult.from_record(payload["result"])
    result.traces = {
        label: [EpisodeRecord(**{k: v for k, v in r.items() if k != "total_reward"}) for r in rs]
        for label, rs in payload["traces"].items()
    }
    return rescored(result).to_record()["envs"]


def test_infrastructure_errors_cannot_carry_a_score(tmp_path: Path, capsys, side_file) -> None:
    env = side_file["result"]["envs"][0]
    changed = edited(side_file, "result/envs/0", {**env, "infra_errors": 4, "judged": 0})
    assert_refused(tmp_path, capsys, changed, "judged (0) + infra_errors (4) must make the 80")
    everything = {**env, "infra_errors": 80, "judged": 0, "score": 1.0}
    changed = edited(side_file, "result/envs/0", everything)
    assert_refused(tmp_path, capsys, changed, "envs[0].score must be NaN exactly when no episode")


def test_a_consistent_file_whose_env_only_failed_imports_and_shows_no_score(
    tmp_path: Path, capsys, random_run
) -> None:
    def down(result: BenchResult) -> None:
        for record in result.traces[ADD_ENV]:
            record.infra_error = True

    path = rewritten(tmp_path, random_run, down)
    db = tmp_path / "board.sqlite"
    assert main(["leaderboard", "import", str(path), "--db", str(db)]) == 0
    capsys.readouterr()
    assert main(["leaderboard", "show", "--db", str(db)]) == 0
    row = capsys.readouterr().out.splitlines()[3].split()
    assert row[:4] == ["1", "1", "random", "-"] and row[-1] == "80"  # no score; 80 infra errors


def test_import_proves_consistency_and_reverify_proves_the_rewards(
    tmp_path: Path, capsys, random_run
) -> None:
    """The documented limit: a file rewritten with full marks and every figure recomputed is
    consistent, and imports; re-judging its replies gives the random agent's scores back."""
    path = rewritten(tmp_path, random_run, perfect)
    db = tmp_path / "board.sqlite"
    assert main(["leaderboard", "import", str(path), "--db", str(db)]) == 0
    with ResultStore(db) as store:
        assert store.get(1).score == 1.0
    assert main(["bench", "reverify", "1", "--db", str(db), "--no-progress"]) == 0
    with ResultStore(db) as store:
        (current,) = store.results()
    assert current.reverified_from == 1
    assert [env.score for env in current.envs] == [env.score for env in random_run.envs]


# --- every field of a side file: type, range and bound -------------------------------------------

HUGE = 10**12
BAD_FIELDS = [
    ("result/score", "high", "score must be a number, got str"),
    ("result/score", math.inf, "score must be a finite number"),
    ("result/score", -math.inf, "score must be a finite number"),
    ("result/score", True, "score must be a number, got bool"),
    ("result/score", None, "score must be a number, got NoneType"),
    ("result/score", [1.0], "score must be a number, got list"),
    ("result/score", 10**400, "score must be a finite number"),
    ("result/envs/0/score", math.nan, "envs[0].score must be NaN exactly when"),
    ("result/ci_low", 0.9, "ci_low (0.9) is above ci_high"),
    ("result/pass_at_k", {"1": 2.0, "2": 0.5}, "pass_at_k.1 must be a number in [0, 1]"),
    ("result/pass_at_k", {"1": 0.5}, "pass_at_k lacks ['2']"),
    ("result/name", 5, "name must be a string"),
    ("result/agent", [], "agent must be an object"),
    ("result/agent/spec", 7, "agent.spec must be a string"),
    ("result/code/git", [], "code.git must be an object"),
    ("result/run/seconds", "fast", "run.seconds must be a number"),
    ("result/run/seconds", -1, "run.seconds must be a number in [0,"),
    ("result/reverified_from", "1", "reverified_from must be an int"),
    ("result/reverified_from", True, "reverified_from must be an int, got bool"),
    ("result/envs", [], "envs has 0 entries for the suite's 2 envs"),
    ("result/envs/0/label", YES_ENV, "envs[0].label is 'lbtest/Yes-v0', the suite's env there is"),
    ("result/envs/0/env_id", "lbtest/Add-v1", "envs[0].env_id is 'lbtest/Add-v1'"),
    ("result/envs/0/episodes", HUGE, "envs[0].episodes must be between 0 and"),
    ("result/envs/0/episodes", 79, "envs[0].episodes is 79, the suite runs 40 tasks x 2"),
    ("result/envs/0/episodes", True, "envs[0].episodes must be an int, got bool"),
    ("result/envs/0/judged", "80", "envs[0].judged must be an int, got str"),
    ("result/envs/0/verifier", "x", "envs[0].verifier must be an object"),
    ("result/envs/0/verifier/version", 2, "envs[0].verifier.version must be a string"),
    ("result/envs/0/completion_tokens", -1, "envs[0].completion_tokens must be between 0 and"),
    ("result/envs/0/completion_tokens", 10**30, "envs[0].completion_tokens must be between"),
    ("result/envs/0/seconds", math.nan, "envs[0].seconds must be a number, got NaN"),
    ("result/suite/envs/0/episodes", HUGE, "envs[0].episodes must be in [1, 10000000]"),
    ("result/suite/envs/0/episodes", 39, "envs[0].episodes is 80, the suite runs 39 tasks x 2"),
    ("result/suite/samples", 10**9, "samples must be in [1, 10000], got 1000000000"),
    ("result/suite/samples", 0, "samples must be in [1, 10000], got 0"),
    ("result/suite/bootstrap/resamples", HUGE, "bootstrap.resamples must be in [10, 100000]"),
    ("result/suite/sampling/temperature", math.nan, "sampling.temperature must be a finite"),
    ("result/suite/envs/0/id", "lbtest/Add", "has no version"),
    ("result/suite/envs/0/seed", -1, "seed must be >= 0"),
    ("result/suite/envs/0/seed", 2**70, "envs[0].seed must be in [-9223372036854775808,"),
    ("result/suite/envs/0/seed", 2**63 - 1, "seed + episodes must stay <="),
    ("result/suite/envs/0/seed", 12, "episode 0 sample 0 has seed 11; the suite seeds it 12"),
    ("result/suite/envs/0/index_tasks", 1, "envs[0].index_tasks: expected true or false, got 1"),
    ("result/suite/envs/0/kwargs", [], "envs[0].kwargs: expected a table"),
    ("result/suite/name", "", "name must not be empty"),
    ("result/suite/pass_at_k", [5], "pass_at_k [5] must be ints between 1 and samples=2"),
    ("result/suite/surprise", 1, "unknown key 'surprise' in the top level"),
    ("traces/lbtest~Add-v0/0/rewards", ["1"], "rewards[0] must be a number, got str"),
    ("traces/lbtest~Add-v0/0/rewards", [True], "rewards[0] must be a number, got bool"),
    ("traces/lbtest~Add-v0/0/rewards", [math.nan], "rewards[0] must be a number, got NaN"),
    ("traces/lbtest~Add-v0/0/rewards", [math.inf], "rewards[0] must be a finite number"),
    ("traces/lbtest~Add-v0/0/rewards", [1e300], "rewards[0] must be a number in"),
    ("traces/lbtest~Add-v0/0/rewards", "1", "rewards must be an array"),
    ("traces/lbtest~Add-v0/0/messages", "hi", "messages must be an array"),
    ("traces/lbtest~Add-v0/0/messages/0", {"role": 1, "content": ""}, "role must be a string"),
    ("traces/lbtest~Add-v0/0/messages/0/content", {"x": 1}, "content must be a string"),
    ("traces/lbtest~Add-v0/0/episode", -1, "episode must be between 0 and"),
    ("traces/lbtest~Add-v0/0/episode", HUGE, "episode must be between 0 and"),
    ("traces/lbtest~Add-v0/0/episode", 40, "episode 40 sample 0 is not one of the suite's"),
    ("traces/lbtest~Add-v0/0/sample", 2, "episode 0 sample 2 is not one of the suite's"),
    ("traces/lbtest~Add-v0/0/seed", 0, "episode 0 sample 0 has seed 0; the suite seeds it 11"),
    ("traces/lbtest~Add-v0/0/verdict", "correct", "verdict must be an object"),
    ("traces/lbtest~Add-v0/0/infra_error", 1, "infra_error must be true or false, got int"),
    ("traces/lbtest~Add-v0/0/completion_tokens", -5, "completion_tokens must be between 0"),
    ("traces/lbtest~Add-v0/0/task_id", 5, "task_id must be a string"),
    ("traces/lbtest~Add-v0/0/task_hash", 5, "task_hash must be a string"),
    ("traces/lbtest~Add-v0/0/rewards", DELETE, "an episode lacks ['rewards']"),
    ("traces/lbtest~Add-v0/0", "episode", "an episode must be an object"),
    ("traces/lbtest~Add-v0", {}, "its traces must be an array"),
    ("traces/lbtest~Other-v0", [], "traces of envs the suite does not have: ['lbtest/Other-v0']"),
    ("traces/lbtest~Yes-v0", DELETE, "lbtest/Yes-v0 has 0 stored episodes, not the 60"),
    ("traces", [], "traces must be an object"),
    ("supersedes", "1", "'supersedes' must be a result id"),
    ("surprise", 1, "unknown keys ['surprise']"),
]


@pytest.mark.parametrize(("path", "value", "message"), BAD_FIELDS)
def test_every_field_of_a_side_file_is_checked(
    tmp_path: Path, capsys, side_file, path, value, message
) -> None:
    assert_refused(tmp_path, capsys, edited(side_file, path, value), message)


def test_a_duplicated_or_extra_episode_is_refused(tmp_path: Path, capsys, side_file) -> None:
    twice = copy.deepcopy(side_file)
    records = twice["traces"][ADD_ENV]
    records[1] = copy.deepcopy(records[0])  # episode 0 sample 0 twice, episode 0 sample 1 gone
    assert_refused(tmp_path, capsys, twice, "episode 0 sample 0 is stored twice")
    more = copy.deepcopy(side_file)
    more["traces"][ADD_ENV].append({**more["traces"][ADD_ENV][-1], "episode": 40, "seed": 51})
    assert_refused(tmp_path, capsys, more, "lbtest/Add-v0 has 81 stored episodes, not the 80")


def test_duplicated_keys_and_deep_junk_are_refused(tmp_path: Path, capsys, side_file) -> None:
    text = json.dumps(side_file)
    score = json.dumps(side_file["result"]["score"])
    twice = text.replace(f'"score": {score}', f'"score": {score}, "score": 1.0', 1)
    assert_refused(tmp_path, capsys, twice, "the key 'score' appears twice in one object")
    deep = edited(side_file, "traces/lbtest~Add-v0/0/verdict", {"a": []})
    nested: Any = []
    for _ in range(200):
        nested = [nested]
    deep["traces"][ADD_ENV][0]["verdict"]["a"] = nested
    assert_refused(tmp_path, capsys, deep, "nested more than 100 levels deep")


# --- import checks the tasks are the suite's pinned tasks ---------------------------------------


def test_traces_of_tasks_the_suite_does_not_pose_are_refused(
    tmp_path: Path, capsys, random_run
) -> None:
    def other_task(result: BenchResult) -> None:
        for record in result.traces[ADD_ENV][6:8]:  # both samples of task 3
            record.task_id = "my-easy-task"
            record.messages[-2]["content"] = "What is 1 + 1?"

    path = rewritten(tmp_path, random_run, other_task)
    assert_refused(tmp_path, capsys, path.read_text(), "episode 3 (seed 14) holds task")

    def other_gold(result: BenchResult) -> None:
        for record in result.traces[YES_ENV][:2]:
            record.task_hash = "0" * 64

    path = rewritten(tmp_path, random_run, other_gold)
    assert_refused(tmp_path, capsys, path.read_text(), "(another prompt or gold answer)")


def test_a_file_whose_suite_imports_a_missing_module_is_refused(
    tmp_path: Path, capsys, random_run
) -> None:
    def importing(result: BenchResult) -> None:
        result.suite = replace(result.suite, imports=("no_such_module_for_rlvr",))

    path = rewritten(tmp_path, random_run, importing)
    assert_refused(tmp_path, capsys, path.read_text(), "cannot import 'no_such_module_for_rlvr'")


# --- a side file cannot hide another result (supersedes) ----------------------------------------


def test_only_a_rejudging_may_supersede_a_result(tmp_path: Path, capsys, random_run) -> None:
    db = tmp_path / "board.sqlite"
    with ResultStore(db) as store:
        oracle = run_suite(random_run.suite, "oracle", parallel="serial")
        store.add(oracle)  # #1, to be hidden
    cases = {
        "no-claim": (random_run, "only a re-judging of result 1 may supersede it"),
        "other-agent": (replace(random_run, reverified_from=1), "must keep its name"),
    }

    def changed_reply(result: BenchResult) -> None:
        result.reverified_from = 1
        result.traces[ADD_ENV][0].messages[-1]["content"] = "99"

    changed = copy.deepcopy(oracle)
    changed_reply(changed)
    cases["other-reply"] = (changed, "changed the replies of lbtest/Add-v0 episode 0 sample 0")
    for name, (result, message) in cases.items():
        path = save_unsaved(rescored(result), tmp_path / name, supersedes=1)
        capsys.readouterr()
        assert main(["leaderboard", "import", str(path), "--db", str(db)]) == 1
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err, err
    with ResultStore(db, readonly=True) as store:
        assert [(r.id, r.superseded_by) for r in store.results(include_superseded=True)] == [
            (1, None)
        ]


# --- the store refuses what the board cannot show; the board survives rows edited by hand -------


def test_the_store_refuses_non_finite_figures_and_traces(tmp_path: Path, random_run) -> None:
    broken_score = copy.deepcopy(random_run)
    broken_score.score = math.inf
    broken_reward = copy.deepcopy(random_run)
    broken_reward.traces[YES_ENV][3].rewards = [math.nan]
    broken_tokens = copy.deepcopy(random_run)
    broken_tokens.envs[0].completion_tokens = -3
    with ResultStore(tmp_path / "s.sqlite") as store:
        for result, message in (
            (broken_score, "score must be a finite number"),
            (broken_reward, "traces of lbtest/Yes-v0: episode 1 sample 1: rewards[0] must be"),
            (broken_tokens, "envs[0].completion_tokens must be between 0"),
        ):
            with pytest.raises(InvalidResultError, match=re_escape(message)):
                store.add(result)
        assert store.count() == 0


def re_escape(text: str) -> str:
    return re.escape(text)


def test_a_run_the_store_refuses_is_an_error_not_a_side_file(
    tmp_path: Path, capsys, monkeypatch, random_run
) -> None:
    from rlvr.leaderboards import runner

    broken = copy.deepcopy(random_run)
    broken.envs[1].score = math.inf
    monkeypatch.setattr(runner, "run_suite", lambda *args, **kwargs: broken)
    db = tmp_path / "board.sqlite"
    suite = write_toy_suite(tmp_path)
    code = main(["bench", "--db", str(db), "--suite", str(suite), "--agent", "random"])
    assert code == 1
    err = capsys.readouterr().err
    assert "the result cannot be stored: envs[1].score must be a finite number" in err
    assert not list(tmp_path.glob("*.unsaved-*"))  # import would refuse it just the same


HAND_EDITS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "string score": lambda r: edited(r, "score", "high"),
    "infinite score": lambda r: edited(r, "score", math.inf),
    "huge tokens": lambda r: edited(r, "envs/0/completion_tokens", 10**30),
    "seconds as text": lambda r: edited(r, "run/seconds", "fast"),
    "git as a list": lambda r: edited(r, "code/git", ["abc"]),
    "envs dropped": lambda r: edited(r, "envs", []),
    "episodes 10**12": lambda r: edited(r, "suite/envs/0/episodes", 10**12),
    "name a number": lambda r: edited(r, "name", 5),
    "not an object": lambda r: [r],
    "nested too deep": lambda r: "[" * 100_000,
}


@pytest.mark.parametrize(("what", "edit"), HAND_EDITS.items(), ids=list(HAND_EDITS))
def test_show_list_and_html_survive_a_row_edited_by_hand(
    tmp_path: Path, capsys, random_run, what, edit
) -> None:
    db = tmp_path / "board.sqlite"
    with ResultStore(db) as store:
        store.add(random_run)
        store.add(copy.deepcopy(random_run))
    with sqlite3.connect(db) as connection:
        row = connection.execute("SELECT record FROM results WHERE id = 2").fetchone()
    record = json.loads(row[0])
    damaged = edit(record)
    text = damaged if isinstance(damaged, str) else json.dumps(damaged)
    with sqlite3.connect(db) as connection:
        connection.execute("UPDATE results SET record = ? WHERE id = 2", (text,))
    capsys.readouterr()
    assert main(["leaderboard", "show", "--db", str(db)]) == 1
    out, err = capsys.readouterr()
    assert out.splitlines()[3].split()[:3] == ["1", "1", "random"]  # the other result is shown
    assert "left out: result 2 is damaged" in err and "rlvr leaderboard delete 2 --yes" in err
    assert "Traceback" not in err
    assert main(["leaderboard", "list", "--db", str(db)]) == 1
    out, err = capsys.readouterr()
    assert out.startswith("#1 ") and "result 2 is damaged" in err
    assert main(["leaderboard", "html", str(tmp_path / "site"), "--db", str(db)]) == 1
    assert "nothing written" in capsys.readouterr().err
    assert not (tmp_path / "site").exists()


def test_a_damaged_trace_row_names_its_result(tmp_path: Path, capsys, random_run) -> None:
    db = tmp_path / "board.sqlite"
    with ResultStore(db) as store:
        store.add(random_run)
    with sqlite3.connect(db) as connection:
        connection.execute(
            "UPDATE traces SET record = json_set(record, '$.rewards', json('[\"1\"]')) "
            "WHERE episode = 3 AND sample = 0 AND env_label = ?",
            (YES_ENV,),
        )
    capsys.readouterr()
    assert main(["leaderboard", "html", str(tmp_path / "site"), "--db", str(db)]) == 1
    err = capsys.readouterr().err
    assert "result 1: a stored episode of lbtest/Yes-v0 is damaged" in err
    assert "rewards[0] must be a number, got str" in err and "Traceback" not in err


def test_a_damaged_arena_row_is_left_out_with_a_warning(tmp_path: Path, capsys, random_run):
    db = tmp_path / "board.sqlite"
    suite = ArenaSuite(name="c4", env="rlvr/Connect4-v0", games=4)
    pairs = [PairGames("a", "b", [1.0, 1.0, 0.5, 0.0])]
    arena = ArenaResult(suite, {"a": "legal", "b": "random"}, pairs, rate(["a", "b"], pairs, suite))
    with ResultStore(db) as store:
        store.add(random_run)
        store.add_arena(arena)
        store.add_arena(copy.deepcopy(arena))
    with sqlite3.connect(db) as connection:
        connection.execute(
            "UPDATE arena_results SET record = json_set(record, '$.ratings[0].elo', 'x') "
            "WHERE id = 2"
        )
    capsys.readouterr()
    assert main(["leaderboard", "show", "--db", str(db)]) == 1
    out, err = capsys.readouterr()
    assert "arena result 2 is damaged" in err and "ratings[0].elo must be a number" in err
    assert "arena c4:" in out and "#1," in out  # the readable arena result is shown instead
    assert "Traceback" not in err


def test_the_store_refuses_arena_ratings_its_games_do_not_give(tmp_path: Path) -> None:
    suite = ArenaSuite(name="c4", env="rlvr/Connect4-v0", games=4)
    pairs = [PairGames("a", "b", [1.0, 1.0, 0.5, 0.0])]
    honest = ArenaResult(
        suite, {"a": "legal", "b": "random"}, pairs, rate(["a", "b"], pairs, suite)
    )
    inflated = copy.deepcopy(honest)
    inflated.ratings[1].elo = 3000.0
    inflated.ratings[1].high = 3100.0
    unbounded = copy.deepcopy(honest)
    unbounded.ratings[0].elo = math.nan
    miscounted = copy.deepcopy(honest)
    miscounted.ratings[0].points = 4.0
    with ResultStore(tmp_path / "s.sqlite") as store:
        for result, message in (
            (inflated, "is rated (3000.0,"),
            (unbounded, "ratings[0].elo must be a number, got NaN"),
            (miscounted, "4 points in 4 games, its pairs give"),
        ):
            with pytest.raises(InvalidResultError, match=re_escape(message)):
                store.add_arena(result)
        store.add_arena(honest)
        assert [r.id for r in store.arena_results()] == [1]


# --- Elo: a documented prior keeps a perfect record finite and inside its interval -------------


@pytest.mark.parametrize("games", [1, 4, 40, 400])
def test_a_perfect_record_is_rated_strictly_inside_its_interval(games: int) -> None:
    suite = ArenaSuite(name="t", env="rlvr/Connect4-v0", games=games)
    ratings = rate(["winner", "loser"], [PairGames("winner", "loser", [1.0] * games)], suite)
    for rating in ratings:
        assert math.isfinite(rating.elo) and rating.low < rating.elo < rating.high, rating
    winner, loser = ratings
    assert winner.agent == "winner" and winner.elo > loser.elo
    assert winner.elo + loser.elo == pytest.approx(3000)  # the ratings' mean is 1500


def test_an_undefeated_agent_in_a_round_robin_stays_inside_its_interval() -> None:
    suite = ArenaSuite(name="t", env="rlvr/Connect4-v0", games=40)
    pairs = [
        PairGames("legal", "random", [1.0] * 40),
        PairGames("legal", "column", [1.0] * 40),
        PairGames("random", "column", [1.0] * 10 + [0.5] * 20 + [0.0] * 10),
    ]
    ratings = {r.agent: r for r in rate(["legal", "random", "column"], pairs, suite)}
    for rating in ratings.values():
        assert rating.low < rating.elo < rating.high, rating
    assert ratings["legal"].elo > ratings["random"].elo == pytest.approx(ratings["column"].elo)


def test_more_perfect_games_give_a_higher_but_finite_rating() -> None:
    elos = [fit_elo(["a", "b"], [PairGames("a", "b", [1.0] * n)])["a"] for n in (1, 10, 100, 1000)]
    assert elos == sorted(elos) and all(math.isfinite(elo) for elo in elos)
    assert elos[-1] - elos[0] > 200


def test_the_rating_method_is_stated_on_the_page_and_the_terminal() -> None:
    suite = ArenaSuite(name="c4", env="rlvr/Connect4-v0", games=2)
    pairs = [PairGames("a", "b", [1.0, 1.0])]
    result = ArenaResult(
        suite, {"a": "legal", "b": "random"}, pairs, rate(["a", "b"], pairs, suite)
    )
    result.id = 3
    stated = "Gaussian prior (mean 1500, sd 400) on every rating; 95% interval from the posterior"
    assert stated in arena_table(result)
    assert stated in index_page([], "traces", [result])


def test_an_arena_result_stored_before_the_prior_is_read_and_labelled(tmp_path: Path) -> None:
    suite = ArenaSuite(name="c4", env="rlvr/Connect4-v0", games=2)
    pairs = [PairGames("a", "b", [1.0, 1.0])]
    record = ArenaResult(suite, {"a": "x", "b": "y"}, pairs, rate(["a", "b"], pairs, suite))
    old = record.to_record()
    old["suite"] |= {"resamples": 1000, "bootstrap_seed": 0}
    del old["method"]
    old["ratings"][0]["elo"] = old["ratings"][0]["high"]  # on the edge, as the bootstrap put it
    legacy = ArenaResult.from_record(old, id=1)
    assert "stored by an older rlvr-gym" in arena_table(legacy)


# --- the page: the header counts every section; no column repeats another ----------------------


def test_the_header_counts_the_arena_too(random_run) -> None:
    results = [replace(random_run, id=i) for i in range(1, 5)]
    suite = ArenaSuite(name="c4", env="rlvr/Connect4-v0", games=2)
    pairs = [PairGames("a", "b", [1.0, 0.0])]
    arena = ArenaResult(suite, {"a": "x", "b": "y"}, pairs, rate(["a", "b"], pairs, suite), id=9)
    page = index_page([Board("toy", results)], "traces", [arena])
    assert "4 result(s) in 1 suite(s) and 1 head-to-head arena(s) rating 2 agent(s)" in page
    assert "4 result(s) in 1 suite(s);" in index_page([Board("toy", results)], "traces")


def single_env_board(env_id: str, agents: list[str]) -> list[BenchResult]:
    suite = parse_suite(
        f'name = "one"\nsplit = false\nepisodes = 6\nsamples = 2\npass_at_k = [1, 2]\n'
        f'[sampling]\ntemperature = 1.0\n[[envs]]\nid = "{env_id}"\n'
    )
    return [
        replace(run_suite(suite, agent, parallel="serial"), id=number)
        for number, agent in enumerate(agents, start=1)
    ]


def headers(page: str) -> list[str]:
    table = page[page.index('<table class="board sortable"') :]
    table = table[: table.index("</thead>")]
    return [re.sub(r"<[^>]+>", "", cell) for cell in re.findall(r"<th[^>]*>(.*?)</th>", table)]


def test_a_single_env_suite_shows_each_number_once(tmp_path: Path) -> None:
    ranked = single_env_board(YES_ENV, ["oracle", "random"])
    page = index_page([Board("one", ranked)], "traces")
    shown = headers(page)
    assert shown == ["#", "Name", "Agent", "Score", "95% CI", "pass@2", "Tokens", "Time", "Traces"]
    note = f"The score is {YES_ENV}'s; pass@1 equals the score (every reward is 0 or 1)."
    assert note in html.unescape(page)
    table = terminal_table(ranked).splitlines()
    assert table[1].split() == [
        *("#", "id", "name", "score", "95%", "CI", "pass@2", "tokens", "time", "infra")
    ]
    assert "pass@1 equals the score" in table[0]


def test_pass_at_1_keeps_its_column_where_rewards_are_partial() -> None:
    register_task_env(
        HALF_ENV,
        [{"prompt": f"q{i}", "answer": "a"} for i in range(9)],
        lambda r, t: 0.5,
        override=True,
    )
    ranked = single_env_board(HALF_ENV, ["oracle"])
    assert ranked[0].score == 0.5 and ranked[0].pass_at_k["1"] == 0.0
    assert headers(index_page([Board("one", ranked)], "traces"))[5:7] == ["pass@1", "pass@2"]


def test_a_multi_env_suite_keeps_a_column_per_env(random_run) -> None:
    page = index_page([Board("toy", [replace(random_run, id=1)])], "traces")
    assert headers(page)[3:8] == ["Score", "95% CI", "pass@2", ADD_ENV, YES_ENV]


@pytest.mark.parametrize("kind", ["suite", "arena"])
def test_a_suite_file_nested_deep_or_not_utf8_is_one_error_naming_it(tmp_path, kind):
    load = load_suite if kind == "suite" else load_arena
    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(SuiteError, match=f"{deep}: .*nested more than"):
        load(deep)
    latin = tmp_path / "latin.toml"
    latin.write_bytes(b"name = 'caf\xe9'\n")
    with pytest.raises(SuiteError, match=f"{latin}.*UTF-8"):
        load(latin)
