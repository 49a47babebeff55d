"""Probes for `rlvr/SQL-v0`: the gold query sent as models send SQL and rewritten equivalently,
and wrong queries made from it.

Right: the gold in a ```sql block, bare, with prose around it, pretty-printed, with its output
columns renamed (`AS answer_1`), with its output columns in reverse order, and wrapped in a CTE
(`WITH answer AS (...) SELECT * FROM answer`, for golds without an ORDER BY, whose order a
wrapper need not keep). Wrong: one filter changed (a number in a WHERE or HAVING comparison plus
one, a text comparison negated, or a `<` made `<=`), and a LIMIT plus one. A wrong query is kept
only if running it and the gold directly on the task's database and its twins gives different
rows somewhere: a change that returns the same rows everywhere is no wrong answer.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import sqlglot
from sqlglot import exp

from rlvr.envs.audit.report import Probe
from rlvr.envs.code.audit import fenced
from rlvr.envs.errors import DatasetError
from rlvr.verifiers.sql.backend import Limits
from rlvr.verifiers.sql.errors import QueryError
from rlvr.verifiers.sql.guard import has_top_level_order
from rlvr.verifiers.sql.sqlite import SQLiteBackend
from rlvr.verifiers.types import Task

_LOOSER: dict[type[exp.Expr], type[exp.Binary]] = {
    exp.GT: exp.GTE,
    exp.GTE: exp.GT,
    exp.LT: exp.LTE,
    exp.LTE: exp.LT,
}
_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)


class SQLAudit:
    env_id = "rlvr/SQL-v0"
    datasets = "'procedural' (the env's own generator, test split)"

    def __init__(self) -> None:
        self.skipped: Counter[str] = Counter()
        self._backend = SQLiteBackend(isolate=False)  # the gold and our rewrites: trusted

    def open(self, dataset: str) -> tuple[dict[str, Any], str]:
        if dataset != "procedural":
            raise DatasetError(
                f"dataset {dataset!r}: the SQL audit takes 'procedural' (no public text-to-SQL "
                "set with its databases is available offline)"
            )
        return {"split": "test"}, "SQL-v0 procedural (test split)"

    def probes(self, env: Any, item: int, task: Task) -> list[Probe]:
        gold = str(task.answer)
        tree = sqlglot.parse_one(gold, read="sqlite")
        probes = [Probe(item, style, True, reply) for style, reply in self._right(gold, tree)]
        databases = [task.metadata["db_id"], *task.metadata.get("test_suite", [])]
        catalog = env.judge.tasks.catalog
        rng = np.random.default_rng(item)
        for style, candidates in (
            ("changed filter", changed_filters(tree, rng)),
            ("limit plus one", changed_limits(tree)),
        ):
            if not candidates:
                self.skipped[f"{style}: nothing to change"] += 1
                continue
            wrong = next(
                (sql for sql in candidates if self._differs(catalog, databases, gold, sql, tree)),
                None,
            )
            if wrong is None:
                self.skipped[f"{style}: every change returns the gold rows"] += 1
                continue
            probes.append(Probe(item, style, False, fenced(wrong, "sql")))
        return probes

    def _right(self, gold: str, tree: exp.Expr) -> list[tuple[str, str]]:
        replies = [
            ("fenced", fenced(gold, "sql")),
            ("bare", gold),
            ("prose around the block", f"This query answers it:\n\n{fenced(gold, 'sql')}\n\n"
             "It reads only the tables the question needs."),
            ("pretty-printed", fenced(tree.sql(dialect="sqlite", pretty=True), "sql")),
        ]  # fmt: skip
        for style, rewrite in (
            ("columns renamed", renamed_columns(tree)),
            ("columns reversed", reversed_columns(tree)),
            ("wrapped in a CTE", None if has_top_level_order(tree) else wrapped_in_cte(gold)),
        ):
            if rewrite is None:
                self.skipped[f"{style}: not applicable"] += 1
            else:
                replies.append((style, fenced(rewrite, "sql")))
        return replies

    def _differs(
        self, catalog: Any, databases: list[str], gold: str, sql: str, tree: exp.Expr
    ) -> bool:
        ordered = has_top_level_order(tree)
        for db_id in databases:
            try:
                want = self._backend.run_sql(catalog[db_id], gold, Limits(timeout_s=10.0))
                got = self._backend.run_sql(catalog[db_id], sql, Limits(timeout_s=10.0))
            except QueryError:
                return False  # a broken mutant is no "changed filter"
            if _rows(want, ordered) != _rows(got, ordered):
                return True
        return False

    def close(self) -> None:
        self._backend.close()


def _rows(result: Any, ordered: bool) -> list[str]:
    rows = [repr(row) for row in result.rows]
    return rows if ordered else sorted(rows)


def _projections(tree: exp.Expr) -> list[exp.Expr] | None:
    if not isinstance(tree, exp.Select):
        return None  # a set operation: its branches must keep their shapes
    projections = list(tree.expressions)
    if any(isinstance(p, exp.Star) or p.find(exp.Star) for p in projections):
        return None
    return projections


def renamed_columns(tree: exp.Expr) -> str | None:
    """Every unnamed output column named `answer_<i>` (column names never matter)."""
    tree = tree.copy()
    projections = _projections(tree)
    if projections is None or all(isinstance(p, exp.Alias) for p in projections):
        return None
    tree.set(
        "expressions",
        [p if isinstance(p, exp.Alias) else exp.alias_(p, f"answer_{i}") for i, p in
         enumerate(projections, start=1)],
    )  # fmt: skip
    return tree.sql(dialect="sqlite")


def reversed_columns(tree: exp.Expr) -> str | None:
    """The output columns in reverse order (column order is ignored), unless something refers
    to them by position."""
    tree = tree.copy()
    projections = _projections(tree)
    if projections is None or len(projections) < 2:
        return None
    for clause in ("group", "order"):
        node = tree.args.get(clause)
        if node is not None and any(
            isinstance(key, exp.Literal) or (isinstance(key, exp.Ordered) and
                                             isinstance(key.this, exp.Literal))
            for key in node.expressions
        ):  # fmt: skip
            return None
    tree.set("expressions", projections[::-1])
    return tree.sql(dialect="sqlite")


def wrapped_in_cte(gold: str) -> str:
    return f"WITH answer AS (\n{gold}\n)\nSELECT * FROM answer"


def changed_filters(tree: exp.Expr, rng: np.random.Generator) -> list[str]:
    """One WHERE/HAVING comparison changed, each way it can be, in a seeded random order."""
    sites = _filter_sites(tree)
    order: list[int] = list(rng.permutation(len(sites))) if sites else []
    changed = []
    for index in order:
        copy = tree.copy()
        comparison = _filter_sites(copy)[int(index)]
        replacement = _changed(comparison)
        if replacement is not None:
            comparison.replace(replacement)
            changed.append(copy.sql(dialect="sqlite"))
    return changed


def _filter_sites(tree: exp.Expr) -> list[exp.Expr]:
    sites: list[exp.Expr] = []
    for clause in tree.find_all(exp.Where, exp.Having):
        sites += [node for node in clause.find_all(*_COMPARISONS)]
    return sites


def _changed(comparison: exp.Expr) -> exp.Expr | None:
    literal = comparison.expression
    if isinstance(literal, exp.Literal) and not literal.is_string:
        number = literal.this
        bumped = str(int(number) + 1) if number.lstrip("-").isdigit() else str(float(number) + 1)
        return comparison.__class__(
            this=comparison.this.copy(), expression=exp.Literal.number(bumped)
        )
    if type(comparison) in _LOOSER:
        return _LOOSER[type(comparison)](this=comparison.this.copy(), expression=literal.copy())
    if isinstance(comparison, exp.EQ):
        return exp.NEQ(this=comparison.this.copy(), expression=literal.copy())
    return None  # fmt: skip


def changed_limits(tree: exp.Expr) -> list[str]:
    limit = tree.args.get("limit")
    if limit is None or not isinstance(limit.expression, exp.Literal):
        return []
    copy = tree.copy()
    value = int(copy.args["limit"].expression.this)
    copy.args["limit"].set("expression", exp.Literal.number(value + 1))
    return [copy.sql(dialect="sqlite")]
