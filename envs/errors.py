"""Exceptions of `rlvr.envs`. A wrong reply is never an exception: it scores 0."""

from rlvr.core.errors import RlvrError


class EnvError(RlvrError):
    """Base class of every exception raised by `rlvr.envs`."""


class ResetNeeded(EnvError, RuntimeError):
    """`step()` was called before `reset()` or after the episode ended."""


class ActionError(EnvError, ValueError):
    """An action the environment cannot take at all: from an agent whose turn it is not, for an
    agent whose episode has ended, or for an agent that does not exist. (A reply that is merely
    wrong or malformed is not an error: the env scores it.)"""


class NotTextError(EnvError, TypeError):
    """An action that is not text (`str`): token ids, None for a live agent, a dict..."""


class DatasetError(EnvError, ValueError):
    """A dataset file or row cannot be turned into tasks (the message says where and why)."""


class EnvConfigError(EnvError, ValueError):
    """An environment was configured with arguments that cannot work."""


class ArgumentTypeError(EnvConfigError, TypeError):
    """An argument of the wrong type where Python code expects a `TypeError` (reset options that
    are not a dict): both an `EnvConfigError` and a `TypeError`."""


class ToolError(EnvError):
    """Raised by a tool when the agent's call cannot be carried out (a missing page, a bad
    option); its message goes back to the agent as the tool's result."""


class ToolInfraError(EnvError):
    """Raised by a tool when our own machinery failed (a dead server or sandbox): the step is an
    infrastructure error, not the agent's fault."""
