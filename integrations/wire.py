"""What travels between `rlvr serve` and its clients, shared by both sides (standard library only).

The server speaks OpenEnv's protocol (`openenv-core`): a session is one WebSocket at `/ws`,
messages `{"type": "reset" | "step" | "state" | "close", "data": {...}}`, answers
`{"type": "observation" | "state" | "error", "data": {...}}`. An observation's data is
`{"observation": {...}, "reward": float | None, "done": bool}`; the inner observation holds the
fields of `rlvr.integrations.serve.TextObservation` (`OBSERVATION_FIELDS` below).

Errors the env raises on purpose travel as `"<ErrorClass>: message"` (the class name first, put
there by the server, never by a reply), so a client raises the same exception as in-process.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

OBSERVATION_FIELDS = (
    "text",
    "messages",
    "info",
    "infra_error",
    "verdict",
    "terminated",
    "truncated",
    "task_fingerprint",
    "agent",
    "agents",
    "seats",
)
"""The rlvr fields of an observation: the env's observation `text`, the chat `messages` of the
agent to move, the env's `info` (JSON; its `messages` are the ones above, sent once),
`infra_error` and `verdict` (also in `info`, lifted for
trainers that read only the top level), Gymnasium's `terminated`/`truncated`, the posed task's
`task_fingerprint` (after reset), and for multi-agent envs `agent` (who moves now), `agents`
(who still plays) and `seats` (each seat's reward, return, end flags and infra_error)."""

SESSION_EXPIRED = "SessionExpired"
"""The error name of a session the server closed (idle past its timeout, or shutting down)."""

PASSED_ERRORS = (
    "ResetNeeded",
    "ActionError",
    "NotTextError",
    "EnvConfigError",
    "ArgumentTypeError",
    "DatasetError",
    SESSION_EXPIRED,
)
"""The env's own exceptions a client re-raises as themselves (the names are a closed list)."""


def env_info(observation: Mapping[str, Any]) -> dict[str, Any]:
    """The env's `info` as the env returned it, from a served observation."""
    return {**observation["info"], "messages": observation["messages"]}


def error_text(exc: BaseException) -> str:
    """The message a served exception travels as: its class name first."""
    return f"{type(exc).__name__}: {exc}"


def error_name(message: str) -> str | None:
    """The exception class a served error names, if it is one of `PASSED_ERRORS`."""
    name, sep, _ = message.partition(": ")
    return name if sep and name in PASSED_ERRORS else None


def jsonable(value: Any) -> Any:
    """`value` as plain JSON data: mappings with str keys, lists, str, int, float, bool, None.

    numpy scalars and arrays (a board game's `action_mask`) become numbers and lists; anything
    else becomes its `str`, so an env's info can never make a reply unserialisable. Non-finite
    floats stay floats (JSON's NaN extension, which both sides read).
    """
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, Mapping):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(item) for item in value]
    tolist = getattr(value, "tolist", None)  # numpy arrays and scalars
    if callable(tolist):
        return jsonable(tolist())
    return str(value)
