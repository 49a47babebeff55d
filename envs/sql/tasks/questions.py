"""Question templates with gold SQL, in five levels of difficulty.

1. filters on one table (comparisons, IS NULL, date ranges, COUNT/MAX)
2. joins (two and three tables)
3. GROUP BY and HAVING
4. nested queries (scalar subqueries, NOT IN, IN) and ORDER BY ... LIMIT with explicit tie-breaks
5. window functions (RANK, ROW_NUMBER, running totals, differences from a partition average)

A template takes a `Context` (random generator, domain, database) and returns (question, gold
SQL) or None when this database cannot support it. Parameters are drawn from the database's own
values; `generate.py` runs the gold query and keeps only questions with a non-trivial answer.
Gold SQL is written in SQLite's dialect and kept portable (sqlglot writes it for PostgreSQL).
Questions that ask for an order give a total order (a tie-break on a unique label), so a correct
query has exactly one right answer.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from rlvr.envs.sql.tasks.domains import Attr, Domain, Role
from rlvr.verifiers.sql.database import Database


@dataclass
class Context:
    rng: np.random.Generator
    domain: Domain
    database: Database

    def column(self, role: Role, attr: Attr) -> list[Any]:
        """Non-null values of `attr` in `role`'s table, in row order."""
        table = self.database.table(role.table)
        index = [column.name for column in table.columns].index(attr.column)
        return [row[index] for row in table.rows if row[index] is not None]

    def pick(self, values: list[Any]) -> Any:
        return values[int(self.rng.integers(len(values)))] if values else None

    def facts_per_entity(self) -> Counter:
        table = self.database.table(self.domain.fact.table)
        index = [c.name for c in table.columns].index(self.domain.entity.key)
        return Counter(row[index] for row in table.rows)


Question = tuple[str, str]
Template = Callable[[Context], "Question | None"]


def lit(value: Any) -> str:
    """A SQL literal."""
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return repr(value)


