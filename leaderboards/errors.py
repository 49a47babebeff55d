"""Exceptions of `rlvr.leaderboards`. Every message says what to do about it."""

from __future__ import annotations

from rlvr.core.errors import RlvrError


class LeaderboardError(RlvrError):
    """Base class of every leaderboard error."""


class SuiteError(LeaderboardError, ValueError):
    """A suite file is malformed, or names something that does not exist."""


class StoreError(LeaderboardError):
    """The result store cannot be opened or does not hold what was asked for."""


class InvalidResultError(LeaderboardError, ValueError):
    """A result the store refuses: a field of the wrong type or out of range, traces that are
    not the suite's episodes, or figures its traces do not give. The message names the field."""


class ResultFileError(LeaderboardError, ValueError):
    """A file given to `rlvr leaderboard import` is not a saved result, or is damaged."""


class NotComparableError(LeaderboardError):
    """Results that cannot be ranked together; the message lists every difference."""


class ReverifyError(LeaderboardError):
    """A stored result cannot be re-judged (its env now poses different tasks, ...)."""
