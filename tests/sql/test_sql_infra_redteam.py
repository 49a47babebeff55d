"""Red team of issue 18 in the SQL family: a reply must never turn its own verdict into an
infrastructure error (`Verdict.error`, `info["infra_error"]`), and a real failure of ours must
still be one.

Engines quote a query's identifiers and strings in their error messages (`no such table:
database is locked`), so whose fault a failure is may only rest on what a reply cannot write:
result codes, SQLSTATEs, our own timers, how our worker processes ended, and a fresh health
check of the database.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import threading
import time

import gymnasium as gym
import pytest

from rlvr.envs.self_correct import SelfCorrectEnv
from rlvr.envs.sql import SQLEnv
from rlvr.envs.sql.interactive import SQLInteractiveEnv
from rlvr.envs.sql.tasks import SQLTasks
from rlvr.envs.tasks import ListSource
from rlvr.verifiers.sql import (
    BackendError,
    Limits,
    QueryError,
    QueryRefused,
    SQLiteBackend,
    SQLVerifier,
    SQLVerifierConfig,
    sqlite_worker,
)
from rlvr.verifiers.sql.database import SQLiteFile
from rlvr.verifiers.types import Status
from tests.conftest import require_service
from tests.sql.conftest import _as_postgres_user
from tests.sql.sqlhelpers import task

GOLD = "SELECT name, age FROM people WHERE city = 'Lyon'"
ENV_IDS = ("rlvr/SQL-v0", "rlvr/SQLInteractive-v0", "rlvr/SQLSelfCorrect-v0")
BACKENDS = ("sqlite", pytest.param("postgres", marks=pytest.mark.postgres))

# What SQLite and PostgreSQL say when the database, the disk or the server fails, and the words
# our own code once looked for.
INFRA_PHRASES = (
    "database is locked", "database table is locked", "unable to open database file",
    "database disk image is malformed", "file is not a database", "disk I/O error",
    "database or disk is full", "attempt to write a readonly database", "not authorized",
    "authorization denied", "interrupted", "out of memory", "locking protocol",
    "large file support is disabled", "internal logic error", "access permission denied",
    "could not connect to server", "server closed the connection unexpectedly",
    "terminating connection due to administrator command",
    "canceling statement due to statement timeout", "canceling statement due to user request",
    "the database system is in recovery mode", "could not read block 0 in file",
    "invalid memory alloc request size", "No space left on device", "rlvr: result too large",
    "SQLite worker process died", "PostgreSQL failed",
)  # fmt: skip
# Replies whose error quotes the phrase (the first on both engines), and replies that run.
QUOTING_SHAPES = (
    'SELECT * FROM "{p}"',
    'SELECT x."{p}" FROM people AS x',
    'SELECT name FROM people ORDER BY name COLLATE "{p}"',
)
RUNNING_SHAPES = ('SELECT name AS "{p}" FROM people', "SELECT '{p}' FROM people WHERE name = '{p}'")


@pytest.fixture(scope="module")
def sqlite_backend():
    backend = SQLiteBackend()
    yield backend
    backend.close()


@pytest.fixture
def backend(request, sqlite_backend):
    if request.param == "postgres":
        return request.getfixturevalue("postgres_backend")
    return sqlite_backend


def make_env(env_id: str, catalog, backend, **options) -> gym.Env:
    """The registered env on our own tasks and backend (built directly: gym.make deep-copies
    its kwargs, and a backend holds locks and connections)."""
    tasks = SQLTasks(ListSource([task(GOLD)]), catalog)
    registered = dict(gym.spec(env_id).kwargs)
    if env_id == "rlvr/SQLSelfCorrect-v0":
        registered.pop("env")
        return SelfCorrectEnv(SQLEnv(tasks, backend=backend, **options), **registered)
    env_class = SQLInteractiveEnv if env_id == "rlvr/SQLInteractive-v0" else SQLEnv
    return env_class(tasks, backend=backend, **registered, **options)


def reply(env_id: str, sql: str, *, explore: bool = False) -> str:
    if "Interactive" in env_id:
        return f"<query>{sql}</query>" if explore else f"<answer>{sql}</answer>"
    return f"```sql\n{sql}\n```"


def hostile_replies():
    for phrase in INFRA_PHRASES:
        for shape in QUOTING_SHAPES + RUNNING_SHAPES:
            yield phrase, shape, shape.format(p=phrase.replace("'", "''"))


# --- replies that quote every infrastructure phrase ---------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_quoting_an_infra_phrase_is_never_an_infra_error(env_id, backend, catalog):
    env = make_env(env_id, catalog, backend)
    wrong = []
    for _, _, sql in hostile_replies():
        env.reset(seed=0)
        _, reward, _, _, info = env.step(reply(env_id, sql))
        if info["infra_error"] or reward != 0.0:
            wrong.append((sql, reward, info.get("verdict")))
    env.close()
    assert not wrong, wrong


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_exploring_with_an_infra_phrase_goes_on(backend, catalog):
    """One exploratory query used to end an SQLInteractive episode as an infrastructure error."""
    env = make_env("rlvr/SQLInteractive-v0", catalog, backend)
    wrong, quoted = [], 0
    for phrase, shape, sql in hostile_replies():
        env.reset(seed=0)
        action = reply("rlvr/SQLInteractive-v0", sql, explore=True)
        observation, reward, terminated, _, info = env.step(action)
        if terminated or info["infra_error"] or reward != 0.0:
            wrong.append((sql, observation))
        quoted += shape == QUOTING_SHAPES[0] and phrase.lower() in observation.lower()
    env.close()
    assert not wrong, wrong
    assert quoted == len(INFRA_PHRASES)  # the engine's message did quote each phrase


@pytest.mark.postgres
def test_casting_the_byte_cap_marker_is_a_plain_sql_error(catalog, postgres_backend):
    verdict = SQLVerifier(catalog, postgres_backend).verify(
        "SELECT CAST('rlvr: result too large' AS INTEGER)", task(GOLD)
    )
    assert verdict.status is Status.INCORRECT and verdict.data.get("sql_error") is True
    assert not verdict.data.get("capped")  # it used to pass for a result past the byte cap


# --- replies that exhaust limits -----------------------------------------------------------------


def _nested(depth: int) -> dict[str, str]:
    return {
        "and": "SELECT name FROM people WHERE " + " AND ".join(["age > 1"] * depth),
        "or": "SELECT name FROM people WHERE " + " OR ".join(["age > 1"] * depth),
        "parentheses": "SELECT " + "(" * depth + "1" + ")" * depth,
        "subqueries": "SELECT " + "(SELECT " * depth + "1" + ")" * depth,
        "case": "SELECT " + "CASE WHEN 1 THEN " * depth + "1" + " END" * depth,
        "coalesce": "SELECT " + "coalesce(" * depth + "1" + ")" * depth,
        "union": " UNION ".join(["SELECT 1"] * depth),
        "json": "SELECT CAST('" + "[" * depth + "1" + "]" * depth + "' AS JSON)",
    }


EXHAUSTING = {
    **{f"{name} x{depth}": sql for depth in (300, 1000) for name, sql in _nested(depth).items()},
    "a JSON integer of 5000 digits": "SELECT CAST('[" + "7" * 5000 + "]' AS JSON)",
    "text that is not UTF-8": "SELECT CAST(x'ff' AS TEXT)",
    "every row of a huge join": "SELECT * FROM people a, people b, people c, people d, people e",
}


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
@pytest.mark.parametrize("name", sorted(EXHAUSTING))
def test_replies_that_exhaust_limits_score_zero(name, backend, catalog):
    verifier = SQLVerifier(catalog, backend, SQLVerifierConfig(max_rows=100))
    verdict = verifier.verify(EXHAUSTING[name], task(GOLD))
    assert verdict.status in (Status.INCORRECT, Status.UNPARSABLE), verdict.details
    assert verdict.score == 0.0 and not verdict.infra_error
    assert verifier.verify(GOLD, task(GOLD)).is_correct  # and the backend still works


def _fat_rows(columns: int, rows: int) -> str:
    """Rows of `columns` values of 1 MB each (the per-value limit), built from a short query."""
    megabyte = "replace(replace(replace('" + "x" * 1000 + "', 'x', 'xxxxxxxxxx'), 'x', " \
        "'xxxxxxxxxx'), 'x', 'xxxxxxxxxx')"  # fmt: skip
    return (
        f"WITH v(s) AS (SELECT {megabyte}), r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r "
        f"WHERE n < {rows}) SELECT {', '.join(['s'] * columns)} FROM v, r"
    )


def _peak_memory_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1])


def test_a_result_past_the_byte_cap_stops_at_its_first_extra_row(catalog):
    """The worker fetched 256 rows before checking the cap: 6 columns of 1 MB took 1.5 GB."""
    backend = SQLiteBackend()
    verifier = SQLVerifier(catalog, backend, SQLVerifierConfig(timeout_s=10))
    verdict = verifier.verify(_fat_rows(6, 300), task(GOLD))
    assert verdict.data.get("capped") is True and not verdict.infra_error
    (worker,) = backend._idle
    assert _peak_memory_kib(worker.process.pid) < 256 << 10
    backend.close()


def test_a_row_bigger_than_the_worker_memory_cap_is_the_querys_fault(catalog):
    """One row of 2,000 values of 1 MB: without a cap the worker grows by 2 GB per row, until
    the kernel's OOM killer ends it (an infrastructure error) or another process."""
    backend = SQLiteBackend(worker_memory_bytes=512 << 20)
    verifier = SQLVerifier(catalog, backend, SQLVerifierConfig(timeout_s=10))
    verdict = verifier.verify(_fat_rows(2000, 1), task(GOLD))
    assert verdict.status is Status.INCORRECT and not verdict.infra_error
    assert "out of memory" in verdict.details
    (worker,) = backend._idle  # the worker survived it
    assert _peak_memory_kib(worker.process.pid) < 512 << 10
    assert verifier.verify(GOLD, task(GOLD)).is_correct
    backend.close()


