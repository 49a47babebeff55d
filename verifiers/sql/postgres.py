"""The PostgreSQL backend: a real server, one schema per database, a read-only role.

Needs the `postgres` extra (psycopg 3). The backend connects twice:

- as the *admin* (the DSN you give: a role that may create schemas in its database and create
  roles) to load each database into its own schema, named after the database's fingerprint, and
  to create the reader role;
- as a *reader* role it creates for itself (random name and password, LOGIN, nothing else; dropped
  again by `close()`), which only has USAGE on those schemas and SELECT on their tables, whose
  transactions are read-only by default, and whose temporary files (sorts, hashes and
  materialised subqueries past `work_mem`) are capped by `temp_file_limit` (`temp_bytes`).

Each query runs in its own READ ONLY transaction with `SET LOCAL statement_timeout` and the
schema's `search_path`, through a server-side cursor (so an enormous result is never fetched
whole), and the transaction is always rolled back: no session state survives a query. The SQL
sent is the sqlglot-checked tree written out for PostgreSQL (`pgdialect.py`: SQLite's meaning
kept, functions the server cannot interrupt refused), never the reply's raw text, wrapped so
that the server itself stops a result past `max_result_bytes` before sending it.

Some work runs without checking for interrupts (building a huge value, a few string functions),
so `statement_timeout` alone does not bound a query: past its limit plus `kill_grace_s` the
backend shuts the connection's socket and the query scores a timeout.

Whose fault a failure is rests on facts a reply cannot write: the SQLSTATE, whether the
connection broke, our own timers, and a marker only this backend knows; never on the message,
which quotes the query's identifiers. An error that a query and a sick server can both cause
(out of memory, a full disk, an internal error) is the query's when a fresh connection then
answers a trivial query (`check_health`).

A backend whose process is killed cannot drop its reader role; its admin session holds an
advisory lock named after the role for as long as it lives, and every backend that starts drops
the roles whose lock is free.

Why one module of ~700 lines (the project keeps modules under ~600): the two connections, the
roles, the limits and the health check are one security boundary, reviewed together.
"""

from __future__ import annotations

import os
import secrets
import socket
import threading
import time
import weakref
from typing import Any

from rlvr._shared import Owner
from rlvr.verifiers.sql.backend import Limits
from rlvr.verifiers.sql.database import Database, DatabaseSource, quote_identifier
from rlvr.verifiers.sql.errors import (
    BackendError,
    QueryError,
    QueryRefused,
    QueryTimeout,
    ResultTooLarge,
    VerifierConfigError,
)
from rlvr.verifiers.sql.guard import CheckedQuery
from rlvr.verifiers.sql.pgdialect import SchemaNames, write_postgres
from rlvr.verifiers.sql.results import QueryResult, cell_size, normalize_cell

DSN_ENV = "RLVR_POSTGRES_DSN"
_FETCH_BATCH = 256
_COMPLETE = "rlvr: loaded"
# Part of every schema name: bumped when what a schema holds changes (v2: the collations nocase
# and binary, dataset primary keys), so that releases sharing a server never rebuild each
# other's schemas.
_LAYOUT = "v2_"
# SQLSTATEs that mean the server or connection failed, not the query: connection exceptions,
# operator intervention (shutdown, terminated), system errors (I/O, files), corrupted data.
_INFRA_SQLSTATES = ("08", "57P", "58", "XX001", "XX002")
# SQLSTATEs a query can cause on a healthy server as well as a sick server can: insufficient
# resources (memory, disk, temporary files) and internal errors (1 GB allocations): the server's
# health decides.
_SUSPECT_SQLSTATES = ("53", "XX")
_ROLE_PREFIX = "rlvr_ro_"
_LOCK_CLASS = 0x72_6C_76_72  # "rlvr": the first key of the reader roles' advisory locks


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise ImportError(
            "the PostgreSQL backend needs psycopg 3: pip install 'rlvr-gym[postgres]'"
        ) from None
    return psycopg


