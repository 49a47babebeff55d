"""The PostgreSQL backend against a real server (see conftest.py for how tests connect)."""

from __future__ import annotations

import time

import pytest

from rlvr.verifiers.sql import (
    Limits,
    QueryError,
    QueryRefused,
    QueryTimeout,
    SQLVerifier,
    SQLVerifierConfig,
)
from rlvr.verifiers.types import Status
from tests.sql.sqlhelpers import task

pytestmark = pytest.mark.postgres

GOLD = "SELECT name, age FROM people WHERE city = 'Lyon'"
SNAPSHOT = (
    "SELECT (SELECT COUNT(*) FROM people), (SELECT COUNT(*) FROM orders), "
    "(SELECT string_agg(name, ',' ORDER BY id) FROM people)"
)


@pytest.fixture
def verifier(catalog, postgres_backend):
    return SQLVerifier(catalog, postgres_backend)


def snapshot(backend, database):
    return backend.run_sql(database, SNAPSHOT, Limits()).rows


def test_sqlite_dialect_replies_run_on_postgres(verifier):
    assert verifier.verify(f"```sql\n{GOLD}\n```", task(GOLD)).is_correct
    sqlite_style = (
        "SELECT name, age FROM people WHERE IFNULL(city, 'x') || '' = 'Lyon' "
        "AND strftime('%Y', '2024-01-01') = '2024'"
    )
    assert verifier.verify(sqlite_style, task(GOLD)).is_correct
    dates = task("SELECT day FROM orders WHERE day >= '2024-02-01'")
    assert verifier.verify("SELECT day FROM orders WHERE day > '2024-01-31'", dates).is_correct
    average = task("SELECT AVG(age) FROM people")
    assert verifier.verify("SELECT SUM(age) * 1.0 / COUNT(age) FROM people", average).is_correct
    assert not verifier.verify("SELECT name FROM people", task(GOLD)).is_correct


@pytest.mark.parametrize(
    "hack",
    [
        "DROP TABLE people",
        "DELETE FROM people RETURNING name, age",
        "CREATE TEMP TABLE people AS SELECT name, age FROM people",
        "WITH d AS (DELETE FROM people RETURNING name, age) SELECT * FROM d",
        "SELECT * INTO stash FROM people",
        "SELECT pg_sleep(30)",
        "SELECT pg_read_file('/etc/passwd')",
        "SELECT lo_import('/etc/passwd')",
        "SELECT set_config('statement_timeout', '0', false)",
        "SELECT dblink('host=127.0.0.1', 'DELETE FROM people')",
        "SELECT query FROM pg_stat_activity",
        "COPY people TO '/tmp/people.csv'",
        "SET ROLE postgres",
        "SELECT name, age FROM people WHERE city = 'Lyon'; DROP TABLE people",
        "SELECT name, age FROM people WHERE city = '\ud800'",
        "SELECT name, age FROM people WHERE city = 'Lyon\x00'",
    ],
)
def test_hacks_score_zero_and_change_nothing(hack, verifier, postgres_backend, catalog):
    before = snapshot(postgres_backend, catalog["mini"])
    verdict = verifier.verify(hack, task(GOLD))
    assert verdict.score == 0.0 and not verdict.infra_error
    assert snapshot(postgres_backend, catalog["mini"]) == before
    assert verifier.verify(GOLD, task(GOLD)).is_correct


@pytest.mark.parametrize(
    "raw",
    [
        "DELETE FROM people",
        "INSERT INTO people (id, name) VALUES (99, 'Zed')",
        "CREATE TEMP TABLE people (name text)",
        "SELECT pg_read_file('/etc/passwd')",
        "SELECT lo_import('/etc/passwd')",
        "SELECT nextval('x')",
    ],
)
def test_the_server_alone_stops_writes(raw, postgres_backend, catalog):
    """Bypass sqlglot: the read-only role and transaction refuse on their own."""
    before = snapshot(postgres_backend, catalog["mini"])
    with pytest.raises(QueryError):  # refused, or not even a cursor-able query
        postgres_backend.run_sql(catalog["mini"], raw, Limits())
    assert snapshot(postgres_backend, catalog["mini"]) == before


