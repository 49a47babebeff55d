"""Result comparison: multisets vs sequences, numbers, NULLs, column order, partial credit."""

from __future__ import annotations

import pytest

from rlvr.verifiers.sql import QueryResult, Tolerance, compare_results


def result(*rows, columns=None) -> QueryResult:
    width = len(rows[0]) if rows else 1
    return QueryResult(tuple(columns or [f"c{i}" for i in range(width)]), tuple(rows))


def match(gold, pred, **kwargs) -> bool:
    kwargs.setdefault("ordered", False)
    return compare_results(gold, pred, **kwargs).match


def test_unordered_results_compare_as_multisets():
    assert match(result((1,), (2,), (3,)), result((3,), (1,), (2,)))
    assert not match(result((1,), (1,), (2,)), result((1,), (2,), (2,)))  # duplicates count
    assert not match(result((1,), (1,), (2,)), result((1,), (2,)))
    assert not match(result((1,), (2,)), result((1,), (2,), (2,)))


def test_ordered_results_compare_as_sequences():
    gold = result((1, "a"), (2, "b"))
    assert match(gold, result((1, "a"), (2, "b")), ordered=True)
    assert not match(gold, result((2, "b"), (1, "a")), ordered=True)
    assert match(gold, result((2, "b"), (1, "a")), ordered=False)


def test_numbers_compare_numerically_within_tolerance():
    assert match(result((3,)), result((3.0,)))
    assert match(result((1 / 3,)), result((0.333333333,)))
    assert not match(result((1 / 3,)), result((0.33,)))
    assert match(result((1 / 3,)), result((0.33,)), tolerance=Tolerance(rel=0.05))
    assert match(result((0.0,)), result((1e-12,)))
    assert not match(result((2**62,)), result((2**62 + 1,)))  # big ints stay exact
    assert not match(result((3,)), result(("3",)))  # text is not a number
    assert match(result((float("nan"),)), result((float("nan"),)))


def test_nulls_equal_only_nulls():
    assert match(result((None, 1)), result((None, 1)))
    assert not match(result((None,)), result((0,)))
    assert not match(result((None,)), result(("",)))
    assert match(result((None,), (1,)), result((1,), (None,)))


def test_column_order_is_ignored_by_default():
    gold = result((1, "a", 2.5), (2, "b", 3.5))
    swapped = result(("a", 2.5, 1), ("b", 3.5, 2))
    assert match(gold, swapped)
    assert not match(gold, swapped, ignore_column_order=False)


def test_a_column_permutation_must_fit_whole_rows():
    # Each predicted column holds a gold column's values, but the rows pair them differently.
    gold = result((1, "a"), (2, "b"))
    assert not match(gold, result(("b", 1), ("a", 2)))
    assert not match(result((1, 2), (3, 4)), result((1, 4), (3, 2)))


def test_column_count_must_match():
    comparison = compare_results(result((1, 2)), result((1,)), ordered=False)
    assert not comparison.match and "1 columns, expected 2" in comparison.reason
    assert not match(result((1,)), result((1, 1)))


def test_empty_results():
    assert match(QueryResult(("a",), ()), QueryResult(("b",), ()))
    assert not match(QueryResult(("a",), ()), result((1,)))


@pytest.mark.parametrize(
    ("gold", "pred", "ordered", "expected"),
    [
        ([(1,), (2,), (3,), (4,)], [(1,), (2,)], False, 2 * 1.0 * 0.5 / 1.5),  # F1
        ([(1,), (2,)], [(1,), (2,), (3,), (9,)], False, 2 * 0.5 * 1.0 / 1.5),
        ([(1,), (2,)], [(8,), (9,)], False, 0.0),
        ([(1,), (2,), (3,)], [(1,), (3,), (2,)], True, 1 / 3),  # positions
    ],
)
def test_partial_credit(gold, pred, ordered, expected):
    comparison = compare_results(result(*gold), result(*pred), ordered=ordered, partial_credit=True)
    assert not comparison.match
    assert comparison.score == pytest.approx(expected)
    assert compare_results(result(*gold), result(*pred), ordered=ordered).score == 0.0


def test_partial_credit_is_never_full_for_a_mismatch():
    gold, pred = result((1,), (2,)), result((2,), (1,))
    comparison = compare_results(gold, pred, ordered=True, partial_credit=True)
    assert not comparison.match and comparison.score < 1.0


def test_partial_credit_aligns_swapped_columns():
    gold = result((1, "a"), (2, "b"), (3, "c"))
    pred = result(("a", 1), ("b", 2), ("z", 9))
    comparison = compare_results(gold, pred, ordered=False, partial_credit=True)
    assert comparison.score == pytest.approx(2 / 3)


def test_tied_rows_of_an_ordered_result_may_come_in_any_order():
    gold = result(("a", 1), ("b", 1), ("c", 2))
    swapped = result(("b", 1), ("a", 1), ("c", 2))
    assert not match(gold, swapped, ordered=True)
    assert match(gold, swapped, ordered=True, ties=[(1,), (1,), (2,)])
    # only within a tie: the order between keys still counts
    assert not match(gold, result(("c", 2), ("a", 1), ("b", 1)), ordered=True, ties=[1, 1, 2])
