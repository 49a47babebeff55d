"""Exceptions of `rlvr.verifiers`.

A wrong answer is never an exception: it is a `Verdict`. These are for misuse (a bad config, a
task without the fields a verifier needs) and for failures of our own machinery.
"""


class VerifierError(Exception):
    """Base class of every exception raised by `rlvr.verifiers`."""


class VerifierConfigError(VerifierError, ValueError):
    """A verifier was configured or called with arguments that cannot work."""


class TaskFormatError(VerifierError, ValueError):
    """A task (or a dataset row) lacks a field or has one of the wrong type."""
