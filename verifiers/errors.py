"""Exceptions of `rlvr.verifiers`.

A wrong answer is never an exception: it is a `Verdict`. These are for misuse (a bad config, a
task without the fields a verifier needs) and for failures of our own machinery. `VerifierError`
and `TaskFormatError` are defined in the ground layer (`rlvr.core.errors`), beside the `Task`
that raises the latter; this module exports the same classes.
"""

from rlvr.core.errors import TaskFormatError, VerifierError

__all__ = ["TaskFormatError", "VerifierConfigError", "VerifierError"]


class VerifierConfigError(VerifierError, ValueError):
    """A verifier was configured or called with arguments that cannot work."""
