"""The result store: one SQLite file, safe for several processes writing at once.

Concurrency: the file is in WAL mode (readers never block the writer) and every write is one
`BEGIN IMMEDIATE` transaction holding a whole result with its traces, so a reader sees a result
entirely or not at all; a writer that finds the lock taken waits (`busy_timeout`) instead of
failing. WAL needs a local file system (not NFS), like SQLite itself.

One `ResultStore` may also be shared by threads (its calls take turns on one connection).
`ResultStore(path, readonly=True)` (what `show`, `list` and `html` use) never creates or changes
the file, and reads a store in a read-only folder or file system too.

The path is `--db PATH`, else `$RLVR_LEADERBOARD_DB`, else
`$XDG_DATA_HOME/rlvr/leaderboard.sqlite` (`~/.local/share/rlvr/leaderboard.sqlite`).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rlvr.leaderboards.arena import ArenaResult, check_arena
from rlvr.leaderboards.errors import InvalidResultError, StoreError
from rlvr.leaderboards.provenance import episode_data, replies
from rlvr.leaderboards.records import episode_from_dict
from rlvr.leaderboards.results import BenchResult, check_result
from rlvr.rollout.records import EpisodeRecord

DB_ENV_VAR = "RLVR_LEADERBOARD_DB"
SCHEMA_VERSION = 1
BUSY_TIMEOUT_MS = 120_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    suite TEXT NOT NULL,
    suite_fingerprint TEXT NOT NULL,
    agent TEXT,
    score REAL,
    ci_low REAL,
    ci_high REAL,
    created_at TEXT NOT NULL,
    reverified_from INTEGER REFERENCES results(id),
    superseded_by INTEGER REFERENCES results(id),
    record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS results_by_suite ON results(suite, superseded_by);
CREATE TABLE IF NOT EXISTS traces (
    result_id INTEGER NOT NULL REFERENCES results(id) ON DELETE CASCADE,
    env_label TEXT NOT NULL,
    episode INTEGER NOT NULL,
    sample INTEGER NOT NULL,
    seed INTEGER NOT NULL,
    task_id TEXT NOT NULL,
    total_reward REAL NOT NULL,
    status TEXT,
    infra_error INTEGER NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (result_id, env_label, episode, sample)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS arena_results (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    suite TEXT NOT NULL,
    suite_fingerprint TEXT NOT NULL,
    created_at TEXT NOT NULL,
    record TEXT NOT NULL
);
"""
# arena_results came after schema 1 was released; being additive (a table older stores lack and
# older readers ignore) it needs no new version: a store gets it the next time it is written to.

OnDamaged = Callable[[StoreError], None]
"""Told about each stored row that cannot be read (`results`, `arena_results`), which is then
left out; without one, such a row raises its `StoreError`."""


def default_db_path() -> Path:
    """`$RLVR_LEADERBOARD_DB`, else the rlvr folder of the XDG data directory."""
    if os.environ.get(DB_ENV_VAR):
        return Path(os.environ[DB_ENV_VAR]).expanduser()
    data_home = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(data_home) / "rlvr" / "leaderboard.sqlite"