class PostgresBackend:
    """Runs queries on a PostgreSQL server.

    Arguments:
        dsn: libpq connection string or URL of the admin role (default: $RLVR_POSTGRES_DSN).
        reader_host: host the reader role logs in through (default: the DSN's host, or
            127.0.0.1 when the DSN uses a Unix socket, where Debian's default is peer auth).
        pool_size: reader connections kept open between queries.
        connect_timeout_s: time allowed to open a connection.
        schema_prefix: prefix of the schemas databases are loaded into.
        kill_grace_s: how long past its time limit a query may run before its connection is cut.
        temp_bytes: temporary file space of one query (`temp_file_limit` of the reader role, with
            `work_mem` pinned to 4MB: sorts and hashes past it spill into those files); a query
            that needs more fails, its own fault. Setting it needs a superuser admin, or
            `GRANT SET ON PARAMETER temp_file_limit TO <admin>` (PostgreSQL 15+), unless the
            server's own temp_file_limit is already at most this. None: the server's setting.
    """

    name = "postgres"
    dialect = "postgres"

    def __init__(
        self,
        dsn: str | None = None,
        *,
        reader_host: str | None = None,
        pool_size: int = 4,
        connect_timeout_s: float = 5.0,
        schema_prefix: str = "rlvr_",
        kill_grace_s: float = 1.0,
        temp_bytes: int | None = 256 << 20,
    ) -> None:
        self.psycopg = _psycopg()
        if temp_bytes is not None and temp_bytes < 1024:
            raise VerifierConfigError(
                f"temp_bytes must be at least 1024 (temp_file_limit counts kB), got {temp_bytes!r}"
            )
        dsn = dsn or os.environ.get(DSN_ENV)
        if not dsn:
            raise VerifierConfigError(
                f"PostgresBackend needs the admin connection string: pass dsn='postgresql://"
                f"user:password@127.0.0.1:5432/dbname' or set ${DSN_ENV}"
            )
        if not schema_prefix.isidentifier() or schema_prefix.lower() != schema_prefix:
            raise VerifierConfigError(
                f"schema_prefix must be a lower-case identifier, got {schema_prefix!r}"
            )
        self.dsn = dsn
        self.pool_size = pool_size
        self.connect_timeout_s = connect_timeout_s
        self.schema_prefix = schema_prefix
        self.kill_grace_s = kill_grace_s
        self.temp_bytes = temp_bytes
        self._reader_host = reader_host
        self._lock = threading.RLock()
        self._owner = Owner()  # connections are never shared with a forked child
        self._admin: Any = None
        self._reader: dict[str, str] | None = None  # conninfo of the reader role
        self._pool: list[Any] = []
        self._loaded: dict[str, str] = {}  # fingerprint -> schema
        self._names: dict[str, SchemaNames] = {}  # schema -> its stored names
        self._finalizer: weakref.finalize | None = None
        # In the error of the failing cast that stops a result past the byte cap; secret, so
        # that a query casting the same text fails as itself.
        self._too_large_mark = f"rlvr: result too large {secrets.token_hex(8)}"

    # --- the Backend protocol ---------------------------------------------------------------------

    def execute(self, database: DatabaseSource, query: CheckedQuery, limits: Limits) -> QueryResult:
        schema = self.load(database)
        sql = write_postgres(query, self._names[schema])
        # The server stops a result past the byte cap before sending it (a single value may be
        # 1 GB). The failing cast depends on the row, so the planner cannot fold it early.
        wrapped = (
            "SELECT rlvr_q.*, CASE WHEN SUM(octet_length(CAST(rlvr_q AS TEXT))) OVER (ROWS "
            f"UNBOUNDED PRECEDING) > {int(limits.max_result_bytes)} THEN "
            f"CAST('{self._too_large_mark}' || LEFT(CAST(rlvr_q AS TEXT), 0) AS INTEGER) END "
            f"FROM ({sql}) AS rlvr_q"
        )
        result = self._run(schema, wrapped, limits)
        return QueryResult(result.columns[:-1], tuple(row[:-1] for row in result.rows))

    def close(self) -> None:
        """Close every connection and drop the reader role this backend created."""
        with self._lock:
            self._forget_if_forked()
            for connection in self._pool:
                connection.close()
            self._pool.clear()
            if self._finalizer is not None:
                self._finalizer()  # drops the role
                self._finalizer = None
            if self._admin is not None:
                self._admin.close()
                self._admin = None
            self._reader = None
            self._loaded.clear()
            self._names.clear()

    def ping(self) -> None:
        """Connect with the admin DSN and run a trivial query: `BackendError` (one line) when the
        server does not answer. The connection is kept for the first query."""
        with self._lock:
            try:
                self._admin_connection().execute("SELECT 1")
            except (BackendError, self.psycopg.Error) as exc:
                raise BackendError(" ".join(str(exc).split())) from None

    # --- running ----------------------------------------------------------------------------------

    def run_sql(self, database: DatabaseSource, sql: str, limits: Limits) -> QueryResult:
        """Run `sql` as the reader on `database` (the text is not checked by sqlglot here)."""
        return self._run(self.load(database), sql, limits)

    def _run(self, schema: str, sql: str, limits: Limits) -> QueryResult:
        for attempt in (1, 2):
            connection, pooled = self._acquire()
            cut = threading.Event()
            started = time.monotonic()  # our timer: after the connection was found
            try:
                result = self._run_on(connection, schema, sql, limits, cut)
            except self.psycopg.Error as exc:
                broken = connection.broken or connection.closed
                self._release(connection, broken)
                if cut.is_set():
                    raise QueryTimeout(_timeout_message(limits)) from None
                if broken and pooled and attempt == 1:
                    continue  # a stale pooled connection (server restart): try a fresh one once
                elapsed = time.monotonic() - started
                raise self._classify(exc, broken, limits, elapsed, schema) from None
            except BaseException:  # our own caps: the connection is fine once rolled back
                self._release(connection, connection.broken or connection.closed)
                raise
            self._release(connection, False)
            return result
        raise BackendError("unreachable")  # pragma: no cover

    def _run_on(
        self, connection: Any, schema: str, sql: str, limits: Limits, cut: threading.Event
    ) -> QueryResult:
        deadline = time.monotonic() + limits.timeout_s
        watchdog = threading.Timer(limits.timeout_s + self.kill_grace_s, _cut, (connection, cut))
        watchdog.daemon = True
        watchdog.start()
        try:
            connection.execute(
                "SELECT set_config('statement_timeout', %s, true), "
                "set_config('search_path', %s, true), set_config('TimeZone', 'UTC', true)",
                (str(_timeout_ms(limits)), quote_identifier(schema)),
            )
            with connection.cursor(name="rlvr_query") as cursor:
                cursor.execute(sql)
                columns = tuple(column.name for column in cursor.description or ())
                rows: list[tuple] = []
                size = 0
                while True:
                    batch = _fetch(cursor)
                    for row in batch:
                        rows.append(row)
                        size += sum(cell_size(value) for value in row)
                    if len(rows) > limits.max_rows:
                        raise ResultTooLarge(
                            f"the result has more than {limits.max_rows} rows (capped); a query "
                            "should return the answer, not a table dump"
                        )
                    if size > limits.max_result_bytes:
                        raise ResultTooLarge(
                            f"the result is larger than {limits.max_result_bytes} bytes"
                        )
                    if time.monotonic() > deadline:
                        raise QueryTimeout(_timeout_message(limits))
                    if len(batch) < _FETCH_BATCH:
                        break
            return QueryResult(columns, tuple(rows))
        finally:
            watchdog.cancel()
            if not connection.broken and not connection.closed:
                connection.rollback()

    def _classify(
        self, exc: Exception, broken: bool, limits: Limits, elapsed: float, schema: str
    ) -> Exception:
        """Whose fault a server error is, from facts the query cannot write (its SQLSTATE, a
        broken connection, our timer, our secret marker), never from the message."""
        errors = self.psycopg.errors
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        state = getattr(exc, "sqlstate", None) or ""
        if isinstance(exc, errors.QueryCanceled):
            if elapsed >= _timeout_ms(limits) / 1000:  # statement_timeout, set by us
                return QueryTimeout(_timeout_message(limits))
            return BackendError(f"PostgreSQL cancelled the query: {message}")  # not by us
        if self._too_large_mark in message:
            return ResultTooLarge(f"the result is larger than {limits.max_result_bytes} bytes")
        if not state and not broken and isinstance(exc, self.psycopg.DataError):
            # Raised while reading a row (a date past year 9999): the query's own result.
            return QueryError(f"the result holds a value that cannot be read: {message}")
        if broken or not state or state.startswith(_INFRA_SQLSTATES):
            return BackendError(f"PostgreSQL failed: {message}")
        if state.startswith(_SUSPECT_SQLSTATES):
            problem = self.check_health(schema)
            if problem is not None:
                return BackendError(f"PostgreSQL failed ({message}), and {problem}")
            return QueryError(message)
        if isinstance(exc, (errors.InsufficientPrivilege, errors.ReadOnlySqlTransaction)):
            return QueryRefused(f"refused by the database: {message}")
        return QueryError(message)

    def check_health(self, schema: str) -> str | None:
        """None when a fresh reader connection answers a trivial query on `schema`; else what
        failed."""
        try:
            connection = self._connect_reader()
        except BackendError as exc:
            return str(exc)
        try:
            connection.execute(
                "SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = %s", (schema,)
            ).fetchone()
        except self.psycopg.Error as exc:
            return f"a trivial query fails: {str(exc).strip()[:200]}"
        finally:
            connection.close()
        return None

    # --- connections ------------------------------------------------------------------------------

    def _acquire(self) -> tuple[Any, bool]:
        """A reader connection from the pool (True) or a new one (False)."""
        with self._lock:
            self._forget_if_forked()
            self._setup()
            if self._pool:
                return self._pool.pop(), True
        return self._connect_reader(), False

    def _connect_reader(self) -> Any:
        """A new read-only connection as the reader role."""
        for attempt in (1, 2):
            with self._lock:
                self._forget_if_forked()
                self._setup()
                reader = dict(self._reader or {})
            try:
                connection = self.psycopg.connect(
                    **reader, autocommit=False, connect_timeout=max(1, int(self.connect_timeout_s))
                )
            except self.psycopg.Error as exc:
                if attempt == 1 and self._reader_was_dropped():
                    continue  # swept while our admin session was down: make a new role
                raise BackendError(
                    f"cannot connect to PostgreSQL as the read-only role: {exc}"
                ) from None
            connection.read_only = True
            return connection
        raise BackendError("unreachable")  # pragma: no cover

    def _release(self, connection: Any, broken: bool) -> None:
        with self._lock:
            if (
                broken
                or len(self._pool) >= self.pool_size
                or self._reader is None
                or not self._owner.mine
            ):
                connection.close()
            else:
                self._pool.append(connection)

    def _forget_if_forked(self) -> None:
        """In a forked child, drop (without closing) the parent's connections and role."""
        if not self._owner.claim():
            return
        self._pool, self._admin, self._reader = [], None, None
        self._loaded, self._names = {}, {}
        if self._finalizer is not None:
            self._finalizer.detach()  # the role is the parent's to drop
            self._finalizer = None

    def _admin_connection(self) -> Any:
        if self._admin is None or self._admin.closed or self._admin.broken:
            try:
                self._admin = self.psycopg.connect(
                    self.dsn, autocommit=True, connect_timeout=max(1, int(self.connect_timeout_s))
                )
            except self.psycopg.Error as exc:
                raise BackendError(
                    f"cannot connect to PostgreSQL with the admin DSN: {exc}"
                ) from None
            if self._reader is not None:  # a new session: take our role's liveness lock again
                self._admin.execute(
                    "SELECT pg_try_advisory_lock(%s, %s)", (_LOCK_CLASS, _lock_key(self.role))
                )
        return self._admin

    def _reader_was_dropped(self) -> bool:
        """True (and the reader forgotten) when our role no longer exists on the server."""
        with self._lock:
            if self._reader is None:
                return False
            try:
                row = (
                    self._admin_connection()
                    .execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (self.role,))
                    .fetchone()
                )
            except (self.psycopg.Error, BackendError):
                return False
            if row is not None:
                return False
            for connection in self._pool:
                connection.close()
            self._pool.clear()
            if self._finalizer is not None:
                self._finalizer.detach()
                self._finalizer = None
            self._reader = None
            loaded, self._loaded = self._loaded, {}
            for fingerprint, schema in loaded.items():  # grant the new role what the old had
                self._setup()
                self._grant(self._admin_connection(), schema)
                self._loaded[fingerprint] = schema
            return True

    def _setup(self) -> None:
        """Create the reader role once (under the lock), after dropping dead backends' roles."""
        if self._reader is not None:
            return
        sql = self.psycopg.sql
        role = f"{_ROLE_PREFIX}{secrets.token_hex(6)}"
        password = secrets.token_urlsafe(24)
        admin = self._admin_connection()
        try:
            _drop_dead_roles(self.psycopg, admin)
            admin.execute(
                sql.SQL(
                    "CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT "
                    "NOREPLICATION CONNECTION LIMIT 64 PASSWORD {}"
                ).format(sql.Identifier(role), sql.Literal(password))
            )
            admin.execute("SELECT pg_advisory_lock(%s, %s)", (_LOCK_CLASS, _lock_key(role)))
            for setting, value in (
                ("default_transaction_read_only", "on"),
                ("statement_timeout", "60s"),
                ("idle_in_transaction_session_timeout", "60s"),
                ("work_mem", "4MB"),  # past it, sorts spill into the capped temporary files
            ):
                _set_role(admin, sql, role, setting, value)
            try:
                self._cap_temp_files(admin, role)
            except BackendError:  # a setup to fix: leave no role behind
                admin.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))
                admin.execute("SELECT pg_advisory_unlock(%s, %s)", (_LOCK_CLASS, _lock_key(role)))
                raise
        except self.psycopg.Error as exc:
            raise BackendError(
                f"cannot create the read-only role (the admin role needs CREATEROLE): {exc}"
            ) from None
        self._finalizer = weakref.finalize(
            self, _drop_role, self.dsn, role, self.connect_timeout_s, Owner()
        )
        info = self.psycopg.conninfo.conninfo_to_dict(self.dsn)
        host = self._reader_host or info.get("host") or "127.0.0.1"
        if host.startswith("/"):
            host = "127.0.0.1"
        info.update(user=role, password=password, host=host)
        info.pop("hostaddr", None)
        self._reader = {key: str(value) for key, value in info.items()}
        self.role = role

    def _cap_temp_files(self, admin: Any, role: str) -> None:
        """Cap the reader's temporary files at `temp_bytes` (temp_file_limit), or check that the
        server already does: otherwise one sorting query can fill the server's disk."""
        if self.temp_bytes is None:
            return
        limit_kb = self.temp_bytes // 1024
        try:
            _set_role(admin, self.psycopg.sql, role, "temp_file_limit", f"{limit_kb}kB")
            return
        except self.psycopg.errors.InsufficientPrivilege:
            pass
        (server_kb,) = admin.execute(  # -1: unlimited
            "SELECT setting::bigint FROM pg_settings WHERE name = 'temp_file_limit'"
        ).fetchone()
        if 0 <= server_kb <= limit_kb:
            return  # the server's own cap is tighter
        raise BackendError(
            f"cannot cap the read-only role's temporary files at {limit_kb} kB (the server's "
            f"temp_file_limit is {server_kb} kB, -1 is none): run `GRANT SET ON PARAMETER "
            "temp_file_limit TO <admin role>` as a superuser (PostgreSQL 15+), use a superuser "
            "admin, or set temp_file_limit in postgresql.conf (temp_bytes=None relies on it)"
        )

    # --- loading databases ------------------------------------------------------------------------

    def schema_for(self, database: DatabaseSource) -> str:
        return f"{self.schema_prefix}{_LAYOUT}{database.fingerprint[:24]}"

    def load(self, database: DatabaseSource) -> str:
        """Load `database` into its schema (once per content) and grant the reader SELECT."""
        fingerprint = database.fingerprint
        with self._lock:
            self._forget_if_forked()
            self._setup()
            if fingerprint in self._loaded:
                return self._loaded[fingerprint]
            schema = self.schema_for(database)
            admin = self._admin_connection()
            try:
                if not self._schema_complete(admin, schema):
                    self._create_schema(admin, schema, database.to_database())
                self._grant(admin, schema)
                rows = admin.execute(
                    "SELECT table_name, column_name, data_type FROM information_schema.columns "
                    "WHERE table_schema = %s",
                    (schema,),
                ).fetchall()
            except self.psycopg.Error as exc:
                raise BackendError(
                    f"cannot load database {database.id!r} into PostgreSQL: {exc}"
                ) from None
            self._names[schema] = SchemaNames.from_catalog(rows)
            self._loaded[fingerprint] = schema
            return schema

    def _grant(self, admin: Any, schema: str) -> None:
        sql = self.psycopg.sql
        for statement in (
            "GRANT USAGE ON SCHEMA {} TO {}",
            "GRANT SELECT ON ALL TABLES IN SCHEMA {} TO {}",
        ):
            admin.execute(
                sql.SQL(statement).format(sql.Identifier(schema), sql.Identifier(self.role))
            )

    def _schema_complete(self, admin: Any, schema: str) -> bool:
        row = admin.execute(
            "SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname = %s",
            (schema,),
        ).fetchone()
        if row is None:
            return False
        if row[0] == _COMPLETE:
            return True
        # A schema without the marker was left by something else; rebuild it.
        admin.execute(
            self.psycopg.sql.SQL("DROP SCHEMA {} CASCADE").format(
                self.psycopg.sql.Identifier(schema)
            )
        )
        return False

    def _create_schema(self, admin: Any, schema: str, database: Database) -> None:
        sql = self.psycopg.sql
        try:
            with admin.transaction():
                admin.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
                admin.execute(
                    "SELECT set_config('search_path', %s, true)", (quote_identifier(schema),)
                )
                self._create_collations(admin)
                for table, statement in zip(
                    database.tables, database.create_statements("postgres")
                ):
                    admin.execute(statement)
                    columns = ", ".join(quote_identifier(c.name) for c in table.columns)
                    with admin.cursor().copy(
                        f"COPY {quote_identifier(table.name)} ({columns}) FROM STDIN"
                    ) as copy:
                        for row in table.rows:
                            copy.write_row(row)
                admin.execute(
                    sql.SQL("COMMENT ON SCHEMA {} IS {}").format(
                        sql.Identifier(schema), sql.Literal(_COMPLETE)
                    )
                )
        except self.psycopg.errors.DuplicateSchema:
            return  # loaded concurrently by another process: its transaction committed it whole

    def _create_collations(self, admin: Any) -> None:
        """SQLite's NOCASE and BINARY, for `COLLATE NOCASE` in replies (NOCASE needs ICU)."""
        for statement in (
            'CREATE COLLATION "binary" FROM "C"',
            "CREATE COLLATION nocase (provider = icu, locale = 'und-u-ks-level2', "
            "deterministic = false)",
        ):
            try:
                with admin.transaction():  # a savepoint: a server without ICU goes on without
                    admin.execute(statement)
            except self.psycopg.Error:
                pass

    def drop_schema(self, database: DatabaseSource) -> None:
        """Remove a loaded database from the server (tests and cleanup)."""
        with self._lock:
            schema = self.schema_for(database)
            sql = self.psycopg.sql
            self._admin_connection().execute(
                sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
            )
            self._loaded.pop(database.fingerprint, None)
            self._names.pop(schema, None)

    def __repr__(self) -> str:
        return f"PostgresBackend({len(self._loaded)} databases loaded)"


