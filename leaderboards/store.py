"""The result store: one SQLite file, safe for several processes writing at once.

Concurrency: the file is in WAL mode (readers never block the writer) and every write is one
`BEGIN IMMEDIATE` transaction holding a whole result with its traces, so a reader sees a result
entirely or not at all; a writer that finds the lock taken waits (`busy_timeout`) instead of
failing. WAL needs a local file system (not NFS), like SQLite itself.

The path is `--db PATH`, else `$RLVR_LEADERBOARD_DB`, else
`$XDG_DATA_HOME/rlvr/leaderboard.sqlite` (`~/.local/share/rlvr/leaderboard.sqlite`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rlvr.agents.evaluate import EpisodeRecord
from rlvr.leaderboards.errors import StoreError
from rlvr.leaderboards.results import BenchResult

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
"""

_RECORD_FIELDS = tuple(f.name for f in dataclasses.fields(EpisodeRecord))


def default_db_path() -> Path:
    """`$RLVR_LEADERBOARD_DB`, else the rlvr folder of the XDG data directory."""
    if os.environ.get(DB_ENV_VAR):
        return Path(os.environ[DB_ENV_VAR]).expanduser()
    data_home = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(data_home) / "rlvr" / "leaderboard.sqlite"


class ResultStore:
    """Benchmark results and their traces in a SQLite file. Use as a context manager."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else default_db_path()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None
            )
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(
                f"cannot open the result store {self.path}: {exc}; pass another path with --db "
                f"or ${DB_ENV_VAR}"
            ) from None
        self._db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        self._db.execute("PRAGMA foreign_keys = ON")
        self._retry_locked(self._init_schema)

    def _init_schema(self) -> None:
        mode = self._db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if mode.lower() != "wal":
            raise StoreError(f"{self.path}: cannot switch to WAL mode (got {mode!r})")
        with self._write():
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path} was written by a newer rlvr-gym (schema {version}, this one "
                    f"reads {SCHEMA_VERSION}); upgrade rlvr-gym"
                )
            for statement in filter(str.strip, _SCHEMA.split(";")):  # executescript would COMMIT
                self._db.execute(statement)
            self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _retry_locked(self, action: Any, attempts: int = 50) -> Any:
        # Switching a new file to WAL can report "locked" at once, without waiting on busy_timeout.
        for attempt in range(attempts):
            try:
                return action()
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or attempt == attempts - 1:
                    raise StoreError(f"{self.path}: {exc}") from None
                time.sleep(0.05 * (attempt + 1))
        return None

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- writing ----------------------------------------------------------------------------------

    def add(self, result: BenchResult, *, supersedes: int | None = None) -> int:
        """Store `result` with its traces in one transaction; return its id (also set on it).

        `supersedes` marks an older result as replaced by this one (after re-verification).
        """
        record = result.to_record()
        with self._write() as db:
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
                (
                    _trace_row(result_id, label, r)
                    for label, rs in result.traces.items()
                    for r in rs
                ),
            )
            if supersedes is not None:
                updated = db.execute(
                    "UPDATE results SET superseded_by = ? WHERE id = ?", (result_id, supersedes)
                )
                if updated.rowcount != 1:
                    raise StoreError(f"no result {supersedes} to supersede")
        result.id = result_id
        return result_id

    def delete(self, result_id: int) -> None:
        with self._write() as db:
            db.execute(
                "UPDATE results SET superseded_by = NULL WHERE superseded_by = ?", (result_id,)
            )
            if db.execute("DELETE FROM results WHERE id = ?", (result_id,)).rowcount != 1:
                raise StoreError(f"no result {result_id} in {self.path}")

    # --- reading ----------------------------------------------------------------------------------

    def get(self, result_id: int, *, traces: bool = True) -> BenchResult:
        row = self._db.execute(
            "SELECT id, superseded_by, record FROM results WHERE id = ?", (result_id,)
        ).fetchone()
        if row is None:
            raise StoreError(
                f"no result {result_id} in {self.path}; `rlvr leaderboard list` shows the ids"
            )
        result = _from_row(row)
        if traces:
            result.traces = self.traces(result_id)
        return result

    def results(
        self, *, suite: str | None = None, include_superseded: bool = False
    ) -> list[BenchResult]:
        """Stored results (without traces), oldest first."""
        query = "SELECT id, superseded_by, record FROM results"
        clauses, params = [], []
        if suite is not None:
            clauses.append("suite = ?")
            params.append(suite)
        if not include_superseded:
            clauses.append("superseded_by IS NULL")
        if clauses:
            query += " WHERE " + " AND ".join(clauses)
        rows = self._db.execute(query + " ORDER BY id", params).fetchall()
        return [_from_row(row) for row in rows]

    def suites(self) -> list[str]:
        return [row[0] for row in self._db.execute("SELECT DISTINCT suite FROM results ORDER BY 1")]

    def traces(self, result_id: int) -> dict[str, list[EpisodeRecord]]:
        """The episodes of a result by env label, in (episode, sample) order."""
        rows = self._db.execute(
            "SELECT env_label, record FROM traces WHERE result_id = ? "
            "ORDER BY env_label, episode, sample",
            (result_id,),
        )
        traces: dict[str, list[EpisodeRecord]] = {}
        for label, text in rows:
            data = json.loads(text)
            traces.setdefault(label, []).append(
                EpisodeRecord(**{key: data[key] for key in _RECORD_FIELDS if key in data})
            )
        return traces

    def count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM results").fetchone()[0])


def _from_row(row: Sequence[Any]) -> BenchResult:
    result_id, superseded_by, text = row
    return BenchResult.from_record(json.loads(text), id=result_id, superseded_by=superseded_by)


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
        json.dumps(record.to_dict()),
    )