class ResultStore:
    """Benchmark results and their traces in a SQLite file. Use as a context manager."""

    def __init__(
        self, path: str | os.PathLike[str] | None = None, *, readonly: bool = False
    ) -> None:
        self.path = Path(path) if path is not None else default_db_path()
        self.readonly = readonly
        self._lock = threading.RLock()
        try:
            self._db = self._connect_readonly() if readonly else self._connect()
        except sqlite3.DatabaseError as exc:
            raise self._unreadable(exc) from None
        try:
            if readonly:
                self._check_schema()
            else:
                self._db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
                self._db.execute("PRAGMA foreign_keys = ON")
                self._retry_locked(self._init_schema)
        except sqlite3.DatabaseError as exc:  # "file is not a database", "... malformed"
            self._db.close()
            raise self._unreadable(exc) from None
        except BaseException:
            self._db.close()
            raise

    def _unreadable(self, exc: sqlite3.DatabaseError) -> StoreError:
        return StoreError(
            f"{self.path} is not a readable rlvr result store ({exc}): pass the right --db, "
            "or move the file away to start a new store there"
        )

    def _connect(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            return sqlite3.connect(
                self.path,
                timeout=BUSY_TIMEOUT_MS / 1000,
                isolation_level=None,
                check_same_thread=False,  # calls are serialised by self._lock
            )
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(
                f"cannot open the result store {self.path}: {exc}; pass another path with --db "
                f"or ${DB_ENV_VAR}"
            ) from None

    def _connect_readonly(self) -> sqlite3.Connection:
        if not self.path.is_file():
            raise StoreError(
                f"no result store at {self.path}: `rlvr bench` creates one; or pass the path of "
                f"yours with --db or ${DB_ENV_VAR}"
            )
        uri = self.path.resolve().as_uri()
        # In a read-only folder SQLite cannot create the WAL index beside the file; the file is
        # then opened as immutable (nobody can be writing to it from here either).
        for options in ("mode=ro", "immutable=1"):
            wal = self.path.with_name(self.path.name + "-wal")
            if options == "immutable=1" and wal.is_file() and wal.stat().st_size:
                raise StoreError(
                    f"{self.path} has writes not yet merged from {wal.name}, and its folder is "
                    "read-only so SQLite cannot read them: copy both files to a writable folder"
                )
            db = sqlite3.connect(
                f"{uri}?{options}",
                uri=True,
                timeout=BUSY_TIMEOUT_MS / 1000,
                isolation_level=None,
                check_same_thread=False,
            )
            try:
                db.execute("SELECT count(*) FROM sqlite_master").fetchone()
                return db
            except sqlite3.OperationalError as exc:
                db.close()
                if "unable to open" not in str(exc):
                    raise StoreError(f"cannot read the result store {self.path}: {exc}") from None
            except BaseException:
                db.close()
                raise
        raise StoreError(f"cannot read the result store {self.path}: check its permissions")

    def _check_schema(self) -> int:
        """The file's schema version; refuse files of newer versions and other programs."""
        # One statement, so one snapshot: another process may be creating the schema right now.
        version, names = self._db.execute(
            "SELECT (SELECT user_version FROM pragma_user_version), "
            "(SELECT json_group_array(name) FROM (SELECT name FROM sqlite_master "
            "WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name))"
        ).fetchone()
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} was written by a newer rlvr-gym (schema {version}, this one "
                f"reads {SCHEMA_VERSION}); upgrade rlvr-gym"
            )
        if version == 0:
            tables = json.loads(names)
            if tables:  # ours always has user_version >= 1 once it has tables
                raise StoreError(
                    f"{self.path} is a SQLite file of another program (tables {tables}), not an "
                    "rlvr result store: pass another path with --db"
                )
            if self.readonly:
                raise StoreError(
                    f"{self.path} holds no results yet: `rlvr bench --db {self.path}` adds some"
                )
        return version

    def _init_schema(self) -> None:
        self._check_schema()  # before switching the journal mode of someone else's file
        mode = self._db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if mode.lower() != "wal":
            raise StoreError(f"{self.path}: cannot switch to WAL mode (got {mode!r})")
        with self._write():
            self._check_schema()
            for statement in filter(str.strip, _SCHEMA.split(";")):  # executescript would COMMIT
                self._db.execute(statement)
            self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _retry_locked(self, action: Any) -> Any:
        # Switching a new file to WAL can report "locked" at once, without waiting on
        # busy_timeout: retry, within one busy timeout in all (not one per attempt).
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        attempt = 0
        while True:
            try:
                return action()
            except sqlite3.OperationalError as exc:
                attempt += 1
                if "locked" not in str(exc) or time.monotonic() >= deadline:
                    raise self._write_error(exc) from None
                time.sleep(min(0.05 * attempt, 1.0))

    def _write_error(self, exc: sqlite3.OperationalError) -> StoreError:
        if "locked" in str(exc):
            return StoreError(
                f"the result store {self.path} is locked by another program (waited "
                f"{BUSY_TIMEOUT_MS // 1000} s): let it finish, or pass another path with --db"
            )
        if "readonly" in str(exc).replace("-", "").replace(" ", ""):
            return StoreError(
                f"cannot write to the result store {self.path} ({exc}): pass a writable path "
                f"with --db or ${DB_ENV_VAR}"
            )
        return StoreError(f"cannot write to the result store {self.path}: {exc}")

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        if self.readonly:
            raise StoreError(f"{self.path} was opened read-only; open it without readonly=True")
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise self._write_error(exc) from None
            try:
                yield self._db
                self._db.execute("COMMIT")
            except BaseException as exc:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.OperationalError):  # disk full, I/O error, ...
                    raise self._write_error(exc) from None
                raise

    def _no_result(self, result_id: int) -> StoreError:
        return StoreError(
            f"no result {result_id} in {self.path}; `rlvr leaderboard list` shows the ids"
        )

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- writing ----------------------------------------------------------------------------------

    def add(self, result: BenchResult, *, supersedes: int | None = None) -> int:
        """Store `result` with its traces in one transaction; return its id (also set on it).

        `supersedes` marks an older result as replaced by this one (after re-verification).
        A result with a field out of range, traces that are not its suite's episodes or figures
        its traces do not give is refused (`InvalidResultError`), so every stored result can be
        ranked and shown.
        """
        record = result.to_record()
        check_result(result, record)
        with self._write() as db:
            result.id = self._insert(db, result, record, supersedes)
        return result.id

    def add_once(self, result: BenchResult, *, supersedes: int | None = None) -> tuple[int, bool]:
        """Like `add`, unless an identical result (the same record) is stored already: then
        nothing changes. Returns the id and whether it was added (importing twice is harmless)."""
        record = result.to_record()
        check_result(result, record)
        with self._write() as db:
            same = db.execute(
                "SELECT id FROM results WHERE suite = ? AND record = ? ORDER BY id LIMIT 1",
                (result.suite.name, json.dumps(record)),
            ).fetchone()
            added = same is None
            result.id = self._insert(db, result, record, supersedes) if added else int(same[0])
        return result.id, added

    def _insert(
        self,
        db: sqlite3.Connection,
        result: BenchResult,
        record: dict[str, Any],
        supersedes: int | None,
    ) -> int:
        cursor = db.execute(
            "INSERT INTO results (name, suite, suite_fingerprint, agent, score, ci_low, "
            "ci_high, created_at, reverified_from, record) VALUES (?,?,?,?,?,?,?,?,?,?)",
            (
                result.name,
                result.suite.name,
                record["suite_fingerprint"],
                result.agent.get("spec"),
                result.score,
                result.ci_low,
                result.ci_high,
                result.code.get("created_at", ""),
                result.reverified_from,
                json.dumps(record),
            ),
        )
        result_id = int(cursor.lastrowid or 0)
        db.executemany(
            "INSERT INTO traces VALUES (?,?,?,?,?,?,?,?,?,?)",
            (_trace_row(result_id, label, r) for label, rs in result.traces.items() for r in rs),
        )
        if supersedes is not None:
            _check_rejudging(db, result, supersedes)
            db.execute("UPDATE results SET superseded_by = ? WHERE id = ?", (result_id, supersedes))
        return result_id

    def delete(self, result_id: int) -> None:
        """Delete a result and its traces; the result it superseded (if any) is current again."""
        with self._write() as db:
            children = [
                row[0]
                for row in db.execute(
                    "SELECT id FROM results WHERE reverified_from = ? ORDER BY id", (result_id,)
                )
            ]
            if children:
                raise StoreError(
                    f"result {result_id} was re-judged as #{children[-1]}: delete that first "
                    f"(rlvr leaderboard delete {' '.join(map(str, children[::-1]))} {result_id} "
                    "deletes them all)"
                )
            db.execute(
                "UPDATE results SET superseded_by = NULL WHERE superseded_by = ?", (result_id,)
            )
            if db.execute("DELETE FROM results WHERE id = ?", (result_id,)).rowcount != 1:
                raise StoreError(f"no result {result_id} in {self.path}")

    # --- reading ----------------------------------------------------------------------------------

    def get(self, result_id: int, *, traces: bool = True) -> BenchResult:
        rows = self._query(
            "SELECT id, superseded_by, record FROM results WHERE id = ?", (result_id,)
        )
        row = rows[0] if rows else None
        if row is None:
            raise self._no_result(result_id)
        result = _from_row(row)
        if traces:
            result.traces = self.traces(result_id)
        return result

    def describe(self, result_id: int) -> str:
        """`#ID 'name' on suite S`, from the indexed columns (works on a damaged record too)."""
        rows = self._query("SELECT name, suite FROM results WHERE id = ?", (result_id,))
        if not rows:
            raise self._no_result(result_id)
        return f"#{result_id} {rows[0][0]!r} on suite {rows[0][1]}"

    def results(
        self,
        *,
        suite: str | None = None,
        include_superseded: bool = False,
        on_damaged: OnDamaged | None = None,
    ) -> list[BenchResult]:
        """Stored results (without traces), oldest first; a damaged row raises its `StoreError`,
        or with `on_damaged` is passed to it and left out."""
        query = "SELECT id, superseded_by, record FROM results"
        clauses, params = [], []
        if suite is not None:
            clauses.append("suite = ?")
            params.append(suite)
        if not include_superseded:
            clauses.append("superseded_by IS NULL")
        if clauses:
            query += " WHERE " + " AND ".join(clauses)
        rows = self._query(query + " ORDER BY id", params)
        return _readable(rows, _from_row, on_damaged)

    def suites(self) -> list[str]:
        return [row[0] for row in self._query("SELECT DISTINCT suite FROM results ORDER BY 1")]

    def traces(self, result_id: int) -> dict[str, list[EpisodeRecord]]:
        """The episodes of a result by env label, in (episode, sample) order."""
        rows = self._query(
            "SELECT env_label, record FROM traces WHERE result_id = ? "
            "ORDER BY env_label, episode, sample",
            (result_id,),
        )
        traces: dict[str, list[EpisodeRecord]] = {}
        for label, text in rows:
            traces.setdefault(label, []).append(_record(text, result_id, label))
        return traces

    def iter_traces(
        self, result_id: int, label: str, *, batch: int = 500
    ) -> Iterator[EpisodeRecord]:
        """The episodes of one env of a result, in (episode, sample) order, read `batch` at a
        time (memory stays flat however many episodes a result has)."""
        after = (-1, -1)
        while True:
            rows = self._query(
                "SELECT episode, sample, record FROM traces WHERE result_id = ? AND env_label = ? "
                "AND (episode, sample) > (?, ?) ORDER BY episode, sample LIMIT ?",
                (result_id, label, *after, batch),
            )
            for _, _, text in rows:
                yield _record(text, result_id, label)
            if len(rows) < batch:
                return
            after = (rows[-1][0], rows[-1][1])

    def count(self) -> int:
        return int(self._query("SELECT count(*) FROM results")[0][0])

    # --- arenas (multi-agent suites) -------------------------------------------------------------

    def add_arena(self, result: ArenaResult) -> int:
        """Store a head-to-head result (`rlvr.leaderboards.arena`); return its id (also set).
        One whose fields are out of range or whose ratings its games do not give is refused
        (`InvalidResultError`)."""
        check_arena(result)
        record = json.dumps(result.to_record())
        with self._write() as db:
            cursor = db.execute(
                "INSERT INTO arena_results (suite, suite_fingerprint, created_at, record) "
                "VALUES (?,?,?,?)",
                (result.suite.name, result.suite.fingerprint, result.created_at, record),
            )
            result.id = int(cursor.lastrowid or 0)
        return result.id

    def arena_results(
        self, *, suite: str | None = None, on_damaged: OnDamaged | None = None
    ) -> list[ArenaResult]:
        """Stored arena results, oldest first (none in a store written before arenas existed);
        a damaged row as in `results`."""
        query, params = "SELECT id, record FROM arena_results", []
        if suite is not None:
            query, params = query + " WHERE suite = ?", [suite]
        try:
            rows = self._query(query + " ORDER BY id", params)
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return []
            raise
        return _readable(rows, _arena_from_row, on_damaged)


