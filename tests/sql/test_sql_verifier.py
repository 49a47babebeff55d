"""SQLVerifier on the SQLite backend: scoring, reward hacks, limits, bad input, infra errors."""

from __future__ import annotations

import hashlib
import sqlite3
import time

import pytest

from rlvr.verifiers.sql import (
    Column,
    Database,
    Limits,
    QueryRefused,
    QueryTimeout,
    SQLiteBackend,
    SQLiteFile,
    SQLVerifier,
    SQLVerifierConfig,
    Table,
)
from rlvr.verifiers.types import Status, Task
from tests.sql.sqlhelpers import SNAPSHOT_SQL, shop_database, task

GOLD = "SELECT name, age FROM people WHERE city = 'Lyon'"

HACKS = [
    "DROP TABLE people",
    "DELETE FROM people RETURNING name, age",
    "INSERT INTO people VALUES (9, 'Zed', 'Lyon', 1, 1.0)",
    "UPDATE people SET city = 'Lyon'",
    "CREATE TEMP TABLE people (name TEXT, age INT)",
    "CREATE TABLE people2 AS SELECT * FROM people",
    "ATTACH DATABASE '{tmp}/attached.db' AS other",
    "VACUUM INTO '{tmp}/copy.db'",
    "PRAGMA query_only = 0",
    "WITH d AS (DELETE FROM people RETURNING *) SELECT name, age FROM d",
    "SELECT * INTO stash FROM people",
    "SELECT load_extension('/tmp/evil.so')",
    "SELECT name, age FROM people WHERE city = 'Lyon'; DROP TABLE people",
    "DROP TABLE people; SELECT name, age FROM people WHERE city = 'Lyon'",
    "REINDEX",
    "BEGIN",
]
# The hacks SQLite itself can parse: its authorizer must refuse each (the rest are syntax errors).
# (A bare REINDEX is a no-op on these index-less tables: see test_reindex_is_refused.)
ENGINE_HACKS = [
    hack
    for hack in HACKS
    if not hack.startswith(("WITH d", "SELECT * INTO", "REINDEX")) and ";" not in hack
]


@pytest.fixture
def verifier(catalog):
    return SQLVerifier(catalog)


def snapshot(backend, database):
    return backend.run_sql(database, SNAPSHOT_SQL, Limits()).rows


def test_right_query_scores_one_and_wrong_zero(verifier):
    gold = task(GOLD)
    assert verifier.verify(f"```sql\n{GOLD}\n```", gold).score == 1.0
    assert verifier.verify("SELECT age, name FROM people WHERE city = 'Lyon'", gold).is_correct
    rewritten = "SELECT p.name, p.age FROM people AS p WHERE p.city IN ('Lyon') ORDER BY 2"
    assert verifier.verify(rewritten, gold).is_correct
    wrong = verifier.verify("SELECT name, age FROM people", gold)
    assert wrong.status is Status.INCORRECT and wrong.score == 0.0
    assert "differs" in wrong.details and "Ana" not in wrong.details  # no gold rows leak


@pytest.mark.parametrize("hack", HACKS)
def test_hacks_score_zero_and_change_nothing(hack, catalog, tmp_path):
    backend = SQLiteBackend()
    verifier = SQLVerifier(catalog, backend)
    before = snapshot(backend, catalog["mini"])
    verdict = verifier.verify(hack.format(tmp=tmp_path), task(GOLD))
    assert verdict.score == 0.0 and not verdict.infra_error
    assert verdict.status in (Status.INCORRECT, Status.UNPARSABLE)
    assert snapshot(backend, catalog["mini"]) == before
    assert list(tmp_path.iterdir()) == []  # no attached or vacuumed file was written
    assert verifier.verify(GOLD, task(GOLD)).is_correct  # the next episode is unaffected


@pytest.mark.parametrize("hack", ENGINE_HACKS)
def test_the_authorizer_alone_stops_hacks(hack, tmp_path):
    """The engine gate works without sqlglot: run the raw text on one connection."""
    backend = SQLiteBackend()
    database = shop_database()
    connection = backend.connect(database)
    before = connection.execute(SNAPSHOT_SQL).fetchall()
    with pytest.raises(
        sqlite3.DatabaseError, match=r"not authorized|authorization denied|readonly"
    ):
        connection.execute(hack.format(tmp=tmp_path)).fetchall()
    assert connection.execute(SNAPSHOT_SQL).fetchall() == before
    assert connection.execute("SELECT COUNT(*) FROM temp.sqlite_master").fetchone() == (0,)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(QueryRefused):
        backend.run_sql(database, hack.format(tmp=tmp_path), Limits())