def test_session_state_does_not_survive_a_query(postgres_backend, catalog):
    database = catalog["mini"]
    postgres_backend.run_sql(
        database, "SELECT set_config('statement_timeout', '0', false)", Limits()
    )
    postgres_backend.run_sql(
        database, "SELECT set_config('search_path', 'public', false)", Limits()
    )
    assert postgres_backend.run_sql(database, "SELECT COUNT(*) FROM people", Limits()).rows == (
        (4,),
    )
    with pytest.raises(QueryTimeout):
        postgres_backend.run_sql(database, "SELECT pg_sleep(3)", Limits(timeout_s=0.3))
    with pytest.raises(QueryRefused):
        postgres_backend.run_sql(database, "SELECT pg_read_file('/etc/passwd')", Limits())


def test_slow_queries_time_out(catalog, postgres_backend):
    verifier = SQLVerifier(catalog, postgres_backend, SQLVerifierConfig(timeout_s=0.3))
    slow = "SELECT COUNT(*) FROM " + ", ".join(f"people p{i}" for i in range(14))
    started = time.monotonic()
    verdict = verifier.verify(slow, task("SELECT COUNT(*) FROM people"))
    assert time.monotonic() - started < 3.0
    assert verdict.status is Status.INCORRECT and verdict.data["timeout"] is True


def test_enormous_results_are_capped(catalog, postgres_backend):
    verifier = SQLVerifier(catalog, postgres_backend, SQLVerifierConfig(max_rows=100))
    cross = "SELECT a.id FROM people a, people b, people c, people d, people e, people f, people g"
    verdict = verifier.verify(cross, task(GOLD))
    assert verdict.data["capped"] is True and "more than 100 rows" in verdict.details


def test_ordering_nulls_duplicates(verifier):
    ordered = task("SELECT name FROM people ORDER BY name DESC")
    assert verifier.verify("SELECT name FROM people ORDER BY name DESC", ordered).is_correct
    assert not verifier.verify("SELECT name FROM people ORDER BY name", ordered).is_correct
    duplicates = task("SELECT amount FROM orders")
    assert verifier.verify("SELECT amount FROM orders ORDER BY id DESC", duplicates).is_correct
    assert not verifier.verify("SELECT DISTINCT amount FROM orders", duplicates).is_correct


def test_a_dead_server_is_an_infrastructure_error(catalog):
    from rlvr.verifiers.sql.postgres import PostgresBackend

    backend = PostgresBackend("postgresql://nobody:nothing@127.0.0.1:1/none", connect_timeout_s=1)
    verdict = SQLVerifier(catalog, backend).verify(GOLD, task(GOLD))
    assert verdict.status is Status.ERROR and verdict.score is None and verdict.infra_error
    assert "PostgreSQL" in verdict.details


def test_dropped_connections_are_replaced_or_reported(verifier, postgres_backend, postgres_dsn):
    import psycopg

    assert verifier.verify(GOLD, task(GOLD)).is_correct
    role = postgres_backend.role
    with psycopg.connect(postgres_dsn, autocommit=True) as admin:
        granted = admin.execute("SELECT pg_has_role('pg_signal_backend', 'MEMBER')").fetchone()[0]
        if not granted:  # the provisioned test role has it; a DSN from the environment may not
            pytest.skip("the admin role cannot terminate connections (needs pg_signal_backend)")
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (role,)
        )
        time.sleep(0.2)
        assert verifier.verify(GOLD, task(GOLD)).is_correct  # a fresh connection replaced it
        admin.execute(f"ALTER ROLE {role} NOLOGIN")
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (role,)
        )
        time.sleep(0.2)
        verdict = verifier.verify(GOLD, task(GOLD))
        assert verdict.status is Status.ERROR and verdict.infra_error


def test_close_drops_the_reader_role(catalog, postgres_dsn):
    import psycopg

    from rlvr.verifiers.sql.postgres import PostgresBackend

    backend = PostgresBackend(postgres_dsn)
    assert SQLVerifier(catalog, backend).verify(GOLD, task(GOLD)).is_correct
    role = backend.role
    backend.close()
    with psycopg.connect(postgres_dsn) as admin:
        assert (
            admin.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone() is None
        )