def _rows_of(n: int) -> str:
    """A CTE `r(n, v)` of `n` rows whose `v` is a distinct text of about 300 characters (a
    query, or a second CTE, follows)."""
    pad = "x" * 290
    return (
        f"WITH RECURSIVE r(n, v) AS (SELECT 1, '{pad}' UNION ALL SELECT n + 1, "
        f"'{pad}' || (n * 7919) FROM r WHERE n < {n}) "
    )


# Every way a query makes SQLite keep temporary b-trees (by default in files in /var/tmp).
TEMP_STORAGE = {
    "ORDER BY": "SELECT n FROM r ORDER BY v",
    "DISTINCT": "SELECT COUNT(*) FROM (SELECT DISTINCT v FROM r)",
    "GROUP BY": "SELECT COUNT(*) FROM (SELECT v FROM r GROUP BY v)",
    "UNION": "SELECT COUNT(*) FROM (SELECT v FROM r UNION SELECT v || 'x' FROM r)",
    "window": "SELECT MAX(k) FROM (SELECT ROW_NUMBER() OVER (ORDER BY v) AS k FROM r)",
    "IN subquery": "SELECT COUNT(*) FROM people WHERE name IN (SELECT v FROM r)",
    "automatic index": "SELECT COUNT(*) FROM r AS a JOIN r AS b ON a.v = b.v",
    "materialised CTE": (
        ", m AS MATERIALIZED (SELECT v FROM r) SELECT (SELECT COUNT(*) FROM m) + "
        "(SELECT COUNT(*) FROM m)"
    ),
}


