"""Helpers shared by the SQL tests."""

from __future__ import annotations

from rlvr.verifiers.sql import Column, Database, Table
from rlvr.verifiers.types import Task, content_id


def shop_database(db_id: str = "mini", extra_people: int = 0) -> Database:
    """People and orders with NULLs, duplicate values and dates."""
    people = [
        (1, "Ana", "Lyon", 30, 1.5),
        (2, "Ben", None, 41, None),
        (3, "Chloe", "Porto", 30, 2.25),
        (4, "Dmitri", "Lyon", None, 0.1),
        *[(5 + n, f"Extra{n}", "Oslo", 20 + n, 1.0) for n in range(extra_people)],
    ]
    orders = [
        (1, 1, "2024-01-05", 10.0),
        (2, 1, "2024-02-11", 10.0),
        (3, 3, "2024-02-20", 7.5),
        (4, 2, "2023-12-31", None),
    ]
    return Database(db_id, (
        Table("people", (
            Column("id", "INTEGER", primary_key=True), Column("name", "TEXT", not_null=True),
            Column("city", "TEXT"), Column("age", "INTEGER"), Column("score", "REAL"),
        ), tuple(people)),
        Table("orders", (
            Column("id", "INTEGER", primary_key=True),
            Column("person_id", "INTEGER", references=("people", "id")),
            Column("day", "DATE"), Column("amount", "REAL"),
        ), tuple(orders)),
    ))  # fmt: skip


def task(gold: str, db_id: str = "mini", **metadata) -> Task:
    return Task(
        id=content_id(gold, db_id), prompt="q", answer=gold, metadata={"db_id": db_id, **metadata}
    )


# The database's content, to show a hack changed nothing.
SNAPSHOT_SQL = (
    "SELECT (SELECT COUNT(*) FROM people), (SELECT COUNT(*) FROM orders), "
    "(SELECT group_concat(name) FROM people), (SELECT COUNT(*) FROM sqlite_master)"
)
