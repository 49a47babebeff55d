"""Checks of env and task-source arguments, shared by every family.

Each check returns the value in its normal form or raises `EnvConfigError` naming the argument,
the value given and what is accepted, so every env refuses a bad argument the same way.

Every env declares its arguments once: its `__init__` signature names them, and a table
`argument_checks` (name -> `Check`, built from the constructors at the end of this module) says
what each accepts. `CheckedArguments`, a base of `TextEnv` and `TextAECEnv`, applies the table
whenever an env is made (`gym.make`, `rlvr.envs.multiagent.make` or a direct call), before
`__init__` runs: an unknown name, a wrong type or a value out of range is an `EnvConfigError`
naming the argument, what was given and what is accepted.
"""

from __future__ import annotations

import functools
import inspect
import operator
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar, TypeVar

from rlvr.envs.errors import DatasetError, EnvConfigError

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
    # Not a str: unknown (and never hashed: a list in a list would raise TypeError).
    unknown = [item for item in names or () if not isinstance(item, str) or item not in accepted]
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


# --- declared arguments --------------------------------------------------------------------------

Check = Callable[[Any, str], Any]
"""`check(value, name)`: returns the value, or raises `EnvConfigError` naming `name`."""


def declare(**checks: Check) -> Mapping[str, Check]:
    """An env's `argument_checks` table: `declare(name=check, ...)` (read-only)."""
    return MappingProxyType(checks)


def one_of(*accepted: Any) -> Check:
    """One of `accepted`, of the same type (so 1 is not True, nor 1.0 a level)."""

    def check(value: Any, name: str) -> Any:
        if not any(value == item and type(value) is type(item) for item in accepted):
            raise EnvConfigError(f"{name} must be one of {list(accepted)}, got {value!r:.200}")
        return value

    return check


def level(accepted: Collection[int]) -> Check:
    """A difficulty level in `accepted`, or a non-empty list of them."""
    return lambda value, name: levels(value, accepted, name=name)


def names(accepted: Collection[str]) -> Check:
    """One name of `accepted` or a non-empty list of them."""
    return lambda value, name: subset(value, accepted, name=name)


def whole(minimum: int = 1, maximum: int | None = None) -> Check:
    """An int (not a bool) in [minimum, maximum]."""

    def check(value: Any, name: str) -> int:
        is_int = isinstance(value, int) and not isinstance(value, bool)
        if not is_int or value < minimum or (maximum is not None and value > maximum):
            allowed = f">= {minimum}" if maximum is None else f"from {minimum} to {maximum}"
            raise EnvConfigError(f"{name} must be an int {allowed}, got {_shown(value)}")
        return value

    return check


def real(
    low: float, high: float | None = None, *, low_open: bool = False, high_open: bool = False
) -> Check:
    """A real number (an int or a float, not a bool) in the interval given."""
    return lambda value, name: number(
        value, name=name, low=low, high=high, low_open=low_open, high_open=high_open
    )


def of_type(*types: type, what: str) -> Check:
    """An instance of one of `types` (described to the user as `what`); bools are not ints."""

    def check(value: Any, name: str) -> Any:
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            raise EnvConfigError(f"{name} must be {what}, got {_shown(value)}")
        return value

    return check


flag = of_type(bool, what="True or False")
text = of_type(str, what="a str")
mapping = of_type(Mapping, what="a dict")


def nonempty_text(value: Any, name: str) -> str:
    """A str with something in it."""
    if not isinstance(value, str) or not value.strip():
        raise EnvConfigError(f"{name} must be a non-empty str, got {_shown(value)}")
    return value


def optional(check: Check) -> Check:
    """None, or what `check` accepts."""
    return lambda value, name: None if value is None else check(value, name)