def _written_bytes(pid: int) -> int:
    """Bytes process `pid` wrote with write calls (files and pipes), from /proc/PID/io."""
    with open(f"/proc/{pid}/io") as io:
        return int(next(line for line in io if line.startswith("wchar:")).split()[1])


def _temp_writes(backend: SQLiteBackend, verifier: SQLVerifier, sql: str):
    """The verdict of `sql` and the bytes its worker wrote meanwhile."""
    assert verifier.verify(GOLD, task(GOLD)).is_correct  # a worker in the pool
    (worker,) = backend._idle
    before = _written_bytes(worker.process.pid)
    verdict = verifier.verify(sql, task(GOLD))
    return verdict, _written_bytes(worker.process.pid) - before


@pytest.mark.parametrize("shape", sorted(TEMP_STORAGE))
def test_temporary_storage_is_capped_in_memory_and_the_querys_fault(shape, catalog):
    """Each used to write its temporary b-trees to /var/tmp, uncapped (one sort wrote 1 GB in
    2 s): now they stay in memory, and past the cap the query fails as out of memory."""
    backend = SQLiteBackend(copy_limit_bytes=1 << 20, temp_bytes=16 << 20)
    verifier = SQLVerifier(catalog, backend, SQLVerifierConfig(timeout_s=20))
    verdict, written = _temp_writes(backend, verifier, _rows_of(200_000) + TEMP_STORAGE[shape])
    assert verdict.status is Status.INCORRECT and not verdict.infra_error, verdict.details
    assert "out of memory" in verdict.details
    assert written < 64 << 10  # the answer's frame, no temporary file
    assert backend._idle and verifier.verify(GOLD, task(GOLD)).is_correct  # the worker goes on
    backend.close()


