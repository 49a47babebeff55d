"""Rows tied on a gold query's ORDER BY keys, whose order among themselves is the engine's whim.

A gold query ordered on a non-unique key (`SELECT name ... ORDER BY age`, Spider is full of them)
fixes the order of its rows only between different keys: a reply that breaks the ties otherwise
is right, and so is one whose LIMIT keeps other rows tied at its boundary. `with_order_keys`
writes the gold with its keys as extra columns, so that one more run tells the ties apart.
"""

from __future__ import annotations

from sqlglot import exp

from rlvr.verifiers.sql.compare import Tolerance, cells_equal
from rlvr.verifiers.sql.guard import CheckedQuery
from rlvr.verifiers.sql.results import QueryResult


def with_order_keys(
    query: CheckedQuery, width: int, without_limit: bool = False
) -> tuple[str | None, list[int]] | None:
    """Where a gold query's ORDER BY keys are in its result: (None, column positions) when each
    key is an output column (`ORDER BY 2`, an output alias), else (the query with the other keys
    appended as columns, their positions there; `without_limit` also drops its LIMIT). None for
    what has no such form: no top-level ORDER BY, a set operation, DISTINCT (extra columns would
    change its rows)."""
    tree = query.expression
    if not isinstance(tree, exp.Select) or tree.args.get("distinct") or not tree.args.get("order"):
        return None
    tree = tree.copy()
    starred = any(projection.is_star for projection in tree.expressions)
    aliases = {
        projection.alias.lower(): position
        for position, projection in enumerate(tree.expressions)
        if isinstance(projection, exp.Alias) and not starred
    }
    positions: list[int] = []
    extra: list[exp.Expr] = []
    for ordered in tree.args["order"].expressions:
        key = ordered.this
        if isinstance(key, exp.Literal) and key.is_int:  # ORDER BY 2
            if starred or not 1 <= int(key.this) <= width:
                return None
            positions.append(int(key.this) - 1)
        elif isinstance(key, exp.Column) and not key.table and key.name.lower() in aliases:
            positions.append(aliases[key.name.lower()])
        else:
            positions.append(width + len(extra))
            extra.append(exp.alias_(key.copy(), f"rlvr_order_key_{len(extra)}"))
    if without_limit:
        tree.set("limit", None)
    elif not extra:
        return None, positions
    tree.set("expressions", [*tree.expressions, *extra])
    try:
        return tree.sql(dialect=query.dialect), positions
    except Exception:  # sqlglot failing on an odd tree: the gold's own order counts
        return None


def literal_limit(tree: exp.Expression) -> int | None:
    """N of a top-level `LIMIT N` without OFFSET, else None."""
    limit = tree.args.get("limit") if isinstance(tree, exp.Select) else None
    count = limit.args.get("expression") if isinstance(limit, exp.Limit) else None
    if tree.args.get("offset") is not None or not isinstance(count, exp.Literal):
        return None
    return int(count.this) if count.is_int else None


def tied_rows(
    gold: QueryResult, full: QueryResult, positions: list[int], limit: int | None
) -> tuple[QueryResult, tuple, tuple] | None:
    """(gold rows, their keys, the rows tied with the last one) from the keyed run `full` (of
    the gold without its LIMIT when `limit` is given)."""
    width, count = len(gold.columns), len(gold.rows)
    if count != (len(full.rows) if limit is None else min(limit, len(full.rows))):
        return None  # not the same rows: keep the gold's own order
    rows = [row[:width] for row in full.rows]
    keys = [tuple(row[i] for i in positions) for row in full.rows]
    pool: tuple = ()
    if limit is not None and count:
        pool = tuple(row for row, key in zip(rows, keys) if key == keys[count - 1])
    return QueryResult(gold.columns, tuple(rows[:count])), tuple(keys[:count]), pool


def boundary_choice(
    gold: QueryResult, ties: tuple, pool: tuple, predicted: QueryResult, tolerance: Tolerance
) -> QueryResult:
    """The gold with its last tied rows replaced by the ones the reply kept, when those are all
    among the rows tied there (a LIMIT may keep any of them); else the gold."""
    if not pool or not ties or len(predicted.rows) != len(gold.rows):
        return gold
    start = len(ties)
    while start > 0 and ties[start - 1] == ties[-1]:
        start -= 1
    unused, chosen = list(pool), []
    for row in predicted.rows[start:]:
        for position, candidate in enumerate(unused):
            same = all(cells_equal(a, b, tolerance) for a, b in zip(candidate, row))
            if same and len(candidate) == len(row):
                chosen.append(unused.pop(position))
                break
        else:
            return gold
    return QueryResult(gold.columns, gold.rows[:start] + tuple(chosen))