def test_dataset_files_load_into_postgres(tmp_path, postgres_backend):
    """A SQLite file whose column holds mixed types (as Spider's do) loads as TEXT."""
    import sqlite3

    from rlvr.verifiers.sql import SQLiteFile

    path = tmp_path / "messy.sqlite"
    with sqlite3.connect(path) as connection:
        connection.execute('CREATE TABLE "Singer" (id INTEGER PRIMARY KEY, "Name" TEXT, age INT)')
        connection.executemany(
            'INSERT INTO "Singer" VALUES (?, ?, ?)',
            [(1, "Joe", 30), (2, "Ann", "unknown"), (3, "Bo", None)],
        )
    verifier = SQLVerifier({"messy": SQLiteFile("messy", path)}, postgres_backend)
    gold = task("SELECT Name FROM Singer WHERE id > 1", "messy")
    assert verifier.verify("SELECT name FROM singer WHERE id >= 2", gold).is_correct
    assert postgres_backend.run_sql(
        SQLiteFile("messy", path), "SELECT age FROM singer ORDER BY id", Limits()
    ).rows == (("30",), ("unknown",), (None,))


def test_procedural_gold_queries_agree_between_engines(postgres_backend):
    """Every template's gold, transpiled, gives the same result on PostgreSQL as on SQLite."""
    from rlvr.envs.sql.tasks import procedural_tasks
    from rlvr.verifiers.sql import compare_results

    tasks = procedural_tasks(twins=1)
    sqlite_verifier = SQLVerifier(tasks.catalog)
    pg_verifier = SQLVerifier(tasks.catalog, postgres_backend)
    templates = set()
    for index in range(60):
        item = tasks[index]
        templates.add(item.metadata["template"])
        assert pg_verifier.verify(f"```sql\n{item.answer}\n```", item).is_correct, item.metadata
        database = tasks.catalog[item.metadata["test_suite"][0]]
        query, on_sqlite = sqlite_verifier.gold_result(item.answer, database)
        _, on_postgres = pg_verifier.gold_result(item.answer, database)
        assert compare_results(on_sqlite, on_postgres, ordered=query.ordered).match, item.answer
    assert len(templates) >= 15


def test_one_argument_date_is_text_as_in_sqlite(verifier):
    """SQLite's `date(x)` is text: comparing it with a DATE column (read as text) must work."""
    gold = task("SELECT id FROM orders WHERE day < date('2024-02-01')")
    assert verifier.verify("SELECT id FROM orders WHERE day < '2024-02-01'", gold).is_correct
    shifted = task("SELECT date(day) FROM orders WHERE id = 1")
    assert verifier.verify("SELECT '2024-01-05'", shifted).is_correct


def test_rows_tied_on_the_gold_order_may_come_in_any_order(verifier):
    gold = task("SELECT name FROM people ORDER BY age")  # Ana and Chloe are both 30
    assert verifier.verify("SELECT name FROM people ORDER BY age, name DESC", gold).is_correct
    assert not verifier.verify("SELECT name FROM people ORDER BY age DESC", gold).is_correct
    youngest = task("SELECT name FROM people WHERE age IS NOT NULL ORDER BY age LIMIT 1")
    assert verifier.verify("SELECT 'Ana'", youngest).is_correct
    assert verifier.verify("SELECT 'Chloe'", youngest).is_correct


@pytest.mark.parametrize(
    ("gold", "reply"),
    [
        ("SELECT ROUND(score * 1.0 / 3, 2) FROM people", "SELECT ROUND(score / 3., 2) FROM people"),
        ("SELECT ROUND(score, 1) FROM people WHERE id = 3", "SELECT 2.3"),  # half away from 0
        ("SELECT substr(name, -2) FROM people WHERE id = 1", "SELECT 'na'"),
        ("SELECT substr(name, -3, 2) FROM people WHERE id = 3", "SELECT 'lo'"),
        ("SELECT strftime('%Y', day) - 2000 FROM orders WHERE id = 1", "SELECT 24"),
        ("SELECT lower(city) AS c, COUNT(*) FROM people GROUP BY c", "SELECT 'lyon', 2 UNION ALL "
         "SELECT 'porto', 1 UNION ALL SELECT NULL, 1"),
    ],
)  # fmt: skip
def test_sqlite_meanings_common_in_bird(verifier, gold, reply):
    """ROUND of a float, a negative substr start, arithmetic on strftime's text, GROUP BY an
    output alias: SQLite's meaning on PostgreSQL (each failed or differed there)."""
    verdict = verifier.verify(reply, task(gold))
    assert verdict.is_correct, verdict.details
