"""Checks of single values of stored results, side files and arena records: type and range.

Results reach the store from runs, re-judgings and `rlvr leaderboard import` (a file anyone can
edit), and a store file can be edited by hand. Everything that reads a result (ranking, the
terminal table, the HTML page) does arithmetic and formatting on its fields, so each field is
checked where a result enters or leaves the store: a number is a number (never a string or a
bool), finite unless NaN is its way of saying "none", within its range; a count is a
non-negative int below a bound (a count is used as a size before anything else says it is
wrong); text is a string. A failed check raises `FieldError` naming the field's path.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

MAX_SQLITE_INT = 2**63 - 1
"""Largest integer SQLite stores (seeds go into an INTEGER column)."""


class FieldError(ValueError):
    """A value of the wrong type or out of range; the message starts with its path."""


def number(
    value: Any,
    where: str,
    *,
    nan: bool = False,
    low: float = -math.inf,
    high: float = math.inf,
) -> float:
    """`value` as a float: an int or float (a bool is no number), finite and in [low, high];
    NaN only where `nan` allows it ("none": a score with no judged episode)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise FieldError(f"{where} must be a number, got {_shown(value)}")
    try:
        converted = float(value)
    except OverflowError:  # an int of hundreds of digits
        raise FieldError(f"{where} must be a finite number, got {_shown(value)}") from None
    if math.isnan(converted):
        if nan:
            return converted
        raise FieldError(f"{where} must be a number, got NaN")
    if not math.isfinite(converted):
        raise FieldError(f"{where} must be a finite number, got {value!r}")
    if not low <= converted <= high:
        raise FieldError(f"{where} must be a number in [{low:g}, {high:g}], got {value!r}")
    return converted


def count(value: Any, where: str, maximum: int, *, minimum: int = 0) -> int:
    """`value` as an int in [minimum, maximum] (a bool is no count)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise FieldError(f"{where} must be an int, got {_shown(value)}")
    if not minimum <= value <= maximum:
        raise FieldError(f"{where} must be between {minimum} and {maximum}, got {_shown(value)}")
    return value


def optional_count(value: Any, where: str, maximum: int) -> int | None:
    return None if value is None else count(value, where, maximum)


def text(value: Any, where: str, *, empty: bool = True) -> str:
    if not isinstance(value, str):
        raise FieldError(f"{where} must be a string, got {_shown(value)}")
    if not empty and not value.strip():
        raise FieldError(f"{where} must not be empty")
    return value


def optional_text(value: Any, where: str) -> str | None:
    return None if value is None else text(value, where)


def flag(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise FieldError(f"{where} must be true or false, got {_shown(value)}")
    return value


def table(
    value: Any, where: str, required: Iterable[str] = (), optional: Iterable[str] | None = None
) -> Mapping[str, Any]:
    """`value` as a mapping holding every `required` key; with `optional` given, no other keys
    than those two kinds."""
    if not isinstance(value, Mapping):
        raise FieldError(f"{where} must be an object, got {_shown(value)}")
    required = list(required)
    missing = [key for key in required if key not in value]
    if missing:
        raise FieldError(f"{where} lacks {missing}")
    if optional is not None:
        unknown = sorted(str(key) for key in set(value) - {*required, *optional})
        if unknown:
            raise FieldError(f"{where} has unknown keys {unknown}")
    return value


def array(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise FieldError(f"{where} must be an array, got {_shown(value)}")
    return value


def _shown(value: Any) -> str:
    """A value for a message: its type, and its text clipped (a value can be a megabyte)."""
    shown = repr(value) if not isinstance(value, int) or abs(value) < 10**30 else "a huge int"
    return f"{type(value).__name__} {shown[:80]}{'...' if len(shown) > 80 else ''}"


def same(left: Any, right: Any) -> bool:
    """Equal, counting two NaNs as equal (a score with no judged episode is NaN on both sides)."""
    if isinstance(left, float) and isinstance(right, float) and math.isnan(left):
        return math.isnan(right)
    return bool(left == right)


def differing_paths(left: Any, right: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """Every (path, left value, right value) where two JSON-like values differ, e.g.
    `("envs[0].score", 1.0, 0.25)`; arrays of different lengths differ as a whole."""
    if isinstance(left, dict) and isinstance(right, dict):
        found = []
        for key in sorted(set(left) | set(right), key=str):
            found += differing_paths(
                left.get(key), right.get(key), f"{path}.{key}" if path else str(key)
            )
        return found
    if isinstance(left, list) and isinstance(right, list) and len(left) == len(right):
        found = []
        for index, (a, b) in enumerate(zip(left, right)):
            found += differing_paths(a, b, f"{path}[{index}]")
        return found
    return [] if same(left, right) else [(path, left, right)]