def _set_role(admin: Any, sql: Any, role: str, setting: str, value: str) -> None:
    """ALTER ROLE role SET setting = value (for the role's new sessions)."""
    admin.execute(
        sql.SQL("ALTER ROLE {} SET {} = {}").format(
            sql.Identifier(role), sql.Identifier(setting), sql.Literal(value)
        )
    )


def _timeout_message(limits: Limits) -> str:
    return f"the query ran past its time limit of {limits.timeout_s:g} s"


def _timeout_ms(limits: Limits) -> int:
    """The statement_timeout we set (whole milliseconds, at least 1)."""
    return max(1, int(limits.timeout_s * 1000))


def _fetch(cursor: Any) -> list[tuple]:
    """The next rows, normalized. Turning a value into Python can fail on what the query built
    (JSON nested past Python's recursion limit, an integer of 5,000 digits): the query's fault."""
    try:
        return [
            tuple(normalize_cell(value) for value in row) for row in cursor.fetchmany(_FETCH_BATCH)
        ]
    except (RecursionError, ValueError, OverflowError, MemoryError) as exc:
        raise QueryError(
            f"the result holds a value that cannot be read ({type(exc).__name__})"
        ) from None


def _cut(connection: Any, cut: threading.Event) -> None:
    """Shut the connection's socket: the blocked client call returns at once (the server stops
    when its work next checks for interrupts or writes to the socket)."""
    cut.set()
    try:
        with socket.socket(fileno=os.dup(connection.fileno())) as sock:
            sock.shutdown(socket.SHUT_RDWR)
    except Exception:  # already closed: nothing is waiting on it
        pass


