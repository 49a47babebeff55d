"""An episode's repository: files held on the host, run in a fresh sandbox run per command.

A `Workspace` starts as a copy of its task's files (a copy-on-write map: the bytes are shared
with the template until a file is written) and belongs to one episode; it is never shared.
Tools read and write it directly; a shell command materialises it in a fresh working directory
of a sandbox run (`rlvr.sandboxes`, `return_changes=True`), and the files the command created,
changed or removed come back and are applied, all or nothing, within the workspace's limits.
Every process of a command dies with it, and the sandbox's writable places are emptied after
every run: nothing of one command, or of one episode, reaches another except through the
workspace's files.

Only regular files are kept (an executable bit included): symlinks, special files and empty
directories a command leaves are not taken back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from rlvr.envs.errors import EnvConfigError, ToolError
from rlvr.sandboxes.errors import SandboxConfigError
from rlvr.sandboxes.types import ExecRequest, Limits, MiB, WorkdirChanges, check_relative_path

MAX_PATH_CHARS = 1024
MAX_NAME_BYTES = 255
# A command's environment: no bytecode files (they would come back as changes), unbuffered
# Python output, a dumb terminal.
COMMAND_ENV = {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1", "TERM": "dumb"}


@dataclass(frozen=True)
class WorkspaceLimits:
    """How much a workspace may hold; writes and commands that would exceed it are refused."""

    max_files: int = 1000
    max_bytes: int = 4 * MiB
    max_file_bytes: int = 1 * MiB

    def __post_init__(self) -> None:
        for name in ("max_files", "max_bytes", "max_file_bytes"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise EnvConfigError(f"{name} must be a positive int, got {value!r}")


class Workspace:
    """The files of one episode's repository (paths relative to its root -> bytes)."""

    def __init__(
        self,
        files: Mapping[str, bytes],
        *,
        executable: Sequence[str] = (),
        limits: WorkspaceLimits | None = None,
    ) -> None:
        self.limits = limits or WorkspaceLimits()
        self._files = dict(files)  # the bytes are shared with `files` until written
        self._executable = set(executable) & self._files.keys()

    @property
    def files(self) -> Mapping[str, bytes]:
        """A read-only view of the files."""
        return MappingProxyType(self._files)

    @property
    def executable(self) -> frozenset[str]:
        return frozenset(self._executable)

    def paths(self, directory: str = "") -> list[str]:
        """The files under `directory` ("" for all), sorted."""
        prefix = normal_path(directory) + "/" if directory.strip("./") else ""
        return sorted(path for path in self._files if path.startswith(prefix))

    def read(self, path: str) -> bytes:
        path = normal_path(path)
        if path not in self._files:
            hint = " (it is a directory)" if self.paths(path) else ""
            raise ToolError(f"no file {path!r} in the repository{hint}")
        return self._files[path]

    def write(self, path: str, data: bytes) -> None:
        """Create or replace one file (checked against the limits and the other files)."""
        path = normal_path(path)
        files = dict(self._files)
        files[path] = data
        self._replace(files, self._executable)

    def replace(self, files: Mapping[str, bytes]) -> None:
        """Replace every file at once (a patch's result); all or nothing."""
        self._replace({normal_path(path): data for path, data in files.items()}, self._executable)

    def _replace(self, files: dict[str, bytes], executable: set[str]) -> None:
        check_tree(files, self.limits)
        self._files = files
        self._executable = executable & files.keys()

    # --- commands in the sandbox ------------------------------------------------------------------

    def request(self, argv: Sequence[str], limits: Limits) -> ExecRequest:
        """A sandbox run of `argv` over this workspace that brings its changes back. Its output
        and the files it changes share `limits.output`."""
        return ExecRequest(
            command=list(argv),
            files=self._files,
            executable=sorted(self._executable),
            env=COMMAND_ENV,
            limits=limits,
            return_changes=True,
        )

    def absorb(self, changes: WorkdirChanges | None) -> str:
        """Apply a command's changes, all or nothing; a note for the agent ("" when there is
        nothing to say)."""
        if changes is None or not changes.complete:
            return (
                "The command left more files or bytes than a command may change (or files it "
                "made unreadable): its changes to the repository were discarded."
            )
        if changes.files or changes.deleted:
            note = self._apply(changes)
            if note:
                return note
        # else nothing changed: the files stay as they are (and were checked when they were set)
        if changes.skipped:
            shown = ", ".join(changes.skipped[:5])
            return f"Not kept (only regular files are): {shown}."
        return ""

    def _apply(self, changes: WorkdirChanges) -> str:
        """Apply a complete set of changes, all or nothing; "" or why they were discarded."""
        files = {path: data for path, data in self._files.items() if path not in changes.deleted}
        files.update(changes.files)
        executable = (self._executable - set(changes.files)) | set(changes.executable)
        try:
            self._replace(files, executable)
        except ToolError as exc:
            return f"The command's changes to the repository were discarded: {exc}"
        return ""


def normal_path(path: str) -> str:
    """`path` normalised inside the repository, or `ToolError` saying why it cannot be."""
    if not isinstance(path, str):
        raise ToolError(f"a path must be a str, got {type(path).__name__}")
    try:
        path.encode("utf-8")
        normal = check_relative_path(path.strip())
    except UnicodeEncodeError:
        raise ToolError("the path contains characters that are not valid Unicode") from None
    except SandboxConfigError:
        raise ToolError(
            f"path {path!r:.100} must be relative to the repository's root and stay inside it"
        ) from None
    if len(normal) > MAX_PATH_CHARS or any(
        len(part.encode("utf-8")) > MAX_NAME_BYTES for part in normal.split("/")
    ):
        raise ToolError(f"path {normal[:100]!r}... is too long")
    return normal


def check_tree(files: Mapping[str, bytes], limits: WorkspaceLimits) -> None:
    """`ToolError` if `files` exceed the limits, or hold a path that is also another file's
    directory (no file system can hold both)."""
    if len(files) > limits.max_files:
        raise ToolError(f"the repository would hold more than {limits.max_files} files")
    total = 0
    for path, data in files.items():
        if normal_path(path) != path:
            raise ToolError(f"path {path[:100]!r} is not a plain relative path")
        if len(data) > limits.max_file_bytes:
            raise ToolError(f"{path} would be larger than {limits.max_file_bytes} bytes")
        total += len(data)
    if total > limits.max_bytes:
        raise ToolError(f"the repository would hold more than {limits.max_bytes} bytes")
    for path in files:
        parts = path.split("/")
        for depth in range(1, len(parts)):
            parent = "/".join(parts[:depth])
            if parent in files:
                raise ToolError(f"{parent} is a file, so {path} cannot exist; delete it first")