def test_reindex_is_refused():
    """REINDEX has no authorizer code; PRAGMA query_only (locked by the authorizer) stops it."""
    indexed = Database("idx", (Table("pairs", (
        Column("a", "INTEGER", primary_key=True), Column("b", "INTEGER", primary_key=True),
    ), ((1, 2), (3, 4))),))  # fmt: skip
    with pytest.raises(QueryRefused):
        SQLiteBackend().run_sql(indexed, "REINDEX", Limits())


def test_read_only_file_in_place_is_never_modified(tmp_path):
    path = tmp_path / "shop.sqlite"
    write_sqlite_file(path, shop_database())
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    database = SQLiteFile("shop", path)
    backend = SQLiteBackend(copy_limit_bytes=0)  # open the file itself, read-only
    verifier = SQLVerifier({"shop": database}, backend)
    for hack in HACKS:
        assert verifier.verify(hack.format(tmp=tmp_path / "out"), task(GOLD, "shop")).score == 0.0
    for hack in ENGINE_HACKS:
        with pytest.raises(QueryRefused):
            backend.run_sql(database, hack.format(tmp=tmp_path / "out"), Limits())
    assert verifier.verify(GOLD, task(GOLD, "shop")).is_correct
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shop.sqlite"]


def test_slow_cartesian_product_times_out(catalog):
    verifier = SQLVerifier(catalog, config=SQLVerifierConfig(timeout_s=0.2))
    slow = "SELECT COUNT(*) FROM people a, people b, people c, people d, orders e, orders f, " + (
        ", ".join(f"people p{i}" for i in range(8))
    )
    started = time.monotonic()
    verdict = verifier.verify(slow, task("SELECT COUNT(*) FROM people"))
    assert time.monotonic() - started < 2.0
    assert verdict.status is Status.INCORRECT and verdict.data["timeout"] is True
    assert "time limit" in verdict.details
    recursive = (
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT COUNT(*) FROM r"
    )
    assert verifier.verify(recursive, task("SELECT COUNT(*) FROM people")).data["timeout"] is True


def test_timeout_is_raised_by_the_backend(catalog):
    with pytest.raises(QueryTimeout):
        SQLiteBackend().run_sql(
            catalog["mini"],
            "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "
            "SELECT COUNT(*) FROM r",
            Limits(timeout_s=0.1),
        )


def test_enormous_results_are_capped(catalog):
    verifier = SQLVerifier(catalog, config=SQLVerifierConfig(max_rows=50))
    verdict = verifier.verify("SELECT * FROM people a, people b, people c, people d", task(GOLD))
    assert verdict.score == 0.0 and verdict.data["capped"] is True
    assert "more than 50 rows" in verdict.details
    doubling = "WITH RECURSIVE r(s, n) AS (SELECT 'x', 0 UNION ALL SELECT s || s, n + 1 FROM r "
    small = SQLVerifier(verifier.catalog, config=SQLVerifierConfig(max_result_bytes=1 << 20))
    wide = small.verify(doubling + "WHERE n < 19) SELECT s FROM r, people", task(GOLD))
    assert wide.data["capped"] is True and "larger than" in wide.details
    too_long = verifier.verify(doubling + ") SELECT length(s) FROM r", task(GOLD))
    assert too_long.score == 0.0 and "too big" in too_long.details  # SQLITE_LIMIT_LENGTH


def test_a_limit_may_keep_any_of_the_rows_tied_at_its_boundary(verifier):
    """Who is the youngest, with two people of 30: the gold keeps one, a reply the other."""
    gold = task("SELECT name FROM people WHERE age IS NOT NULL ORDER BY age LIMIT 1")
    chloe = "SELECT name FROM people WHERE age IS NOT NULL ORDER BY age, name DESC LIMIT 1"
    assert verifier.verify(chloe, gold).is_correct
    assert verifier.verify("SELECT 'Ana'", gold).is_correct
    assert not verifier.verify("SELECT 'Ben'", gold).is_correct  # 41: not tied
    assert not verifier.verify("SELECT 'Ana' UNION ALL SELECT 'Chloe'", gold).is_correct
    both = task("SELECT name FROM people WHERE age IS NOT NULL ORDER BY age DESC LIMIT 2")
    assert verifier.verify("SELECT 'Ben' UNION ALL SELECT 'Chloe'", both).is_correct
    assert not verifier.verify("SELECT 'Chloe' UNION ALL SELECT 'Ben'", both).is_correct