def _lock_key(role: str) -> int:
    """The second advisory-lock key of a reader role (a signed 32-bit int from its name)."""
    value = int(role.removeprefix(_ROLE_PREFIX)[:8], 16)
    return value - (1 << 32) if value >= 1 << 31 else value


def _drop_dead_roles(psycopg: Any, admin: Any) -> None:
    """Drop the reader roles of backends that are gone: their liveness lock is free and nobody is
    logged in as them (a backend from before the lock existed keeps its role while it has a
    connection open)."""
    roles = admin.execute(
        "SELECT rolname FROM pg_roles WHERE rolname ~ %s AND NOT EXISTS "
        "(SELECT FROM pg_stat_activity WHERE usename = rolname)",
        (f"^{_ROLE_PREFIX}[0-9a-f]{{12}}$",),
    ).fetchall()
    for (role,) in roles:
        key = _lock_key(role)
        taken = admin.execute("SELECT pg_try_advisory_lock(%s, %s)", (_LOCK_CLASS, key))
        if not taken.fetchone()[0]:
            continue  # its backend is alive
        try:
            _revoke_and_drop(psycopg, admin, role)
        except psycopg.Error:
            pass  # not ours to drop after all (or dropped concurrently): leave it
        finally:
            admin.execute("SELECT pg_advisory_unlock(%s, %s)", (_LOCK_CLASS, key))


