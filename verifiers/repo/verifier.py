"""`RepoTestVerifier`: run a repository's hidden tests over an agent's final files.

The files go into a fresh sandbox run under `repo/`, beside the code harness (mode `repo`, see
`rlvr.verifiers.code.harness`). The harness's runner, a trusted process that never imports the
repository, forks a fresh server for each hidden test; the server imports the repository and
answers the test's calls with plain data, which the runner relays. The expected values stay
here and are compared here (`judge_case`, the comparison of `rlvr/Code-v0`). Nothing in the
repository (tests, `conftest.py`, `sitecustomize.py`, `.pth` files, pytest configuration) is
read by anything but the server's own imports, and the interpreters start without `site`.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rlvr.sandboxes import ExecRequest, ExecResult, Executor, Limits, ProgramStatus
from rlvr.sandboxes.errors import SandboxError
from rlvr.sandboxes.types import MiB
from rlvr.verifiers.code.harness import BOOTSTRAP, HARNESS_FILE
from rlvr.verifiers.code.verifier import (
    HARNESS_SOURCE,
    RUN_OUTPUT,
    SandboxUser,
    judge_case,
    runner_report,
)
from rlvr.verifiers.errors import VerifierConfigError
from rlvr.verifiers.repo.commands import RUNNER, CommandTests, canary_source
from rlvr.verifiers.repo.spec import SCORING, RepoTests, score
from rlvr.verifiers.types import Verdict

ROOT = "repo"  # where the repository's files go in the harness's working directory
COMMAND_RUN_LIMIT = 600.0  # seconds for every named test of a task together
MAX_FAILURES_SHOWN = 3


@dataclass(frozen=True)
class RepoTestConfig:
    """How a repository's hidden tests are run and scored."""

    scoring: str = "all"
    """"all": 1.0 only if every hidden test passes; "fraction": partial credit (see `score`)."""
    timeout: float = 60.0
    """Seconds of wall time for the whole run (every test)."""
    test_timeout: float = 3.0
    """Seconds for one call of the repository's code; a slower call fails its test."""
    memory: int = 512 * MiB
    """Memory for the harness and the repository's code together."""
    backend: str = "local"
    """Sandbox backend when no executor is given: "local" or "docker"."""

    def __post_init__(self) -> None:
        if self.scoring not in SCORING:
            raise VerifierConfigError(f"scoring must be one of {SCORING}, got {self.scoring!r}")
        for name in ("timeout", "test_timeout"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
                raise VerifierConfigError(f"{name} must be a positive number, got {value!r}")
        if self.test_timeout > self.timeout:
            raise VerifierConfigError("test_timeout cannot exceed timeout")


class RepoTestVerifier(SandboxUser):
    """Grades a repository's files against its `RepoTests`. Pass an `executor` to share one
    you manage; otherwise a handle on the process-wide pool of `config.backend` is taken at
    the first grading and released by `close()`."""

    VERSION = "1"

    def __init__(
        self,
        config: RepoTestConfig | None = None,
        *,
        executor: Executor | None = None,
        backend_options: dict[str, Any] | None = None,
    ) -> None:
        self.config = config or RepoTestConfig()
        super().__init__(self.config.backend, executor, backend_options)

    def grade(self, files: Mapping[str, bytes], tests: RepoTests | CommandTests) -> Verdict:
        """The verdict on `files` (paths relative to the repository's root): correct when the
        score is 1; status error only when the sandbox itself failed. Named tests of a test
        runner (`CommandTests`, SWE-bench-style tasks) run as `rlvr.verifiers.repo.commands`
        says, with its weaker guarantees."""
        try:
            if isinstance(tests, CommandTests):
                result = self.executor().run(self.command_request(files, tests))
                return self.judge_commands(tests, result)
            result = self.executor().run(self.request(files, tests))
        except SandboxError as exc:
            return Verdict.error(f"sandbox unavailable: {exc}")
        return self.judge(tests, result)

    def command_request(self, files: Mapping[str, bytes], tests: CommandTests) -> ExecRequest:
        canary = "test_rlvr_canary_" + secrets.token_hex(8)  # a name the repository cannot know
        graded = tests.graded_files(files)
        graded[f"{canary}.py"] = canary_source(tests.runner).encode()
        spec = {
            "runner": tests.runner,
            "tests": list(tests.names),
            "canary": canary,
            "root": ROOT,
            "test_timeout": self.config.timeout,
        }
        wall = min(self.config.timeout * (len(tests.names) + 1), COMMAND_RUN_LIMIT)
        return ExecRequest(
            code=RUNNER,
            files={f"{ROOT}/{path}": data for path, data in graded.items()},
            stdin=json.dumps(spec),
            limits=Limits(wall_time=wall, memory=self.config.memory, output=RUN_OUTPUT),
        )

    def judge_commands(self, tests: CommandTests, result: ExecResult) -> Verdict:
        if result.status is None:
            return Verdict.error(f"sandbox error: {result.error}")
        report = runner_report(result)
        if report is None:
            why = f"the test runner did not finish ({result.describe()})"
            return self._verdict(tests, set(), [], f"The hidden tests did not finish: {why}.")
        passed = {name for name in tests.names if report.get(name) is True}
        failed = [f"{name}: failed" for name in tests.names if name not in passed]
        return self._verdict(tests, passed, failed, "")

    def request(self, files: Mapping[str, bytes], tests: RepoTests) -> ExecRequest:
        spec = tests.harness_input(ROOT, self.config.test_timeout)
        placed: dict[str, str | bytes] = {f"{ROOT}/{path}": data for path, data in files.items()}
        placed[HARNESS_FILE] = HARNESS_SOURCE
        return ExecRequest(
            code=BOOTSTRAP,
            files=placed,
            stdin=json.dumps(spec),
            limits=Limits(
                wall_time=self.config.timeout, memory=self.config.memory, output=RUN_OUTPUT
            ),
        )

    def judge(self, tests: RepoTests, result: ExecResult) -> Verdict:
        if result.status is None:  # the sandbox failed: nothing to judge
            return Verdict.error(f"sandbox error: {result.error}")
        report = runner_report(result)
        groups = report.get("groups") if report is not None else None
        if not isinstance(groups, list):
            why = {
                ProgramStatus.TIMEOUT: f"ran out of time ({self.config.timeout:g}s)",
                ProgramStatus.OOM: "ran out of memory",
                ProgramStatus.OUTPUT_LIMIT: "wrote too much output",
            }.get(result.status, f"stopped the test harness ({result.describe()})")
            return self._verdict(
                tests, set(), [], f"The hidden tests did not finish: the code {why}."
            )
        passed: set[str] = set()
        failures: list[str] = []
        for index, test in enumerate(tests.tests):
            replies = (
                groups[index] if index < len(groups) and isinstance(groups[index], list) else []
            )
            failure = _first_failure(test.calls, replies)
            if failure is None:
                passed.add(test.name)
            else:
                failures.append(f"{test.name}: {failure}")
        return self._verdict(tests, passed, failures, "")

    def _verdict(
        self,
        tests: RepoTests | CommandTests,
        passed: set[str],
        failures: list[str],
        summary: str,
    ) -> Verdict:
        fixed = sum(name in passed for name in tests.fail_to_pass)
        kept = sum(name in passed for name in tests.pass_to_pass)
        lines = [
            summary
            or (
                f"Hidden tests: {fixed}/{len(tests.fail_to_pass)} of those the bug broke pass, "
                f"{kept}/{len(tests.pass_to_pass)} of those that passed still pass."
            )
        ]
        lines += [f"- {failure}" for failure in failures[:MAX_FAILURES_SHOWN]]
        data: dict[str, Any] = {
            "passed": sorted(passed),
            "fail_to_pass": [fixed, len(tests.fail_to_pass)],
            "pass_to_pass": [kept, len(tests.pass_to_pass)],
        }
        value = score(passed, tests, self.config.scoring)
        if value == 1.0:
            return Verdict.correct(details="\n".join(lines), **data)
        return Verdict.incorrect(details="\n".join(lines), score=value, **data)


def _first_failure(calls: Any, replies: list[Any]) -> str | None:
    """Why the first failing call of a test failed (never its expected value), or None."""
    for index, call in enumerate(calls):
        reply = replies[index] if index < len(replies) else None
        ok, why = judge_case(call.case, reply, reveal=False)
        if not ok:
            return f"{call.target} {why}"
    return None
