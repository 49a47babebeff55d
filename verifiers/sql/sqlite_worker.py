"""The SQLite gate, and the worker process that runs untrusted queries behind it.

Standard library only: `SQLiteBackend` starts this file as its own script (`python -I -S
sqlite_worker.py`), so a worker starts in tens of milliseconds and inherits neither our
environment variables nor our imports.

Why a process: SQLite checks its time limit (the progress handler) between virtual-machine
instructions, and several built-in functions loop inside one instruction in time that grows with
the product of their arguments' lengths (`ltrim(x, y)`, `LIKE`/`GLOB` with a long pattern,
`printf('%.*c', n, ...)`): one call can run for hours and nothing inside SQLite can stop it. The
backend kills the worker when it overruns its deadline, which stops anything.

Protocol (stdin/stdout, frames of an 8-byte little-endian length and a `marshal` payload, plain
data only, so neither side can make the other run code):
    ("run", key, source, sql, timeout_s, max_rows, max_result_bytes)
        source is None when the worker was sent this database before, else ("image", bytes) or
        ("uri", "file:...?mode=ro"). Answers ("ok", columns, rows), ("error", kind, message)
        with kind one of FAILURE_KINDS, or ("need", key) when the worker no longer has it.
"""

from __future__ import annotations

import marshal
import os
import sqlite3
import struct
import sys
import threading
import time
from collections import OrderedDict

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
FAILURE_KINDS = ("timeout", "refused", "too_large", "query", "backend")
_HEADER = struct.Struct("<Q")


class Failure(Exception):
    """A query that did not produce a result: `kind` (one of FAILURE_KINDS) and a message."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


# --- the gate ---------------------------------------------------------------------------------


def _authorize(action: int, arg1, arg2, database, trigger) -> int:
    if action not in _ALLOWED_ACTIONS:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and str(arg2).lower() in _DENIED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def open_gated(source: bytes | str, max_value_bytes: int) -> sqlite3.Connection:
    """A connection behind every gate: to a fresh in-memory copy of an image (bytes), or to a
    file opened read-only in place (a "file:...?mode=ro" URI). Raises `sqlite3.Error`."""
    if isinstance(source, bytes):
        connection = sqlite3.connect(":memory:", check_same_thread=False)
        try:
            connection.deserialize(source)
        except BaseException:
            connection.close()
            raise
    else:
        connection = sqlite3.connect(source, uri=True, check_same_thread=False)
    connection.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max_value_bytes)
    # query_only catches the writes no authorizer code covers (a bare REINDEX); the authorizer
    # denies every PRAGMA, so a query cannot switch it off again.
    connection.execute("PRAGMA query_only = ON")
    connection.set_authorizer(_authorize)
    return connection


def value_size(value: object) -> int:
    """Approximate bytes a cell holds (for the result-size cap)."""
    if isinstance(value, (str, bytes)):
        return len(value) + 8
    return 8


def run_query(
    connection: sqlite3.Connection,
    sql: str,
    timeout_s: float,
    max_rows: int,
    max_result_bytes: int,
) -> tuple[list[str], list[tuple]]:
    """Run `sql` on a gated connection under the limits; raises `Failure`."""
    deadline = time.monotonic() + timeout_s
    connection.set_progress_handler(lambda: time.monotonic() > deadline, _PROGRESS_STEPS)
    try:
        cursor = connection.execute(sql)
        columns = [description[0] for description in cursor.description or ()]
        rows: list[tuple] = []
        size = 0
        while True:
            batch = cursor.fetchmany(_FETCH_BATCH)
            if not batch:
                break
            rows.extend(batch)
            size += sum(value_size(value) for row in batch for value in row)
            if len(rows) > max_rows:
                raise Failure(
                    "too_large",
                    f"the result has more than {max_rows} rows (capped); a query should return "
                    "the answer, not a table dump",
                )
            if size > max_result_bytes:
                raise Failure("too_large", f"the result is larger than {max_result_bytes} bytes")
            if time.monotonic() > deadline:
                raise Failure("timeout", f"the query ran past its time limit of {timeout_s:g} s")
        return columns, rows
    except sqlite3.Error as exc:
        raise classify(exc, timed_out=time.monotonic() > deadline, timeout_s=timeout_s) from None
    except MemoryError:
        raise Failure("query", "the query ran out of memory") from None


def classify(exc: sqlite3.Error, *, timed_out: bool, timeout_s: float) -> Failure:
    message = str(exc)
    lowered = message.lower()
    if timed_out or lowered == "interrupted":
        return Failure("timeout", f"the query ran past its time limit of {timeout_s:g} s")
    if any(marker in lowered for marker in ("not authorized", "authorization denied", "readonly")):
        return Failure("refused", f"refused by the database: {message}")
    if any(marker in lowered for marker in _INFRA_MESSAGES):
        return Failure("backend", f"the database failed: {message}")
    return Failure("query", message)


# --- the worker process -----------------------------------------------------------------------


def read_frame(stream) -> object:
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        raise EOFError
    (length,) = _HEADER.unpack(header)
    payload = stream.read(length)
    if len(payload) < length:
        raise EOFError
    return marshal.loads(payload)


def encode_frame(message: object) -> bytes:
    payload = marshal.dumps(message)
    return _HEADER.pack(len(payload)) + payload


class _Worker:
    def __init__(self, cache_bytes: int, max_value_bytes: int) -> None:
        self.cache_bytes = cache_bytes
        self.max_value_bytes = max_value_bytes
        self.sources: OrderedDict[str, bytes | str] = OrderedDict()

    def handle(self, request: tuple) -> tuple:
        _, key, source, sql, timeout_s, max_rows, max_result_bytes = request
        if source is not None:
            self._remember(key, source[1])
        elif key not in self.sources:
            return ("need", key)
        self.sources.move_to_end(key)
        try:
            connection = open_gated(self.sources[key], self.max_value_bytes)
        except sqlite3.Error as exc:
            return ("error", "backend", f"the database cannot be opened: {exc}")
        try:
            columns, rows = run_query(connection, sql, timeout_s, max_rows, max_result_bytes)
        except Failure as failure:
            return ("error", failure.kind, str(failure))
        finally:
            connection.close()
        return ("ok", columns, rows)

    def _remember(self, key: str, source: bytes | str) -> None:
        self.sources[key] = source
        while len(self.sources) > 1 and self._cached_bytes() > self.cache_bytes:
            self.sources.popitem(last=False)

    def _cached_bytes(self) -> int:
        return sum(len(s) for s in self.sources.values() if isinstance(s, bytes))


def _exit_with_parent(parent: int) -> None:
    """Leave when the parent dies, even while a query is stuck inside SQLite (sqlite3 releases
    the GIL while it steps, so this thread still runs)."""
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(0)


def main(argv: list[str]) -> None:
    parent, cache_bytes, max_value_bytes = (int(arg) for arg in argv[1:4])
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True).start()
    worker = _Worker(cache_bytes, max_value_bytes)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            request = read_frame(stdin)
        except (EOFError, OSError, ValueError):
            return
        try:
            response = worker.handle(request)
        except MemoryError:
            response = ("error", "query", "the query ran out of memory")
        except Exception as exc:  # our bug: report it as such rather than die silently
            response = ("error", "backend", f"the SQLite worker failed: {type(exc).__name__}")
        try:
            frame = encode_frame(response)
        except ValueError:  # marshal cannot write a value (it always can for SQLite's types)
            frame = encode_frame(("error", "backend", "the result could not be sent"))
        stdout.write(frame)
        stdout.flush()


if __name__ == "__main__":
    main(sys.argv)
