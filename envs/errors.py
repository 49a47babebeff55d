"""Exceptions of `rlvr.envs`. A wrong reply is never an exception: it scores 0."""


class EnvError(Exception):
    """Base class of every exception raised by `rlvr.envs`."""


class ResetNeeded(EnvError, RuntimeError):
    """`step()` was called before `reset()` or after the episode ended."""


class DatasetError(EnvError, ValueError):
    """A dataset file or row cannot be turned into tasks (the message says where and why)."""


class EnvConfigError(EnvError, ValueError):
    """An environment was configured with arguments that cannot work."""


class ToolError(EnvError):
    """Raised by a tool when the agent's call cannot be carried out (a missing page, a bad
    option); its message goes back to the agent as the tool's result."""


class ToolInfraError(EnvError):
    """Raised by a tool when our own machinery failed (a dead server or sandbox): the step is an
    infrastructure error, not the agent's fault."""
