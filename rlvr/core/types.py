"""The data of judging, shared by verifiers and environments: `Task`, `Verdict`, `Status`.

They live in the ground layer, below every other (sandboxes <- verifiers <- envs), so that a
verifier can be written and tested without importing any environment code, and any layer may
read them. `rlvr.verifiers.types` and `rlvr.verifiers` export the same objects.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rlvr.core.errors import TaskFormatError


@dataclass(frozen=True)
class Task:
    """One problem an environment can pose.

    `answer` is the gold answer (or whatever the verifier compares against, e.g. hidden tests); it
    is never shown to the agent. `metadata` holds JSON-compatible facts such as `family`,
    `difficulty`, `source` and `split`.
    """

    id: str
    prompt: str
    answer: Any
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise TaskFormatError(f"Task.id must be a non-empty str, got {self.id!r}")
        if not isinstance(self.prompt, str):
            raise TaskFormatError(
                f"Task {self.id!r}: prompt must be a str, got {type(self.prompt).__name__}"
            )
        if not isinstance(self.metadata, Mapping):
            raise TaskFormatError(
                f"Task {self.id!r}: metadata must be a mapping, got {type(self.metadata).__name__}"
            )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Task:
        """Build a task from a mapping with keys `prompt`, `answer` and optionally `id`, `metadata`.

        A missing `id` is derived from the content, so the same problem always gets the same id.
        """
        if not isinstance(data, Mapping):
            raise TaskFormatError(
                f"a task must be a mapping with 'prompt' and 'answer', got {type(data).__name__}"
            )
        missing = [key for key in ("prompt", "answer") if key not in data]
        if missing:
            raise TaskFormatError(
                f"task is missing {', '.join(repr(k) for k in missing)}; "
                f"it has keys {sorted(data, key=repr)}. "
                "Pass a field mapping if your names differ."
            )
        unknown = set(data) - {"id", "prompt", "answer", "metadata"}
        if unknown:
            raise TaskFormatError(
                f"task has unknown keys {sorted(unknown, key=repr)}; "
                "put extra facts under 'metadata'"
            )
        task_id = data.get("id") or content_id(data["prompt"], data["answer"])
        metadata = data.get("metadata") or {}
        return cls(
            id=str(task_id),
            prompt=data["prompt"],
            answer=data["answer"],
            # copied when a mapping; anything else is left for __post_init__ to reject by name
            metadata=dict(metadata) if isinstance(metadata, Mapping) else metadata,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "prompt": self.prompt,
            "answer": self.answer,
            "metadata": dict(self.metadata),
        }


def content_id(*parts: Any) -> str:
    """A short stable id derived from content (blake2b of the parts' reprs)."""
    digest = hashlib.blake2b(repr(parts).encode("utf-8"), digest_size=8).hexdigest()
    return f"task-{digest}"


class Status(str, enum.Enum):
    """How a reply was judged.

    `ERROR` means the reply could not be judged because our machinery failed (a crashed sandbox,
    a dead database): it is an infrastructure error, and its score is None so that a trainer
    drops the sample instead of learning from a fake 0.
    """

    CORRECT = "correct"
    INCORRECT = "incorrect"
    UNPARSABLE = "unparsable"
    ERROR = "error"


@dataclass(frozen=True)
class Verdict:
    """The result of judging one reply. Data, not an exception.

    `score` is in [0, 1] (1.0 only when fully correct; partial credit below), or None when the
    reply could not be judged (`status` is `ERROR`). `extracted` is the answer read from the
    reply, `details` a human-readable explanation fit to show the agent as feedback (a failing
    test's output, an SQL error), and `data` extra machine-readable facts.
    """

    status: Status
    score: float | None
    extracted: str | None = None
    details: str = ""
    data: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", Status(self.status))
        if self.status is Status.ERROR:
            if self.score is not None:
                raise ValueError("a Verdict with status 'error' must have score=None")
        elif self.score is None or not 0.0 <= self.score <= 1.0:
            raise ValueError(f"Verdict score must be within [0, 1], got {self.score!r}")
        elif self.status is Status.CORRECT and self.score != 1.0:
            raise ValueError("a 'correct' Verdict must have score 1.0; use 'incorrect' for partial")
        if self.score is not None:  # a numpy score would not survive json.dumps of `info`
            object.__setattr__(self, "score", float(self.score))

    @property
    def infra_error(self) -> bool:
        """True when the reply could not be judged because our infrastructure failed."""
        return self.status is Status.ERROR

    @property
    def is_correct(self) -> bool:
        return self.status is Status.CORRECT

    @classmethod
    def correct(cls, extracted: str | None = None, details: str = "", **data: Any) -> Verdict:
        return cls(Status.CORRECT, 1.0, extracted, details, data)

    @classmethod
    def incorrect(
        cls, extracted: str | None = None, details: str = "", score: float = 0.0, **data: Any
    ) -> Verdict:
        return cls(Status.INCORRECT, score, extracted, details, data)

    @classmethod
    def unparsable(cls, details: str = "", extracted: str | None = None, **data: Any) -> Verdict:
        return cls(Status.UNPARSABLE, 0.0, extracted, details, data)

    @classmethod
    def error(cls, details: str, **data: Any) -> Verdict:
        return cls(Status.ERROR, None, None, details, data)

    def to_dict(self) -> dict[str, Any]:
        """A fresh JSON-compatible dict (this is what environments put in `info["verdict"]`)."""
        return {
            "status": self.status.value,
            "score": self.score,
            "extracted": self.extracted,
            "details": self.details,
            "data": dict(self.data),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Verdict:
        return cls(
            Status(data["status"]),
            data["score"],
            data.get("extracted"),
            data.get("details", ""),
            dict(data.get("data") or {}),
        )