def test_a_large_sort_writes_nothing_to_disk_with_the_default_caps(catalog):
    backend = SQLiteBackend()
    verifier = SQLVerifier(catalog, backend)
    verdict, written = _temp_writes(backend, verifier, _rows_of(3_000_000) + "SELECT n FROM r "
                                    "ORDER BY v")  # fmt: skip
    assert verdict.score == 0.0 and not verdict.infra_error, verdict.details
    assert written < 64 << 10
    backend.close()


def test_honest_queries_fit_the_temporary_storage_cap(catalog):
    """Sorting, grouping and de-duplicating what fits the cap still works."""
    backend = SQLiteBackend(copy_limit_bytes=1 << 20, temp_bytes=16 << 20)
    sql = _rows_of(20_000) + "SELECT COUNT(DISTINCT v), COUNT(*) FROM (SELECT v FROM r ORDER BY v)"
    assert backend.run_sql(catalog["mini"], sql, Limits(timeout_s=20)).rows == ((20_000, 20_000),)
    backend.close()


def test_the_temporary_storage_cap_is_checked():
    with pytest.raises(ValueError, match="temp_bytes must be at least 1 byte"):
        SQLiteBackend(temp_bytes=0)


GREEDY_SORT = (
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 300000) "
    "SELECT n FROM r ORDER BY n DESC LIMIT 1"
)


@pytest.mark.postgres
def test_a_query_past_temp_file_limit_is_the_querys_fault(catalog, postgres_backend):
    """53400 (like out of memory or a full disk) can be a sick server or a greedy query: the
    server answers a fresh connection, so it is the query's. It used to be infrastructure."""
    postgres_backend.load(catalog["mini"])  # creates the reader role
    done = _as_postgres_user(f"ALTER ROLE {postgres_backend.role} SET temp_file_limit = '256kB'")
    require_service("PostgreSQL superuser", done.returncode == 0, done.stderr.strip()[:200])
    verdict = SQLVerifier(catalog, postgres_backend).verify(GREEDY_SORT, task(GOLD))
    assert verdict.status is Status.INCORRECT and not verdict.infra_error, verdict.details
    assert "temp_file_limit" in verdict.details


@pytest.mark.postgres
def test_the_reader_role_has_its_temporary_files_capped(catalog, postgres_dsn):
    """The reader's sorts spilled into temporary files on the server's disk without a cap."""
    from rlvr.verifiers.sql.postgres import PostgresBackend

    default = PostgresBackend(postgres_dsn)
    settings = "SELECT current_setting('temp_file_limit'), current_setting('work_mem')"
    assert default.run_sql(catalog["mini"], settings, Limits()).rows == (("256MB", "4MB"),)
    default.close()
    backend = PostgresBackend(postgres_dsn, temp_bytes=256 << 10)
    verdict = SQLVerifier(catalog, backend).verify(GREEDY_SORT, task(GOLD))
    assert verdict.status is Status.INCORRECT and not verdict.infra_error, verdict.details
    assert "temp_file_limit" in verdict.details
    assert SQLVerifier(catalog, backend).verify(GOLD, task(GOLD)).is_correct
    backend.close()


