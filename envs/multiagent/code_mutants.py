"""Trivial functions a proposal's tests must reject (`rlvr/CodeProposerSolver-v1`): mutation
testing of the tests, computed on the host from plain data (nothing of the proposal runs here).

Each candidate is a function of the reference's parameters, bound from each test's call the way
Python binds them (positional, keyword, `*args` as a tuple, `**kwargs` as a dict, literal
defaults filled in). Two kinds:

- **stubs**: a constant (it passes every test only when every test expects that very value, so
  the constants tried are the expected values themselves, `None` and all), or one parameter
  returned unchanged. A stub that passes every test makes the tests vacuous, whatever the
  reference is: no spec asks for that.
- **transforms** of one parameter (`len`, first and last item, the empty value of its type,
  `sorted`, reversed, `sum`, `min`, `max`, `bool`, `not`, `str`, `-x`, `abs`, `x + 1`, `x - 1`,
  `2 * x`, `x.lower()`, `x.upper()`) or of two (`a + b`, `a - b`, `a * b` on numbers, `min`,
  `max`, `a == b`, `a < b`, `a in b`, `a[b]`). One that passes every test is a *suspect*: the
  tests are vacuous unless it is the reference's own function, which the env checks by running
  the reference in the sandbox on the `neighbours` of the tests (each argument of each test
  perturbed: `x + 1`, reversed, one item fewer, ...) and comparing.

So "Return the sum of xs" with `sum` tests passes (the suspect `sum` agrees with the reference
next to the tests too), while "Count the vowels of s" tested only on all-vowel strings does not
(`len` passes the tests, but not `count_vowels("hellx")`).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rlvr.verifiers.code.harness import canonical
from rlvr.verifiers.code.spec import CallCase

MAX_NEIGHBOURS = 48
_UNKNOWN = object()  # a parameter whose default is not a literal: no candidate can use it


@dataclass(frozen=True)
class Parameters:
    """A function's parameters, as Python binds a call to them."""

    positional: tuple[str, ...]
    positional_only: int
    keyword_only: tuple[str, ...]
    varargs: str | None
    varkw: str | None
    defaults: Mapping[str, Any]

    @classmethod
    def of(cls, arguments: ast.arguments) -> Parameters:
        positional = [arg.arg for arg in (*arguments.posonlyargs, *arguments.args)]
        defaults: dict[str, Any] = {}
        for name, node in zip(positional[::-1], arguments.defaults[::-1]):
            defaults[name] = _literal_or_unknown(node)
        for arg, default in zip(arguments.kwonlyargs, arguments.kw_defaults):
            if default is not None:
                defaults[arg.arg] = _literal_or_unknown(default)
        return cls(
            positional=tuple(positional),
            positional_only=len(arguments.posonlyargs),
            keyword_only=tuple(arg.arg for arg in arguments.kwonlyargs),
            varargs=arguments.vararg.arg if arguments.vararg else None,
            varkw=arguments.kwarg.arg if arguments.kwarg else None,
            defaults=defaults,
        )

    @property
    def names(self) -> tuple[str, ...]:
        extra = tuple(name for name in (self.varargs, self.varkw) if name)
        return self.positional + self.keyword_only + extra

    def bind(self, case: CallCase) -> dict[str, Any] | None:
        """The value of each parameter in `case`'s call, or None if the call cannot bind."""
        values: dict[str, Any] = dict(zip(self.positional, case.args))
        extra = case.args[len(self.positional) :]
        if extra and self.varargs is None:
            return None
        if self.varargs:
            values[self.varargs] = tuple(extra)
        by_keyword = set(self.positional[self.positional_only :]) | set(self.keyword_only)
        spare: dict[str, Any] = {}
        for key, value in case.kwargs.items():
            if key in values:
                return None
            if key in by_keyword:
                values[key] = value
            elif self.varkw:
                spare[key] = value
            else:
                return None
        if self.varkw:
            values[self.varkw] = spare
        for name in self.positional + self.keyword_only:
            if name not in values:
                if name not in self.defaults:
                    return None
                values[name] = self.defaults[name]
        return values


