"""Core data types shared by verifiers and environments: `Task`, `Verdict`, `Verifier`.

`Task`, `Verdict`, `Status` and `content_id` are defined in the ground layer
(`rlvr.core.types`), which every layer may import; this module exports the same objects, beside
the `Verifier` protocol that judges a reply against a task.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from rlvr.core.errors import TaskFormatError
from rlvr.core.types import Status, Task, Verdict, content_id

__all__ = ["Status", "Task", "TaskFormatError", "Verdict", "Verifier", "content_id"]


@runtime_checkable
class Verifier(Protocol):
    """Judges a reply against a task. Must not raise on a bad reply, and must be bounded in time."""

    def verify(self, response: str, task: Task) -> Verdict: ...