def _revoke_and_drop(psycopg: Any, admin: Any, role: str) -> None:
    """Revoke a reader's grants and drop it. A CREATEROLE admin may not DROP OWNED BY another
    role, so grants are revoked schema by schema (wherever the role appears in a schema's ACL)."""
    sql = psycopg.sql
    schemas = admin.execute(
        "SELECT n.nspname FROM pg_namespace AS n, aclexplode(n.nspacl) AS a "
        "JOIN pg_roles AS r ON r.oid = a.grantee WHERE r.rolname = %s",
        (role,),
    ).fetchall()
    for (schema,) in schemas:
        for statement in (
            "REVOKE ALL ON ALL TABLES IN SCHEMA {} FROM {}",
            "REVOKE ALL ON SCHEMA {} FROM {}",
        ):
            admin.execute(sql.SQL(statement).format(sql.Identifier(schema), sql.Identifier(role)))
    admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


def _drop_role(dsn: str, role: str, connect_timeout_s: float, owner: Owner) -> None:
    """Drop the reader at close, or when the backend is collected (by the process that made it)."""
    if not owner.mine:
        return
    psycopg = _psycopg()
    try:
        timeout = max(1, int(connect_timeout_s))
        with psycopg.connect(dsn, autocommit=True, connect_timeout=timeout) as admin:
            _revoke_and_drop(psycopg, admin, role)
    except psycopg.Error:
        pass  # the server is gone; the next backend to start drops the role (its lock is free)
