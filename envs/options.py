"""Checks of env and task-source arguments, shared by every family.

Each check returns the value in its normal form or raises `EnvConfigError` naming the argument,
the value given and what is accepted, so every env refuses a bad argument the same way.
"""

from __future__ import annotations

import operator
from collections.abc import Collection, Mapping, Sequence
from typing import Any, TypeVar

from rlvr.envs.errors import EnvConfigError

T = TypeVar("T")


def levels(
    value: int | Sequence[int], accepted: Collection[int] | None = None, *, name: str = "difficulty"
) -> list[int]:
    """A level or a non-empty list of levels, as a list of ints; each must be in `accepted` (any
    positive int when `accepted` is None). Booleans are not levels."""
    listed = _as_list(value)
    ints = [_as_int(level) for level in listed or ()]
    valid = bool(ints) and all(
        level is not None and (level >= 1 if accepted is None else level in accepted)
        for level in ints
    )
    if not valid:
        allowed = "a positive int" if accepted is None else f"a level in {sorted(accepted)}"
        raise EnvConfigError(f"{name} must be {allowed} or a list of them, got {value!r}")
    return ints  # type: ignore[return-value]  # no None left: checked above


def subset(
    value: str | Sequence[str] | None, accepted: Collection[str], *, name: str
) -> tuple[str, ...]:
    """Names from `accepted`: one name or a non-empty list, as given; None means all of them."""
    if value is None:
        return tuple(accepted)
    names = _as_list(value)
    unknown = [item for item in names or () if item not in accepted]
    if not names or unknown:
        raise EnvConfigError(
            f"{name} must be one or a non-empty list of {sorted(accepted)}, got {value!r}"
            + (f" (unknown: {unknown})" if unknown else "")
        )
    return tuple(names)


def choice(value: T, accepted: Sequence[T], *, name: str) -> T:
    """One of `accepted`."""
    if value not in accepted:
        raise EnvConfigError(f"{name} must be one of {list(accepted)}, got {value!r}")
    return value


def integer(value: Any, *, name: str, minimum: int = 1) -> int:
    """An int (not a bool) of at least `minimum`."""
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise EnvConfigError(f"{name} must be an int >= {minimum}, got {value!r}")
    return value


def number(
    value: Any,
    *,
    name: str,
    low: float,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    why: str = "",
) -> float:
    """A real number in the interval given (`low_open`/`high_open` exclude the ends)."""
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    ok = is_number and (value > low if low_open else value >= low)
    if ok and high is not None:
        ok = value < high if high_open else value <= high
    if not ok:
        left = "(" if low_open else "["
        right = "inf)" if high is None else f"{high:g}" + (")" if high_open else "]")
        interval = f"{left}{low:g}, {right}"
        raise EnvConfigError(f"{name} must be in {interval}{why}, got {value!r}")
    return float(value)


def refuse_replaced(
    given: Mapping[str, Any], *, what: str = "built-in generator", hint: str = ""
) -> None:
    """Refuse settings of a family's `what` beside `tasks=`, which replaces them: `given` maps
    each setting's name to its value, None meaning unset."""
    clashing = [name for name, value in given.items() if value is not None]
    if clashing:
        raise EnvConfigError(
            f"{', '.join(clashing)} configure the {what}, which tasks= replaces; "
            f"drop them (split and filter your own tasks before passing them{hint})"
        )


def _as_list(value: Any) -> list[Any] | None:
    """One item or a collection of items as a list; None for what is neither (a mapping)."""
    if isinstance(value, (str, bytes)) or _as_int(value) is not None:
        return [value]
    if isinstance(value, Mapping) or not hasattr(value, "__iter__"):
        return None
    return list(value)


def _as_int(value: Any) -> int | None:
    """`value` as an int if it is an integer (numpy's too) but not a bool, else None."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        return None
    return operator.index(value)