def _readable(
    rows: Sequence[Any], read: Callable[[Any], Any], on_damaged: OnDamaged | None
) -> list[Any]:
    readable = []
    for row in rows:
        try:
            readable.append(read(row))
        except StoreError as exc:
            if on_damaged is None:
                raise
            on_damaged(exc)
    return readable


_DAMAGED = (ValueError, KeyError, TypeError, RecursionError)
"""What reading a row edited or damaged by hand raises (RecursionError: JSON nested too deep)."""


def _from_row(row: Sequence[Any]) -> BenchResult:
    result_id, superseded_by, text = row
    try:
        return BenchResult.from_record(json.loads(text), id=result_id, superseded_by=superseded_by)
    except _DAMAGED as exc:
        raise StoreError(
            f"result {result_id} is damaged in the store ({type(exc).__name__}: {exc}): remove "
            f"it with `rlvr leaderboard delete {result_id} --yes`"
        ) from None


def _arena_from_row(row: Sequence[Any]) -> ArenaResult:
    result_id, text = row
    try:
        return ArenaResult.from_record(json.loads(text), id=result_id)
    except _DAMAGED as exc:
        raise StoreError(
            f"arena result {result_id} is damaged in the store ({type(exc).__name__}: {exc}): "
            f"remove it with sqlite3 (DELETE FROM arena_results WHERE id = {result_id})"
        ) from None