def test_a_gold_answer_longer_than_max_rows_can_be_matched(catalog):
    """A dataset's answer may have more rows than the cap (BIRD has such): a correct reply must
    still fit, and one longer than the gold is still capped."""
    verifier = SQLVerifier(catalog, config=SQLVerifierConfig(max_rows=2))
    assert verifier.verify("SELECT name FROM people", task("SELECT name FROM people")).is_correct
    longer = verifier.verify("SELECT name FROM people, orders", task("SELECT name FROM people"))
    assert longer.data["capped"] is True


def test_order_matters_only_when_gold_orders(verifier):
    ordered = task("SELECT name FROM people ORDER BY name DESC")
    assert verifier.verify("SELECT name FROM people ORDER BY name DESC", ordered).is_correct
    assert not verifier.verify("SELECT name FROM people ORDER BY name", ordered).is_correct
    unordered = task("SELECT name FROM people")
    assert verifier.verify("SELECT name FROM people ORDER BY name DESC", unordered).is_correct
    # The task can say so itself when its gold cannot.
    pinned = task("SELECT name FROM people", ordered=True)
    assert not verifier.verify("SELECT name FROM people ORDER BY name DESC", pinned).is_correct


@pytest.mark.parametrize(
    ("gold", "tie_broken", "wrong"),
    [  # Ana and Chloe are both 30; Lyon has 2 people, Porto and NULL 1 each
        ("SELECT name FROM people ORDER BY age", "ORDER BY age, name DESC", "ORDER BY age DESC"),
        ("SELECT name, age AS a FROM people ORDER BY a", "ORDER BY 2, 1 DESC", "ORDER BY 2 DESC"),
        ("SELECT name, age FROM people ORDER BY 2", "ORDER BY 2, 1 DESC", "ORDER BY 1"),
        (
            "SELECT city, COUNT(*) FROM people GROUP BY city ORDER BY COUNT(*) DESC",
            "GROUP BY city ORDER BY COUNT(*) DESC, city DESC",
            "GROUP BY city ORDER BY COUNT(*)",
        ),
    ],
)
def test_rows_tied_on_the_gold_order_may_come_in_any_order(verifier, gold, tie_broken, wrong):
    """Spider-style gold ordered on a non-unique key: the order of tied rows is the engine's whim,
    so a query breaking the ties otherwise is right; the order between keys still counts."""
    head = gold[: gold.index(" GROUP BY" if "GROUP" in gold else " ORDER BY")]
    assert verifier.verify(f"{head} {tie_broken}", task(gold)).is_correct
    assert not verifier.verify(f"{head} {wrong}", task(gold)).is_correct


def test_nulls_duplicates_and_floats(verifier):
    assert verifier.verify("SELECT NULL", task("SELECT score FROM people WHERE id = 2")).is_correct
    duplicates = task("SELECT amount FROM orders")  # 10.0 twice, 7.5, NULL
    assert verifier.verify("SELECT amount FROM orders ORDER BY id DESC", duplicates).is_correct
    assert not verifier.verify("SELECT DISTINCT amount FROM orders", duplicates).is_correct
    average = task("SELECT AVG(score) FROM people")
    assert verifier.verify("SELECT SUM(score) / COUNT(score) FROM people", average).is_correct
    assert verifier.verify("SELECT 1.283333333 ", average).is_correct  # within the tolerance
    assert not verifier.verify("SELECT 1.28", average).is_correct
    assert verifier.verify(
        "SELECT 2", task("SELECT COUNT(*) FROM people WHERE city = 'Lyon'")
    ).is_correct


@pytest.mark.parametrize(
    ("reply", "status"),
    [
        ("", Status.UNPARSABLE),
        ("   ", Status.UNPARSABLE),
        ("I think the answer is 42.", Status.UNPARSABLE),
        ("```sql\nSELEC name FROM people\n```", Status.UNPARSABLE),
        ("SELECT 1; SELECT 2", Status.UNPARSABLE),
        ("SELECT nosuch FROM people", Status.INCORRECT),
        ("SELECT * FROM nosuch", Status.INCORRECT),
        ("SELECT 1/0", Status.INCORRECT),
        ("DROP TABLE people", Status.INCORRECT),
        ("\x00\x01 ```sql ``` }}}{{{", Status.UNPARSABLE),
        ("SELECT '\x00'", Status.UNPARSABLE),
        ("SELECT name FROM people WHERE name = '\ud800'", Status.UNPARSABLE),
    ],
)
def test_bad_input_gets_a_clear_verdict(verifier, reply, status):
    verdict = verifier.verify(reply, task(GOLD))
    assert verdict.status is status and verdict.score == 0.0
    assert verdict.details


