"""Verifiers: judge a reply against a task and return a `Verdict` (data, never an exception).

Families live in submodules imported on demand (`rlvr.verifiers.math`, ...), so importing this
package stays cheap.
"""

from rlvr.verifiers.errors import TaskFormatError, VerifierConfigError, VerifierError
from rlvr.verifiers.function import FunctionVerifier
from rlvr.verifiers.types import Status, Task, Verdict, Verifier, content_id

__all__ = [
    "FunctionVerifier",
    "Status",
    "Task",
    "TaskFormatError",
    "Verdict",
    "Verifier",
    "VerifierConfigError",
    "VerifierError",
    "content_id",
]
