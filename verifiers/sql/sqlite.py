"""The SQLite backend: each query runs on its own pristine in-memory copy of the database.

Safety does not rest on sqlglot alone. Every connection gets

- an authorizer callback that allows reading tables, calling ordinary functions and recursive
  CTEs, and denies everything else at prepare time (a `mode=ro` connection would still allow
  ATTACH, VACUUM INTO and CREATE TEMP TABLE; PRAGMA could switch `query_only` off);
- `PRAGMA query_only` (for the few writes no authorizer code covers, like a bare REINDEX);
- limits of 0 attached databases and of `max_value_bytes` per string or blob;
- a progress handler that interrupts the query at its deadline (SQLite has no statement timeout).

Small databases (below `copy_limit_bytes`) are kept as a serialized image and deserialized into a
fresh `:memory:` connection for each query, so nothing a query could do survives it. Larger files
are opened read-only in place, behind the same gates.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections import OrderedDict
from pathlib import Path

from rlvr.verifiers.sql.backend import Limits
from rlvr.verifiers.sql.database import Database, DatabaseSource, SQLiteFile, quote_identifier
from rlvr.verifiers.sql.errors import (
    BackendError,
    QueryError,
    QueryRefused,
    QueryTimeout,
    ResultTooLarge,
)
from rlvr.verifiers.sql.guard import CheckedQuery
from rlvr.verifiers.sql.results import QueryResult, cell_size, normalize_cell

_ALLOWED_ACTIONS = frozenset(
    {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, 33}  # 33: RECURSIVE
)
_DENIED_FUNCTIONS = frozenset({"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"})
_PROGRESS_STEPS = 1_000  # VM instructions between deadline checks (a few microseconds)
_FETCH_BATCH = 256
# Error messages that mean the database itself is broken, not the query.
_INFRA_MESSAGES = (
    "file is not a database", "database disk image is malformed", "unable to open database",
    "disk i/o error", "database is locked",
)  # fmt: skip


def _authorize(action: int, arg1, arg2, database, trigger) -> int:
    if action not in _ALLOWED_ACTIONS:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and str(arg2).lower() in _DENIED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


class SQLiteBackend:
    """Runs queries with Python's built-in sqlite3.

    Arguments:
        copy_limit_bytes: databases up to this size are copied into memory for every query;
            larger files are opened read-only in place.
        cache_bytes: total size of database images kept between queries (least recently used
            images are dropped first).
        max_value_bytes: longest string or blob a query may build (SQLITE_LIMIT_LENGTH).
    """

    name = "sqlite"
    dialect = "sqlite"

    def __init__(
        self,
        *,
        copy_limit_bytes: int = 256 << 20,
        cache_bytes: int = 1 << 30,
        max_value_bytes: int = 1 << 20,
    ) -> None:
        self.copy_limit_bytes = copy_limit_bytes
        self.cache_bytes = cache_bytes
        self.max_value_bytes = max_value_bytes
        self._images: OrderedDict[str, bytes | Path] = OrderedDict()
        self._lock = threading.Lock()

    # --- the Backend protocol ---------------------------------------------------------------------

    def execute(self, database: DatabaseSource, query: CheckedQuery, limits: Limits) -> QueryResult:
        sql = query.text if query.dialect == self.dialect else query.transpile(self.dialect)
        return self.run_sql(database, sql, limits)

    def close(self) -> None:
        with self._lock:
            self._images.clear()

    # --- running ----------------------------------------------------------------------------------

    def run_sql(self, database: DatabaseSource, sql: str, limits: Limits) -> QueryResult:
        """Run `sql` behind the gates (the text is not checked by sqlglot here)."""
        connection = self.connect(database)
        deadline = time.monotonic() + limits.timeout_s
        connection.set_progress_handler(lambda: time.monotonic() > deadline, _PROGRESS_STEPS)
        try:
            cursor = connection.execute(sql)
            return _fetch(cursor, limits, deadline)
        except sqlite3.Error as exc:
            raise _classify(exc, timed_out=time.monotonic() > deadline, limits=limits) from None
        finally:
            connection.close()

    def connect(self, database: DatabaseSource) -> sqlite3.Connection:
        """A fresh gated connection to a pristine copy of `database` (or the file read-only)."""
        image = self._image(database)
        try:
            if isinstance(image, bytes):
                connection = sqlite3.connect(":memory:", check_same_thread=False)
                connection.deserialize(image)
            else:
                connection = SQLiteFile(database.id, image).connect()
        except sqlite3.Error as exc:
            raise BackendError(f"database {database.id!r} cannot be opened: {exc}") from None
        connection.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, self.max_value_bytes)
        # query_only catches the writes no authorizer code covers (a bare REINDEX); the authorizer
        # denies every PRAGMA, so a query cannot switch it off again.
        connection.execute("PRAGMA query_only = ON")
        connection.set_authorizer(_authorize)
        return connection

    def _image(self, database: DatabaseSource) -> bytes | Path:
        key = database.fingerprint
        with self._lock:
            if key in self._images:
                self._images.move_to_end(key)
                return self._images[key]
        image = _build_image(database, self.copy_limit_bytes)
        with self._lock:
            self._images[key] = image
            while len(self._images) > 1 and self._cached_bytes() > self.cache_bytes:
                self._images.popitem(last=False)
        return image

    def _cached_bytes(self) -> int:
        return sum(len(image) for image in self._images.values() if isinstance(image, bytes))

    def __repr__(self) -> str:
        return f"SQLiteBackend({len(self._images)} databases cached)"


def _build_image(database: DatabaseSource, copy_limit_bytes: int) -> bytes | Path:
    if isinstance(database, SQLiteFile):
        try:
            size = database.path.stat().st_size
        except OSError as exc:
            raise BackendError(f"database {database.id!r}: {exc}") from None
        if size > copy_limit_bytes:
            return database.path
        source = database.connect()
        try:
            return source.serialize()
        except sqlite3.Error as exc:
            raise BackendError(f"database {database.id!r} cannot be read: {exc}") from None
        finally:
            source.close()
    if isinstance(database, Database):
        return _serialize_database(database)
    raise BackendError(f"unsupported database object {type(database).__name__}")


def _serialize_database(database: Database) -> bytes:
    connection = sqlite3.connect(":memory:")
    try:
        for table, statement in zip(database.tables, database.create_statements("sqlite")):
            connection.execute(statement)
            if table.rows:
                marks = ", ".join("?" * len(table.columns))
                connection.executemany(
                    f"INSERT INTO {quote_identifier(table.name)} VALUES ({marks})", table.rows
                )
        connection.commit()
        return connection.serialize()
    except sqlite3.Error as exc:
        raise BackendError(f"database {database.id!r} cannot be built in SQLite: {exc}") from None
    finally:
        connection.close()


def _fetch(cursor: sqlite3.Cursor, limits: Limits, deadline: float) -> QueryResult:
    columns = tuple(description[0] for description in cursor.description or ())
    rows: list[tuple] = []
    size = 0
    while True:
        batch = cursor.fetchmany(_FETCH_BATCH)
        if not batch:
            break
        for row in batch:
            normalized = tuple(normalize_cell(value) for value in row)
            rows.append(normalized)
            size += sum(cell_size(value) for value in normalized)
        if len(rows) > limits.max_rows:
            raise ResultTooLarge(
                f"the result has more than {limits.max_rows} rows (capped); a query should "
                "return the answer, not a table dump"
            )
        if size > limits.max_result_bytes:
            raise ResultTooLarge(f"the result is larger than {limits.max_result_bytes} bytes")
        if time.monotonic() > deadline:
            raise QueryTimeout(f"the query ran past its time limit of {limits.timeout_s:g} s")
    return QueryResult(columns, tuple(rows))


def _classify(exc: sqlite3.Error, *, timed_out: bool, limits: Limits) -> Exception:
    message = str(exc)
    lowered = message.lower()
    if timed_out or lowered == "interrupted":
        return QueryTimeout(f"the query ran past its time limit of {limits.timeout_s:g} s")
    if any(marker in lowered for marker in ("not authorized", "authorization denied", "readonly")):
        return QueryRefused(f"refused by the database: {message}")
    if any(marker in lowered for marker in _INFRA_MESSAGES):
        return BackendError(f"the database failed: {message}")
    return QueryError(message)
