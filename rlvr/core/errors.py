"""The root of rlvr's exceptions, and those the ground's own types raise.

`RlvrError` is the base of every exception rlvr raises on purpose: each package's own base
(`SandboxError`, `VerifierError`, `EnvError`, `AgentError`, `LeaderboardError`,
`IntegrationError`, and the family registry's `FamilyError`) and the ground's (`ConfigError`,
`JSONReadError`, `TOMLReadError`, `HandleClosed`) derive from it, so `except RlvrError` tells
a misuse or an infrastructure failure that rlvr reports from a bug. Each keeps its own bases
besides (a config error is still a `ValueError`), so what code catches today it still catches.

`VerifierError` and `TaskFormatError` live here because `Task` (`rlvr.core.types`) raises
`TaskFormatError`; `rlvr.verifiers.errors` and `rlvr.verifiers` export the same classes.
"""


class RlvrError(Exception):
    """Base class of every exception rlvr raises on purpose."""


class VerifierError(RlvrError):
    """Base class of every exception raised by `rlvr.verifiers`."""


class TaskFormatError(VerifierError, ValueError):
    """A task (or a dataset row) lacks a field or has one of the wrong type."""
