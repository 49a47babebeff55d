"""The SQLite result store: round trips, supersession, and several processes writing at once."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

import pytest

from rlvr.leaderboards import ResultStore, StoreError, default_db_path, load_suite, run_suite
from rlvr.leaderboards.results import BenchResult
from tests.leaderboards.leaderboard_support import YES_ENV, write_toy_suite


@pytest.fixture(scope="module")
def result(tmp_path_factory) -> BenchResult:
    suite = load_suite(write_toy_suite(tmp_path_factory.mktemp("suite")))
    return run_suite(suite, "random", parallel="serial")


def test_round_trip_keeps_scores_provenance_and_traces(tmp_path: Path, result) -> None:
    with ResultStore(tmp_path / "r.sqlite") as store:
        result_id = store.add(result)
        assert result.id == result_id
        back = store.get(result_id)
    assert back.to_record() == result.to_record()
    assert back.suite.fingerprint() == result.suite.fingerprint()
    assert set(back.traces) == set(result.traces)
    for label, records in result.traces.items():
        assert [r.to_dict() for r in back.traces[label]] == [r.to_dict() for r in records]


def test_superseded_results_are_hidden_unless_asked(tmp_path: Path, result) -> None:
    with ResultStore(tmp_path / "r.sqlite") as store:
        old = store.add(result)
        new = store.add(result, supersedes=old)
        assert [r.id for r in store.results()] == [new]
        everything = store.results(include_superseded=True)
        assert [(r.id, r.superseded_by) for r in everything] == [(old, new), (new, None)]
        with pytest.raises(StoreError, match="no result 99 to supersede"):
            store.add(result, supersedes=99)
        assert store.count() == 2  # the failed add was rolled back whole
        with pytest.raises(StoreError, match="leaderboard list"):
            store.get(12345)


def test_store_path_from_environment(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("RLVR_LEADERBOARD_DB", str(tmp_path / "env.sqlite"))
    assert default_db_path() == tmp_path / "env.sqlite"
    monkeypatch.delenv("RLVR_LEADERBOARD_DB")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_db_path() == tmp_path / "xdg" / "rlvr" / "leaderboard.sqlite"


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    ResultStore(path).close()
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version = 99")
    with pytest.raises(StoreError, match="newer rlvr-gym"):
        ResultStore(path)


def test_unwritable_location_names_the_fix(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(StoreError, match="--db"):
        ResultStore(blocker / "r.sqlite")


WRITERS = 6
RESULTS_PER_WRITER = 4


def _writer(path: str, result: BenchResult, writer: int, start: object) -> None:
    start.wait()  # type: ignore[attr-defined]
    with ResultStore(path) as store:  # every writer also creates/migrates the schema
        for number in range(RESULTS_PER_WRITER):
            result.name = f"writer {writer} result {number}"
            store.add(result)


def test_concurrent_writers_lose_nothing(tmp_path: Path, result) -> None:
    path = str(tmp_path / "shared.sqlite")  # does not exist yet: creation races too
    context = multiprocessing.get_context("fork")
    start = context.Barrier(WRITERS)
    processes = [
        context.Process(target=_writer, args=(path, result, writer, start))
        for writer in range(WRITERS)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)
    assert [p.exitcode for p in processes] == [0] * WRITERS
    with ResultStore(path) as store:
        stored = store.results()
        assert len(stored) == WRITERS * RESULTS_PER_WRITER
        assert len({r.id for r in stored}) == len(stored)
        names = {r.name for r in stored}
        assert names == {
            f"writer {w} result {n}" for w in range(WRITERS) for n in range(RESULTS_PER_WRITER)
        }
        episodes = sum(len(records) for records in result.traces.values())
        for stored_result in stored:
            traces = store.traces(stored_result.id)
            assert sum(len(records) for records in traces.values()) == episodes
            assert len(traces[YES_ENV]) == 60
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