def _check_rejudging(db: sqlite3.Connection, result: BenchResult, supersedes: int) -> None:
    """Refuse to let `result` hide result `supersedes` unless it is a re-judging of it: the
    current result it names as `reverified_from`, with the same name, agent and suite, and the
    same tasks and replies (a replay may drop replies an episode no longer wants, never change
    one). A side file naming any id could otherwise hide any result from the board."""
    row = db.execute(
        "SELECT superseded_by, record FROM results WHERE id = ?", (supersedes,)
    ).fetchone()
    if row is None:
        raise StoreError(f"no result {supersedes} to supersede")
    if row[0] is not None:
        raise InvalidResultError(f"result {supersedes} was already re-judged as #{row[0]}")
    if result.reverified_from != supersedes:
        raise InvalidResultError(
            f"only a re-judging of result {supersedes} may supersede it; this result says it "
            f"re-judges {result.reverified_from}"
        )
    old = _from_row((supersedes, None, row[1]))
    for what, mine, theirs in (
        ("name", result.name, old.name),
        ("agent", result.agent, old.agent),
        ("suite", result.suite.fingerprint(), old.suite.fingerprint()),
    ):
        if mine != theirs:
            raise InvalidResultError(f"a re-judging of result {supersedes} must keep its {what}")
    replayed = {
        (label, record.episode, record.sample): record
        for label, records in result.traces.items()
        for record in records
    }
    rows = db.execute(
        "SELECT env_label, episode, sample, record FROM traces WHERE result_id = ?", (supersedes,)
    )
    for label, episode, sample, text in rows:
        before, after = _record(text, supersedes, label), replayed.get((label, episode, sample))
        if after is None or after.task_id != before.task_id:
            raise InvalidResultError(
                f"a re-judging of result {supersedes} must replay its {label} episode {episode} "
                f"sample {sample}"
            )
        given = replies(after.messages)
        if given != replies(before.messages)[: len(given)]:
            raise InvalidResultError(
                f"a re-judging of result {supersedes} changed the replies of {label} episode "
                f"{episode} sample {sample}"
            )


def _record(text: str, result_id: int, label: str) -> EpisodeRecord:
    try:
        return episode_from_dict(json.loads(text))
    except _DAMAGED as exc:
        raise StoreError(
            f"result {result_id}: a stored episode of {label} is damaged ({type(exc).__name__}: "
            f"{exc}): remove the result with `rlvr leaderboard delete {result_id} --yes`"
        ) from None


def _trace_row(result_id: int, label: str, record: EpisodeRecord) -> tuple[Any, ...]:
    status = record.verdict.get("status") if record.verdict else None
    return (
        result_id,
        label,
        record.episode,
        record.sample,
        record.seed,
        record.task_id,
        record.total_reward,
        status,
        int(record.infra_error),
        json.dumps(episode_data(record)),
    )
