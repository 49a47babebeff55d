"""Exceptions of `rlvr.agents`."""

from __future__ import annotations

from rlvr.core.errors import RlvrError


class AgentError(RlvrError):
    """Base class of every exception raised by `rlvr.agents`."""


class PolicyError(AgentError, RuntimeError):
    """A policy could not produce completions (a bad model folder, a server that keeps failing)."""


class TrainingError(AgentError, RuntimeError):
    """Training cannot go on (no usable episode in a batch, a checkpoint that does not match)."""


class InfraErrorRateError(TrainingError):
    """Too many of an env's training episodes hit infrastructure errors (our verifier, sandbox or
    database failed): dropping them silently would train on a skewed share of the tasks."""


def require_agents_extra(what: str) -> None:
    """Raise an ImportError naming the extra when torch/transformers are not installed."""
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            f"{what} needs torch and transformers: pip install 'rlvr-gym[agents]' ({exc})"
        ) from None