def tasks_argument(value: Any, name: str = "tasks") -> Any:
    """A task source (`len()` and `source[i]`) or an iterable of tasks or dicts; not a path,
    text or a single dict (`DatasetError`). Each task is checked when the source is built."""
    if isinstance(value, (str, bytes, Path)):
        raise DatasetError(
            f"{name} must be a task source or a list of tasks, got {_shown(value)}; "
            "load a file first with rlvr.envs.load_jsonl(path)"
        )
    listed = hasattr(value, "__len__") and hasattr(value, "__getitem__")
    if isinstance(value, Mapping) or not (listed or isinstance(value, Iterable)):
        raise DatasetError(
            f"{name} must be a task source or a list of tasks (dicts with 'prompt' and "
            f"'answer'), got {_shown(value)}"
        )
    return value


def _shown(value: Any) -> str:
    """A value in an error message: its repr, cut short, and its type when that is not plain."""
    shown = f"{value!r:.120}"
    if not isinstance(value, (str, int, float, bool, type(None), list, tuple, dict)):
        shown += f" ({type(value).__name__})"
    return shown


RENDER_MODE = optional(one_of("ansi", "human"))
TEXT_LENGTH = whole(1)


class CheckedArguments:
    """Checks an env's arguments against its declaration before `__init__` runs.

    The accepted names are the named parameters of the class's `__init__`; a class whose
    `__init__` takes `**kwargs` and declares `argument_checks` itself accepts the table's names
    there too (and no others), while one that does not declare it passes unknown names on. Each
    given value with an entry in `argument_checks` (the class's, merged with its bases') is
    checked; defaults are not (they are right by construction).
    """

    argument_checks: ClassVar[Mapping[str, Check]] = declare(
        render_mode=RENDER_MODE, max_text_length=TEXT_LENGTH
    )

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        check_arguments(cls, args, kwargs)
        return super().__new__(cls)


@dataclass(frozen=True)
class _Declaration:
    signature: inspect.Signature
    accepted: frozenset[str] | None  # None: **kwargs passed on unchecked
    checks: Mapping[str, Check]
    var_keyword: str | None


@functools.cache
def declaration(cls: type) -> _Declaration:
    """What `cls(...)` accepts (computed once per class)."""
    signature = inspect.signature(cls.__init__)  # type: ignore[misc]
    params = list(signature.parameters.values())[1:]  # without self
    named = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    var_keyword = next((p.name for p in params if p.kind is p.VAR_KEYWORD), None)
    checks: dict[str, Check] = {}
    for klass in reversed(cls.__mro__):
        checks.update(klass.__dict__.get("argument_checks", {}))
    owner = next(klass for klass in cls.__mro__ if "__init__" in klass.__dict__)
    if var_keyword is None:
        accepted: frozenset[str] | None = frozenset(named)
    elif "argument_checks" in owner.__dict__:
        accepted = frozenset(named | set(owner.__dict__["argument_checks"]))
    else:
        accepted = None
    return _Declaration(signature, accepted, checks, var_keyword)


def check_arguments(cls: type, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
    """Refuse what `cls(*args, **kwargs)` cannot take, as its declaration says (above)."""
    if not args and not kwargs:
        return  # the defaults (also how copy and pickle make an instance)
    spec = declaration(cls)
    if spec.accepted is not None:
        unknown = [name for name in kwargs if name not in spec.accepted]
        if unknown:
            shown = ", ".join(f"{name}={kwargs[name]!r:.60}" for name in unknown)
            raise EnvConfigError(
                f"{cls.__name__} got unknown argument(s) {shown}; it accepts "
                f"{', '.join(sorted(spec.accepted))}"
            )
    try:
        bound = spec.signature.bind_partial(None, *args, **kwargs)
    except TypeError as exc:  # too many positional arguments, or one given twice
        raise EnvConfigError(f"{cls.__name__}: {exc}") from None
    given: dict[str, Any] = dict(bound.arguments)
    if spec.var_keyword is not None:
        given.update(given.pop(spec.var_keyword, {}))
    for name, value in given.items():
        check = spec.checks.get(name)
        if check is not None:
            check(value, name)