@dataclass(frozen=True)
class Candidate:
    """A trivial function: `name` says what it returns (`len(s)`), `compute` takes the bound
    parameters."""

    name: str
    compute: Callable[[Mapping[str, Any]], Any] = field(compare=False)
    stub: bool = False

    def result(self, values: Mapping[str, Any] | None) -> Any:
        """Its result on a bound call, or _UNKNOWN where it fails or cannot be computed."""
        if values is None:
            return _UNKNOWN
        try:
            result = self.compute(values)
        except Exception:  # e.g. len of an int: this candidate fails the test
            return _UNKNOWN
        return result

    def passes(self, parameters: Parameters, case: CallCase) -> bool:
        return _same(self.result(parameters.bind(case)), case.expected)

    def agrees(self, parameters: Parameters, case: CallCase, reference_result: Any) -> bool:
        return _same(self.result(parameters.bind(case)), reference_result)


def constant_stub(cases: Sequence[CallCase]) -> Candidate | None:
    """The constant every test expects, if they all expect one."""
    first = cases[0].expected
    if all(_same(case.expected, first) for case in cases):
        return Candidate(f"the constant {_show(first)}", lambda values: first, stub=True)
    return None


def passing_candidates(parameters: Parameters, cases: Sequence[CallCase]) -> list[Candidate]:
    """The stubs and transforms that pass every test, stubs first."""
    found = [stub for stub in [constant_stub(cases)] if stub is not None]
    for candidate in _candidates(parameters):
        if all(candidate.passes(parameters, case) for case in cases):
            found.append(candidate)
    return sorted(found, key=lambda candidate: not candidate.stub)


def neighbours(parameters: Parameters, cases: Sequence[CallCase]) -> tuple[CallCase, ...]:
    """Calls next to the tests: each argument of each test perturbed in turn (at most
    MAX_NEIGHBOURS, taken from every test in turn; none equal to a test's own call)."""
    seen = {_call_key(case) for case in cases}
    per_case = [list(_perturbed_calls(case)) for case in cases]
    found: list[CallCase] = []
    for round_ in range(max((len(calls) for calls in per_case), default=0)):
        for calls in per_case:
            if round_ < len(calls) and len(found) < MAX_NEIGHBOURS:
                key = _call_key(calls[round_])
                if key is not None and key not in seen:
                    seen.add(key)
                    found.append(calls[round_])
    return tuple(found)


# --- the candidates -----------------------------------------------------------------------------


def _candidates(parameters: Parameters) -> list[Candidate]:
    names = [name for name in parameters.names]
    found = [Candidate(name, _getter(name), stub=True) for name in names]
    for name in names:
        for label, transform in _UNARY.items():
            found.append(Candidate(label.format(name), _unary(name, transform), stub=False))
    for first in names:
        for second in names:
            if first != second:
                for label, combine in _BINARY.items():
                    found.append(
                        Candidate(
                            label.format(first, second),
                            _binary(first, second, combine),
                            stub=False,
                        )
                    )
    return found


def _getter(name: str) -> Callable[[Mapping[str, Any]], Any]:
    return lambda values: _known(values[name])


def _unary(name: str, transform: Callable[[Any], Any]) -> Callable[[Mapping[str, Any]], Any]:
    return lambda values: transform(_known(values[name]))


def _binary(
    first: str, second: str, combine: Callable[[Any, Any], Any]
) -> Callable[[Mapping[str, Any]], Any]:
    return lambda values: combine(_known(values[first]), _known(values[second]))


def _known(value: Any) -> Any:
    if value is _UNKNOWN:
        raise LookupError("a default that is not a literal")
    return value


def _number(value: Any) -> Any:
    if type(value) not in (int, float, complex):
        raise TypeError("not a number")
    return value


def _sized(value: Any) -> Any:
    if type(value) in (int, float, complex, bool) or value is None:
        raise TypeError("not a collection")
    return value


