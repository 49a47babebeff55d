"""`rlvr bench` and `rlvr leaderboard`: ranking, refusing incomparable results, reverify."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from rlvr.cli import main
from rlvr.leaderboards import (
    LeaderboardError,
    NotComparableError,
    ResultStore,
    load_suite,
    rank,
    run_suite,
)
from rlvr.leaderboards.compare import differences
from tests.leaderboards.leaderboard_support import (
    TOY_SUITE,
    FlakyChatServer,
    fixed_yes_verifier,
    write_lock_held,
    write_toy_suite,
)


def bench(db: Path, suite: Path | str, agent: str, *extra: str) -> int:
    return main(
        ["bench", "--db", str(db), "--suite", str(suite), "--agent", agent, "--no-progress", *extra]
    )


def test_bench_show_list_and_env_var_store(tmp_path: Path, capsys, monkeypatch) -> None:
    suite = write_toy_suite(tmp_path)
    db = tmp_path / "board.sqlite"
    assert bench(db, suite, "random", "--name", "random words") == 0
    out = capsys.readouterr().out
    assert "result #1 'random words' on suite toy" in out and str(db) in out
    monkeypatch.setenv("RLVR_LEADERBOARD_DB", str(db))
    assert main(["bench", "--suite", str(suite), "--agent", "oracle", "--no-progress"]) == 0
    assert bench(db, suite, "fixed:yes") == 0
    capsys.readouterr()
    assert main(["leaderboard", "show"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].startswith("suite toy: lbtest/Add-v0 x40, lbtest/Yes-v0 x30")
    ranked = [line.split()[2] for line in table[3:6]]
    assert ranked == ["oracle", "fixed:yes", "random"]  # 1.0, 0.5 (only Yes-v0), ~0
    assert main(["leaderboard", "list"]) == 0
    assert capsys.readouterr().out.count("toy") == 3


def test_bench_errors_are_clear(tmp_path: Path, capsys) -> None:
    db = tmp_path / "b.sqlite"
    assert main(["bench", "--db", str(db), "--agent", "oracle"]) == 1
    assert "suite is required: give --suite" in capsys.readouterr().err
    assert bench(db, "no-such-suite", "oracle") == 1
    assert "no built-in suite 'no-such-suite'" in capsys.readouterr().err
    future = tmp_path / "future.toml"
    future.write_text('name = "future"\nsplit = false\n[[envs]]\nid = "rlvr/NotYet-v0"\n')
    assert bench(db, future, "oracle") == 1
    assert "rlvr/NotYet-v0 is not registered" in capsys.readouterr().err
    assert bench(db, write_toy_suite(tmp_path), "telepathy") == 1
    assert "unknown agent 'telepathy'" in capsys.readouterr().err
    assert bench(db, write_toy_suite(tmp_path), "oracle") == 0
    capsys.readouterr()
    assert main(["bench", "reverify", "1", "--db", str(db), "--workers", "0"]) == 1
    assert "workers" in capsys.readouterr().err  # a clear message, not a traceback


def test_different_verifier_versions_are_refused_then_reverified(tmp_path: Path, capsys) -> None:
    suite = write_toy_suite(tmp_path)
    db = tmp_path / "board.sqlite"
    assert bench(db, suite, "random") == 0
    assert bench(db, suite, "oracle") == 0
    with fixed_yes_verifier():
        assert bench(db, suite, "fixed:yes") == 0
        capsys.readouterr()
        assert main(["leaderboard", "show", "--db", str(db)]) == 1
        err = capsys.readouterr().err
        assert "refusing to rank 3 results of suite 'toy'" in err
        assert "#1 'random'" in err and "#2 'oracle'" in err
        assert "lbtest/Yes-v0: judged by different verifiers" in err
        assert (
            "tests.leaderboards.leaderboard_support.YesVerifier 1 (#1) vs "
            "tests.leaderboards.leaderboard_support.YesVerifier 2 (#3)"
        ) in err
        assert "rlvr bench reverify 1 2" in err
        assert main(["leaderboard", "html", str(tmp_path / "site"), "--db", str(db)]) == 1
        assert not (tmp_path / "site").exists()
        assert main(["leaderboard", "show", "--db", str(db), "--latest"]) == 0
        captured = capsys.readouterr()
        assert "left out #1 'random'" in captured.err
        assert "fixed:yes" in captured.out and "random" not in captured.out
        assert main(["bench", "reverify", "--stale", "--db", str(db), "--no-progress"]) == 0
        out = capsys.readouterr().out
        assert "#1 'random' re-judged as #4" in out and "#2 'oracle' re-judged as #5" in out
        assert main(["leaderboard", "show", "--db", str(db)]) == 0
        table = capsys.readouterr().out
        assert "refusing" not in table
        assert [line.split()[1] for line in table.strip().splitlines()[3:]] == ["5", "3", "4"]
    with ResultStore(db) as store:
        assert [r.id for r in store.results()] == [3, 4, 5]
        assert store.get(4).reverified_from == 1
    assert main(["bench", "reverify", "1", "--db", str(db), "--no-progress"]) == 1
    assert "already re-judged as #4; re-judge that one" in capsys.readouterr().err


def test_different_suite_definitions_are_refused_with_the_difference(tmp_path: Path) -> None:
    toy = load_suite(write_toy_suite(tmp_path))
    reseeded = load_suite(
        write_toy_suite(tmp_path / "..", TOY_SUITE.replace("seed = 11", "seed = 12"))
    )
    a = run_suite(toy, "oracle")
    b = run_suite(reseeded, "oracle")
    a.id, b.id = 1, 2
    assert differences(a, b) == [
        "suite definition differs at envs[0].seed: 11 (#1) vs 12 (#2)",
        "suite definition differs at envs[1].seed: 11 (#1) vs 12 (#2)",
    ]
    with pytest.raises(NotComparableError, match=r"#1 'oracle'.*\n.*envs\[0\]\.seed: 11 \(#1\)"):
        rank([a, b])
    c = run_suite(toy.with_episodes(5), "oracle")
    c.id = 3
    assert "envs[0].episodes: 40 (#1) vs 5 (#3)" in differences(a, c)[0]
    other_suite = run_suite(
        load_suite(write_toy_suite(tmp_path, TOY_SUITE.replace('"toy"', '"toy2"'))), "oracle"
    )
    assert differences(a, other_suite) == ["different suites: 'toy' (#1) vs 'toy2' ('oracle')"]
    assert [r.id for r in rank([a])] == [1]


def test_changed_tasks_without_a_version_bump_are_refused(tmp_path: Path) -> None:
    toy = load_suite(write_toy_suite(tmp_path))
    a = run_suite(toy, "oracle")
    b = run_suite(toy, "random")
    b.envs[1].dataset_hash = "0" * 64
    assert differences(a, b) == [
        f"lbtest/Yes-v0: different tasks (dataset hash {a.envs[1].dataset_hash[:12]} ('oracle') "
        "vs 000000000000 ('random')): the env's tasks or gold answers changed without a version "
        "bump"
    ]


# --- a demanding user: failing servers, Ctrl-C, hostile names, deleting, read-only stores -------


@pytest.mark.parametrize("mode", ["500", "abort"])
def test_api_server_failing_mid_run_is_an_error_never_a_score(tmp_path: Path, mode: str) -> None:
    from rlvr.agents.openai_chat import OpenAIChatPolicy

    suite = load_suite(write_toy_suite(tmp_path))
    with FlakyChatServer(good=30, mode=mode) as server:
        policy = OpenAIChatPolicy(server.url, retries=1, backoff=0.01)
        with pytest.raises(LeaderboardError, match="PolicyError") as info:
            run_suite(suite, policy, parallel="threads", workers=2)
    assert ("aborted the generation" if mode == "abort" else "HTTP 500") in str(info.value)


def test_ctrl_c_with_a_hung_api_server_stops_at_once_and_stores_nothing(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    root = Path(__file__).resolve().parents[2]
    suite = tmp_path / "toy.toml"  # the worker process must register the test envs itself
    suite.write_text(
        TOY_SUITE.replace(
            "split = false", 'split = false\nimports = ["tests.leaderboards.leaderboard_support"]'
        )
    )
    db = tmp_path / "board.sqlite"
    with FlakyChatServer(good=20, mode="hang") as server:
        command = [sys.executable, "-m", "rlvr.cli", "bench", "--suite", str(suite), "--agent",
                   f"openai:{server.url}", "--db", str(db), "--no-progress"]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(root)}
        process = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 60
            while server.requests <= 20 and time.monotonic() < deadline:
                time.sleep(0.05)  # until requests hang
            process.send_signal(signal.SIGINT)
            interrupted = time.monotonic()
            _, err = process.communicate(timeout=30)
        finally:
            process.kill()
    assert time.monotonic() - interrupted < 10  # not after the requests time out (minutes)
    assert process.returncode == 130 and "interrupted" in err
    with ResultStore(db) as store:
        assert store.count() == 0  # nothing stored


def test_names_cannot_drive_the_terminal(tmp_path: Path, capsys) -> None:
    db = tmp_path / "board.sqlite"
    forged = "random\r#1    1 oracle 1.000 \x1b[8m\u202e"
    assert bench(db, write_toy_suite(tmp_path), "random", "--name", forged) == 0
    assert main(["leaderboard", "show", "--db", str(db)]) == 0
    assert main(["leaderboard", "list", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "\r" not in out and "\x1b" not in out and "\u202e" not in out
    assert "random\\x0d#1    1 oracle 1.000 \\x1b[8m\\u202e" in out


def test_delete_results_with_their_traces(tmp_path: Path, capsys) -> None:
    import sqlite3

    suite = write_toy_suite(tmp_path)
    db = tmp_path / "board.sqlite"
    assert bench(db, suite, "oracle") == 0 and bench(db, suite, "random") == 0
    assert main(["bench", "reverify", "2", "--db", str(db), "--no-progress"]) == 0  # -> #3
    capsys.readouterr()
    assert main(["leaderboard", "delete", "1", "--db", str(db)]) == 1
    assert "add --yes" in capsys.readouterr().err
    assert main(["leaderboard", "delete", "2", "--yes", "--db", str(db)]) == 1
    assert "re-judged as #3: delete that first" in capsys.readouterr().err
    assert main(["leaderboard", "delete", "3", "2", "1", "--yes", "--db", str(db)]) == 0
    assert "deleted 3 result(s)" in capsys.readouterr().out
    with sqlite3.connect(db) as connection:
        assert connection.execute("SELECT count(*) FROM results").fetchone()[0] == 0
        assert connection.execute("SELECT count(*) FROM traces").fetchone()[0] == 0
    assert main(["leaderboard", "delete", "7", "--yes", "--db", str(db)]) == 1
    assert "no result 7" in capsys.readouterr().err


def test_reading_commands_never_create_a_store(tmp_path: Path, capsys) -> None:
    typo = tmp_path / "no" / "such" / "board.sqlite"
    for command in (["show"], ["list"], ["html", str(tmp_path / "site")]):
        assert main(["leaderboard", *command, "--db", str(typo)]) == 1
        assert f"no result store at {typo}" in capsys.readouterr().err
    assert not (tmp_path / "no").exists() and not (tmp_path / "site").exists()


def test_an_unusable_store_is_refused_before_the_run(tmp_path: Path, capsys, monkeypatch) -> None:
    import sqlite3

    from rlvr.leaderboards import runner

    def never(*args, **kwargs):
        raise AssertionError("the run started before the store was checked")

    monkeypatch.setattr(runner, "run_suite", never)
    foreign = tmp_path / "notes.sqlite"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE notes (text TEXT)")
    assert bench(foreign, write_toy_suite(tmp_path), "oracle") == 1
    assert "another program" in capsys.readouterr().err


def test_a_locked_store_waits_once_then_names_the_fix(tmp_path: Path, monkeypatch) -> None:
    import sqlite3
    import time

    from rlvr.leaderboards import StoreError, store

    path = tmp_path / "r.sqlite"
    ResultStore(path).close()
    monkeypatch.setattr(store, "BUSY_TIMEOUT_MS", 300)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another program in the middle of a long write
    try:
        started = time.monotonic()
        with pytest.raises(StoreError, match="locked by another program.*--db"):
            ResultStore(path)
        assert time.monotonic() - started < 5  # one busy timeout, not one per retry
        with ResultStore(path, readonly=True) as reader:  # readers are not blocked
            assert reader.count() == 0
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_a_result_the_locked_store_cannot_take_is_saved_aside_then_imported(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    """The store stays locked by another process past its wait when the run ends: the finished
    result goes to a file beside the store, the exit status and message say so and give the
    command that imports it; importing twice adds it once."""
    import shlex

    from rlvr.leaderboards import runner, store

    db = tmp_path / "board.sqlite"
    assert bench(db, write_toy_suite(tmp_path), "oracle") == 0  # #1, a store in use
    monkeypatch.setattr(store, "BUSY_TIMEOUT_MS", 300)
    finished = []

    def run_then_lock(*args, **kwargs):
        finished.append(real_run(*args, **kwargs))
        stack.enter_context(write_lock_held(db))  # another program starts a long write
        return finished[-1]

    real_run = runner.run_suite
    monkeypatch.setattr(runner, "run_suite", run_then_lock)
    capsys.readouterr()
    with contextlib.ExitStack() as stack:
        assert bench(db, write_toy_suite(tmp_path), "random", "--name", "late") == 3
        with ResultStore(db, readonly=True) as reader:
            assert reader.count() == 1  # not stored
    captured = capsys.readouterr()
    assert "locked by another program" in captured.err
    assert "result (not in the store) 'late' on suite toy" in captured.out
    saved = sorted(tmp_path.glob("board.sqlite.unsaved-*.json"))
    assert len(saved) == 1 and not list(tmp_path.glob(".*.tmp"))
    command = captured.err.strip().splitlines()[-1].strip()
    assert command == f"rlvr leaderboard import {saved[0]} --db {db}"
    for attempt in range(2):
        assert main(shlex.split(command)[1:]) == 0
        out = capsys.readouterr().out
        assert ("imported" if attempt == 0 else "already stored as #2") in out
    from rlvr.leaderboards.unsaved import read_unsaved

    with ResultStore(db) as reader:
        assert reader.count() == 2
        stored = reader.get(2)
    assert stored.to_record() == finished[0].to_record() == read_unsaved(saved[0])[0].to_record()
    assert {label: [r.to_dict() for r in rs] for label, rs in stored.traces.items()} == {
        label: [r.to_dict() for r in rs] for label, rs in finished[0].traces.items()
    }


def test_a_rejudged_result_saved_aside_keeps_what_it_supersedes(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    from rlvr.leaderboards import runner, store

    db = tmp_path / "board.sqlite"
    assert bench(db, write_toy_suite(tmp_path), "random") == 0  # #1
    monkeypatch.setattr(store, "BUSY_TIMEOUT_MS", 300)
    real_reverify = runner.reverify

    def rejudge_then_lock(*args, **kwargs):
        new = real_reverify(*args, **kwargs)
        stack.enter_context(write_lock_held(db))
        return new

    monkeypatch.setattr(runner, "reverify", rejudge_then_lock)
    capsys.readouterr()
    with contextlib.ExitStack() as stack:
        assert main(["bench", "reverify", "1", "--db", str(db), "--no-progress"]) == 3
    (saved,) = tmp_path.glob("board.sqlite.unsaved-*.json")
    assert f"#1 'random' re-judged as {saved} (not in the store yet)" in capsys.readouterr().out
    assert main(["leaderboard", "import", str(saved), "--db", str(db)]) == 0
    with ResultStore(db) as reader:
        assert reader.get(2).reverified_from == 1
        assert [(r.id, r.superseded_by) for r in reader.results(include_superseded=True)] == [
            (1, 2),
            (2, None),
        ]


def test_ctrl_c_while_waiting_for_a_locked_store_saves_the_result_first(tmp_path: Path) -> None:
    """SQLite's wait for the lock cannot be interrupted: Ctrl-C lands when it ends, and must not
    cut the saving of the result short."""
    import os
    import signal
    import subprocess
    import sys
    import time

    root = Path(__file__).resolve().parents[2]
    db = tmp_path / "board.sqlite"
    suite = write_toy_suite(tmp_path)
    assert bench(db, suite, "oracle") == 0
    child = subprocess.Popen(
        [sys.executable, "-c", _BENCH_THEN_LOCK, str(db), str(suite)],
        env={**os.environ, "PYTHONPATH": str(root)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout.readline().strip() == "storing"
        time.sleep(1.5)  # it opens the store and waits for the lock (5 s)
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == 130 and "interrupted" in err, err
    (saved,) = tmp_path.glob("board.sqlite.unsaved-*.json")
    assert f"saved in {saved}" in err
    assert main(["leaderboard", "import", str(saved), "--db", str(db)]) == 0


_BENCH_THEN_LOCK = """
import sqlite3, sys
import tests.leaderboards.leaderboard_support  # registers the test envs
from rlvr.cli import main
from rlvr.leaderboards import runner, store

