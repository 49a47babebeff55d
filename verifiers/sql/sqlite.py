"""The SQLite backend: each query runs on its own pristine in-memory copy of the database, in a
worker process that is killed if the query overruns its time limit.

Safety does not rest on sqlglot alone. Every connection gets (`sqlite_worker.open_gated`)

- an authorizer callback that allows reading tables, calling ordinary functions and recursive
  CTEs, and denies everything else at prepare time (a `mode=ro` connection would still allow
  ATTACH, VACUUM INTO and CREATE TEMP TABLE; PRAGMA could switch `query_only` off);
- `PRAGMA query_only` (for the few writes no authorizer code covers, like a bare REINDEX);
- limits of 0 attached databases and of `max_value_bytes` per string or blob;
- `PRAGMA temp_store = MEMORY`: sorts, DISTINCT, GROUP BY and materialised subqueries never
  write temporary files to the host's disk; in workers SQLite's heap is capped (`temp_bytes`
  past the largest in-memory copy), so a query that needs more fails as out of memory, its fault;
- a progress handler that interrupts the query at its deadline (SQLite has no statement timeout).

The progress handler runs between VM instructions only, and some built-in functions spend hours
inside one (`ltrim(x, y)` on long strings is quadratic), so queries run in worker processes
(`sqlite_worker.py`, standard library only) and a worker still busy `kill_grace_s` after the
deadline is killed: the query scores a timeout and nothing keeps running.

Small databases (below `copy_limit_bytes`) are kept as a serialized image and deserialized into a
fresh `:memory:` connection for each query, so nothing a query could do survives it. Larger files
are opened read-only in place, behind the same gates.

Whose fault a failure is rests on facts a reply cannot write (see `sqlite_worker.classify`):
SQLite's result code or the exception's type, our authorizer's record, our own timers (which
start when the worker begins the query, not while it starts or loads the database), and how
our worker process ended. An error a broken database could also cause, or a worker that
crashed, is settled by opening the database afresh (`check_health`): a query that fails on a healthy
database is the query's fault.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import weakref
from collections import OrderedDict
from pathlib import Path

from rlvr._shared import Owner
from rlvr.verifiers.sql import sqlite_worker
from rlvr.verifiers.sql.backend import Limits
from rlvr.verifiers.sql.database import Database, DatabaseSource, SQLiteFile, quote_identifier
from rlvr.verifiers.sql.errors import (
    BackendError,
    QueryError,
    QueryRefused,
    QueryTimeout,
    ResultTooLarge,
    VerifierConfigError,
)
from rlvr.verifiers.sql.guard import CheckedQuery
from rlvr.verifiers.sql.results import QueryResult

_FAILURES = {
    "timeout": QueryTimeout,
    "refused": QueryRefused,
    "too_large": ResultTooLarge,
    "query": QueryError,
    "backend": BackendError,
}
# Our own work in a worker (starting, loading a database, a health check) gets this long.
OWN_WORK_TIMEOUT_S = 120.0
# Deaths a process brings on itself (a fault inside SQLite, an abort on exhausted memory), as
# opposed to being killed (SIGKILL, SIGTERM: our timer, the OOM killer, an operator).
_CRASH_SIGNALS = frozenset({signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT, signal.SIGFPE,
                            signal.SIGILL, signal.SIGTRAP, signal.SIGSYS})  # fmt: skip


class WorkerDied(BackendError):
    """A worker process ended while it had our request (`status`: its exit status)."""

    def __init__(self, status: int | None) -> None:
        super().__init__(f"the SQLite worker process died (exit status {status})")
        self.status = status

    @property
    def crash_signal(self) -> int | None:
        """The signal the process brought on itself (a fault, an abort), if that is how it died."""
        if self.status is not None and -self.status in _CRASH_SIGNALS:
            return -self.status
        return None


class SQLiteBackend:
    """Runs queries with Python's built-in sqlite3.

    Arguments:
        copy_limit_bytes: databases up to this size are copied into memory for every query;
            larger files are opened read-only in place.
        cache_bytes: total size of database images kept between queries (least recently used
            images are dropped first), here and in each worker process.
        max_value_bytes: longest string or blob a query may build (SQLITE_LIMIT_LENGTH).
        isolate: run queries in worker processes (the default; needed for untrusted SQL). False
            runs them in this process, where a pathological query cannot be stopped: only for
            trusted queries, such as a task generator's own gold queries.
        kill_grace_s: how long past its time limit a query may run before its worker is killed.
        worker_memory_bytes: address-space cap of each worker process (a query that needs more
            fails with "out of memory"); default: cache_bytes + 3 * copy_limit_bytes + 2 GiB.
            0 leaves workers uncapped.
        temp_bytes: temporary storage of one query (sorts, DISTINCT, GROUP BY, materialised
            subqueries, automatic indexes), which is kept in memory, never on disk. Workers cap
            SQLite's heap at copy_limit_bytes + temp_bytes (the database's in-memory copy and
            the query's temporary storage together; a smaller database leaves the query the
            difference too); a query that needs more fails with "out of memory", its own fault.
            Not capped with `isolate=False` (the cap is per process).
    """

    name = "sqlite"
    dialect = "sqlite"

    def __init__(
        self,
        *,
        copy_limit_bytes: int = 256 << 20,
        cache_bytes: int = 1 << 30,
        max_value_bytes: int = 1 << 20,
        isolate: bool = True,
        kill_grace_s: float = 1.0,
        worker_memory_bytes: int | None = None,
        temp_bytes: int = 256 << 20,
    ) -> None:
        if temp_bytes < 1:
            raise VerifierConfigError(f"temp_bytes must be at least 1 byte, got {temp_bytes!r}")
        self.heap_bytes = copy_limit_bytes + temp_bytes
        if worker_memory_bytes is None:
            worker_memory_bytes = cache_bytes + 3 * copy_limit_bytes + (2 << 30)
        self.worker_memory_bytes = worker_memory_bytes
        self.copy_limit_bytes = copy_limit_bytes
        self.cache_bytes = cache_bytes
        self.max_value_bytes = max_value_bytes
        self.isolate = isolate
        self.kill_grace_s = kill_grace_s
        self._images: OrderedDict[str, bytes | Path] = OrderedDict()
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._workers: set[_Worker] = set()  # every live worker, stopped with the backend
        weakref.finalize(self, _stop_all, self._workers)

    # --- the Backend protocol ---------------------------------------------------------------------

    def execute(self, database: DatabaseSource, query: CheckedQuery, limits: Limits) -> QueryResult:
        sql = query.text if query.dialect == self.dialect else query.transpile(self.dialect)
        return self.run_sql(database, sql, limits)

    def close(self) -> None:
        """Drop the cached images and stop the worker processes (a later query starts anew)."""
        with self._lock:
            self._images.clear()
            idle, self._idle = self._idle, []
            self._workers.difference_update(idle)
        for worker in idle:
            worker.stop()

    # --- running ----------------------------------------------------------------------------------

    def run_sql(self, database: DatabaseSource, sql: str, limits: Limits) -> QueryResult:
        """Run `sql` behind the gates (the text is not checked by sqlglot here)."""
        if not self.isolate:
            return self._run_here(database, sql, limits)

        def run(worker: _Worker, key: str, image: bytes | Path) -> tuple:
            return worker.run(key, image, sql, limits, self.kill_grace_s)

        try:
            answer = self._in_worker(database, run)
        except WorkerDied as died:
            if died.crash_signal is None:  # killed from outside (our timer is handled inside): ours
                raise
            crash = f"the query crashed the SQLite engine (signal {died.crash_signal})"
            answer = ("error", "suspect_data", crash)
        if answer[0] == "ok":
            return QueryResult(tuple(answer[1]), tuple(tuple(row) for row in answer[2]))
        raise self._failure(database, answer[1], answer[2])

    def _run_here(self, database: DatabaseSource, sql: str, limits: Limits) -> QueryResult:
        connection = self.connect(database)
        try:
            columns, rows = sqlite_worker.run_query(
                connection, sql, limits.timeout_s, limits.max_rows, limits.max_result_bytes
            )
        except sqlite_worker.Failure as failure:
            raise self._failure(database, failure.kind, str(failure)) from None
        finally:
            connection.close()
        return QueryResult(tuple(columns), tuple(rows))

    def _failure(self, database: DatabaseSource, kind: str, message: str) -> Exception:
        """The exception for a failed query; a suspect error is the query's own unless the
        database turns out broken."""
        if kind in sqlite_worker.SUSPECT_KINDS:
            problem = self.check_health(database, full=kind == "suspect_data")
            if problem is None:
                return QueryError(message)
            return BackendError(f"database {database.id!r} is broken: {problem}")
        return _FAILURES[kind](message)

    def check_health(self, database: DatabaseSource, *, full: bool = False) -> str | None:
        """None when `database` opens afresh and answers a trivial query (with `full`, also
        `PRAGMA quick_check`, which reads every page); else what failed."""
        if not self.isolate:
            return sqlite_worker.probe(_source(database, self._image(database)), full)
        answer = self._in_worker(
            database, lambda worker, key, image: worker.probe(key, image, full)
        )
        return None if answer[0] == "healthy" else str(answer[1])

    def _in_worker(self, database: DatabaseSource, call) -> tuple:
        """`call(worker, key, image)` on an idle (or new) worker, which goes back to the pool
        unless the call failed."""
        image = self._image(database)
        worker = self._acquire()
        healthy = False
        try:
            answer = call(worker, database.fingerprint, image)
            healthy = True
        finally:
            self._release(worker, healthy)
        return answer

    def connect(self, database: DatabaseSource) -> sqlite3.Connection:
        """A fresh gated connection, in this process, to a pristine copy of `database` (or the
        file read-only). It has no time limit a stuck function cannot escape: for trusted SQL."""
        try:
            return sqlite_worker.open_gated(_source(database, self._image(database)),
                                            self.max_value_bytes)  # fmt: skip
        except sqlite3.Error as exc:
            raise BackendError(f"database {database.id!r} cannot be opened: {exc}") from None

    # --- worker processes -------------------------------------------------------------------------

    def _acquire(self) -> _Worker:
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.usable():
                    return worker
                self._workers.discard(worker)
        worker = _Worker(
            self.cache_bytes, self.max_value_bytes, self.worker_memory_bytes, self.heap_bytes
        )
        with self._lock:
            self._workers.add(worker)
        return worker

    def _release(self, worker: _Worker, healthy: bool) -> None:
        with self._lock:
            if healthy and worker.usable():
                self._idle.append(worker)
                return
            self._workers.discard(worker)
        worker.stop()

    # --- images -----------------------------------------------------------------------------------

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


class _Worker:
    """One `sqlite_worker.py` process, used by one thread at a time."""

    def __init__(
        self, cache_bytes: int, max_value_bytes: int, memory_bytes: int, heap_bytes: int
    ) -> None:
        self.owner = Owner()  # a forked child must not talk over its parent's pipes, nor kill it
        self.known: set[str] = set()  # databases already sent to this worker
        command = [sys.executable, "-I", "-S", sqlite_worker.__file__, str(os.getpid()),
                   str(cache_bytes), str(max_value_bytes), str(memory_bytes),
                   str(heap_bytes)]  # fmt: skip
        try:
            self.process = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL, env={}, cwd="/", close_fds=True,
            )  # fmt: skip
        except OSError as exc:
            raise BackendError(f"cannot start a SQLite worker process: {exc}") from None

    def usable(self) -> bool:
        """Alive, and ours (not a forked parent's)."""
        return self.owner.mine and self.process.poll() is None

    def run(self, key: str, image: bytes | Path, sql: str, limits: Limits, grace_s: float):
        """Run one query. Its time limit (plus `grace_s`, then the worker is killed) starts when
        the worker reports it started the query: starting the process and loading the database
        are our time, not the query's."""
        answer = self._ask(key, image, lambda source: (
            "run", key, source, sql, limits.timeout_s, limits.max_rows, limits.max_result_bytes,
        ))  # fmt: skip
        if answer[0] != "started":
            return answer
        deadline = time.monotonic() + limits.timeout_s + grace_s
        answer = self._receive(
            deadline, QueryTimeout(sqlite_worker.timeout_message(limits.timeout_s))
        )
        if answer[0] not in ("ok", "error"):
            raise BackendError(f"the SQLite worker sent {answer[0]!r} instead of a result")
        return answer

    def probe(self, key: str, image: bytes | Path, full: bool) -> tuple:
        answer = self._ask(key, image, lambda source: ("probe", key, source, full))
        if answer[0] not in ("healthy", "broken"):
            raise BackendError(f"the SQLite worker sent {answer[0]!r} instead of a health check")
        return answer

    def _ask(self, key: str, image: bytes | Path, request) -> tuple:
        """Send `request(source)` (sending the database only when the worker lacks it) and
        return the first answer that is not ("need", key)."""
        source = ("uri", _uri(image)) if isinstance(image, Path) else ("image", image)
        own_work = BackendError(f"the SQLite worker did not answer within {OWN_WORK_TIMEOUT_S:g} s")
        for _ in range(2):
            self._send(request(source if key not in self.known else None))
            self.known.add(key)
            answer = self._receive(time.monotonic() + OWN_WORK_TIMEOUT_S, own_work)
            if answer[0] != "need":
                return answer
            self.known.discard(key)  # the worker dropped it from its cache: send it again
        raise BackendError("the SQLite worker keeps losing the database")

    def _send(self, message: tuple) -> None:
        stdin = self.process.stdin
        assert stdin is not None, "started with a pipe"
        try:
            stdin.write(sqlite_worker.encode_frame(message))
            stdin.flush()
        except (OSError, ValueError) as exc:
            raise BackendError(f"the SQLite worker process is gone ({exc})") from None

    def _receive(self, deadline: float, overdue: Exception) -> tuple:
        """The next message; past `deadline` the worker is killed and `overdue` raised."""
        stream = self.process.stdout
        header = self._read(stream, sqlite_worker._HEADER.size, deadline, overdue)
        (length,) = sqlite_worker._HEADER.unpack(header)
        payload = self._read(stream, length, deadline, overdue)
        try:
            answer = sqlite_worker.marshal.loads(payload)
        except (EOFError, ValueError, TypeError) as exc:
            raise BackendError(f"the SQLite worker sent a garbled answer ({exc})") from None
        if not isinstance(answer, tuple) or not answer or answer[0] not in _MESSAGES:
            raise BackendError("the SQLite worker sent an unexpected answer")
        if answer[0] == "error" and answer[1] not in sqlite_worker.FAILURE_KINDS:
            raise BackendError(f"the SQLite worker failed: {answer[1:]!r}")
        return answer

    def _read(self, stream, size: int, deadline: float, overdue: Exception) -> bytes:
        chunks, remaining = [], size
        fd = stream.fileno()
        poller = select.poll()  # not select.select: it fails on descriptors past 1023
        poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        while remaining:
            wait = deadline - time.monotonic()
            if wait <= 0 or not poller.poll(wait * 1000):
                self.stop()  # stuck inside SQLite: only a kill stops it
                raise overdue
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                raise WorkerDied(self._exit_status())
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)

    def _exit_status(self) -> int | None:
        """How the process ended (its pipe closes a moment before its status is ready)."""
        try:
            return self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return None

    def stop(self) -> None:
        if not self.owner.mine:
            return  # our parent's worker: leave it alone
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


_MESSAGES = ("ok", "error", "need", "started", "healthy", "broken")


def _stop_all(workers: set[_Worker]) -> None:
    for worker in list(workers):
        worker.stop()
    workers.clear()


def _uri(path: Path) -> str:
    return SQLiteFile("", path).uri


def _source(database: DatabaseSource, image: bytes | Path) -> bytes | str:
    if isinstance(image, Path):
        if not image.is_file():
            raise BackendError(f"database {database.id!r}: no such file {image}")
        return _uri(image)
    return image


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
