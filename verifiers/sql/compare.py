"""Comparing a predicted query's result with the gold result (execution accuracy).

The notion is Spider's: rows compare as multisets (duplicates count), or as sequences when the
gold query has a top-level ORDER BY (rows tied on its keys in any order among themselves, given
`ties`); numbers compare numerically (3 == 3.0, floats within a tolerance); NULL equals NULL;
column order is ignored by default (a permutation of the predicted columns that makes the results
equal is accepted). Column names never matter.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeGuard

from rlvr.verifiers.sql.results import Cell, QueryResult

MAX_PERMUTATIONS = 5_000
_GREEDY_MATCH_LIMIT = 300  # rows; above it the sorted comparison alone decides


@dataclass(frozen=True)
class Tolerance:
    rel: float = 1e-6
    abs: float = 1e-9


@dataclass(frozen=True)
class Comparison:
    """`match` is full equality; `score` is 1.0 on a match, else partial credit (or 0.0)."""

    match: bool
    score: float
    reason: str


def compare_results(
    gold: QueryResult,
    predicted: QueryResult,
    *,
    ordered: bool,
    ignore_column_order: bool = True,
    tolerance: Tolerance = Tolerance(),
    partial_credit: bool = False,
    ties: Sequence[object] | None = None,
) -> Comparison:
    """Compare two results; see the module docstring for the rules.

    `ties` (ordered results only) labels each gold row with its ORDER BY key: rows next to each
    other with equal labels are tied, and may come in any order among themselves.

    Partial credit (when asked for and the results differ): the F1 of the row multisets under the
    best column alignment found, or for ordered results the fraction of positions holding the
    right row. A mismatch never scores 1.0.
    """
    width = len(gold.columns)
    if len(predicted.columns) != width:
        return Comparison(False, 0.0, f"{len(predicted.columns)} columns, expected {width}")
    gold_rows, pred_rows = list(gold.rows), list(predicted.rows)
    if len(gold_rows) == len(pred_rows):
        for permutation in _permutations(
            gold_rows, pred_rows, width, ignore_column_order, tolerance
        ):
            permuted = [tuple(row[i] for i in permutation) for row in pred_rows]
            if _rows_equal(gold_rows, permuted, ordered, tolerance, ties):
                return Comparison(True, 1.0, "the results match")
    reason = (
        f"{len(pred_rows)} rows, expected {len(gold_rows)}"
        if len(gold_rows) != len(pred_rows)
        else "same number of rows, different values" + (" or order" if ordered else "")
    )
    if not partial_credit:
        return Comparison(False, 0.0, reason)
    score = _partial_score(gold_rows, pred_rows, width, ordered, ignore_column_order, tolerance)
    return Comparison(False, min(score, 0.99), reason)


# --- cells and rows -------------------------------------------------------------------------------


def cells_equal(a: Cell, b: Cell, tolerance: Tolerance) -> bool:
    if _is_number(a) and _is_number(b):
        if isinstance(a, int) and isinstance(b, int):
            return a == b
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=tolerance.rel, abs_tol=tolerance.abs)
    if _is_number(a) or _is_number(b):
        return False
    return a == b


def _is_number(value: Cell) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _cell_key(value: Cell) -> tuple:
    """A sort key that never compares across types; numbers rounded to 6 significant digits so
    that values equal within the tolerance (almost always) sort together."""
    if value is None:
        return (0, 0)
    if _is_number(value):
        if isinstance(value, float) and not math.isfinite(value):
            return (1, 0, repr(value))
        return (1, float(f"{float(value):.6g}"), "")
    if isinstance(value, str):
        return (2, value)
    return (3, value)


def _row_key(row: Sequence[Cell]) -> tuple:
    return tuple(_cell_key(cell) for cell in row)


def _row_equal(a: Sequence[Cell], b: Sequence[Cell], tolerance: Tolerance) -> bool:
    return all(cells_equal(x, y, tolerance) for x, y in zip(a, b))


def _rows_equal(
    gold: list, pred: list, ordered: bool, tolerance: Tolerance, ties: Sequence | None = None
) -> bool:
    if ordered and ties is not None and len(ties) == len(gold):
        return all(
            _rows_equal(gold[start:end], pred[start:end], False, tolerance)
            for start, end in _runs(ties)
        )
    if ordered:
        return all(_row_equal(g, p, tolerance) for g, p in zip(gold, pred))
    gold_sorted = sorted(gold, key=_row_key)
    pred_sorted = sorted(pred, key=_row_key)
    if all(_row_equal(g, p, tolerance) for g, p in zip(gold_sorted, pred_sorted)):
        return True
    return len(gold) <= _GREEDY_MATCH_LIMIT and _greedy_match(gold, pred, tolerance)


def _runs(labels: Sequence) -> list[tuple[int, int]]:
    """(start, end) of each run of equal neighbouring labels."""
    runs, start = [], 0
    for position in range(1, len(labels) + 1):
        if position == len(labels) or labels[position] != labels[start]:
            runs.append((start, position))
            start = position
    return runs


def _greedy_match(gold: list, pred: list, tolerance: Tolerance) -> bool:
    """Pair rows one by one (for values that straddle a rounding boundary of the sort key)."""
    unused = list(pred)
    for row in gold:
        for position, candidate in enumerate(unused):
            if _row_equal(row, candidate, tolerance):
                del unused[position]
                break
        else:
            return False
    return True


# --- column alignment ---------------------------------------------------------------------------


def _column(rows: list, index: int) -> list[Cell]:
    return [row[index] for row in rows]


def _columns_match(gold_column: list, pred_column: list, tolerance: Tolerance) -> bool:
    gold_sorted = sorted(gold_column, key=_cell_key)
    pred_sorted = sorted(pred_column, key=_cell_key)
    return all(cells_equal(g, p, tolerance) for g, p in zip(gold_sorted, pred_sorted))


def _permutations(gold, pred, width, ignore_column_order, tolerance):
    """Candidate orders of the predicted columns: identity first, then every assignment in which
    each gold column gets a predicted column holding the same multiset of values."""
    identity = tuple(range(width))
    yield identity
    if not ignore_column_order or width < 2:
        return
    candidates = [
        [j for j in range(width) if _columns_match(_column(gold, i), _column(pred, j), tolerance)]
        for i in range(width)
    ]
    if any(not options for options in candidates):
        return
    for count, permutation in enumerate(_assignments(candidates)):
        if count >= MAX_PERMUTATIONS:
            return
        if permutation != identity:
            yield permutation


def _assignments(candidates: list[list[int]], chosen: tuple[int, ...] = ()):
    if len(chosen) == len(candidates):
        yield chosen
        return
    for option in candidates[len(chosen)]:
        if option not in chosen:
            yield from _assignments(candidates, (*chosen, option))


# --- partial credit -------------------------------------------------------------------------------


def _partial_score(gold, pred, width, ordered, ignore_column_order, tolerance) -> float:
    alignments = [tuple(range(width))]
    if ignore_column_order and width > 1:
        alignments.append(_best_overlap_alignment(gold, pred, width))
    best = 0.0
    for alignment in alignments:
        permuted = [tuple(row[i] for i in alignment) for row in pred]
        if ordered:
            hits = sum(_row_equal(g, p, tolerance) for g, p in zip(gold, permuted))
            score = hits / max(len(gold), len(permuted), 1)
        else:
            score = _multiset_f1(gold, permuted)
        best = max(best, score)
    return best


def _multiset_f1(gold: list, pred: list) -> float:
    if not gold or not pred:
        return 0.0
    overlap = sum((Counter(map(_row_key, gold)) & Counter(map(_row_key, pred))).values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(pred), overlap / len(gold)
    return 2 * precision * recall / (precision + recall)


def _best_overlap_alignment(gold, pred, width) -> tuple[int, ...]:
    """Greedily pair gold and predicted columns by how many values they share."""
    overlaps = []
    for i, j in itertools.product(range(width), repeat=2):
        shared = Counter(map(_cell_key, _column(gold, i))) & Counter(
            map(_cell_key, _column(pred, j))
        )
        overlaps.append((sum(shared.values()), -abs(i - j), i, j))
    alignment: dict[int, int] = {}
    used: set[int] = set()
    for _, _, i, j in sorted(overlaps, reverse=True):
        if i not in alignment and j not in used:
            alignment[i] = j
            used.add(j)
    return tuple(alignment[i] for i in range(width))
