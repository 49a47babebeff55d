"""Regression tests for the holes an adversarial review found (one section per hole), and for
replies a good model writes in SQLite's dialect that PostgreSQL used to score 0."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from rlvr.envs.sql.interactive import tagged_blocks
from rlvr.envs.sql.tasks import load_bird, load_spider, procedural_tasks
from rlvr.verifiers.sql import (
    BackendError,
    Limits,
    QueryError,
    QueryTimeout,
    SQLiteBackend,
    SQLVerifier,
    SQLVerifierConfig,
    UnsafeQuery,
    check_query,
    compare_results,
    extract_sql,
)
from rlvr.verifiers.sql.database import SQLiteFile
from rlvr.verifiers.sql.extract import fenced_blocks
from rlvr.verifiers.types import Status
from tests.sql import realistic
from tests.sql.sqlhelpers import task

GOLD = "SELECT name, age FROM people WHERE city = 'Lyon'"
# Built-ins that spend seconds to hours inside one SQLite VM instruction, where the progress
# handler cannot stop them: quadratic ltrim on 80k-character strings (~25 s), and printf's
# %c repeat loop (~7 s per call, however large SQLITE_LIMIT_LENGTH is).
STUCK_IN_SQLITE = [
    "SELECT ltrim(a, b) FROM (SELECT printf('%.*c', 80000, 'a') AS a, "
    "printf('%.*c', 80000, 'b') || 'a' AS b)",
    "SELECT printf('%.*c', 2147483647, 'x'), printf('%.*c', 2147483647, 'x')",
]


# --- SQLite: a query stuck inside one instruction is killed with its worker ---------------------


@pytest.mark.parametrize("reply", STUCK_IN_SQLITE)
def test_a_query_stuck_inside_sqlite_is_killed(reply, catalog):
    backend = SQLiteBackend(kill_grace_s=0.3)
    verifier = SQLVerifier(catalog, backend, SQLVerifierConfig(timeout_s=0.3))
    started = time.monotonic()
    verdict = verifier.verify(reply, task(GOLD))
    assert time.monotonic() - started < 3.0  # unkilled, these run for 14 s and hours
    assert verdict.status is Status.INCORRECT and verdict.data["timeout"] is True
    assert not backend._idle  # the stuck worker is gone, not back in the pool
    assert verifier.verify(GOLD, task(GOLD)).is_correct  # a fresh worker serves the next one
    backend.close()


def test_a_worker_that_dies_is_an_infrastructure_error(catalog):
    backend = SQLiteBackend()
    verifier = SQLVerifier(catalog, backend, SQLVerifierConfig(timeout_s=5.0))
    assert verifier.verify(GOLD, task(GOLD)).is_correct
    (worker,) = backend._idle
    slow = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT COUNT(*) FROM r"
    killer = threading.Timer(0.3, worker.process.kill)
    killer.start()
    verdict = verifier.verify(slow, task(GOLD))
    killer.join()
    assert verdict.status is Status.ERROR and verdict.infra_error and "died" in verdict.details
    assert verifier.verify(GOLD, task(GOLD)).is_correct
    backend.close()


def test_workers_are_reused_and_stopped_by_close(catalog):
    backend = SQLiteBackend()
    verifier = SQLVerifier(catalog, backend)
    for _ in range(3):
        assert verifier.verify(GOLD, task(GOLD, test_suite=["mini~1"])).is_correct
    (worker,) = backend._workers
    backend.close()
    assert worker.process.poll() is not None and not backend._workers


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_never_talks_to_its_parents_workers(catalog):
    backend = SQLiteBackend()
    verifier = SQLVerifier(catalog, backend)
    assert verifier.verify(GOLD, task(GOLD)).is_correct
    parent_worker = backend._idle[0]
    pid = os.fork()
    if pid == 0:  # the child: a worker of its own; close() leaves the parent's running
        ok = verifier.verify(GOLD, task(GOLD)).is_correct and not parent_worker.usable()
        backend.close()
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert parent_worker.usable() and backend._idle == [parent_worker]
    assert verifier.verify(GOLD, task(GOLD)).is_correct
    backend.close()


# --- the static gate ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM information_schema.tables",
        "SELECT table_name FROM information_schema.columns",
        "SELECT * FROM rlvr_v2_0123456789abcdef01234567.people",  # another database's schema
        "SELECT * FROM public.people",
        "SELECT * FROM other.main.people",
    ],
)
def test_queries_read_their_own_database_only(sql):
    with pytest.raises(UnsafeQuery, match="own database|system catalog"):
        check_query(sql)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT lpad('x', 1000000000, 'y')",  # parsed as Pad: the name check missed it
        "SELECT rpad(name, 1000000000) FROM people",
        "SELECT space(1000000000)",  # written REPEAT(' ', n) for PostgreSQL
        "SELECT current_version()",  # written VERSION()
    ],
)
def test_functions_denied_under_another_name_are_refused(sql):
    with pytest.raises(UnsafeQuery, match="not allowed"):
        check_query(sql)


def test_sqlite_spellings_of_the_own_database_still_pass(verifier):
    assert verifier.verify("SELECT name, age FROM main.people WHERE city = 'Lyon'", task(GOLD))
    assert verifier.verify(GOLD + ";;", task(GOLD)).is_correct  # sqlite3 refused the text
    assert verifier.verify(GOLD + " ; \n ;", task(GOLD)).is_correct


# --- reading replies in linear time -------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        "```" + "a" * (1 << 20),  # a fence whose line never ends
        "```a" * (1 << 18),
        "<query>" * (1 << 17),  # opening tags never closed
        "<answer>x" * (1 << 17),
    ],
)
def test_pathological_replies_are_read_quickly(reply):
    started = time.monotonic()
    extract_sql(reply)
    tagged_blocks(reply)
    assert time.monotonic() - started < 5.0  # the regular expressions took hours on these


def test_block_readers_keep_their_meaning():
    reply = "x\n```sql\nSELECT 1\n```\n```Python extra\nprint()\n```\n```\nSELECT 2"
    assert fenced_blocks(reply) == [("sql", "SELECT 1\n"), ("python", "print()\n"),
                                    ("", "SELECT 2")]  # fmt: skip
    assert fenced_blocks("```sql SELECT 1```") == []  # no newline after the opening fence
    tags = "<query>a</answer></query><ANSWER>b</Answer><query>c"
    assert tagged_blocks(tags) == [("query", "a</answer>"), ("answer", "b")]


# --- procedural twins tell computing from reciting ------------------------------------------------


def test_every_twin_can_catch_a_recited_answer():
    """Each twin's answer is non-empty and not all of them equal the task database's, so a query
    that recites the rows it saw (filtered on values only that database has) fails a twin."""
    tasks = procedural_tasks()
    verifier = SQLVerifier(tasks.catalog)
    templates = set()
    for index in range(120):
        item = tasks[index]
        templates.add(item.metadata["template"])
        query, answer = verifier.gold_result(item.answer, tasks.catalog[item.metadata["db_id"]])
        twins = [verifier.gold_result(item.answer, tasks.catalog[d])[1]
                 for d in item.metadata["test_suite"]]  # fmt: skip
        assert all(len(twin) > 0 for twin in twins), item.metadata
        assert not all(compare_results(answer, t, ordered=query.ordered).match for t in twins)
    assert len(templates) >= 18


def test_reciting_explored_rows_no_longer_passes_a_named_entity_question():
    """running_total named its entity; the twins lacked the name, so rows recited behind
    `WHERE EXISTS (... name = 'X')` matched their empty answers. It now names the entity by id."""
    tasks = procedural_tasks(difficulty=5)
    verifier = SQLVerifier(tasks.catalog)
    item = next(t for t in (tasks[i] for i in range(300))
                if t.metadata["template"] == "running_total")  # fmt: skip
    _, answer = verifier.gold_result(item.answer, tasks.catalog[item.metadata["db_id"]])
    values = ", ".join("(" + ", ".join(repr(v) for v in row) + ")" for row in answer.rows)
    recited = f"SELECT * FROM (VALUES {values})"
    assert verifier.verify(recited, item).score == 0.0


# --- loading dataset files ----------------------------------------------------------------------


def test_dataset_columns_get_the_type_their_values_have(tmp_path):
    import sqlite3

    path = tmp_path / "typed.sqlite"
    with sqlite3.connect(path) as connection:
        connection.executescript(
            'CREATE TABLE "Parent" (id int PRIMARY KEY, flag bool, share numeric(5,2), n int, '
            "day DATE, code text);"
            'CREATE TABLE child (parent_id text REFERENCES "Parent"(id), label text);'
        )
        connection.executemany(
            'INSERT INTO "Parent" VALUES (?, ?, ?, ?, ?, ?)',
            [(1, 1, 2.5, 3, "2024-01-05", "007"), (2, 0, 3, 4.5, "20240106", "8")],
        )
        connection.executemany("INSERT INTO child VALUES (?, ?)", [("1", "a"), ("2", "b")])
    connection.close()
    tables = {t.name: t for t in SQLiteFile("typed", path).to_database().tables}
    types = {c.name: c.type for c in tables["Parent"].columns}
    assert types == {"id": "INTEGER", "flag": "INTEGER", "share": "REAL", "n": "REAL",
                     "day": "TEXT", "code": "TEXT"}  # fmt: skip
    assert [c.type for c in tables["child"].columns] == ["INTEGER", "TEXT"]  # the key's type
    assert tables["child"].rows == ((1, "a"), (2, "b"))


def test_copies_of_a_dataset_file_share_a_fingerprint(tmp_path):
    first, second = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    realistic.write_datasets(tmp_path / "ds")
    data = (tmp_path / "ds" / "concert_singer" / "concert_singer.sqlite").read_bytes()
    first.write_bytes(data)
    second.write_bytes(data)
    assert SQLiteFile("a", first).fingerprint == SQLiteFile("b", second).fingerprint
    second.write_bytes(data + b"\0")
    assert SQLiteFile("a", first).fingerprint != SQLiteFile("b", second).fingerprint


def test_spider_and_bird_shaped_datasets_on_sqlite(tmp_path):
    realistic.write_datasets(tmp_path)
    for tasks, replies in _realistic_tasks(tmp_path):
        verifier = SQLVerifier(tasks.catalog)
        for index, reply in enumerate(replies):
            item = tasks[index]
            assert verifier.verify(f"```sql\n{item.answer}\n```", item).is_correct, item.answer
            assert verifier.verify(reply, item).is_correct, reply
        verifier.close()


def _realistic_tasks(root):
    spider = load_spider(root / "dev.json", root)
    bird = load_bird(root / "bird.json", root)
    return [
        (spider, [reply for _, reply in realistic.SPIDER_QUESTIONS]),
        (bird, [reply for _, _, reply in realistic.BIRD_QUESTIONS]),
    ]


@pytest.fixture
def verifier(catalog):
    verifier = SQLVerifier(catalog)
    yield verifier
    verifier.close()


# --- PostgreSQL -----------------------------------------------------------------------------------

# Correct SQLite replies that PostgreSQL scored 0 (or could not judge): (gold, reply).
SQLITE_MEANINGS = [
    ("SELECT name FROM people WHERE name = 'Ana'", "SELECT name FROM people WHERE name LIKE 'a%'"),
    ("SELECT COUNT(*) FROM people WHERE name LIKE '%\\%'", "SELECT 0"),  # no escape character
    ("SELECT day FROM orders WHERE day >= '2024-01-01'",
     "SELECT day FROM orders WHERE day LIKE '2024%'"),
    ("SELECT day FROM orders WHERE day >= '2024-01-01'",
     "SELECT day FROM orders WHERE substr(day, 1, 4) = '2024'"),
    ("SELECT '2024-01-06'", "SELECT date(day, '+1 day') FROM orders WHERE id = 1"),
    ("SELECT 37.0", "SELECT julianday('2024-02-11') - julianday(day) FROM orders WHERE id = 1"),
    ("SELECT name FROM people WHERE city = 'Lyon'", 'SELECT name FROM people WHERE city = "Lyon"'),
    ("SELECT name FROM people WHERE city = 'Lyon'",
     'SELECT "Name" FROM People WHERE [City] = \'Lyon\''),
    ("SELECT 2", "SELECT COUNT(*) FROM people WHERE city = 'lyon' COLLATE NOCASE"),
    ("SELECT 'Ana,Ben,Chloe,Dmitri'",
     "SELECT group_concat(name, ',') FROM (SELECT name FROM people ORDER BY id)"),
    ("SELECT 27.5", "SELECT TOTAL(amount) FROM orders"),
    ("SELECT 0.0", "SELECT TOTAL(amount) FROM orders WHERE id > 100"),
    ("SELECT 33", "SELECT CAST(AVG(age) AS INTEGER) FROM people"),
    ("SELECT 33", "SELECT SUM(age) / COUNT(age) FROM people"),
    ("SELECT name FROM people WHERE 0", "SELECT name FROM people WHERE id > 100"),
    ("SELECT 'Chloe'",
     "SELECT name FROM people WHERE city IS NOT NULL GROUP BY city HAVING COUNT(*) = 1"),
    ("SELECT '1 Ana'", "SELECT id || ' ' || name FROM people WHERE id = 1"),
    ("SELECT 'x'", "SELECT TRIM('..x..', '.')"),
    ("SELECT 'x..'", "SELECT LTRIM('..x..', '.')"),
    ("SELECT name FROM people WHERE id > 2",
     "SELECT name FROM people ORDER BY id LIMIT -1 OFFSET 2"),
    ("SELECT 1", "SELECT COUNT(*) FROM people WHERE name GLOB 'A*'"),
]  # fmt: skip


@pytest.mark.postgres
@pytest.mark.parametrize(("gold", "reply"), SQLITE_MEANINGS)
def test_sqlite_meanings_hold_on_postgres(gold, reply, catalog, postgres_backend):
    for verifier in (SQLVerifier(catalog), SQLVerifier(catalog, postgres_backend)):
        verdict = verifier.verify(reply, task(gold))
        assert verdict.is_correct, (verifier.backend.name, verdict.details)


@pytest.mark.postgres
def test_spider_and_bird_shaped_datasets_on_postgres(tmp_path, postgres_backend):
    realistic.write_datasets(tmp_path)
    try:
        for tasks, replies in _realistic_tasks(tmp_path):
            verifier = SQLVerifier(tasks.catalog, postgres_backend)
            for index, reply in enumerate(replies):
                item = tasks[index]
                oracle = verifier.verify(f"```sql\n{item.answer}\n```", item)
                assert oracle.is_correct, (item.answer, oracle.details)
                assert verifier.verify(reply, item).is_correct, reply
    finally:
        for name in ("concert_singer", "california_schools"):
            postgres_backend.drop_schema(SQLiteFile(name, tmp_path / name / f"{name}.sqlite"))


@pytest.mark.postgres
@pytest.mark.parametrize(
    "reply",
    [
        "SELECT ltrim(name, city) FROM people",  # characters to trim computed: quadratic
        "SELECT TRIM(name, '" + "x" * 65 + "') FROM people",
        "SELECT translate(name, 'abc', 'xyz') FROM people",
        "SELECT format('%1000000000s', 'x')",  # a non-interruptible 1 GB builder
        "SELECT format(name, 1) FROM people",
        "SELECT arraycontains(1, 2)",  # any catalog function sqlglot does not know
        "SELECT xpath('/a', name) FROM people",
        "SELECT setseed(0.5)",
    ],
)
def test_functions_postgres_cannot_interrupt_are_refused(reply, catalog, postgres_backend):
    verdict = SQLVerifier(catalog, postgres_backend).verify(reply, task(GOLD))
    assert verdict.status is Status.INCORRECT and verdict.data.get("refused") is True


@pytest.mark.postgres
def test_a_query_postgres_does_not_interrupt_is_cut_off(catalog, postgres_dsn):
    from rlvr.verifiers.sql.postgres import PostgresBackend

    backend = PostgresBackend(postgres_dsn, kill_grace_s=0.3)
    database = catalog["mini"]
    quadratic = (  # the gate refuses this; run_sql bypasses it to reach the server's own limit
        "WITH s AS (SELECT string_agg('a', '') AS a, string_agg('b', '') || 'a' AS b "
        "FROM generate_series(1, 20000)) SELECT length(btrim(a, b)) FROM s"
    )
    started = time.monotonic()
    with pytest.raises(QueryTimeout):
        backend.run_sql(database, quadratic, Limits(timeout_s=0.2))
    assert time.monotonic() - started < 2.0  # statement_timeout alone waited ~3 s
    assert backend.run_sql(database, "SELECT COUNT(*) FROM people", Limits()).rows == ((4,),)
    backend.close()


@pytest.mark.postgres
def test_results_past_the_byte_cap_stop_on_the_server(catalog, postgres_backend):
    config = SQLVerifierConfig(max_result_bytes=1 << 20)
    verifier = SQLVerifier(catalog, postgres_backend, config)
    doubling = (
        "WITH RECURSIVE r(s, n) AS (SELECT 'xxxxxxxx', 0 UNION ALL SELECT s || s, n + 1 FROM r "
        "WHERE n < 18) SELECT s FROM r WHERE n = 18"  # one 2 MB value
    )
    verdict = verifier.verify(doubling, task(GOLD))
    assert verdict.data["capped"] is True and "larger than" in verdict.details
    assert verifier.verify(GOLD, task(GOLD)).is_correct
    ordered = task("SELECT name FROM people ORDER BY name DESC")  # the wrapper keeps row order
    assert verifier.verify("SELECT name FROM people ORDER BY name DESC", ordered).is_correct
    assert not verifier.verify("SELECT name FROM people ORDER BY name", ordered).is_correct


@pytest.mark.postgres
@pytest.mark.parametrize(
    "reply", ["SELECT CAST('infinity' AS DATE)", "SELECT CAST('20000-01-01' AS TIMESTAMP)"]
)
def test_values_python_cannot_read_are_the_querys_fault(reply, catalog, postgres_backend):
    verdict = SQLVerifier(catalog, postgres_backend).verify(reply, task(GOLD))
    assert verdict.status is Status.INCORRECT and not verdict.infra_error
    assert verdict.data["sql_error"] is True


@pytest.mark.postgres
def test_capped_and_timed_out_queries_give_their_connection_back(catalog, postgres_backend):
    config = SQLVerifierConfig(max_rows=10, timeout_s=0.3)
    verifier = SQLVerifier(catalog, postgres_backend, config)
    assert verifier.verify(GOLD, task(GOLD)).is_correct
    for _ in range(3):
        assert verifier.verify("SELECT a.id FROM people a, people b", task(GOLD)).data["capped"]
        assert len(postgres_backend._pool) == 1  # it used to be closed: a new login each time


def _signal_reader(postgres_dsn, backend, function: str, delay: float) -> threading.Thread:
    import psycopg

    def signal() -> None:
        time.sleep(delay)
        with psycopg.connect(postgres_dsn, autocommit=True) as admin:
            admin.execute(
                f"SELECT {function}(pid) FROM pg_stat_activity WHERE usename = %s",
                (backend.role,),
            )

    thread = threading.Thread(target=signal)
    thread.start()
    return thread


@pytest.mark.postgres
def test_a_query_cancelled_by_someone_else_is_not_a_timeout(
    catalog, postgres_backend, postgres_dsn
):
    database = catalog["mini"]
    postgres_backend.run_sql(database, "SELECT 1", Limits())
    thread = _signal_reader(postgres_dsn, postgres_backend, "pg_cancel_backend", 0.3)
    with pytest.raises(BackendError, match="cancelled"):
        postgres_backend.run_sql(database, "SELECT pg_sleep(3)", Limits(timeout_s=5))
    thread.join()


@pytest.mark.postgres
def test_a_connection_killed_mid_query_is_never_a_zero(catalog, postgres_dsn):
    from rlvr.verifiers.sql.postgres import PostgresBackend

    backend = PostgresBackend(postgres_dsn, pool_size=0)  # a fresh connection: no retry
    verifier = SQLVerifier(catalog, backend, SQLVerifierConfig(timeout_s=5))
    assert verifier.verify(GOLD, task(GOLD)).is_correct
    slow = "SELECT COUNT(*) FROM " + ", ".join(f"people p{i}" for i in range(13))
    thread = _signal_reader(postgres_dsn, backend, "pg_terminate_backend", 0.3)
    verdict = verifier.verify(slow, task("SELECT COUNT(*) FROM people"))
    thread.join()
    assert verdict.status is Status.ERROR and verdict.infra_error, verdict.details
    backend.close()


@pytest.mark.postgres
def test_roles_of_killed_backends_are_dropped_and_live_ones_kept(postgres_dsn, catalog):
    import psycopg

    from rlvr.verifiers.sql.postgres import PostgresBackend

    script = (
        "import os, sys\n"
        "from rlvr.verifiers.sql import Limits\n"
        "from rlvr.verifiers.sql.postgres import PostgresBackend\n"
        "from tests.sql.sqlhelpers import shop_database\n"
        "backend = PostgresBackend(sys.argv[1])\n"
        "backend.run_sql(shop_database(), 'SELECT 1', Limits())\n"
        "print(backend.role, flush=True)\n"
        "os.kill(os.getpid(), 9)\n"
    )
    killed = subprocess.run([sys.executable, "-c", script, postgres_dsn], capture_output=True,
                            text=True, timeout=60, cwd=os.getcwd())  # fmt: skip
    dead_role = killed.stdout.strip()
    assert dead_role.startswith("rlvr_ro_"), killed.stderr

    def exists(role: str) -> bool:
        with psycopg.connect(postgres_dsn) as admin:
            found = admin.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,))
            return found.fetchone() is not None

    assert exists(dead_role)
    alive = PostgresBackend(postgres_dsn)
    alive.run_sql(catalog["mini"], "SELECT 1", Limits())
    assert not exists(dead_role)
    newcomer = PostgresBackend(postgres_dsn)
    newcomer.run_sql(catalog["mini"], "SELECT 1", Limits())
    assert exists(alive.role)  # held by a live admin session: not swept
    alive.close()
    newcomer.close()
    assert not exists(alive.role)


@pytest.mark.postgres
def test_a_backend_whose_role_was_swept_makes_a_new_one(catalog, postgres_backend, postgres_dsn):
    """If the admin session drops long enough for another backend to take the role for dead."""
    import psycopg

    from rlvr.verifiers.sql.postgres import _revoke_and_drop

    database = catalog["mini"]
    postgres_backend.run_sql(database, "SELECT 1", Limits())
    old = postgres_backend.role
    with psycopg.connect(postgres_dsn, autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (old,)
        )
        _revoke_and_drop(psycopg, admin, old)
    time.sleep(0.2)
    count = postgres_backend.run_sql(database, "SELECT COUNT(*) FROM people", Limits())
    assert count.rows == ((4,),) and postgres_backend.role != old


@pytest.mark.postgres
def test_threads_share_one_backend(catalog, postgres_backend):
    for backend in (SQLiteBackend(), postgres_backend):
        verifier = SQLVerifier(catalog, backend, SQLVerifierConfig(timeout_s=0.5))
        gold = task("SELECT name FROM people WHERE age < 35", test_suite=["mini~1"])
        replies = [
            (gold.answer, 1.0),
            ("SELECT name FROM people", 0.0),
            ("DROP TABLE people", 0.0),
            ("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "
             "SELECT COUNT(*) FROM r", 0.0),
        ]  # fmt: skip

        def judge(index: int, verifier=verifier, gold=gold, replies=replies) -> bool:
            reply, expected = replies[index % len(replies)]
            return verifier.verify(reply, gold).score == expected

        with ThreadPoolExecutor(6) as pool:
            assert all(pool.map(judge, range(24)))
        if backend.name == "sqlite":
            backend.close()


@pytest.mark.postgres
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_gets_its_own_connections(catalog, postgres_backend):
    verifier = SQLVerifier(catalog, postgres_backend)
    assert verifier.verify(GOLD, task(GOLD)).is_correct
    parent_role = postgres_backend.role
    pid = os.fork()
    if pid == 0:
        ok = verifier.verify(GOLD, task(GOLD)).is_correct and postgres_backend.role != parent_role
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert verifier.verify(GOLD, task(GOLD)).is_correct  # the parent's connections still work


@pytest.mark.postgres
def test_the_reader_cannot_reach_other_schemas_through_a_reply(catalog, postgres_backend):
    verifier = SQLVerifier(catalog, postgres_backend)
    other = postgres_backend.schema_for(catalog["mini~1"])
    postgres_backend.load(catalog["mini~1"])
    verdict = verifier.verify(f"SELECT name, age FROM {other}.people", task(GOLD))
    assert verdict.data.get("refused") is True
    with pytest.raises(QueryError):  # and a raw read of the catalog is still refused
        postgres_backend.run_sql(catalog["mini"], "SELECT pg_read_file('/etc/passwd')", Limits())
