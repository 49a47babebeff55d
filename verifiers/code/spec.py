"""What a code task's hidden tests look like (`Task.answer` of code tasks) and how values compare.

A code task's answer is a JSON-compatible dict with an `entry_point` and exactly one kind of test:

- `cases`: calls with expected results, e.g.
  `{"args": [[3, 1, 2]], "expected": [1, 2, 3]}`, `{"args": [-1], "raises": "ValueError"}`,
  `{"args": [2.0], "expected": 1.414, "compare": "approx"}`. Values use the tagged JSON form of
  `harness.encode_value` (tuples as `{"$tuple": [...]}`). The expected values never enter the
  sandbox: the host compares them with the plain data the solution returned. Our built-in
  tasks use this form.
- `check`: HumanEval-style test code defining `check(candidate)`.
- `asserts`: MBPP-style assert statements calling the entry point by name, one test each.

Optional keys: `preamble` (code run before the solution in its own process, e.g. the imports
of a HumanEval prompt), `setup` (code run before the test code), `reference` (a correct
solution, used as the oracle reply).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rlvr.verifiers.code.harness import canonical, decode_value, encode_value
from rlvr.verifiers.errors import TaskFormatError

COMPARE_MODES = ("exact", "approx", "unordered")
REL_TOL = 1e-6
ABS_TOL = 1e-9


@dataclass(frozen=True)
class CallCase:
    """One call of the entry point and what it must return (or raise)."""

    args: tuple[Any, ...]
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    expected: Any = None
    raises: str | None = None
    compare: str = "exact"

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"args": encode_value(list(self.args))}
        if self.kwargs:
            data["kwargs"] = encode_value(dict(self.kwargs))
        if self.raises is not None:
            data["raises"] = self.raises
        else:
            data["expected"] = encode_value(self.expected)
        if self.compare != "exact":
            data["compare"] = self.compare
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str) -> CallCase:
        if not isinstance(data, Mapping) or "args" not in data:
            raise TaskFormatError(f"{where}: a case needs 'args' (and 'expected' or 'raises')")
        unknown = set(data) - {"args", "kwargs", "expected", "raises", "compare"}
        if unknown:
            raise TaskFormatError(f"{where}: unknown case keys {sorted(unknown, key=repr)}")
        if ("expected" in data) == ("raises" in data):
            raise TaskFormatError(f"{where}: give exactly one of 'expected' or 'raises'")
        compare = data.get("compare", "exact")
        if compare not in COMPARE_MODES:
            raise TaskFormatError(f"{where}: compare must be one of {COMPARE_MODES}")
        try:
            args = decode_value(data["args"])
            kwargs = decode_value(data.get("kwargs", {}))
            expected = decode_value(data["expected"]) if "expected" in data else None
        except ValueError as exc:
            raise TaskFormatError(f"{where}: {exc}") from None
        if type(args) is not list or type(kwargs) is not dict:
            raise TaskFormatError(f"{where}: 'args' must be a list and 'kwargs' an object")
        if compare == "unordered" and type(expected) is not list:
            raise TaskFormatError(f"{where}: compare='unordered' needs a list as 'expected'")
        raises = data.get("raises")
        if raises is not None and (not isinstance(raises, str) or not raises.isidentifier()):
            raise TaskFormatError(f"{where}: 'raises' must be an exception class name")
        return cls(tuple(args), kwargs, expected, raises, compare)

    def matches(self, got: Any) -> bool:
        """Does the returned (decoded, plain) value pass this case?"""
        if self.compare == "approx":
            return approx_equal(got, self.expected)
        if self.compare == "unordered":
            return type(got) is list and Counter(map(canonical, got)) == Counter(
                map(canonical, self.expected)
            )
        return canonical(got) == canonical(self.expected)


def approx_equal(got: Any, expected: Any) -> bool:
    """Like exact equality (same exact types) but floats within a relative 1e-6."""
    if type(got) is not type(expected):
        return False
    if type(expected) is float:
        if math.isnan(expected):
            return math.isnan(got)
        return math.isclose(got, expected, rel_tol=REL_TOL, abs_tol=ABS_TOL)
    if type(expected) in (list, tuple):
        return len(got) == len(expected) and all(map(approx_equal, got, expected))
    if type(expected) is dict:
        return got.keys() == expected.keys() and all(
            approx_equal(got[key], value) for key, value in expected.items()
        )
    return canonical(got) == canonical(expected)


def compile_error(code: str, name: str = "code") -> str | None:
    """Why `code` does not compile (None if it does), in one line: a syntax error, a NUL byte, a
    lone surrogate, or nesting deeper than the compiler goes."""
    try:
        compile(code, f"<{name}>", "exec", dont_inherit=True)
    except SyntaxError as exc:  # also a NUL byte on Python 3.12+
        return f"{exc.msg} (line {exc.lineno})" if exc.lineno else exc.msg
    except UnicodeEncodeError as exc:  # a lone surrogate: no text, let alone code
        return f"not text: a lone surrogate {exc.object[exc.start]!r} at character {exc.start}"
    except ValueError as exc:  # a NUL byte on Python 3.11
        return str(exc)
    except (RecursionError, MemoryError):
        return "nested too deeply to compile"
    return None


@dataclass(frozen=True)
class CodeTests:
    """The parsed hidden tests of a code task."""

    entry_point: str
    cases: tuple[CallCase, ...] = ()
    check: str | None = None
    asserts: tuple[str, ...] = ()
    preamble: str = ""
    setup: str = ""
    reference: str | None = None

    @property
    def mode(self) -> str:
        return "cases" if self.cases else ("check" if self.check is not None else "asserts")

    @property
    def count(self) -> int:
        return len(self.cases) or (1 if self.check is not None else len(self.asserts))

    @classmethod
    def from_answer(cls, answer: Any, task_id: str = "task") -> CodeTests:
        """Parse and validate `Task.answer`; raises TaskFormatError naming the problem."""
        where = f"task {task_id!r}"
        if not isinstance(answer, Mapping):
            raise TaskFormatError(
                f"{where}: a code task's answer must be a dict with 'entry_point' and 'cases', "
                f"'check' or 'asserts', got {type(answer).__name__}"
            )
        known = {"entry_point", "cases", "check", "asserts", "preamble", "setup", "reference"}
        unknown = set(answer) - known
        if unknown:
            raise TaskFormatError(f"{where}: unknown answer keys {sorted(unknown, key=repr)}")
        entry_point = answer.get("entry_point")
        if not isinstance(entry_point, str) or not entry_point.isidentifier():
            raise TaskFormatError(f"{where}: 'entry_point' must be a function name")
        kinds = [key for key in ("cases", "check", "asserts") if answer.get(key)]
        if len(kinds) != 1:
            raise TaskFormatError(
                f"{where}: give exactly one non-empty kind of tests: 'cases', 'check' or "
                f"'asserts' (got {kinds or 'none'})"
            )
        for key in ("check", "preamble", "setup", "reference"):
            if answer.get(key) is not None and not isinstance(answer[key], str):
                raise TaskFormatError(f"{where}: '{key}' must be source code (a str)")
        asserts = answer.get("asserts") or ()
        if not isinstance(asserts, (list, tuple)) or not all(isinstance(a, str) for a in asserts):
            raise TaskFormatError(f"{where}: 'asserts' must be a list of assert statements")
        if not isinstance(answer.get("cases") or (), (list, tuple)):
            raise TaskFormatError(f"{where}: 'cases' must be a list of cases (dicts)")
        cases = tuple(
            CallCase.from_dict(case, f"{where} case {number}")
            for number, case in enumerate(answer.get("cases") or (), start=1)
        )
        return cls(
            entry_point=entry_point,
            cases=cases,
            check=answer.get("check") or None,
            asserts=tuple(asserts),
            preamble=answer.get("preamble") or "",
            setup=answer.get("setup") or "",
            reference=answer.get("reference"),
        )

    def check_syntax(self, task_id: str = "task") -> None:
        """Raise `TaskFormatError` when the test code (check, asserts, preamble, setup) or the
        reference solution does not compile: every reply would otherwise meet a broken test run,
        and the oracle (and `rlvr audit`, which rewrites it) a broken reference."""
        sources = {"check": self.check, "preamble": self.preamble, "setup": self.setup}
        sources.update({f"asserts[{n}]": code for n, code in enumerate(self.asserts)})
        sources["reference"] = self.reference
        for key, code in sources.items():
            why = compile_error(code, key) if code else None
            if why is not None:
                what = "reference solution" if key == "reference" else f"test code {key!r}"
                raise TaskFormatError(f"task {task_id!r}: the {what} does not parse: {why}")

    def to_answer(self) -> dict[str, Any]:
        answer: dict[str, Any] = {"entry_point": self.entry_point}
        if self.cases:
            answer["cases"] = [case.to_dict() for case in self.cases]
        elif self.check is not None:
            answer["check"] = self.check
        else:
            answer["asserts"] = list(self.asserts)
        for key in ("preamble", "setup", "reference"):
            if getattr(self, key):
                answer[key] = getattr(self, key)
        return answer

    def harness_input(self, stop_on_failure: bool, test_timeout: float) -> dict[str, Any]:
        """What the runner reads on stdin: everything but the expected values."""
        spec: dict[str, Any] = {
            "mode": self.mode,
            "entry_point": self.entry_point,
            "preamble": self.preamble,
            "stop_on_failure": stop_on_failure,
            "test_timeout": test_timeout,
        }
        if self.cases:
            spec["cases"] = [
                {"args": encode_value(list(c.args)), "kwargs": encode_value(dict(c.kwargs))}
                for c in self.cases
            ]
        else:
            spec["setup"] = self.setup
            spec["check" if self.check is not None else "asserts"] = (
                self.check if self.check is not None else list(self.asserts)
            )
        return spec
