"""Named tests run by a test runner (pytest or unittest): the hidden tests of SWE-bench-style tasks.

A SWE-bench task names its tests (`tests/test_x.py::test_y`, `tests.test_x.T.test_y`) instead of
calls with expected values: the test code imports the repository and runs in its interpreter,
so the guarantees of call tests (values compared on the host) cannot hold. What is done instead,
and what it does not stop, is in docs/repo.md (SWE-bench-style tasks):

- before grading, the files the test patch touches are put back as the test patch leaves them,
  and test configuration (`conftest.py`, `pytest.ini`, `tox.ini`, `setup.cfg`,
  `pyproject.toml`) and site customisation (`sitecustomize.py`, `usercustomize.py`, `.pth`) are
  put back as the base commit has them (removed where it has none);
- each named test runs in its own process (pytest with plugin auto-loading off and its options
  reset), beside a canary test that must fail, under a name drawn afresh for every grading:
  a test passes only if its process reports exactly one failure, the canary's. A repository
  that exits early with status 0, or makes every test pass, fails every test;
- the runner of those processes is trusted (it imports nothing of the repository).

A repository written to forge a runner's report for the named tests alone is not caught.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rlvr.verifiers.errors import TaskFormatError

RUNNERS = ("pytest", "unittest")
PROTECTED_NAMES = (
    "conftest.py",
    "pytest.ini",
    "tox.ini",
    "setup.cfg",
    "pyproject.toml",
    "sitecustomize.py",
    "usercustomize.py",
)


def is_protected(path: str) -> bool:
    """Whether grading puts `path` back as the base commit has it (test configuration, site
    customisation)."""
    name = posixpath.basename(path)
    return name in PROTECTED_NAMES or name.endswith(".pth")


@dataclass(frozen=True)
class CommandTests:
    """Named tests of a task and what grading puts back first (`restore`: path -> bytes of the
    test patch's files and of the base commit's protected files)."""

    runner: str
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    restore: Mapping[str, bytes]

    @property
    def names(self) -> tuple[str, ...]:
        return self.fail_to_pass + self.pass_to_pass

    @classmethod
    def from_dict(cls, data: Any, task_id: str = "task") -> CommandTests:
        where = f"task {task_id!r}"
        runner = data.get("runner")
        if runner not in RUNNERS:
            raise TaskFormatError(f"{where}: 'runner' must be one of {RUNNERS}, got {runner!r:.40}")
        fail = _ids(data.get("fail_to_pass"), f"{where}: 'fail_to_pass'")
        keep = _ids(data.get("pass_to_pass", []), f"{where}: 'pass_to_pass'")
        if not fail:
            raise TaskFormatError(f"{where}: 'fail_to_pass' must name at least one test")
        if set(fail) & set(keep):
            raise TaskFormatError(f"{where}: a test is both fail-to-pass and pass-to-pass")
        restore = data.get("restore", {})
        if not isinstance(restore, Mapping) or not all(
            isinstance(path, str) and isinstance(text, str) for path, text in restore.items()
        ):
            raise TaskFormatError(f"{where}: 'restore' must map paths to text")
        encoded = {path: text.encode("utf-8") for path, text in restore.items()}
        return cls(runner, fail, keep, encoded)

    def to_dict(self) -> dict[str, Any]:
        return {
            "runner": self.runner,
            "fail_to_pass": list(self.fail_to_pass),
            "pass_to_pass": list(self.pass_to_pass),
            "restore": {path: data.decode("utf-8") for path, data in self.restore.items()},
        }

    def graded_files(self, files: Mapping[str, bytes]) -> dict[str, bytes]:
        """The agent's files with the protected ones put back and the test files restored."""
        kept = {path: data for path, data in files.items() if not is_protected(path)}
        kept.update(self.restore)
        return kept


def _ids(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise TaskFormatError(f"{where} must be a list of test ids")
    if not all(isinstance(item, str) and item.strip() and "\0" not in item for item in value):
        raise TaskFormatError(f"{where} must hold test ids (non-empty str)")
    return tuple(value)


# The trusted runner, run in the sandbox as Python source: for each test id, a process of the
# test runner with the test and the canary; prints {id: passed} as JSON.
RUNNER = r"""
import json, os, re, subprocess, sys
spec = json.loads(sys.stdin.read())
env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", ""),
       "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
canary = spec["canary"]
if spec["runner"] == "pytest":
    base = ["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
            "-c", os.devnull, "--rootdir", "."]
    tail = canary + ".py::test_canary"
    expected = re.compile(r"\b1 failed, (\d+) passed\b")
else:
    base = ["python3", "-m", "unittest"]
    tail = canary + ".Canary.test_canary"
    expected = re.compile(r"^FAILED \(failures=1\)$", re.M)
results = {}
for test in spec["tests"]:
    try:
        done = subprocess.run(base + [test, tail], cwd=spec["root"], env=env,
                              stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=spec["test_timeout"])
    except subprocess.TimeoutExpired:
        results[test] = False
        continue
    output = (done.stdout + done.stderr).decode("utf-8", "replace")
    ran = re.search(r"^Ran (\d+) tests?", output, re.M)
    fine = done.returncode == 1 and expected.search(output) is not None
    if spec["runner"] == "unittest":
        fine = fine and ran is not None and int(ran.group(1)) >= 2
    results[test] = fine
print(json.dumps(results))
"""


def canary_source(runner: str) -> str:
    """A test that must fail (its failure proves the process ran the tests and reported
    honestly as far as a generic trick goes)."""
    if runner == "pytest":
        return "def test_canary():\n    assert False, 'the canary must fail'\n"
    return (
        "import unittest\n\n\nclass Canary(unittest.TestCase):\n"
        "    def test_canary(self):\n        self.fail('the canary must fail')\n"
    )