def test_refusals_are_marked(verifier):
    verdict = verifier.verify("DELETE FROM people", task(GOLD))
    assert verdict.data["refused"] is True and verdict.details.startswith("refused")


def test_sql_errors_are_shown(verifier):
    verdict = verifier.verify("SELECT nosuch FROM people", task(GOLD))
    assert verdict.data["sql_error"] is True and "no such column: nosuch" in verdict.details


def test_test_suite_defeats_hard_coded_answers(verifier):
    gold = task("SELECT name FROM people WHERE age < 35", test_suite=["mini~1"])
    assert verifier.verify("SELECT name FROM people WHERE age < 35", gold).is_correct
    hard_coded = verifier.verify("VALUES ('Ana'), ('Chloe')", gold)
    assert hard_coded.score == 0.0 and "held-out copy" in hard_coded.details
    no_suite = SQLVerifier(verifier.catalog, config=SQLVerifierConfig(use_test_suite=False))
    assert no_suite.verify("VALUES ('Ana'), ('Chloe')", gold).is_correct


def test_partial_credit_takes_the_lowest_score_of_the_suite(catalog):
    verifier = SQLVerifier(catalog, config=SQLVerifierConfig(partial_credit=True))
    gold = task("SELECT name FROM people WHERE city = 'Lyon' OR city IS NULL")
    verdict = verifier.verify("SELECT name FROM people WHERE city = 'Lyon'", gold)
    assert verdict.status is Status.INCORRECT and verdict.score == pytest.approx(0.8)
    suite = task("SELECT name FROM people WHERE age < 35", test_suite=["mini~1"])
    # Right on the task's database, 2 of 5 rows on the twin: the twin's F1 counts.
    assert verifier.verify("VALUES ('Ana'), ('Chloe')", suite).score == pytest.approx(4 / 7)


def test_gold_results_are_cached(catalog):
    verifier = SQLVerifier(catalog)
    for _ in range(3):
        verifier.verify("SELECT name, age FROM people", task(GOLD, test_suite=["mini~1"]))
    assert (verifier.cache_misses, verifier.cache_hits) == (1, 2)  # stops at the first mismatch
    verifier.clear_cache()
    verifier.verify(GOLD, task(GOLD, test_suite=["mini~1"]))
    assert verifier.cache_misses == 3
    uncached = SQLVerifier(catalog, config=SQLVerifierConfig(gold_cache_size=0))
    uncached.verify(GOLD, task(GOLD))
    uncached.verify(GOLD, task(GOLD))
    assert uncached.cache_hits == 0


def test_dead_database_is_an_infrastructure_error(tmp_path):
    path = tmp_path / "shop.sqlite"
    write_sqlite_file(path, shop_database())
    verifier = SQLVerifier({"shop": SQLiteFile("shop", path)})
    assert verifier.verify(GOLD, task(GOLD, "shop")).is_correct
    path.write_bytes(b"this is not a database" * 100)  # corrupted in place
    verdict = verifier.verify(GOLD, task(GOLD, "shop"))
    assert verdict.status is Status.ERROR and verdict.score is None and verdict.infra_error
    path.unlink()
    assert verifier.verify(GOLD, task(GOLD, "shop")).infra_error


def test_bad_tasks_are_errors_not_zeros(verifier):
    assert verifier.verify(GOLD, task(GOLD, "nosuch")).infra_error
    assert verifier.verify(GOLD, task("SELECT nosuch FROM people")).infra_error  # broken gold
    assert "gold query fails" in verifier.verify(GOLD, task("SELECT nosuch FROM people")).details
    no_db = verifier.verify(GOLD, Task(id="x", prompt="q", answer=GOLD))
    assert no_db.infra_error and "db_id" in no_db.details


def write_sqlite_file(path, database):
    connection = SQLiteBackend().connect(database)
    image = connection.serialize()
    connection.close()
    path.write_bytes(image)
