"""The static gate (sqlglot) and SQL extraction."""

from __future__ import annotations

import pytest

from rlvr.verifiers.sql import SQLParseError, UnsafeQuery, check_query, extract_sql


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("```sql\nSELECT 1\n```", "SELECT 1"),
        ("draft:\n```sql\nSELECT 1\n```\nfixed:\n```sql\nSELECT 2\n```", "SELECT 2"),
        ("```\nSELECT 3\n```", "SELECT 3"),
        ("```python\nx = 1\n```\n```SQL\nSELECT 4\n```", "SELECT 4"),
        ("  SELECT 5  ", "SELECT 5"),
        ("```sql\nSELECT 6", "SELECT 6"),  # a reply cut off before the closing fence
        ("", None),
        ("   \n ", None),
        ("```sql\n\n```", None),
    ],
)
def test_extract_sql(reply, expected):
    assert extract_sql(reply) == expected


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT name FROM people WHERE age > 3",
        "SELECT 1;",
        "(SELECT 1) UNION SELECT 2",
        "VALUES (1), (2)",
        "WITH t AS (SELECT 1 AS x) SELECT x FROM t",
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) "
        "SELECT * FROM r",
        "SELECT RANK() OVER (PARTITION BY a ORDER BY b DESC) FROM t",
        "SELECT * FROM sqlite_master",
        "SELECT strftime('%Y', d), a || b, IFNULL(x, 0) FROM t",
    ],
)
def test_read_only_queries_pass(sql):
    assert check_query(sql).text == sql.strip().rstrip(";")


@pytest.mark.parametrize(
    "sql",
    [
        "DROP TABLE people",
        "DELETE FROM people RETURNING *",
        "INSERT INTO people VALUES (9, 'x', NULL, 1, 1.0)",
        "UPDATE people SET age = 0",
        "CREATE TABLE x (a INT)",
        "CREATE TEMP TABLE people (a INT)",
        "ALTER TABLE people ADD COLUMN z INT",
        "ATTACH DATABASE '/tmp/rlvr-attach.db' AS other",
        "DETACH DATABASE other",
        "VACUUM INTO '/tmp/rlvr-vacuum.db'",
        "VACUUM",
        "PRAGMA query_only = 0",
        "REINDEX",
        "ANALYZE",
        "EXPLAIN SELECT 1",
        "BEGIN",
        "COMMIT",
        "WITH d AS (DELETE FROM people RETURNING *) SELECT * FROM d",
        "WITH u AS (UPDATE people SET age = 1 RETURNING id) SELECT * FROM u",
        "SELECT * INTO copy_of_people FROM people",
        "SELECT * FROM people FOR UPDATE",
        "SELECT load_extension('/tmp/evil.so')",
        "SELECT pg_sleep(10)",
        "SELECT pg_read_file('/etc/passwd')",
        "SELECT lo_import('/etc/passwd')",
        "SELECT lo_export(1, '/tmp/x')",
        "SELECT set_config('statement_timeout', '0', false)",
        "SELECT current_setting('data_directory')",
        "SELECT dblink('host=evil', 'SELECT 1')",
        "SELECT query_to_xml('DELETE FROM people', true, true, '')",
        "SELECT nextval('seq')",
        "SELECT * FROM pg_catalog.pg_stat_activity",
        "SELECT query FROM pg_stat_activity",
        "SELECT repeat('x', 1000000000)",
        "SELECT writefile('/tmp/x', 'data')",
        "COPY people TO '/tmp/people.csv'",
        "SET ROLE postgres",
        "SELECT * FROM people WHERE id IN (SELECT pg_terminate_backend(1))",
    ],
)
def test_everything_else_is_refused(sql):
    with pytest.raises(UnsafeQuery):
        check_query(sql)


@pytest.mark.parametrize(
    "sql",
    [
        "",
        "   ",
        "SELEC name FROM people",
        "SELECT 1; SELECT 2",
        "SELECT 1; DROP TABLE people",
        "SELECT (((",
        "(" * 5000 + "1" + ")" * 5000,
        "SELECT 'x" + "x" * 100_001 + "'",
    ],
)
def test_unparsable_or_several_statements(sql):
    with pytest.raises(SQLParseError):
        check_query(sql)


@pytest.mark.parametrize(
    ("sql", "ordered"),
    [
        ("SELECT a FROM t ORDER BY a", True),
        ("SELECT a FROM t ORDER BY a DESC LIMIT 3", True),
        ("SELECT a FROM t UNION SELECT b FROM u ORDER BY 1", True),
        ("SELECT a FROM (SELECT a FROM t ORDER BY a) AS s", False),
        ("SELECT RANK() OVER (ORDER BY a) FROM t", False),
        ("SELECT a FROM t WHERE a IN (SELECT a FROM u ORDER BY a LIMIT 1)", False),
    ],
)
def test_top_level_order_by(sql, ordered):
    assert check_query(sql).ordered is ordered


def test_transpiles_sqlite_to_postgres():
    query = check_query("SELECT IFNULL(a, 0), strftime('%Y', d) FROM t", "sqlite")
    text = query.transpile("postgres")
    assert "COALESCE" in text and "TO_CHAR" in text