@pytest.mark.postgres
def test_an_admin_that_cannot_cap_temporary_files_is_told_how(catalog, postgres_dsn):
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    from rlvr.verifiers.sql.postgres import PostgresBackend

    info = conninfo_to_dict(postgres_dsn)
    info["user"] = admin = "rlvr_test_nocap"  # CREATEROLE, not allowed to set temp_file_limit
    done = _as_postgres_user(
        f"DROP ROLE IF EXISTS {admin}; "
        f"CREATE ROLE {admin} LOGIN CREATEROLE PASSWORD '{info.get('password', '')}'"
    )
    require_service("PostgreSQL superuser", done.returncode == 0, done.stderr.strip()[:200])
    backend = PostgresBackend(make_conninfo(**info))
    try:
        with pytest.raises(BackendError, match="GRANT SET ON PARAMETER temp_file_limit TO"):
            backend.load(catalog["mini"])
        assert backend._reader is None
    finally:
        backend.close()
        _as_postgres_user(f"DROP ROLE IF EXISTS {admin}")


# --- our own timers exclude our own work ---------------------------------------------------------


def test_loading_a_large_database_does_not_eat_the_querys_time(tmp_path):
    """Starting the worker and loading a 96 MB image took ~0.3 s of the query's 0.1 s."""
    path = tmp_path / "big.sqlite"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE blobs (b BLOB)")
        connection.executemany("INSERT INTO blobs VALUES (zeroblob(1000000))", [()] * 96)
    database = SQLiteFile("big", path)
    backend = SQLiteBackend(kill_grace_s=0.0)
    for _ in range(2):  # a new worker, then the worker that holds the image
        assert backend.run_sql(database, "SELECT 1", Limits(timeout_s=0.1)).rows == ((1,),)
    backend.close()


# --- worker processes that die ------------------------------------------------------------------


SLOW = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT COUNT(*) FROM r"


def _signal_worker_soon(backend: SQLiteBackend, signum: int) -> threading.Thread:
    (worker,) = backend._idle

    def send() -> None:
        time.sleep(0.3)
        os.kill(worker.process.pid, signum)

    thread = threading.Thread(target=send)
    thread.start()
    return thread


def test_a_worker_that_crashes_on_a_healthy_database_is_the_querys_fault(catalog):
    """A fault inside SQLite while it runs a reply (here: SIGSEGV) is the reply's, when the
    database then passes a full check."""
    backend = SQLiteBackend()
    verifier = SQLVerifier(catalog, backend, SQLVerifierConfig(timeout_s=5.0))
    assert verifier.verify(GOLD, task(GOLD)).is_correct
    thread = _signal_worker_soon(backend, signal.SIGSEGV)
    verdict = verifier.verify(SLOW, task(GOLD))
    thread.join()
    assert verdict.status is Status.INCORRECT and not verdict.infra_error, verdict.details
    assert "crashed" in verdict.details
    assert verifier.verify(GOLD, task(GOLD)).is_correct
    backend.close()


@pytest.mark.parametrize("env_id", ("rlvr/SQL-v0", "rlvr/SQLInteractive-v0"))
def test_a_worker_killed_by_us_is_still_an_infra_error(env_id, catalog):
    backend = SQLiteBackend()
    env = make_env(env_id, catalog, backend, timeout_s=5.0)
    env.reset(seed=0)
    env.unwrapped.judge.sql_verifier.gold_result(GOLD, catalog["mini"])  # a worker in the pool
    thread = _signal_worker_soon(backend, signal.SIGKILL)
    _, reward, terminated, _, info = env.step(reply(env_id, SLOW, explore=True))
    thread.join()
    assert info["infra_error"] is True and terminated and reward == 0.0
    assert "died" in info["verdict"]["details"]
    env.close()
    backend.close()


# --- real failures of the database are still ours ------------------------------------------------


def _corrupt_table_pages(path) -> None:
    """Overwrite every page after the first two (the schema and the table's root) with noise:
    the schema still reads, the rows do not."""
    data = bytearray(path.read_bytes())
    noise = bytes((index * 7919 + 13) % 251 for index in range(len(data)))
    data[8192:] = noise[8192:]
    path.write_bytes(bytes(data))