_UNARY: dict[str, Callable[[Any], Any]] = {
    "len({})": lambda x: len(_sized(x)),
    "{}[0]": lambda x: _sized(x)[0],
    "{}[-1]": lambda x: _sized(x)[-1],
    "an empty value of the type of {}": lambda x: type(_sized(x))(),
    "sorted({})": lambda x: sorted(_sized(x)),
    "{} reversed": lambda x: _sized(x)[::-1],
    "sum({})": lambda x: sum(_sized(x)),
    "min({})": lambda x: min(_sized(x)),
    "max({})": lambda x: max(_sized(x)),
    "bool({})": bool,
    "not {}": lambda x: not x,
    "str({})": str,
    "-{}": lambda x: -_number(x),
    "abs({})": lambda x: abs(_number(x)),
    "{} + 1": lambda x: _number(x) + 1,
    "{} - 1": lambda x: _number(x) - 1,
    "2 * {}": lambda x: 2 * _number(x),
    "{}.lower()": lambda x: x.lower(),
    "{}.upper()": lambda x: x.upper(),
}
_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "{} + {}": lambda a, b: a + b if type(a) is type(b) else _number(a) + _number(b),
    "{} - {}": lambda a, b: _number(a) - _number(b),
    "{} * {}": lambda a, b: _number(a) * _number(b),
    "min({}, {})": min,
    "max({}, {})": max,
    "{} == {}": lambda a, b: a == b,
    "{} < {}": lambda a, b: a < b,
    "{} in {}": lambda a, b: a in _sized(b),
    "{}[{}]": lambda a, b: _sized(a)[b],
}


# --- the neighbours -----------------------------------------------------------------------------


def _perturbed_calls(case: CallCase):
    """`case` with one argument perturbed, for each argument and perturbation."""
    for index, value in enumerate(case.args):
        for other in _perturbations(value):
            args = (*case.args[:index], other, *case.args[index + 1 :])
            yield CallCase(args, case.kwargs)
    for key, value in case.kwargs.items():
        for other in _perturbations(value):
            yield CallCase(case.args, {**case.kwargs, key: other})


def _perturbations(value: Any, depth: int = 0) -> list[Any]:
    """Values next to `value`, of its type: small changes (the function's domain likely holds
    them too) that move its length, its order and its items' values."""
    kind = type(value)
    if kind is bool:
        return [not value]
    if kind is int:
        return [value + 1, value - 1, -value, 2 * value + 3]
    if kind is float:
        return [value + 1.5, -value, value * 2.0]
    if kind is complex:
        return [value + 1, -value]
    if kind is str or kind is bytes:
        x, y = ("x", "y") if kind is str else (b"x", b"y")
        other = (y if value[:1] == x else x) + value[1:]
        return [value[::-1], value + x, value[1:], other, value.upper(), value.lower(), kind()]
    if depth > 0:
        return []
    if kind is list or kind is tuple:
        firsts = _perturbations(value[0], 1)[:2] if value else []
        changed = [kind((item, *value[1:])) for item in firsts]
        return [value[::-1], value[1:], value + value[:1], *changed, kind()]
    if kind is set or kind is frozenset:
        items = sorted(value, key=repr)
        added = [kind(items) | {item} for item in _perturbations(items[0], 1)[:1]] if items else []
        return [kind(items[1:]), *added, kind()]
    if kind is dict:
        keys = list(value)
        changed = (
            [{**value, keys[0]: item} for item in _perturbations(value[keys[0]], 1)[:1]]
            if keys
            else []
        )
        return [{key: value[key] for key in keys[1:]}, *changed, {}]
    return []


def _call_key(case: CallCase) -> Any:
    try:
        return canonical((tuple(case.args), dict(case.kwargs)))
    except TypeError:  # unhashable in a way canonical() cannot key
        return None


def _same(got: Any, expected: Any) -> bool:
    if got is _UNKNOWN:
        return False
    try:
        return bool(canonical(got) == canonical(expected))
    except (TypeError, ValueError, RecursionError):
        return False


def _literal_or_unknown(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _UNKNOWN


def _show(value: Any, limit: int = 60) -> str:
    try:
        text = repr(value)
    except ValueError:  # an int too long to print in decimal
        return f"a large {type(value).__name__}"
    return text if len(text) <= limit else text[: limit - 3] + "..."
