"""The SQLite result store: round trips, supersession, and several processes writing at once."""

from __future__ import annotations

import dataclasses
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
        new = store.add(dataclasses.replace(result, reverified_from=old), supersedes=old)
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


def test_a_corrupt_or_foreign_file_is_refused_and_left_alone(tmp_path: Path) -> None:
    corrupt = tmp_path / "corrupt.sqlite"
    corrupt.write_bytes(b"not a database, just some bytes " * 100)
    for readonly in (False, True):
        with pytest.raises(StoreError, match="not a readable rlvr result store.*--db"):
            ResultStore(corrupt, readonly=readonly)
    foreign = tmp_path / "notes.sqlite"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE notes (text TEXT)")
    for readonly in (False, True):
        with pytest.raises(StoreError, match=r"another program \(tables \['notes'\]\)"):
            ResultStore(foreign, readonly=readonly)
    with sqlite3.connect(foreign) as db:  # not converted to WAL, no tables of ours added
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        assert db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 1


def test_readonly_store_reads_but_never_writes_or_creates(tmp_path: Path, result) -> None:
    path = tmp_path / "r.sqlite"
    with pytest.raises(StoreError, match="no result store at"):
        ResultStore(path, readonly=True)
    assert not path.exists()
    ResultStore(path).close()
    with ResultStore(path, readonly=True) as store:
        assert store.results() == []
        with pytest.raises(StoreError, match="read-only"):
            store.add(result)
    path.write_bytes(b"")  # an empty file is an empty database, not a store
    with pytest.raises(StoreError, match="holds no results yet"):
        ResultStore(path, readonly=True)


def test_show_and_html_read_a_store_on_a_read_only_file_system(tmp_path: Path, result) -> None:
    """Published results often live where the reader cannot write (no WAL index can be made)."""
    import shutil
    import subprocess
    import sys

    from tests.conftest import require_service

    require_service("bubblewrap", shutil.which("bwrap") is not None, "needs bwrap")
    shelf = tmp_path / "shelf"
    shelf.mkdir()
    with ResultStore(shelf / "r.sqlite") as store:
        store.add(result)
    assert sorted(p.name for p in shelf.iterdir()) == ["r.sqlite"]  # WAL files gone on close
    root = Path(__file__).resolve().parents[2]
    script = (
        f"import sys; sys.path.insert(0, {str(root)!r}); "
        "import tests.leaderboards.leaderboard_support; "
        "from rlvr.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    read_only = ["bwrap", "--bind", "/", "/", "--ro-bind", str(shelf), str(shelf), "--dev", "/dev",
                 "--proc", "/proc", sys.executable, "-c", script]  # fmt: skip
    db = ["--db", str(shelf / "r.sqlite")]
    shown = subprocess.run(
        [*read_only, "leaderboard", "show", *db], capture_output=True, text=True, timeout=120
    )
    assert shown.returncode == 0, shown.stderr
    assert "random" in shown.stdout
    site = tmp_path / "site"
    written = subprocess.run(
        [*read_only, "leaderboard", "html", str(site), *db],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert written.returncode == 0, written.stderr
    assert (site / "index.html").is_file()
    assert sorted(p.name for p in shelf.iterdir()) == ["r.sqlite"]


def test_one_store_shared_by_threads(tmp_path: Path, result) -> None:
    import threading

    errors: list[BaseException] = []
    with ResultStore(tmp_path / "r.sqlite") as store:

        def write() -> None:
            try:
                for _ in range(3):
                    store.add(result)
                    store.results()
            except BaseException as exc:  # collected: an exception in a thread is easy to lose
                errors.append(exc)

        threads = [threading.Thread(target=write) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert store.count() == 12


def test_traces_stream_in_batches(tmp_path: Path, result) -> None:
    with ResultStore(tmp_path / "r.sqlite") as store:
        result_id = store.add(result)
        whole = store.traces(result_id)
        for label, records in whole.items():
            streamed = list(store.iter_traces(result_id, label, batch=7))
            assert [r.to_dict() for r in streamed] == [r.to_dict() for r in records]
        assert list(store.iter_traces(result_id, "no such env")) == []


def test_a_row_damaged_by_hand_is_named_with_the_fix(tmp_path: Path, result) -> None:
    path = tmp_path / "r.sqlite"
    with ResultStore(path) as store:
        store.add(result)
        damaged = store.add(result)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE results SET record = '{\"name\": 1' WHERE id = ?", (damaged,))
    with ResultStore(path, readonly=True) as store, pytest.raises(StoreError) as info:
        store.results()
    assert f"result {damaged} is damaged" in str(info.value)
    assert f"rlvr leaderboard delete {damaged} --yes" in str(info.value)
    from rlvr.cli import main

    assert main(["leaderboard", "delete", str(damaged), "--yes", "--db", str(path)]) == 0
    with ResultStore(path) as store:
        assert [r.id for r in store.results()] == [damaged - 1]