store.BUSY_TIMEOUT_MS = 5000
real_run = runner.run_suite

def run_then_lock(*args, **kwargs):
    result = real_run(*args, **kwargs)
    holder = sqlite3.connect(sys.argv[1], isolation_level=None)  # a long write begins
    holder.execute("BEGIN IMMEDIATE")
    runner.holder = holder
    print("storing", flush=True)
    return result

runner.run_suite = run_then_lock
sys.exit(main(["bench", "--db", sys.argv[1], "--suite", sys.argv[2], "--agent", "random",
               "--parallel", "serial", "--no-progress"]))
"""


def test_import_refuses_a_file_that_is_not_a_whole_saved_result(tmp_path: Path, capsys) -> None:
    import json

    from rlvr.leaderboards.unsaved import save_unsaved

    db = tmp_path / "board.sqlite"
    result = run_suite(load_suite(write_toy_suite(tmp_path)), "random", parallel="serial")
    good = save_unsaved(result, db)
    payload = json.loads(good.read_text())
    cut = dict(payload, traces={**payload["traces"]})
    cut["traces"]["lbtest/Yes-v0"] = cut["traces"]["lbtest/Yes-v0"][:-1]
    edited = json.loads(good.read_text())
    edited["traces"]["lbtest/Add-v0"][0]["messages"][-1]["content"] = "42"
    cases = {
        "half.json": (good.read_text()[:5000], "invalid JSON"),
        "other.json": ('{"results": []}', "not a result saved by `rlvr bench`"),
        "newer.json": (json.dumps({**payload, "version": 2}), "format version 2"),
        "cut.json": (json.dumps(cut), "Yes-v0 has 59 stored episodes, not the 60"),
        "edited.json": (json.dumps(edited), "traces of lbtest/Add-v0 differ"),
        "broken.json": (json.dumps({**payload, "result": {}}), "the saved result is damaged"),
    }
    for name, (text, message) in cases.items():
        (tmp_path / name).write_text(text)
        assert main(["leaderboard", "import", str(tmp_path / name), "--db", str(db)]) == 1
        err = capsys.readouterr().err
        assert err.startswith(f"error: {tmp_path / name}: ") and message in err, err
        assert "Traceback" not in err
    assert not db.exists()  # nothing was imported (not even a store created)
    assert main(["leaderboard", "import", str(good), "--db", str(db)]) == 0


def test_sampling_env_version_and_verifier_differences_are_all_refused(tmp_path: Path) -> None:
    import dataclasses

    from rlvr.agents.policy import SamplingParams

    a = run_suite(load_suite(write_toy_suite(tmp_path)), "oracle", parallel="serial")
    a.id = 1

    def variant(**changes) -> object:
        other = dataclasses.replace(a, suite=dataclasses.replace(a.suite, **changes), id=2)
        other.envs = [dataclasses.replace(env) for env in a.envs]
        return other

    hotter = variant(sampling=SamplingParams(temperature=0.7))
    assert differences(a, hotter) == [
        "suite definition differs at sampling.temperature: 1.0 (#1) vs 0.7 (#2)"
    ]
    bumped_env = dataclasses.replace(a.suite.envs[0], id="lbtest/Add-v1")
    newer = variant(envs=(bumped_env, *a.suite.envs[1:]))
    assert differences(a, newer) == [
        "suite definition differs at envs[0].id: 'lbtest/Add-v0' (#1) vs 'lbtest/Add-v1' (#2)"
    ]
    rejudged = variant()
    rejudged.envs[1].verifier = {**a.envs[1].verifier, "version": "2"}
    assert "judged by different verifiers" in differences(a, rejudged)[0]
    for other in (hotter, newer, rejudged):
        with pytest.raises(NotComparableError):
            rank([a, other])


def test_run_options_given_before_reverify_are_kept_and_left_out_ones_take_the_runners():
    """`rlvr bench --parallel threads reverify 3` ran with parallel='auto': the subcommand's
    restated default overwrote the option given before it."""
    import inspect

    from rlvr.cli import build_parser
    from rlvr.config import resolve
    from rlvr.leaderboards import runner
    from rlvr.leaderboards.config import BenchConfig, ReverifyConfig

    parser = build_parser()
    args = parser.parse_args(["bench", "--parallel", "threads", "reverify", "3"])
    assert resolve(ReverifyConfig, args) == ReverifyConfig(ids=(3,), parallel="threads")
    left_out = resolve(BenchConfig, parser.parse_args(["bench", "--suite", "m", "--agent", "o"]))
    defaults = inspect.signature(runner.run_suite).parameters
    for name in ("parallel", "workers", "batch_size"):
        assert getattr(left_out, name) == defaults[name].default
    bench = parser._subparsers._group_actions[0].choices["bench"]  # type: ignore[union-attr]
    help_text = " ".join(bench.format_help().split())
    assert f"(default: {defaults['parallel'].default})" in help_text
    assert f"per generate call. (default: {defaults['batch_size'].default})" in help_text