def _database_with_rows(path) -> SQLiteFile:
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA page_size = 4096")
        connection.execute("CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT)")
        rows = [(n, f"person {n} " + "x" * 200) for n in range(2000)]
        connection.executemany("INSERT INTO people VALUES (?, ?)", rows)
    return SQLiteFile("rows", path)


@pytest.mark.parametrize("in_place", [False, True], ids=["image", "file in place"])
@pytest.mark.parametrize("env_id", ("rlvr/SQL-v0", "rlvr/SQLInteractive-v0"))
def test_a_corrupt_database_is_still_an_infra_error(env_id, in_place, tmp_path):
    path = tmp_path / "rows.sqlite"
    database = _database_with_rows(path)
    _corrupt_table_pages(path)
    backend = SQLiteBackend(copy_limit_bytes=0 if in_place else 256 << 20)
    tasks = SQLTasks(ListSource([task("SELECT 1", "rows")]), {"rows": database})
    env_class = SQLInteractiveEnv if env_id == "rlvr/SQLInteractive-v0" else SQLEnv
    env = env_class(tasks, backend=backend)
    env.reset(seed=0)
    action = reply(env_id, "SELECT COUNT(name) FROM people", explore=True)
    _, _, terminated, _, info = env.step(action)
    assert info["infra_error"] is True and terminated, info["verdict"]["details"]
    assert "broken" in info["verdict"]["details"]
    env.close()
    backend.close()


def test_an_unreadable_database_file_is_still_an_infra_error(tmp_path):
    path = tmp_path / "rows.sqlite"
    database = _database_with_rows(path)
    backend = SQLiteBackend(copy_limit_bytes=0)  # opened in place for each query
    verifier = SQLVerifier({"rows": database}, backend)
    assert verifier.verify("SELECT 1", task("SELECT 1", "rows")).is_correct
    path.write_bytes(b"this is no longer a SQLite database" * 200)
    verdict = verifier.verify("SELECT COUNT(*) FROM people", task("SELECT 1", "rows"))
    assert verdict.status is Status.ERROR and verdict.infra_error, verdict.details
    backend.close()


# --- the rules, without result codes (errors the sqlite3 module raises itself) ---------------


def _error_of(connection: sqlite3.Connection, sql: str) -> sqlite3.Error:
    with pytest.raises(sqlite3.Error) as caught:
        connection.execute(sql).fetchall()
    return caught.value


def test_without_result_codes_a_health_check_decides(tmp_path):
    """An error without `sqlite_errorcode` (raised by the sqlite3 module, not SQLite): an
    OperationalError may then be a syntax error or
    a failing disk, and the database's health decides; the message never does."""
    healthy = SQLiteFile("healthy", _database_with_rows(tmp_path / "healthy.sqlite").path)
    broken_path = tmp_path / "broken.sqlite"
    broken = _database_with_rows(broken_path)
    _corrupt_table_pages(broken_path)
    connection = sqlite3.connect(healthy.path)
    error = _error_of(connection, 'SELECT * FROM "database disk image is malformed"')
    connection.close()
    coded = sqlite_worker.classify(error, timed_out=False, refused=False, timeout_s=1)
    assert coded.kind == "query"  # SQLITE_ERROR, read from the code
    del error.sqlite_errorcode, error.sqlite_errorname
    uncoded = sqlite_worker.classify(error, timed_out=False, refused=False, timeout_s=1)
    assert uncoded.kind == "suspect"
    for isolate in (True, False):
        backend = SQLiteBackend(isolate=isolate)
        assert isinstance(backend._failure(healthy, uncoded.kind, str(uncoded)), QueryError)
        assert backend.check_health(broken, full=False) is None  # the schema still reads
        assert isinstance(backend._failure(broken, "suspect_data", "?"), BackendError)
        backend.close()


def test_a_refusal_is_known_from_the_authorizer_not_the_message(catalog):
    backend = SQLiteBackend()
    with pytest.raises(QueryRefused):  # the gate's own refusal, past sqlglot
        backend.run_sql(catalog["mini"], "SELECT load_extension('x')", Limits())
    verdict = SQLVerifier(catalog, backend).verify('SELECT * FROM "not authorized"', task(GOLD))
    assert verdict.data.get("sql_error") is True and not verdict.data.get("refused")
    backend.close()
