"""Exceptions of `rlvr.integrations`."""

from rlvr.core.errors import RlvrError


class IntegrationError(RlvrError):
    """Base class of every exception raised by `rlvr.integrations`."""


class IntegrationConfigError(IntegrationError, ValueError):
    """An adapter was asked for something it cannot do: an env whose episodes a trainer's hook
    cannot replay, a dataset without the task columns, a task that does not survive JSON."""


class InfraError(IntegrationError, RuntimeError):
    """A reply could not be judged because our machinery failed, where the trainer has no way to
    drop the sample (verl's reward functions): failing loudly beats training on a fake 0."""
