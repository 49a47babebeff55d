"""`UnitTestVerifier`: run a reply's code against a task's hidden tests in a sandbox.

The verdict never comes from anything the submitted code can write. Its process only ever hands
back plain data (see `harness`); expected values of `cases` tests stay on the host and are
compared here; `check`/`asserts` test code runs in a separate, trusted runner process whose
report the solution's process cannot reach. A crash, a timeout, an exit before the tests, a
value of the wrong type (subclasses included) are all failures. A sandbox that breaks gives a
verdict with status `error` (an infrastructure error, score None), never a silent 0.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlvr.sandboxes import ExecRequest, ExecResult, Executor, Limits, ProgramStatus
from rlvr.sandboxes.errors import SandboxError
from rlvr.sandboxes.types import MiB
from rlvr.verifiers.code.extract import extract_code
from rlvr.verifiers.code.harness import (
    BOOTSTRAP,
    HARNESS_FILE,
    SOLUTION_FILE,
    builtin_exception_class,
    decode_value,
)
from rlvr.verifiers.code.spec import CallCase, CodeTests
from rlvr.verifiers.errors import VerifierConfigError
from rlvr.verifiers.types import Task, Verdict

logger = logging.getLogger(__name__)

HARNESS_SOURCE = (Path(__file__).parent / "harness.py").read_text(encoding="utf-8")
SCORING = ("all", "fraction")
FEEDBACK_OUTPUT = 1500  # characters of the solution's own output shown in feedback
# Output of a run: the report (every returned value) and the code's own prints. The sandbox's
# 1 MiB default fails correct code that returns a list of 200,000 ints; more than this would let
# one reply hold hundreds of MB of the host's memory once parsed.
RUN_OUTPUT = 8 * MiB


@dataclass(frozen=True)
class UnitTestConfig:
    """How replies are run and scored."""

    scoring: str = "all"
    """"all": 1.0 only if every test passes (default); "fraction": the share of tests passed."""
    timeout: float = 20.0
    """Seconds of wall time for the whole submission (loading and every test)."""
    test_timeout: float = 5.0
    """Seconds for one call of the solution (one test); a slower call fails that test."""
    memory: int = 512 * MiB
    """Memory for the solution and the harness together."""
    backend: str = "local"
    """Sandbox backend when no executor is given: "local" or "docker"."""
    reveal_expected: bool = False
    """Show the expected value (or the assert) of the first failing test in the feedback. Off by
    default: feedback then shows the input and what the code returned, never the hidden gold."""

    def __post_init__(self) -> None:
        if self.scoring not in SCORING:
            raise VerifierConfigError(f"scoring must be one of {SCORING}, got {self.scoring!r}")
        for name in ("timeout", "test_timeout"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or value <= 0:
                raise VerifierConfigError(f"{name} must be a positive number, got {value!r}")
        if self.test_timeout > self.timeout:
            raise VerifierConfigError("test_timeout cannot exceed timeout")

    def limits(self) -> Limits:
        return Limits(wall_time=self.timeout, memory=self.memory, output=RUN_OUTPUT)


class SandboxUser:
    """A verifier that runs things in a sandbox: the `executor` given (yours to close), or a
    handle on the process-wide pool of `backend` taken at first use and released by `close()`."""

    def __init__(
        self,
        backend: str,
        executor: Executor | None = None,
        backend_options: dict[str, Any] | None = None,
    ) -> None:
        self._backend = backend
        self._executor = executor
        self._owns_executor = executor is None
        self._backend_options = dict(backend_options or {})
        self._lock = threading.Lock()

    def executor(self) -> Executor:
        with self._lock:
            if self._executor is None or self._executor.closed:
                from rlvr.sandboxes import get_executor

                self._executor = get_executor(self._backend, **self._backend_options)
                self._owns_executor = True
            return self._executor

    def close(self) -> None:
        with self._lock:
            if self._owns_executor and self._executor is not None:
                self._executor.close()
            self._executor = None


class UnitTestVerifier(SandboxUser):
    """Judges code replies against `CodeTests` in `task.answer`.

    Pass an `executor` to share one you manage; otherwise the verifier takes a handle on the
    process-wide pool of `config.backend` at its first reply and releases it in `close()`.
    """

    def __init__(
        self,
        config: UnitTestConfig | None = None,
        *,
        executor: Executor | None = None,
        backend_options: dict[str, Any] | None = None,
    ) -> None:
        self.config = config or UnitTestConfig()
        super().__init__(self.config.backend, executor, backend_options)

    # --- judging --------------------------------------------------------------------------------

    def verify(self, response: str, task: Task) -> Verdict:
        tests = CodeTests.from_answer(task.answer, task.id)
        code = extract_code(response, tests.entry_point)
        if code is None:
            return Verdict.unparsable(
                f"No Python code defining `{tests.entry_point}` was found; put the function "
                "in a ```python code block."
            )
        try:
            code.encode("utf-8")  # the sandbox takes UTF-8: refuse here, not as an infra error
        except UnicodeEncodeError:
            return Verdict.unparsable("The code contains characters that are not valid Unicode.")
        try:
            result = self.executor().run(self.request(code, tests))
        except SandboxError as exc:
            return Verdict.error(f"sandbox unavailable: {exc}")
        if result.infra_error:
            return Verdict.error(f"sandbox error: {result.error}")
        return self.judge(code, tests, result)

    def request(self, code: str, tests: CodeTests) -> ExecRequest:
        stop = self.config.scoring == "all"
        spec = tests.harness_input(stop_on_failure=stop, test_timeout=self.config.test_timeout)
        return ExecRequest(
            code=BOOTSTRAP,
            files={HARNESS_FILE: HARNESS_SOURCE, SOLUTION_FILE: code},
            stdin=json.dumps(spec),
            limits=self.config.limits(),
        )

    def judge(self, code: str, tests: CodeTests, result: ExecResult) -> Verdict:
        status = result.status
        if status is None:  # the sandbox failed: nothing to judge
            return Verdict.error(f"sandbox error: {result.error}")
        output = _tail(result.stderr_text, FEEDBACK_OUTPUT)
        report = runner_report(result)
        if report is None:
            why = {
                ProgramStatus.TIMEOUT: f"ran out of time ({self.config.timeout:g}s)",
                ProgramStatus.OOM: "ran out of memory",
                ProgramStatus.OUTPUT_LIMIT: "wrote too much output",
            }.get(status, f"stopped the test harness ({result.describe()})")
            return self._verdict(code, 0, tests.count, f"The submission {why}.", output, status)
        if report.get("load_error"):
            text = f"The code failed to load: {report['load_error']}"
            return self._verdict(code, 0, tests.count, text, output, status)
        if report.get("tests_broken"):  # the task's fault: no score either way
            broken = _text(report["tests_broken"])
            return Verdict.error(f"the task's test code cannot run in the sandbox: {broken}")
        passed: int
        if tests.cases:
            reveal = self.config.reveal_expected
            outcomes = [
                judge_case(case, reply, reveal) for case, reply in _pairs(tests.cases, report)
            ]
            failures = [
                f"{_call(tests.entry_point, case)} {why}"
                for case, (ok, why) in zip(tests.cases, outcomes)
                if not ok
            ]
            passed = sum(ok for ok, _ in outcomes)
        else:
            reported = report.get("tests")
            ran = reported if isinstance(reported, list) else []
            passed = sum(1 for test in ran if _ok(test))
            failures = [
                _test_failure(test, tests.entry_point, self.config.reveal_expected)
                for test in ran
                if not _ok(test)
            ]
            passed = min(passed, tests.count)
        summary = f"Passed {passed}/{tests.count} tests."
        if failures:
            summary += f" First failure: {failures[0]}"
        return self._verdict(code, passed, tests.count, summary, output, status)

    def _verdict(
        self, code: str, passed: int, total: int, summary: str, output: str, status: ProgramStatus
    ) -> Verdict:
        details = summary + (f"\nOutput of your code:\n{output}" if output else "")
        data = {"passed": passed, "total": total, "program_status": status.value}
        if passed == total and total > 0:
            return Verdict.correct(extracted=code, details=details, **data)
        score = passed / total if self.config.scoring == "fraction" and total else 0.0
        return Verdict.incorrect(extracted=code, details=details, score=score, **data)


def runner_report(result: ExecResult) -> dict | None:
    """The runner's report, only if the runner finished normally and wrote exactly one."""
    if result.status is not ProgramStatus.FINISHED:
        return None
    try:
        report = json.loads(result.stdout)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return report if isinstance(report, dict) else None