def a(noun: str) -> str:
    """`noun` with its indefinite article."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def _join_fact(d: Domain, entity: bool = True, item: bool = True) -> str:
    e, i, f = d.entity, d.item, d.fact
    sql = f"{f.table} AS f"
    if entity:
        sql += f" JOIN {e.table} AS e ON e.{e.key} = f.{e.key}"
    if item:
        sql += f" JOIN {i.table} AS i ON i.{i.key} = f.{i.key}"
    return sql


# --- level 1: filters -----------------------------------------------------------------------------


def entity_by_category(c: Context) -> Question | None:
    e = c.domain.entity
    value = c.pick(c.column(e, e.category))
    return (
        f"List the {e.label.nouns} of all {e.plural} whose {e.category.noun} is {lit(value)}.",
        f"SELECT {e.label.column} FROM {e.table} WHERE {e.category.column} = {lit(value)}",
    )


def count_items_above(c: Context) -> Question | None:
    i = c.domain.item
    value = c.pick(c.column(i, i.number))
    return (
        f"How many {i.plural} have {a(i.number.noun)} greater than {value}?",
        f"SELECT COUNT(*) FROM {i.table} WHERE {i.number.column} > {lit(value)}",
    )


def entity_number_missing(c: Context) -> Question | None:
    e = c.domain.entity
    return (
        f"List the {e.label.nouns} of the {e.plural} whose {e.number.noun} is not recorded "
        "(missing).",
        f"SELECT {e.label.column} FROM {e.table} WHERE {e.number.column} IS NULL",
    )


def entity_date_in_year(c: Context) -> Question | None:
    e = c.domain.entity
    year = c.pick(sorted({day[:4] for day in c.column(e, e.date)}))
    return (
        f"List the {e.label.noun} and {e.date.noun} of every {e.noun} whose {e.date.noun} is in "
        f"the year {year}.",
        f"SELECT {e.label.column}, {e.date.column} FROM {e.table} "
        f"WHERE {e.date.column} BETWEEN '{year}-01-01' AND '{year}-12-31'",
    )


def max_number_in_category(c: Context) -> Question | None:
    i = c.domain.item
    value = c.pick(c.column(i, i.category))
    return (
        f"What is the highest {i.number.noun} among the {i.plural} whose {i.category.noun} is "
        f"{lit(value)}?",
        f"SELECT MAX({i.number.column}) FROM {i.table} WHERE {i.category.column} = {lit(value)}",
    )


# --- level 2: joins -------------------------------------------------------------------------------


def entities_of_item_category(c: Context) -> Question | None:
    d = c.domain
    e, i = d.entity, d.item
    value = c.pick(c.column(i, i.category))
    return (
        f"List the distinct {e.label.nouns} of the {e.plural} who {d.verb} at least one {i.noun} "
        f"whose {i.category.noun} is {lit(value)}.",
        f"SELECT DISTINCT e.{e.label.column} FROM {_join_fact(d)} "
        f"WHERE i.{i.category.column} = {lit(value)}",
    )


def facts_since(c: Context) -> Question | None:
    d = c.domain
    e, i, f = d.entity, d.item, d.fact
    days = sorted(c.column(f, f.date), reverse=True)
    day = c.pick(days[3:25])
    if day is None:
        return None
    return (
        f"For every {f.noun} with {a(f.date.noun)} on or after {day}, give the {e.noun}'s "
        f"{e.label.noun} and the {i.noun}'s {i.label.noun}.",
        f"SELECT e.{e.label.column}, i.{i.label.column} FROM {_join_fact(d)} "
        f"WHERE f.{f.date.column} >= '{day}'",
    )


def items_of_group(c: Context) -> Question | None:
    d = c.domain
    g, i = d.group, d.item
    name = c.pick(c.column(g, g.label))
    return (
        f"List the {i.label.nouns} of the {i.plural} {d.relation} the {g.noun} {lit(name)}.",
        f"SELECT i.{i.label.column} FROM {i.table} AS i JOIN {g.table} AS g "
        f"ON g.{g.key} = i.{g.key} WHERE g.{g.label.column} = {lit(name)}",
    )


def count_facts_of_group_category(c: Context) -> Question | None:
    d = c.domain
    g, i, f = d.group, d.item, d.fact
    value = c.pick(c.column(g, g.category))
    return (
        f"How many {f.plural} are for {i.plural} {d.relation} {a(g.noun)} whose "
        f"{g.category.noun} is {lit(value)}?",
        f"SELECT COUNT(*) FROM {_join_fact(d, entity=False)} JOIN {g.table} AS g "
        f"ON g.{g.key} = i.{g.key} WHERE g.{g.category.column} = {lit(value)}",
    )


# --- level 3: grouping ----------------------------------------------------------------------------


def count_items_per_category(c: Context) -> Question | None:
    i = c.domain.item
    return (
        f"For each {i.category.noun} of {i.plural}, give the {i.category.noun} and how many "
        f"{i.plural} have it (ignore {i.plural} without {a(i.category.noun)}).",
        f"SELECT {i.category.column}, COUNT(*) FROM {i.table} "
        f"WHERE {i.category.column} IS NOT NULL GROUP BY {i.category.column}",
    )


def entities_with_many_facts(c: Context) -> Question | None:
    d = c.domain
    e, f = d.entity, d.fact
    counts = sorted(c.facts_per_entity().values())
    if len(counts) < 3:
        return None
    threshold = c.pick(counts[len(counts) // 3 : -1])
    return (
        f"Which {e.plural} have more than {threshold} {f.plural}? Give each one's "
        f"{e.label.noun} and number of {f.plural}.",
        f"SELECT e.{e.label.column}, COUNT(*) FROM {_join_fact(d, item=False)} "
        f"GROUP BY e.{e.key}, e.{e.label.column} HAVING COUNT(*) > {threshold}",
    )


def average_number_per_group(c: Context) -> Question | None:
    d = c.domain
    g, i = d.group, d.item
    return (
        f"For each {g.noun} that has {i.plural}, give its {g.label.noun} and the average "
        f"{i.number.noun} of its {i.plural}.",
        f"SELECT g.{g.label.column}, AVG(i.{i.number.column}) FROM {g.table} AS g "
        f"JOIN {i.table} AS i ON i.{g.key} = g.{g.key} GROUP BY g.{g.key}, g.{g.label.column}",
    )


def total_measure_per_category(c: Context) -> Question | None:
    d = c.domain
    i, f = d.item, d.fact
    totals: defaultdict[Any, float] = defaultdict(int)
    item_category = {row[0]: row[2] for row in c.database.table(i.table).rows}
    fact_table = c.database.table(f.table)
    for row in fact_table.rows:
        amount = row[4]  # a number column: int, float or NULL
        if isinstance(amount, (int, float)) and item_category.get(row[2]) is not None:
            totals[item_category[row[2]]] += amount
    values = sorted(totals.values())
    if len(values) < 3:
        return None
    threshold = int(c.pick(values[: len(values) - 1]))
    return (
        f"Considering all {f.plural}, which {i.category.nouns} of {i.plural} have a total "
        f"{f.number.noun} above {threshold}? Give each {i.category.noun} with its total.",
        f"SELECT i.{i.category.column}, SUM(f.{f.number.column}) FROM "
        f"{_join_fact(d, entity=False)} WHERE i.{i.category.column} IS NOT NULL "
        f"GROUP BY i.{i.category.column} HAVING SUM(f.{f.number.column}) > {threshold}",
    )


# --- level 4: nesting, ordering with limits -------------------------------------------------------


def items_above_average(c: Context) -> Question | None:
    i = c.domain.item
    return (
        f"List the {i.label.nouns} of the {i.plural} whose {i.number.noun} is above the average "
        f"{i.number.noun} of all {i.plural}.",
        f"SELECT {i.label.column} FROM {i.table} WHERE {i.number.column} > "
        f"(SELECT AVG({i.number.column}) FROM {i.table})",
    )


def entities_without_facts(c: Context) -> Question | None:
    d = c.domain
    e, f = d.entity, d.fact
    return (
        f"List the {e.label.nouns} of the {e.plural} who have no {f.plural} at all.",
        f"SELECT {e.label.column} FROM {e.table} WHERE {e.key} NOT IN "
        f"(SELECT {e.key} FROM {f.table})",
    )


def top_items(c: Context) -> Question | None:
    i = c.domain.item
    k = int(c.rng.integers(3, 6))
    return (
        f"Give the {i.label.noun} and {i.number.noun} of the {k} {i.plural} with the highest "
        f"{i.number.noun}, highest first; break ties by {i.label.noun} in alphabetical order.",
        f"SELECT {i.label.column}, {i.number.column} FROM {i.table} "
        f"ORDER BY {i.number.column} DESC, {i.label.column} ASC LIMIT {k}",
    )


def entity_with_most_facts(c: Context) -> Question | None:
    d = c.domain
    e, f = d.entity, d.fact
    return (
        f"Which {e.noun} has the most {f.plural}? Give only the {e.label.noun}; if several are "
        f"tied, give the one whose {e.label.noun} comes first alphabetically.",
        f"SELECT e.{e.label.column} FROM {_join_fact(d, item=False)} "
        f"GROUP BY e.{e.key}, e.{e.label.column} ORDER BY COUNT(*) DESC, e.{e.label.column} ASC "
        "LIMIT 1",
    )


def items_of_entity_category(c: Context) -> Question | None:
    d = c.domain
    e, i, f = d.entity, d.item, d.fact
    value = c.pick(c.column(e, e.category))
    return (
        f"List the distinct {i.label.nouns} of the {i.plural} {d.verb} by at least one {e.noun} "
        f"whose {e.category.noun} is {lit(value)}.",
        f"SELECT DISTINCT {i.label.column} FROM {i.table} WHERE {i.key} IN "
        f"(SELECT f.{i.key} FROM {f.table} AS f JOIN {e.table} AS e ON e.{e.key} = f.{e.key} "
        f"WHERE e.{e.category.column} = {lit(value)})",
    )


# --- level 5: window functions --------------------------------------------------------------------


def rank_within_category(c: Context) -> Question | None:
    i = c.domain.item
    return (
        f"For every {i.noun} with {a(i.category.noun)}, give its {i.label.noun}, its "
        f"{i.category.noun}, its {i.number.noun} and its rank by {i.number.noun} among the "
        f"{i.plural} of the same {i.category.noun} (1 = highest; equal values share a rank and "
        "the next rank is skipped, as RANK does).",
        f"SELECT {i.label.column}, {i.category.column}, {i.number.column}, "
        f"RANK() OVER (PARTITION BY {i.category.column} ORDER BY {i.number.column} DESC) "
        f"FROM {i.table} WHERE {i.category.column} IS NOT NULL",
    )


def running_total(c: Context) -> Question | None:
    d = c.domain
    e, f = d.entity, d.fact
    busy = [entity for entity, count in c.facts_per_entity().items() if count >= 3]
    entity_id = c.pick(sorted(busy))
    if entity_id is None:
        return None
    # By id, not by name: the test-suite twins have the same ids and other names, and a question
    # about a name only this database has would let a query that recites its rows pass them.
    return (
        f"For each {f.noun} of the {e.noun} with id {entity_id}, in order of {f.date.noun}, give "
        f"its {f.date.noun}, its {f.number.noun}, and the running total of {f.number.nouns} over "
        f"that {e.noun}'s {f.plural} up to and including this one.",
        f"SELECT f.{f.date.column}, f.{f.number.column}, SUM(f.{f.number.column}) OVER "
        f"(ORDER BY f.{f.date.column}) FROM {_join_fact(d, item=False)} "
        f"WHERE e.{e.key} = {entity_id} ORDER BY f.{f.date.column}",
    )


def difference_from_category_average(c: Context) -> Question | None:
    i = c.domain.item
    return (
        f"For every {i.noun} with {a(i.category.noun)}, give its {i.label.noun}, its "
        f"{i.number.noun}, and its {i.number.noun} minus the average {i.number.noun} of the "
        f"{i.plural} with the same {i.category.noun}.",
        f"SELECT {i.label.column}, {i.number.column}, {i.number.column} - "
        f"AVG({i.number.column}) OVER (PARTITION BY {i.category.column}) FROM {i.table} "
        f"WHERE {i.category.column} IS NOT NULL",
    )


def number_facts_per_entity(c: Context) -> Question | None:
    d = c.domain
    e, f = d.entity, d.fact
    value = c.pick(c.column(e, e.category))
    return (
        f"For the {e.plural} whose {e.category.noun} is {lit(value)}, number each one's "
        f"{f.plural} in order of {f.date.noun}: give the {e.noun}'s {e.label.noun}, the "
        f"{f.date.noun}, and the sequence number (1 for that {e.noun}'s first {f.noun}).",
        f"SELECT e.{e.label.column}, f.{f.date.column}, ROW_NUMBER() OVER (PARTITION BY "
        f"e.{e.key} ORDER BY f.{f.date.column}) FROM {_join_fact(d, item=False)} "
        f"WHERE e.{e.category.column} = {lit(value)}",
    )


TEMPLATES: dict[int, tuple[Template, ...]] = {
    1: (entity_by_category, count_items_above, entity_number_missing, entity_date_in_year,
        max_number_in_category),
    2: (entities_of_item_category, facts_since, items_of_group, count_facts_of_group_category),
    3: (count_items_per_category, entities_with_many_facts, average_number_per_group,
        total_measure_per_category),
    4: (items_above_average, entities_without_facts, top_items, entity_with_most_facts,
        items_of_entity_category),
    5: (rank_within_category, running_total, difference_from_category_average,
        number_facts_per_entity),
}  # fmt: skip
LEVELS = tuple(sorted(TEMPLATES))
