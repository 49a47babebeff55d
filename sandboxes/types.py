"""Requests and results of sandboxed executions.

An `ExecRequest` says what to run (Python source run by a warm interpreter, or a command), with
which files, stdin, extra environment variables and `Limits`. An `ExecResult` has two levels of
status, kept apart because a trainer must treat them differently:

- `status` (`ProgramStatus`): what the program did: finished, failed, timeout, oom, output_limit;
- `sandbox_status` (`SandboxStatus`): whether our machinery worked (ok) or broke (error). A
  sandbox error says nothing about the program and must never be scored as a wrong answer.

The environment of the program is built from scratch: it never inherits `os.environ`.
"""

from __future__ import annotations

import enum
import math
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from rlvr.sandboxes.errors import SandboxConfigError

MiB = 1024 * 1024


class ProgramStatus(str, enum.Enum):
    """What the program did."""

    FINISHED = "finished"
    """It exited with code 0."""
    FAILED = "failed"
    """It exited with a non-zero code, was killed by a signal, or killed its own supervisor."""
    TIMEOUT = "timeout"
    """It ran out of wall time or CPU time and was killed."""
    OOM = "oom"
    """It ran out of memory and was killed."""
    OUTPUT_LIMIT = "output_limit"
    """It wrote more than `Limits.output` bytes to stdout and stderr and was killed."""


class SandboxStatus(str, enum.Enum):
    """Whether the sandbox itself worked."""

    OK = "ok"
    ERROR = "error"


