"""The tools of a repository episode, bound to its workspace.

- `run(command)`: a bash command in the sandbox over the workspace (bounded output, time,
  memory and processes); the files it changes are kept;
- `read_file`, `write_file`, `replace_in_file`, `apply_patch` (a unified diff), `list_files`:
  read and edit the workspace on the host, never through a program;
- `run_tests(target)`: the repository's own (visible) tests, `python3 -m unittest`;
- `submit()`: the hidden tests grade the workspace; the episode ends.

Tools are bound to one episode's workspace: a call abandoned at its time limit that finishes
later changes that episode's files, never the next one's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rlvr.envs.core import Outcome
from rlvr.envs.errors import EnvConfigError, ToolError
from rlvr.envs.repo.patches import PatchError, apply_patch
from rlvr.envs.repo.workspace import Workspace
from rlvr.envs.tools.python import sandboxed_run
from rlvr.envs.tools.tool import Tool, object_schema
from rlvr.sandboxes.types import ExecResult, Limits, MiB, ProgramStatus

SHELL = "bash"
UNITTEST = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")
TIMING = re.compile(r"^(Ran \d+ tests?) in \d+\.\d+s$", re.MULTILINE)
SLOW_MARGIN = 30.0  # past a run's own limit, a tool call means the sandbox is stuck


@dataclass(frozen=True)
class ShellSettings:
    """Limits of one command (and of `run_tests`)."""

    timeout: float = 10.0
    """Seconds of wall time (CPU time too) a command may run."""
    memory_mb: int = 256
    """Memory of a command's processes (and the files it writes in the sandbox's /tmp)."""
    processes: int = 64
    """Processes and threads a command may have at once."""
    output_chars: int = 6000
    """Characters of a command's output shown (its beginning and end)."""

    def __post_init__(self) -> None:
        if not isinstance(self.timeout, (int, float)) or isinstance(self.timeout, bool):
            raise EnvConfigError(f"command_timeout must be a number, got {self.timeout!r}")
        if not 0 < self.timeout <= 600:
            raise EnvConfigError(f"command_timeout must be in (0, 600] s, got {self.timeout!r}")

    def limits(self, workspace: Workspace) -> Limits:
        # The command's output and the files it changes come back within one budget.
        budget = workspace.limits.max_bytes + 1 * MiB
        return Limits(
            wall_time=self.timeout,
            memory=self.memory_mb * MiB,
            processes=self.processes,
            output=budget,
            file_size=workspace.limits.max_file_bytes,
        )


