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
        ("uri", "file:...?mode=ro"). Answers ("started",) once the database is open and the
        query about to run (the query's time limit counts from there, not from our own setup),
        then ("ok", columns, rows) or ("error", kind, message) with kind one of FAILURE_KINDS;
        or ("need", key) at once when the worker no longer has the database.
    ("probe", key, source, full)
        Opens the database afresh and runs a trivial query (and `PRAGMA quick_check` when
        `full`): answers ("healthy",), ("broken", what failed) or ("need", key).

Whose fault a failed query is never rests on SQLite's message, which quotes the query's own
identifiers and strings (`SELECT * FROM "database is locked"`); see `classify`.
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
_DEADLINE_CHECK_ROWS = 256  # rows fetched between deadline checks
_HEADER = struct.Struct("<Q")

# SQLite's primary result codes (sqlite3.h). Python 3.11+ puts the extended code of each error
# on the exception (`sqlite_errorcode`; its low byte is the primary code): unlike the message,
# the query cannot write it.
SQLITE_INTERNAL, SQLITE_PERM, SQLITE_BUSY, SQLITE_LOCKED, SQLITE_READONLY = 2, 3, 5, 6, 8
SQLITE_IOERR, SQLITE_CORRUPT, SQLITE_FULL, SQLITE_CANTOPEN, SQLITE_PROTOCOL = 10, 11, 13, 14, 15
SQLITE_NOLFS, SQLITE_AUTH, SQLITE_NOTADB = 22, 23, 26
_REFUSED_CODES = frozenset({SQLITE_PERM, SQLITE_READONLY, SQLITE_AUTH})
# Codes a failing database or engine gives (a query on a healthy database can meet some too:
# a full disk under its temporary files): the database's health decides.
_ENGINE_CODES = frozenset({SQLITE_INTERNAL, SQLITE_BUSY, SQLITE_LOCKED, SQLITE_FULL,
                           SQLITE_CANTOPEN, SQLITE_PROTOCOL, SQLITE_NOLFS})  # fmt: skip
# Codes that say the stored data is bad: the health check reads every page.
_DATA_CODES = frozenset({SQLITE_IOERR, SQLITE_CORRUPT, SQLITE_NOTADB})
# Without a result code (an error the sqlite3 module raises itself, not SQLite) the type
# tells a little: these never come from a broken database. OperationalError (syntax errors as
# well as I/O errors) and plain DatabaseError (corruption) stay undecided.
_QUERY_ONLY_TYPES = (
    sqlite3.IntegrityError, sqlite3.DataError, sqlite3.ProgrammingError, sqlite3.InterfaceError,
    sqlite3.NotSupportedError, sqlite3.Warning,
)  # fmt: skip

# What a failed query was: the first five are final; "suspect" and "suspect_data" mean the
# engine gave an error a broken database could also give, and the caller decides by `probe`
# (the second with a full read of the database).
FAILURE_KINDS = ("timeout", "refused", "too_large", "query", "backend", "suspect", "suspect_data")
SUSPECT_KINDS = ("suspect", "suspect_data")


class Failure(Exception):
    """A query that did not produce a result: `kind` (one of FAILURE_KINDS) and a message."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


# --- the gate ---------------------------------------------------------------------------------


class _Gate:
    """The authorizer, which remembers whether it refused anything: a refusal is then known from
    our own record, not from the error message."""

    def __init__(self) -> None:
        self.refused = False

    def authorize(self, action: int, arg1, arg2, database, trigger) -> int:
        if action not in _ALLOWED_ACTIONS or (
            action == sqlite3.SQLITE_FUNCTION and str(arg2).lower() in _DENIED_FUNCTIONS
        ):
            self.refused = True
            return sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_OK


class GatedConnection(sqlite3.Connection):
    """A sqlite3 connection that carries its gate (None until `open_gated` installs it)."""

    gate: _Gate | None = None


def _connect(source: bytes | str) -> GatedConnection:
    """A connection to a fresh in-memory copy of an image (bytes), or to a file read-only in
    place (a "file:...?mode=ro" URI). Raises `sqlite3.Error`."""
    if isinstance(source, bytes):
        connection = sqlite3.connect(":memory:", check_same_thread=False, factory=GatedConnection)
        try:
            connection.deserialize(source)
        except BaseException:
            connection.close()
            raise
        return connection
    return sqlite3.connect(source, uri=True, check_same_thread=False, factory=GatedConnection)


def open_gated(source: bytes | str, max_value_bytes: int) -> GatedConnection:
    """A connection behind every gate: to a fresh in-memory copy of an image (bytes), or to a
    file opened read-only in place (a "file:...?mode=ro" URI). Raises `sqlite3.Error`."""
    connection = _connect(source)
    try:
        connection.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max_value_bytes)
        # Sorts, DISTINCT, GROUP BY, materialised subqueries and automatic indexes keep their
        # temporary b-trees in memory (capped in workers, `cap_sqlite_heap`): by default SQLite
        # spills them to files in /var/tmp, where one sort wrote a gigabyte in two seconds.
        connection.execute("PRAGMA temp_store = MEMORY")
        # query_only catches the writes no authorizer code covers (a bare REINDEX); the
        # authorizer denies every PRAGMA, so a query cannot switch it off again.
        connection.execute("PRAGMA query_only = ON")
        connection.gate = _Gate()
        connection.set_authorizer(connection.gate.authorize)
    except BaseException:
        connection.close()
        raise
    return connection


def value_size(value: object) -> int:
    """Approximate bytes a cell holds (for the result-size cap)."""
    if isinstance(value, (str, bytes)):
        return len(value) + 8
    return 8


def timeout_message(timeout_s: float) -> str:
    return f"the query ran past its time limit of {timeout_s:g} s"


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
    gate = getattr(connection, "gate", None)
    if gate is not None:
        gate.refused = False
    try:
        cursor = connection.execute(sql)
        columns = [description[0] for description in cursor.description or ()]
        rows: list[tuple] = []
        size = 0
        for row in cursor:  # row by row: a result past the caps stops at its first extra row
            rows.append(row)
            size += sum(value_size(value) for value in row)
            if len(rows) > max_rows:
                raise Failure(
                    "too_large",
                    f"the result has more than {max_rows} rows (capped); a query should return "
                    "the answer, not a table dump",
                )
            if size > max_result_bytes:
                raise Failure("too_large", f"the result is larger than {max_result_bytes} bytes")
            if len(rows) % _DEADLINE_CHECK_ROWS == 0 and time.monotonic() > deadline:
                raise Failure("timeout", timeout_message(timeout_s))
        return columns, rows
    except MemoryError:
        raise Failure("query", "the query ran out of memory") from None
    except (
        sqlite3.Error,
        sqlite3.Warning,
    ) as exc:  # Warning: the module refuses several statements
        timed_out = time.monotonic() > deadline
        refused = gate is not None and gate.refused
        raise classify(exc, timed_out=timed_out, refused=refused, timeout_s=timeout_s) from None


def result_code(exc: BaseException) -> int | None:
    """SQLite's primary result code of an error, when Python recorded it (3.11+)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def classify(exc: Exception, *, timed_out: bool, refused: bool, timeout_s: float) -> Failure:
    """What a query's error means, from facts the query cannot write: our own deadline, our
    authorizer's record, SQLite's result code, else the exception's type. Never from the
    message: it quotes the query's identifiers and strings. An error a broken database could
    also give comes back as a suspect, for the caller to settle by `probe`."""
    message = str(exc) or type(exc).__name__
    if timed_out:  # the progress handler interrupts only past our deadline
        return Failure("timeout", timeout_message(timeout_s))
    code = result_code(exc)
    if refused or code in _REFUSED_CODES:
        return Failure("refused", f"refused by the database: {message}")
    if code is None:
        if isinstance(exc, _QUERY_ONLY_TYPES):
            return Failure("query", message)
        return Failure("suspect_data" if type(exc) is sqlite3.DatabaseError else "suspect", message)
    if code in _DATA_CODES:
        return Failure("suspect_data", message)
    if code in _ENGINE_CODES:
        return Failure("suspect", message)
    return Failure("query", message)


def probe(source: bytes | str, full: bool) -> str | None:
    """None when the database opens afresh and answers a trivial query (and, when `full`,
    passes `PRAGMA quick_check`, which reads every page); else what failed. Only our own SQL
    runs here, so no gate."""
    try:
        connection = _connect(source)
    except (sqlite3.Error, MemoryError) as exc:
        return f"it cannot be opened ({exc})"
    try:
        connection.execute("SELECT count(*) FROM sqlite_master").fetchall()
        if full:
            found = [str(row[0]) for row in connection.execute("PRAGMA quick_check").fetchall()]
            if found != ["ok"]:
                return f"PRAGMA quick_check: {'; '.join(found[:3])}"
    except (sqlite3.Error, MemoryError) as exc:
        return f"a trivial query fails ({type(exc).__name__}: {exc})"
    finally:
        connection.close()
    return None


# --- the worker process -----------------------------------------------------------------------


def read_frame(stream) -> tuple:  # frames are tuples on both sides
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        raise EOFError
    (length,) = _HEADER.unpack(header)
    payload = stream.read(length)
    if len(payload) < length:
        raise EOFError
    return marshal.loads(payload)


def encode_frame(message: tuple) -> bytes:
    payload = marshal.dumps(message)
    return _HEADER.pack(len(payload)) + payload


class _Worker:
    def __init__(self, cache_bytes: int, max_value_bytes: int, send) -> None:
        self.cache_bytes = cache_bytes
        self.max_value_bytes = max_value_bytes
        self.send = send  # writes one message to the backend
        self.sources: OrderedDict[str, bytes | str] = OrderedDict()

    def handle(self, request: tuple) -> tuple:
        action, key, source = request[:3]
        if source is not None:
            self._remember(key, source[1])
        elif key not in self.sources:
            return ("need", key)
        self.sources.move_to_end(key)
        if action == "probe":
            problem = probe(self.sources[key], full=bool(request[3]))
            return ("healthy",) if problem is None else ("broken", problem)
        _, _, _, sql, timeout_s, max_rows, max_result_bytes = request
        try:
            connection = open_gated(self.sources[key], self.max_value_bytes)
        except (sqlite3.Error, MemoryError) as exc:  # before the query: ours
            return ("error", "backend", f"the database cannot be opened: {exc!r}")
        try:
            self.send(("started",))
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


def _cap_memory(limit: int) -> None:
    """Cap this process's address space: a query that builds huge rows then fails with
    MemoryError (its own fault) instead of growing until the kernel's OOM killer picks a
    process, perhaps not this one."""
    if limit <= 0:
        return
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    if soft == resource.RLIM_INFINITY or soft > limit:
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def cap_sqlite_heap(limit: int) -> None:
    """Cap the memory SQLite allocates in this process (`PRAGMA hard_heap_limit`, which holds
    for every connection, and which the authorizer keeps queries from changing): a query whose
    temporary storage would pass it fails with SQLITE_NOMEM (MemoryError, its own fault)."""
    if limit <= 0:
        return
    connection = sqlite3.connect(":memory:")
    try:
        connection.execute(f"PRAGMA hard_heap_limit = {int(limit)}")
    finally:
        connection.close()


def _writer(stream):
    def send(message: tuple) -> None:
        try:
            frame = encode_frame(message)
        except MemoryError:  # a result too big to encode under the memory cap
            frame = encode_frame(("error", "query", "the query ran out of memory"))
        except ValueError:  # marshal cannot write a value (it always can for SQLite's types)
            frame = encode_frame(("error", "backend", "the result could not be sent"))
        stream.write(frame)
        stream.flush()

    return send


def main(argv: list[str]) -> None:
    parent, cache_bytes, max_value_bytes, memory_bytes, heap_bytes = (int(arg) for arg in argv[1:6])
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True).start()
    _cap_memory(memory_bytes)
    cap_sqlite_heap(heap_bytes)
    send = _writer(sys.stdout.buffer)
    worker = _Worker(cache_bytes, max_value_bytes, send)
    stdin = sys.stdin.buffer
    while True:
        try:
            request = read_frame(stdin)
        except (EOFError, OSError, ValueError):
            return
        except MemoryError:  # a database image too big for the memory cap: ours
            send(("error", "backend", "the SQLite worker has no memory for the database"))
            return  # the rest of the frame is still in the pipe
        try:
            response = worker.handle(request)
        except MemoryError:  # run_query answers for the query's own: this is ours
            response = ("error", "backend", "the SQLite worker ran out of memory")
        except Exception as exc:  # our bug: report it as such rather than die silently
            response = ("error", "backend", f"the SQLite worker failed: {type(exc).__name__}")
        send(response)


if __name__ == "__main__":
    main(sys.argv)