@dataclass(frozen=True)
class Limits:
    """Resource limits of one execution. Time spent waiting for a free worker never counts."""

    wall_time: float = 10.0
    """Seconds of wall-clock time from the program's start until it is killed."""
    cpu_time: float | None = None
    """Seconds of CPU time per process (RLIMIT_CPU); None means the same as `wall_time`."""
    memory: int = 256 * MiB
    """Bytes of memory (RAM plus files in the sandbox's tmpfs) for all of the run's processes."""
    processes: int = 64
    """Most processes and threads alive at once (pids cgroup / container pids limit)."""
    output: int = 1 * MiB
    """Bytes of stdout plus stderr kept; writing more kills the program (status output_limit)."""
    file_size: int = 16 * MiB
    """Largest file the program may write (RLIMIT_FSIZE)."""
    cpus: float = 1.0
    """CPU cores the run may use at once (CFS quota / container nano-CPUs)."""
    network: bool = False
    """Give the program network access. Off by default; only honoured by a fresh sandbox."""

    def __post_init__(self) -> None:
        _positive_number("wall_time", self.wall_time)
        if self.cpu_time is not None:
            _positive_number("cpu_time", self.cpu_time)
        _positive_number("cpus", self.cpus)
        for name, minimum in (
            ("memory", 16 * MiB),
            ("processes", 1),
            ("output", 1),
            ("file_size", 1),
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
                raise SandboxConfigError(
                    f"Limits.{name} must be an int >= {minimum}, got {value!r}"
                )
        if not isinstance(self.network, bool):
            raise SandboxConfigError(f"Limits.network must be a bool, got {self.network!r}")

    @property
    def effective_cpu_time(self) -> float:
        return self.wall_time if self.cpu_time is None else self.cpu_time

    def to_wire(self) -> dict[str, object]:
        """The limits as the worker inside the sandbox reads them."""
        return {
            "wall_time": self.wall_time,
            "cpu_time": self.effective_cpu_time,
            "memory": self.memory,
            "processes": self.processes,
            "output": self.output,
            "file_size": self.file_size,
        }


def _positive_number(name: str, value: object) -> None:
    if (
        not isinstance(value, (int, float))
        or isinstance(value, bool)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise SandboxConfigError(f"Limits.{name} must be a positive number, got {value!r}")


FileContent = str | bytes


@dataclass(frozen=True)
class ExecRequest:
    """One program to run in a fresh working directory.

    Give exactly one of `code` (Python source, run by an interpreter already warm inside the
    sandbox: the fast path) or `command` (an argv list, e.g. `["python3", "main.py"]`).
    `files` maps paths relative to the working directory to their content; `env` holds the only
    extra environment variables the program sees (never our `os.environ`). `return_files` lists
    files to read back after the run (their bytes count against `Limits.output`).

    `executable` lists paths of `files` written with mode 0755 (the others get 0644).
    `return_changes=True` reads back, after every process of the run has been killed, the
    regular files of the working directory that differ from what `files` wrote (new, changed,
    or with another executable bit) and which of `files` are gone: `ExecResult.changes`. A
    workspace that lives on the host can so be carried from run to run.
    """

    code: str | None = None
    command: Sequence[str] | None = None
    args: Sequence[str] = ()
    files: Mapping[str, FileContent] = field(default_factory=dict)
    stdin: FileContent = b""
    env: Mapping[str, str] = field(default_factory=dict)
    limits: Limits = field(default_factory=Limits)
    return_files: Sequence[str] = ()
    executable: Sequence[str] = ()
    return_changes: bool = False

    def __post_init__(self) -> None:
        if (self.code is None) == (self.command is None):
            raise SandboxConfigError("ExecRequest needs exactly one of code=... or command=[...]")
        if self.code is not None and not isinstance(self.code, str):
            raise SandboxConfigError(
                f"ExecRequest.code must be a str, got {type(self.code).__name__}"
            )
        if self.command is not None:
            if isinstance(self.command, str) or not self.command:
                raise SandboxConfigError(
                    "ExecRequest.command must be a non-empty list of arguments, e.g. "
                    "['python3', 'main.py'] (not a shell string)"
                )
            _all_str("command", self.command)
            object.__setattr__(self, "command", tuple(self.command))
        if isinstance(self.args, str):
            raise SandboxConfigError("ExecRequest.args must be a list of str, not a str")
        _all_str("args", self.args)
        object.__setattr__(self, "args", tuple(self.args))
        if not isinstance(self.limits, Limits):
            raise SandboxConfigError(f"ExecRequest.limits must be a Limits, got {self.limits!r}")
        if not isinstance(self.stdin, (str, bytes)):
            raise SandboxConfigError("ExecRequest.stdin must be str or bytes")
        files = {}
        for path, content in dict(self.files).items():
            if not isinstance(content, (str, bytes)):
                raise SandboxConfigError(f"file {path!r}: content must be str or bytes")
            files[check_relative_path(path)] = content
        object.__setattr__(self, "files", files)
        env = dict(self.env)
        for key, value in env.items():
            if not isinstance(key, str) or not key or "=" in key or "\0" in key:
                raise SandboxConfigError(f"environment variable name {key!r} is not valid")
            if not isinstance(value, str) or "\0" in value:
                raise SandboxConfigError(f"environment variable {key}: value must be a str")
        object.__setattr__(self, "env", env)
        if isinstance(self.return_files, str):
            raise SandboxConfigError("ExecRequest.return_files must be a list of paths")
        object.__setattr__(
            self, "return_files", tuple(check_relative_path(p) for p in self.return_files)
        )
        if isinstance(self.executable, str):
            raise SandboxConfigError("ExecRequest.executable must be a list of paths")
        executable = frozenset(check_relative_path(p) for p in self.executable)
        if not executable <= files.keys():
            missing = sorted(executable - files.keys())
            raise SandboxConfigError(f"ExecRequest.executable names paths not in files: {missing}")
        object.__setattr__(self, "executable", executable)
        if not isinstance(self.return_changes, bool):
            raise SandboxConfigError("ExecRequest.return_changes must be True or False")


def _all_str(name: str, values: Sequence[object]) -> None:
    for value in values:
        if not isinstance(value, str) or "\0" in value:
            raise SandboxConfigError(f"ExecRequest.{name} must hold str values, got {value!r}")


def check_relative_path(path: str) -> str:
    """Normalise a path inside the working directory, refusing ones that would leave it."""
    if not isinstance(path, str) or not path or "\0" in path:
        raise SandboxConfigError(f"file path {path!r} must be a non-empty str")
    normal = posixpath.normpath(path)
    if normal.startswith("/") or normal == ".." or normal.startswith("../") or normal == ".":
        raise SandboxConfigError(
            f"file path {path!r} must be relative to the working directory and stay inside it"
        )
    return normal


@dataclass(frozen=True)
class WorkdirChanges:
    """What a run changed in its working directory (`ExecRequest.return_changes`).

    `files`: regular files that are new or differ from the request's (content or executable
    bit), with their bytes; `executable`: those of them with an executable bit; `deleted`: paths
    of the request's files that are no longer regular files. Symlinks, special files and names
    that are not UTF-8 are never read: `skipped` names some of them. `complete` is False when
    the changes did not fit (more than `Limits.output` bytes with the output, or too many
    entries): then `files` holds only part of them and should not be applied.
    """

    files: Mapping[str, bytes] = field(default_factory=dict)
    executable: frozenset[str] = frozenset()
    deleted: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()
    complete: bool = True


@dataclass(frozen=True)
class ExecResult:
    """What happened to one `ExecRequest`.

    When `sandbox_status` is `error`, `status` is None and `error` says what broke: the run says
    nothing about the program and must not be scored. Otherwise `status` is the program's.
    `duration` is the program's wall time (queueing excluded; `queued` holds that).
    """

    status: ProgramStatus | None
    sandbox_status: SandboxStatus = SandboxStatus.OK
    exit_code: int | None = None
    signal: int | None = None
    stdout: bytes = b""
    stderr: bytes = b""
    duration: float = 0.0
    cpu_time: float | None = None
    queued: float = 0.0
    error: str = ""
    truncated: bool = False
    files: Mapping[str, bytes] = field(default_factory=dict)
    backend: str = ""
    changes: WorkdirChanges | None = None
    """The run's changes to its working directory, when the request asked for them."""

    @classmethod
    def sandbox_error(cls, message: str, *, backend: str = "", queued: float = 0.0) -> ExecResult:
        return cls(
            status=None,
            sandbox_status=SandboxStatus.ERROR,
            error=message,
            backend=backend,
            queued=queued,
        )

    @property
    def ok(self) -> bool:
        """True when the sandbox worked and the program exited with code 0."""
        return self.sandbox_status is SandboxStatus.OK and self.status is ProgramStatus.FINISHED

    @property
    def infra_error(self) -> bool:
        return self.sandbox_status is SandboxStatus.ERROR

    @property
    def stdout_text(self) -> str:
        return self.stdout.decode("utf-8", errors="replace")

    @property
    def stderr_text(self) -> str:
        return self.stderr.decode("utf-8", errors="replace")

    def describe(self) -> str:
        """One line for logs and feedback: the status and, when useful, why."""
        if self.infra_error:
            return f"sandbox error: {self.error}"
        assert self.status is not None
        parts = [self.status.value]
        if self.exit_code not in (None, 0):
            parts.append(f"exit code {self.exit_code}")
        if self.signal is not None:
            parts.append(f"signal {self.signal}")
        if self.error:
            parts.append(self.error)
        return ", ".join(parts)