class RepoTools:
    """The tools of one episode. `executor()` gives the sandbox to run commands in; `grade(files)`
    grades the workspace (the `submit` tool's outcome). `RepoTools()` without an episode gives
    the tools' descriptions only."""

    def __init__(
        self,
        workspace: Workspace | None = None,
        *,
        executor: Callable[[], Any] | None = None,
        grade: Callable[[Mapping[str, bytes]], Outcome] | None = None,
        shell: ShellSettings | None = None,
        grading_timeout: float = 60.0,
    ) -> None:
        self._workspace = workspace
        self._executor = executor
        self._grade = grade
        self.shell = shell or ShellSettings()
        self.grading_timeout = grading_timeout

    @property
    def workspace(self) -> Workspace:
        if self._workspace is None:
            raise RuntimeError("these tools describe the tool set only; no episode is bound")
        return self._workspace

    def tools(self) -> list[Tool]:
        command_timeout = self.shell.timeout + SLOW_MARGIN
        text = {"type": "string"}
        line = {"type": "integer"}
        return [
            Tool(
                "run",
                "Run a bash command in the repository's root, in a sandbox (no network; "
                f"{self.shell.timeout:g} s, {self.shell.memory_mb} MB). Files it changes are "
                "kept; processes it starts end with it. Returns its output and exit code.",
                object_schema({"command": text}),
                self.run,
                timeout=command_timeout,
                slow_is_infra=True,
            ),
            Tool(
                "read_file",
                "Show a file with line numbers (optionally only lines start_line to end_line).",
                object_schema(
                    {"path": text, "start_line": line, "end_line": line}, required=["path"]
                ),
                self.read_file,
            ),
            Tool(
                "write_file",
                "Create or overwrite a file with the given content.",
                object_schema({"path": text, "content": text}),
                self.write_file,
            ),
            Tool(
                "replace_in_file",
                "Replace the one occurrence of `old` in a file by `new` (exact text, "
                "whitespace included; `old` must occur exactly once).",
                object_schema({"path": text, "old": text, "new": text}),
                self.replace_in_file,
            ),
            Tool(
                "apply_patch",
                "Apply a unified diff (as `diff -u` or `git diff` print it) to the repository.",
                object_schema({"patch": text}),
                self.apply_patch,
            ),
            Tool(
                "list_files",
                "List the repository's files (optionally only those under a directory).",
                object_schema({"directory": text}, required=[]),
                self.list_files,
            ),
            Tool(
                "run_tests",
                "Run the repository's own tests with `python3 -m unittest` (all of them, or "
                "a target such as tests.test_module or tests.test_module.Class.test_name).",
                object_schema({"target": text}, required=[]),
                self.run_tests,
                timeout=command_timeout,
                slow_is_infra=True,
            ),
            Tool(
                "submit",
                "Submit the repository as it is now: hidden tests grade it and the episode ends.",
                object_schema({}),
                self.submit,
                timeout=self.grading_timeout + SLOW_MARGIN,
                slow_is_infra=True,
            ),
        ]

    # --- commands ---------------------------------------------------------------------------------

    def run(self, command: str) -> str:
        if not command.strip():
            raise ToolError("the command is empty")
        if "\x00" in command:
            raise ToolError("the command contains a NUL character")
        return self._run_in_sandbox([SHELL, "-c", command], f"$ {command}")

    def run_tests(self, target: str = "") -> str:
        target = target.strip()
        if target and not UNITTEST.match(target):
            raise ToolError(
                "target must be a unittest name such as tests.test_module or "
                "tests.test_module.TestClass.test_name"
            )
        argv = ["python3", "-m", "unittest"]
        argv += [target] if target else ["discover", "-s", "tests", "-t", "."]
        # Without its timing line the report is the same every run: seeded episodes replay.
        return TIMING.sub(r"\1", self._run_in_sandbox(argv, "$ " + " ".join(argv)))

    def _run_in_sandbox(self, argv: list[str], title: str) -> str:
        try:
            argv[-1].encode("utf-8")
        except UnicodeEncodeError:
            raise ToolError("the command contains characters that are not valid Unicode") from None
        workspace = self.workspace
        assert self._executor is not None  # bound with the workspace
        request = workspace.request(argv, self.shell.limits(workspace))
        result = sandboxed_run(self._executor(), request)
        note = workspace.absorb(result.changes)
        return self._report(title, result, note)

    def _report(self, title: str, result: ExecResult, note: str) -> str:
        output = result.stdout_text
        if result.stderr:
            output = (output + ("\n" if output and not output.endswith("\n") else "")) + (
                result.stderr_text
            )
        lines = [_cut(title, 300), _cut(output.rstrip("\n"), self.shell.output_chars)]
        lines.append(f"[{_status(result, self.shell.timeout)}]")
        if note:
            lines.append(note)
        return "\n".join(line for line in lines if line)

    # --- files ------------------------------------------------------------------------------------

    def read_file(
        self, path: str, start_line: int | None = None, end_line: int | None = None
    ) -> str:
        data = self.workspace.read(path)
        if b"\x00" in data:
            return f"{path}: a binary file of {len(data)} bytes"
        lines = data.decode("utf-8", errors="replace").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        first = max(start_line or 1, 1)
        last = min(end_line or len(lines), len(lines))
        if first > max(last, 1) or (lines and first > len(lines)):
            raise ToolError(f"{path} has {len(lines)} lines; lines {first}-{last} are not in it")
        width = len(str(last))
        shown = [f"{n:>{width}}  {lines[n - 1]}" for n in range(first, last + 1)]
        header = f"{path} (lines {first}-{last} of {len(lines)})" if lines else f"{path} (empty)"
        return "\n".join([header, *shown])

    def write_file(self, path: str, content: str) -> str:
        data = _encode(content)
        existed = path in self.workspace.files
        self.workspace.write(path, data)
        return f"{'Overwrote' if existed else 'Created'} {path} ({len(data)} bytes)."

    def replace_in_file(self, path: str, old: str, new: str) -> str:
        text = self.workspace.read(path).decode("utf-8", errors="replace")
        if not old:
            raise ToolError("`old` is empty; give the exact text to replace")
        count = text.count(old)
        if count != 1:
            where = "not found" if count == 0 else f"found {count} times"
            raise ToolError(
                f"`old` was {where} in {path}; it must occur exactly once (copy it from "
                "read_file's output without the line numbers, and add lines around it to make "
                "it unique)"
            )
        self.workspace.write(path, _encode(text.replace(old, new)))
        return f"Replaced 1 occurrence in {path}."

    def apply_patch(self, patch: str) -> str:
        try:
            files, notes = apply_patch(self.workspace.files, patch)
        except PatchError as exc:
            raise ToolError(f"the patch was not applied: {exc}") from None
        self.workspace.replace(files)
        return "Patch applied: " + "; ".join(notes) + "."

    def list_files(self, directory: str = "") -> str:
        paths = self.workspace.paths(directory)
        if not paths:
            raise ToolError(f"no files under {directory!r}")
        return "\n".join(paths)

    def submit(self) -> Outcome:
        assert self._grade is not None  # bound with the workspace
        return self._grade(dict(self.workspace.files))


def _encode(content: str) -> bytes:
    try:
        return content.encode("utf-8")
    except UnicodeEncodeError:
        raise ToolError("the content contains characters that are not valid Unicode") from None


def _status(result: ExecResult, timeout: float) -> str:
    status = result.status
    if status is ProgramStatus.TIMEOUT:
        return f"killed: it ran out of its {timeout:g} s"
    if status is ProgramStatus.OOM:
        return "killed: it ran out of memory"
    if status is ProgramStatus.OUTPUT_LIMIT:
        return "killed: it wrote too much output"
    if result.exit_code is None and result.signal is not None:
        return f"killed by signal {result.signal}"
    return f"exit code {result.exit_code}"


def _cut(text: str, limit: int) -> str:
    """`text`, or its beginning and end with a note of what was cut between."""
    if len(text) <= limit:
        return text
    head, tail = limit * 2 // 3, limit // 3
    cut = len(text) - head - tail
    return f"{text[:head]}\n... [{cut} characters cut] ...\n{text[-tail:]}"
