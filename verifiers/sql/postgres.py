"""The PostgreSQL backend: a real server, one schema per database, a read-only role.

Needs the `postgres` extra (psycopg 3). The backend connects twice:

- as the *admin* (the DSN you give: a role that may create schemas in its database and create
  roles) to load each database into its own schema, named after the database's fingerprint, and
  to create the reader role;
- as a *reader* role it creates for itself (random name and password, LOGIN, nothing else; dropped
  again by `close()`), which only has USAGE on those schemas and SELECT on their tables, and whose
  transactions are read-only by default.

Each query runs in its own READ ONLY transaction with `SET LOCAL statement_timeout` and the
schema's `search_path`, through a server-side cursor (so an enormous result is never fetched
whole), and the transaction is always rolled back: no session state survives a query. The SQL
sent is the sqlglot-checked tree written out in PostgreSQL's dialect, never the reply's raw text.
"""

from __future__ import annotations

import os
import secrets
import threading
import time
import weakref
from typing import Any

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
from rlvr.verifiers.sql.results import QueryResult, cell_size, normalize_cell

DSN_ENV = "RLVR_POSTGRES_DSN"
_FETCH_BATCH = 256
_COMPLETE = "rlvr: loaded"
# SQLSTATE classes that mean the server or connection failed, not the query.
_INFRA_SQLSTATE_PREFIXES = ("08", "53", "57P", "58", "XX")


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
    ) -> None:
        self.psycopg = _psycopg()
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
        self._reader_host = reader_host
        self._lock = threading.RLock()
        self._admin: Any = None
        self._reader: dict[str, str] | None = None  # conninfo of the reader role
        self._pool: list[Any] = []
        self._loaded: dict[str, str] = {}  # fingerprint -> schema
        self._finalizer: weakref.finalize | None = None

    # --- the Backend protocol ---------------------------------------------------------------------

    def execute(self, database: DatabaseSource, query: CheckedQuery, limits: Limits) -> QueryResult:
        return self.run_sql(database, query.transpile(self.dialect), limits)

    def close(self) -> None:
        """Close every connection and drop the reader role this backend created."""
        with self._lock:
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

    # --- running ----------------------------------------------------------------------------------

    def run_sql(self, database: DatabaseSource, sql: str, limits: Limits) -> QueryResult:
        """Run `sql` as the reader on `database` (the text is not checked by sqlglot here)."""
        schema = self.load(database)
        for attempt in (1, 2):
            connection, pooled = self._acquire()
            try:
                result = self._run_on(connection, schema, sql, limits)
            except self.psycopg.Error as exc:
                broken = connection.broken or connection.closed
                self._release(connection, broken)
                if broken and pooled and attempt == 1:
                    continue  # a stale pooled connection (server restart): try a fresh one once
                raise self._classify(exc, broken, limits) from None
            self._release(connection, False)
            return result
        raise BackendError("unreachable")  # pragma: no cover

    def _run_on(self, connection: Any, schema: str, sql: str, limits: Limits) -> QueryResult:
        deadline = time.monotonic() + limits.timeout_s
        timeout_ms = str(max(1, int(limits.timeout_s * 1000)))
        try:
            connection.execute(
                "SELECT set_config('statement_timeout', %s, true), "
                "set_config('search_path', %s, true)",
                (timeout_ms, quote_identifier(schema)),
            )
            with connection.cursor(name="rlvr_query") as cursor:
                cursor.execute(sql)
                columns = tuple(column.name for column in cursor.description or ())
                rows: list[tuple] = []
                size = 0
                while True:
                    batch = cursor.fetchmany(_FETCH_BATCH)
                    for row in batch:
                        normalized = tuple(normalize_cell(value) for value in row)
                        rows.append(normalized)
                        size += sum(cell_size(value) for value in normalized)
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
                        raise QueryTimeout(
                            f"the query ran past its time limit of {limits.timeout_s:g} s"
                        )
                    if len(batch) < _FETCH_BATCH:
                        break
            return QueryResult(columns, tuple(rows))
        finally:
            if not connection.broken and not connection.closed:
                connection.rollback()

    def _classify(self, exc: Exception, broken: bool, limits: Limits) -> Exception:
        errors = self.psycopg.errors
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        state = getattr(exc, "sqlstate", None) or ""
        if isinstance(exc, errors.QueryCanceled):
            return QueryTimeout(f"the query ran past its time limit of {limits.timeout_s:g} s")
        if broken or not state or state.startswith(_INFRA_SQLSTATE_PREFIXES):
            return BackendError(f"PostgreSQL failed: {message}")
        if isinstance(exc, (errors.InsufficientPrivilege, errors.ReadOnlySqlTransaction)):
            return QueryRefused(f"refused by the database: {message}")
        return QueryError(message)

    # --- connections ------------------------------------------------------------------------------

    def _acquire(self) -> tuple[Any, bool]:
        with self._lock:
            self._setup()
            if self._pool:
                return self._pool.pop(), True
            reader = dict(self._reader or {})
        try:
            connection = self.psycopg.connect(
                **reader, autocommit=False, connect_timeout=max(1, int(self.connect_timeout_s))
            )
        except self.psycopg.Error as exc:
            raise BackendError(
                f"cannot connect to PostgreSQL as the read-only role: {exc}"
            ) from None
        connection.read_only = True
        return connection, False

    def _release(self, connection: Any, broken: bool) -> None:
        with self._lock:
            if broken or len(self._pool) >= self.pool_size or self._reader is None:
                connection.close()
            else:
                self._pool.append(connection)

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
        return self._admin

    def _setup(self) -> None:
        """Create the reader role once (under the lock)."""
        if self._reader is not None:
            return
        sql = self.psycopg.sql
        role = f"rlvr_ro_{secrets.token_hex(6)}"
        password = secrets.token_urlsafe(24)
        admin = self._admin_connection()
        try:
            admin.execute(
                sql.SQL(
                    "CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT "
                    "NOREPLICATION CONNECTION LIMIT 64 PASSWORD {}"
                ).format(sql.Identifier(role), sql.Literal(password))
            )
            for setting, value in (
                ("default_transaction_read_only", "on"),
                ("statement_timeout", "60s"),
                ("idle_in_transaction_session_timeout", "60s"),
            ):
                admin.execute(
                    sql.SQL("ALTER ROLE {} SET {} = {}").format(
                        sql.Identifier(role), sql.Identifier(setting), sql.Literal(value)
                    )
                )
        except self.psycopg.Error as exc:
            raise BackendError(
                f"cannot create the read-only role (the admin role needs CREATEROLE): {exc}"
            ) from None
        self._finalizer = weakref.finalize(self, _drop_role, self.dsn, role, self.schema_prefix)
        info = self.psycopg.conninfo.conninfo_to_dict(self.dsn)
        host = self._reader_host or info.get("host") or "127.0.0.1"
        if host.startswith("/"):
            host = "127.0.0.1"
        info.update(user=role, password=password, host=host)
        info.pop("hostaddr", None)
        self._reader = {key: str(value) for key, value in info.items()}
        self.role = role

    # --- loading databases ------------------------------------------------------------------------

    def schema_for(self, database: DatabaseSource) -> str:
        return f"{self.schema_prefix}{database.fingerprint[:24]}"

    def load(self, database: DatabaseSource) -> str:
        """Load `database` into its schema (once per content) and grant the reader SELECT."""
        fingerprint = database.fingerprint
        with self._lock:
            if fingerprint in self._loaded:
                return self._loaded[fingerprint]
            self._setup()
            schema = self.schema_for(database)
            admin = self._admin_connection()
            try:
                if not self._schema_complete(admin, schema):
                    self._create_schema(admin, schema, database.to_database())
                sql = self.psycopg.sql
                admin.execute(
                    sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(
                        sql.Identifier(schema), sql.Identifier(self.role)
                    )
                )
                admin.execute(
                    sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA {} TO {}").format(
                        sql.Identifier(schema), sql.Identifier(self.role)
                    )
                )
            except self.psycopg.Error as exc:
                raise BackendError(
                    f"cannot load database {database.id!r} into PostgreSQL: {exc}"
                ) from None
            self._loaded[fingerprint] = schema
            return schema

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

    def drop_schema(self, database: DatabaseSource) -> None:
        """Remove a loaded database from the server (tests and cleanup)."""
        with self._lock:
            schema = self.schema_for(database)
            sql = self.psycopg.sql
            self._admin_connection().execute(
                sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
            )
            self._loaded.pop(database.fingerprint, None)

    def __repr__(self) -> str:
        return f"PostgresBackend({len(self._loaded)} databases loaded)"


def _drop_role(dsn: str, role: str, schema_prefix: str) -> None:
    """Revoke the reader's grants and drop it (at close, or when the backend is collected).

    A CREATEROLE admin may not DROP OWNED BY another role, so grants are revoked schema by schema.
    """
    psycopg = _psycopg()
    sql = psycopg.sql
    try:
        with psycopg.connect(dsn, autocommit=True, connect_timeout=5) as admin:
            schemas = admin.execute(
                "SELECT nspname FROM pg_namespace WHERE starts_with(nspname, %s) "
                "AND has_schema_privilege(%s, oid, 'USAGE')",
                (schema_prefix, role),
            ).fetchall()
            for (schema,) in schemas:
                for statement in (
                    "REVOKE ALL ON ALL TABLES IN SCHEMA {} FROM {}",
                    "REVOKE ALL ON SCHEMA {} FROM {}",
                ):
                    admin.execute(
                        sql.SQL(statement).format(sql.Identifier(schema), sql.Identifier(role))
                    )
            admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))
    except psycopg.Error:
        pass  # the server is gone; the role has no rights beyond SELECT on task schemas
