"""What a config dataclass declares about its fields, checked wherever one is made: the range of
a number field (`Range`, `Seed`, `Positive`), `check_numbers` (NaN, infinities, 64-bit ints and
the declared ranges), and a field's command-line metadata (`cli("--out")`).

It sits in the ground layer so that the ground's own configs (`rlvr.core.policy.SamplingParams`)
declare their fields as every other config does; `rlvr.config`, which generates the flags and
reads and writes TOML from the classes, re-exports all of it.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from collections.abc import Callable, Sequence
from typing import Annotated, Any, ParamSpec, TypeVar, Union, cast

P = ParamSpec("P")
R = TypeVar("R")
_META = "rlvr.config"
"""The field-metadata key of `cli`'s `FieldCli`."""


def _cache(function: Callable[P, R]) -> Callable[P, R]:
    """`functools.cache`, keeping the function's signature for type checkers (its wrapper's
    takes any Hashable, and mypy does not count a class as one)."""
    return cast("Callable[P, R]", functools.cache(function))


@dataclasses.dataclass(frozen=True)
class Range:
    """`Annotated[int, Range(1)]`: the values a number field accepts (both ends included, None:
    unbounded), checked with its type wherever a config is made; `why` ends the message."""

    low: int | float | None = None
    high: int | float | None = None
    why: str = ""
    open: bool = False
    """The low end is excluded (`Range(0, 1, open=True)`: a share that must not be 0)."""

    def problem(self, value: int | float) -> str | None:
        above = self.low is None or value > self.low or (value == self.low and not self.open)
        if above and (self.high is None or value <= self.high):
            return None
        if self.high is None:
            accepted = f"{'>' if self.open else '>='} {self.low}"
        elif self.low is None:
            accepted = f"<= {self.high}"
        else:
            accepted = f"in {'(' if self.open else '['}{self.low}, {self.high}]"
        return f"must be {accepted}{f' ({self.why})' if self.why else ''}, got {value!r}"


INT64 = Range(-(2**63), 2**63 - 1, "a 64-bit integer")
"""Every int field's range: an int beyond it reaches no tensor, array or count a run can use."""
MAX_SEED = 2**32 - 1
Seed = Annotated[int, Range(0, MAX_SEED, "seeds are 32-bit unsigned integers")]
"""A seed field's type. numpy refuses negative seeds and torch those beyond 64 bits, and some
tools take 32 bits only (numpy's legacy `RandomState`): 32 bits is a seed every part accepts."""
Positive = Annotated[int, Range(1)]
"""A count that must be at least 1."""


@dataclasses.dataclass(frozen=True)
class FieldCli:
    """How a field shows on the command line, beyond its generated `--field-name`."""

    aliases: tuple[str, ...] = ()
    """Extra flag names, e.g. `--out` for `output_dir`."""
    parse: Callable[[Any], Any] | None = None
    """Turns the flag's text (a list of texts for a list field) into the field's value; runs after
    argparse, so its ValueError or OSError is reported as bad input, not a usage error."""
    positional: bool = False
    """A command-line argument without a dash (only for a top-level field)."""
    help: Callable[[], str] | None = None
    """Adds text to the docstring in `--help` (computed when the help is built)."""
    metavar: str | None = None
    """What `--help` shows for the flag's value (default: from the type, e.g. INT)."""
    const: str | None = None
    """The flag's value when it is given alone (`--ray` is `--ray local`): the value is optional."""


def cli(
    *aliases: str,
    parse: Callable[[Any], Any] | None = None,
    positional: bool = False,
    help: Callable[[], str] | None = None,
    metavar: str | None = None,
    const: str | None = None,
) -> dict[str, FieldCli]:
    """Field metadata for the command line: `field(default=8, metadata=cli("--prompts"))`."""
    return {_META: FieldCli(tuple(aliases), parse, positional, help, metavar, const)}


def _field_cli(field: dataclasses.Field) -> FieldCli:
    return field.metadata.get(_META) or FieldCli()


def _init_fields(cls: type) -> list[dataclasses.Field]:
    return [field for field in dataclasses.fields(cls) if field.init]


def _strip_optional(tp: Any) -> tuple[Any, bool]:
    """(the type without None, whether None was allowed)."""
    if typing.get_origin(tp) in (Union, types.UnionType):
        args = [arg for arg in typing.get_args(tp) if arg is not type(None)]
        if len(args) < len(typing.get_args(tp)):
            return (args[0] if len(args) == 1 else Union[tuple(args)]), True  # noqa: UP007
    return tp, False


def _sequence_of(tp: Any) -> tuple[Any, int | None] | None:
    """(element type, fixed length or None) of a tuple/list/Sequence type, else None."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return args[0], None
        if len(set(args)) == 1:
            return args[0], len(args)
        raise TypeError(f"{tp}: a fixed tuple's items must share one type")
    if origin in (list, Sequence):
        return (args[0] if args else Any), None
    return None


@_cache
def _declared_hints(cls: type) -> dict[str, Any]:
    """The field types of `cls` with their `Annotated` extras (the `Range`s)."""
    return typing.get_type_hints(cls, include_extras=True)


def _number_problem(value: Any, tp: Any, key: str) -> str | None:
    """What is wrong with the numbers of `value`, a value of field type `tp` (see `Range`): a
    message starting with the key (`adam_betas[1] must be a finite number, got nan`), or None."""
    ranges: list[Range] = []
    while True:  # Annotated[...] | None, Optional[Annotated[...]]: unwrap both, keep the ranges
        if typing.get_origin(tp) is Annotated:
            ranges += [extra for extra in tp.__metadata__ if isinstance(extra, Range)]
            tp = typing.get_args(tp)[0]
            continue
        inner, optional = _strip_optional(tp)
        if not optional:
            break
        tp = inner
    if value is None or isinstance(value, bool):
        return None
    if tp is float and isinstance(value, (int, float)):
        if not math.isfinite(value):
            return f"{key} must be a finite number, got {value!r}"
    elif tp is int and isinstance(value, int):
        ranges.append(INT64)  # after the declared ranges: their message is the telling one
    elif (sequence := _sequence_of(tp)) is not None and isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            if problem := _number_problem(item, sequence[0], f"{key}[{i}]"):
                return problem
        return None
    if isinstance(value, (int, float)):
        for declared in ranges:
            if problem := declared.problem(value):
                return f"{key} {problem}"
    return None


def check_numbers(config: Any) -> None:
    """Refuse a number no field of `config` means (see `Range`): call it first thing in a config
    dataclass's `__post_init__`, so that a config made in Python is checked as one read from a
    file is. Raises ValueError naming the field."""
    hints = _declared_hints(type(config))
    for field in _init_fields(type(config)):
        problem = _number_problem(getattr(config, field.name), hints[field.name], field.name)
        if problem:
            raise ValueError(problem)