def _pairs(cases: tuple[CallCase, ...], report: dict):
    results = report.get("results")
    results = results if isinstance(results, list) else []
    for index, case in enumerate(cases):
        yield case, results[index] if index < len(results) else None


def judge_case(case: CallCase, reply: Any, reveal: bool) -> tuple[bool, str]:
    """Whether a harness reply (`{"value"}`, `{"error", "names", ...}`, `{"timeout"}`,
    `{"crash"}`) passes `case`, and if not, why (with the expected value only if `reveal`)."""
    if not isinstance(reply, dict):
        return False, "was not run"
    if reply.get("timeout") is True:
        return False, "timed out"
    if "crash" in reply:
        return False, f"crashed ({_text(reply['crash'])})"
    if "error" in reply:
        names = reply.get("names", [])
        if case.raises is not None and builtin_exception_class(names) and case.raises in names:
            return True, ""
        return False, f"raised {_text(reply['error'])}: {_text(reply.get('message', ''))}"
    if "value" not in reply:
        return False, "returned nothing"
    try:
        got = decode_value(reply["value"])
    except (ValueError, TypeError, RecursionError):
        return False, "returned a value that is not plain data"
    if case.raises is None and case.matches(got):
        return True, ""
    if not reveal:
        return False, f"returned {_show(got)}, which is not the expected result"
    if case.raises is not None:
        return False, f"returned {_show(got)}, expected it to raise {case.raises}"
    return False, f"returned {_show(got)}, expected {_show(case.expected)}"


def _ok(test: Any) -> bool:
    return isinstance(test, dict) and test.get("passed") is True


def _test_failure(test: Any, entry_point: str, reveal: bool) -> str:
    if not isinstance(test, dict):
        return "malformed test outcome"
    error = _text(test.get("error"), 500)
    if reveal:
        text = f"`{_text(test.get('test'), 300)}` failed: {error}"
    else:  # the test code's own errors (a failed assert, its message) may quote expected values
        hide = test.get("by_tests") is not False or error.startswith("AssertionError")
        text = "a test failed: " + (error.partition(":")[0] if hide else error)
    call = test.get("last_call")
    if isinstance(call, dict):
        try:
            case = CallCase(tuple(decode_value(call["args"])), decode_value(call["kwargs"]))
            text += f" (last call: {_call(entry_point, case)})"
        except (KeyError, ValueError, TypeError):
            pass
    return text


def _call(entry_point: str, case: CallCase) -> str:
    parts = [_show(arg) for arg in case.args]
    parts += [f"{key}={_show(value)}" for key, value in case.kwargs.items()]
    return f"{entry_point}({', '.join(parts)})"


def _show(value: Any, limit: int = 200) -> str:
    try:
        text = repr(value)
    except (ValueError, RecursionError):  # e.g. an int too long to print in decimal
        return f"<a {type(value).__name__} too large to show>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _text(value: Any, limit: int = 500) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _tail(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-limit:]
