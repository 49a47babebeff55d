"""Exceptions of `rlvr.sandboxes`.

A program that fails, hangs or blows a limit is never an exception: it is an `ExecResult` with a
program status. A sandbox that breaks while running a request is not an exception either: the
result's `sandbox_status` is `error`. These exceptions are for misuse (bad requests, bad config)
and for a sandbox that cannot be set up at all on this machine.
"""

from rlvr.core.errors import RlvrError


class SandboxError(RlvrError):
    """Base class of every exception raised by `rlvr.sandboxes`."""


class SandboxConfigError(SandboxError, ValueError):
    """A request, limit or backend option that cannot work (the message names the fix)."""


class SandboxUnavailable(SandboxError, RuntimeError):
    """The backend cannot isolate code on this machine (missing tool, no cgroups, no engine).

    The message says what is missing and how to fix it; `rlvr sandbox doctor` lists every check.
    """


class SandboxClosed(SandboxError, RuntimeError):
    """The executor was used after `close()`."""


class ProtocolError(SandboxError):
    """A sandbox worker sent bytes that do not follow the worker protocol (host side only)."""
