"""The hidden tests of a repository task (`rlvr/Repo-v0`) and how a run of them is scored.

Hidden tests are named tests, each a list of calls of the repository's functions with what each
call must return or raise, in the JSON form of `rlvr.verifiers.code.spec.CallCase` plus the
function called (`target`, "package.module:function"):

    {"tests": [{"name": "tests/test_slug.py::test_slugify",
                "calls": [{"target": "textkit.slug:slugify", "args": ["A b"], "expected": "a-b"},
                          {"target": "textkit.slug:slugify", "args": [7], "raises": "TypeError"}]}],
     "fail_to_pass": ["tests/test_slug.py::test_slugify"],
     "pass_to_pass": []}

`fail_to_pass` names the tests the bug breaks (the fix must make them pass), `pass_to_pass` the
tests that pass before and must keep passing; every test is in exactly one of them. Calls take
and return plain data only (see `rlvr.verifiers.code.harness.encode_value`): the comparison with
the expected values happens on the host, so they never enter the sandbox.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rlvr.verifiers.code.harness import encode_value
from rlvr.verifiers.code.spec import CallCase
from rlvr.verifiers.errors import TaskFormatError

TARGET = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
SCORING = ("all", "fraction")


@dataclass(frozen=True)
class RepoCall:
    """One call of a repository's function and what it must return or raise."""

    target: str
    case: CallCase

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, **self.case.to_dict()}

    @classmethod
    def from_dict(cls, data: Any, where: str) -> RepoCall:
        if not isinstance(data, Mapping):
            raise TaskFormatError(f"{where}: a call must be an object, got {type(data).__name__}")
        target = data.get("target")
        if not isinstance(target, str) or not TARGET.match(target):
            raise TaskFormatError(
                f"{where}: 'target' must name a function as 'package.module:function', "
                f"got {target!r:.80}"
            )
        rest = {key: value for key, value in data.items() if key != "target"}
        return cls(target, CallCase.from_dict(rest, where))

    def wire(self) -> dict[str, Any]:
        """What the harness gets of the call: its inputs, never the expected result."""
        return {
            "target": self.target,
            "args": encode_value(list(self.case.args)),
            "kwargs": encode_value(dict(self.case.kwargs)),
        }


@dataclass(frozen=True)
class HiddenTest:
    name: str
    calls: tuple[RepoCall, ...]


@dataclass(frozen=True)
class RepoTests:
    """The parsed hidden tests of a repository task."""

    tests: tuple[HiddenTest, ...]
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]

    @classmethod
    def from_dict(cls, data: Any, task_id: str = "task") -> RepoTests:
        """Parse and check; `TaskFormatError` naming the problem."""
        where = f"task {task_id!r}"
        if not isinstance(data, Mapping):
            raise TaskFormatError(f"{where}: hidden tests must be an object with 'tests'")
        raw = data.get("tests")
        if not isinstance(raw, Sequence) or isinstance(raw, str) or not raw:
            raise TaskFormatError(f"{where}: 'tests' must be a non-empty list of tests")
        tests = tuple(_test(item, f"{where} test {n}") for n, item in enumerate(raw, 1))
        names = [test.name for test in tests]
        if len(set(names)) != len(names):
            raise TaskFormatError(f"{where}: two hidden tests have the same name")
        fail = _names(data.get("fail_to_pass"), f"{where}: 'fail_to_pass'")
        keep = _names(data.get("pass_to_pass", []), f"{where}: 'pass_to_pass'")
        if not fail:
            raise TaskFormatError(f"{where}: 'fail_to_pass' must name at least one test")
        if set(fail) & set(keep) or set(fail) | set(keep) != set(names):
            raise TaskFormatError(
                f"{where}: every hidden test must be in exactly one of 'fail_to_pass' and "
                "'pass_to_pass'"
            )
        return cls(tests, fail, keep)

    def to_dict(self) -> dict[str, Any]:
        return {
            "tests": [
                {"name": test.name, "calls": [call.to_dict() for call in test.calls]}
                for test in self.tests
            ],
            "fail_to_pass": list(self.fail_to_pass),
            "pass_to_pass": list(self.pass_to_pass),
        }

    def harness_input(self, root: str, test_timeout: float) -> dict[str, Any]:
        """What the runner reads on stdin: the calls' inputs, test by test, and no expected
        value."""
        return {
            "mode": "repo",
            "root": root,
            "test_timeout": test_timeout,
            "tests": [[call.wire() for call in test.calls] for test in self.tests],
        }


def _test(item: Any, where: str) -> HiddenTest:
    if not isinstance(item, Mapping) or set(item) != {"name", "calls"}:
        raise TaskFormatError(f"{where}: a hidden test is an object with 'name' and 'calls'")
    name, calls = item["name"], item["calls"]
    if not isinstance(name, str) or not name.strip() or len(name) > 300:
        raise TaskFormatError(f"{where}: 'name' must be a non-empty str of at most 300 characters")
    if not isinstance(calls, Sequence) or isinstance(calls, str) or not calls:
        raise TaskFormatError(f"{where}: 'calls' must be a non-empty list of calls")
    return HiddenTest(
        name, tuple(RepoCall.from_dict(call, f"{where} call {n}") for n, call in enumerate(calls))
    )


def _names(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise TaskFormatError(f"{where} must be a list of test names")
    if not all(isinstance(name, str) for name in value):
        raise TaskFormatError(f"{where} must hold test names (str)")
    return tuple(value)


def score(passed: set[str], tests: Any, scoring: str) -> float:
    """The reward of a run in which the tests named in `passed` passed.

    "all": 1.0 only if every fail-to-pass and every pass-to-pass test passes. "fraction": the
    share of fail-to-pass tests that pass times the share of pass-to-pass tests that still
    pass (an untouched repository, or one whose code was deleted, scores 0 either way).
    """
    fixed = sum(name in passed for name in tests.fail_to_pass) / len(tests.fail_to_pass)
    kept = (
        sum(name in passed for name in tests.pass_to_pass) / len(tests.pass_to_pass)
        if tests.pass_to_pass
        else 1.0
    )
    if scoring == "all":
        return 1.0 if fixed == 1.0 and kept == 1.0 else 0.0
    return fixed * kept
