"""Sandboxed execution of untrusted, model-written code.

    from rlvr.sandboxes import ExecRequest, Limits, get_executor

    with get_executor("local") as executor:          # or "docker"
        result = executor.run(ExecRequest(code="print(6 * 7)", limits=Limits(wall_time=5)))
    result.status          # ProgramStatus.FINISHED / FAILED / TIMEOUT / OOM / OUTPUT_LIMIT
    result.sandbox_status  # SandboxStatus.OK, or ERROR when our machinery failed

Importing this package starts nothing: workers start at the first run (or `warm_up()`).
`rlvr sandbox doctor` says which backends work on this machine.
"""

from rlvr.sandboxes.errors import (
    ProtocolError,
    SandboxClosed,
    SandboxConfigError,
    SandboxError,
    SandboxUnavailable,
)
from rlvr.sandboxes.pool import Executor, Job, default_workers, get_executor
from rlvr.sandboxes.types import (
    ExecRequest,
    ExecResult,
    Limits,
    ProgramStatus,
    SandboxStatus,
)

__all__ = [
    "ExecRequest",
    "ExecResult",
    "Executor",
    "Job",
    "Limits",
    "ProgramStatus",
    "ProtocolError",
    "SandboxClosed",
    "SandboxConfigError",
    "SandboxError",
    "SandboxStatus",
    "SandboxUnavailable",
    "default_workers",
    "get_executor",
]
