"""The task format of `rlvr/Repo-v0`: a repository, an issue, hidden tests and a reference fix.

`Task.prompt` is the issue (a description of wrong behaviour, never the fix). `Task.answer`,
never shown to the agent, holds the rest as JSON-compatible data:

    {"files": {"README.md": "...", "textkit/slug.py": "...", ...},   # the repository, as text
     "tests": [...], "fail_to_pass": [...], "pass_to_pass": [...],   # see rlvr.verifiers.repo
     "fix": "--- a/textkit/slug.py\\n+++ b/textkit/slug.py\\n..."}     # optional: the oracle's

or, for SWE-bench-style tasks, named tests of a runner instead of "tests": "runner" ("pytest" or
"unittest"), "fail_to_pass" and "pass_to_pass" as test ids, "restore" (files put back before
grading; see `rlvr.verifiers.repo.commands`).

The starting files are in the answer (not secret: the agent gets them in its workspace) so that
a task is whole in itself: pinned with `options={"task": ...}`, exported, rebuilt by a trainer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rlvr.envs.errors import ToolError
from rlvr.envs.repo.patches import PatchError, apply_patch
from rlvr.envs.repo.workspace import WorkspaceLimits, check_tree
from rlvr.verifiers.repo.commands import CommandTests
from rlvr.verifiers.repo.spec import RepoTests
from rlvr.verifiers.types import Task, TaskFormatError


@dataclass(frozen=True)
class RepoTask:
    """A repository task, parsed and checked."""

    files: Mapping[str, bytes]
    tests: RepoTests | CommandTests
    fix: str | None = None

    @classmethod
    def from_task(cls, task: Task, limits: WorkspaceLimits | None = None) -> RepoTask:
        """Parse `task.answer`; `TaskFormatError` naming the problem (files that break the
        workspace's `limits`, hidden tests in the wrong form, a fix that does not apply)."""
        answer = task.answer
        where = f"task {task.id!r}"
        if not isinstance(answer, Mapping):
            raise TaskFormatError(
                f"{where}: a repository task's answer must be a dict with 'files', 'tests', "
                f"'fail_to_pass' and 'pass_to_pass', got {type(answer).__name__}"
            )
        keys = {"files", "fail_to_pass", "pass_to_pass", "fix"}
        keys |= {"runner", "restore"} if "runner" in answer else {"tests"}
        unknown = set(answer) - keys
        if unknown:
            raise TaskFormatError(f"{where}: unknown answer keys {sorted(unknown, key=repr)}")
        files = _files(answer.get("files"), where, limits or WorkspaceLimits())
        tests: RepoTests | CommandTests
        if "runner" in answer:  # named tests of a test runner (SWE-bench-style tasks)
            tests = CommandTests.from_dict(answer, task.id)
            restore = tests.to_dict()["restore"]
            if restore:  # put into the repository at grading: the same rules as its files
                _files(restore, f"{where} (restore)", limits or WorkspaceLimits())
        else:
            tests = RepoTests.from_dict(answer, task.id)
        fix = answer.get("fix")
        if fix is not None:
            if not isinstance(fix, str):
                raise TaskFormatError(f"{where}: 'fix' must be a unified diff (a str)")
            try:
                apply_patch(files, fix)
            except PatchError as exc:
                raise TaskFormatError(f"{where}: the reference fix does not apply: {exc}") from None
        return cls(files, tests, fix)

    def answer(self) -> dict:
        """The task's answer in JSON-compatible form (the inverse of `from_task`)."""
        data: dict[str, Any] = {
            "files": {path: text.decode("utf-8") for path, text in self.files.items()}
        }
        data.update(self.tests.to_dict())
        if self.fix is not None:
            data["fix"] = self.fix
        return data


def _files(value: object, where: str, limits: WorkspaceLimits) -> dict[str, bytes]:
    if not isinstance(value, Mapping) or not value:
        raise TaskFormatError(f"{where}: 'files' must be a non-empty dict of path -> text")
    files = {}
    for path, text in value.items():
        if not isinstance(path, str) or not isinstance(text, str):
            raise TaskFormatError(f"{where}: 'files' must map paths (str) to text (str)")
        try:
            files[path] = text.encode("utf-8")
        except UnicodeEncodeError:
            raise TaskFormatError(f"{where}: file {path!r:.80} is not valid Unicode") from None
    try:
        check_tree(files, limits)
    except ToolError as exc:
        raise TaskFormatError(f"{where}: the repository's files: {exc}") from None
    return files
