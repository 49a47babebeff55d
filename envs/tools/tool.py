"""Tools: Python callables described by a JSON schema, in OpenAI's function-calling format.

    @tool(timeout=2.0)
    def add(a: int, b: int) -> int:
        \"\"\"Add two integers.

        Args:
            a: the first number.
            b: the second number.
        \"\"\"
        return a + b

    add.spec()  # {"type": "function", "function": {"name": "add", "parameters": {...}}}

`Toolbox.call` runs a call and always returns a `ToolResult`: unknown tools, arguments that do
not match the schema, exceptions and time-outs become error messages for the agent, never
exceptions for the episode. A call's time limit counts only the time it works: a tool that waits
for a shared resource (a free sandbox worker) does so inside `with off_the_clock():`.
"""

from __future__ import annotations

import contextlib
import contextvars
import inspect
import json
import logging
import re
import threading
import time
import types
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from rlvr.envs.core import Outcome
from rlvr.envs.errors import EnvConfigError, ToolError, ToolInfraError
from rlvr.envs.tools.parsing import ToolCall

logger = logging.getLogger(__name__)

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
_JSON_TYPES = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    tuple: "array",
    dict: "object",
}


@dataclass(frozen=True)
class Tool:
    """A callable the agent may call, with the JSON schema of its arguments.

    `function(**arguments)` returns the result (a `str`, or anything JSON-serialisable), or an
    `Outcome` to end the episode (a "buy" or "submit" tool). It raises `ToolError` for a call the
    agent got wrong (the message is shown to it) and `ToolInfraError` when our machinery failed.
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    function: Callable[..., Any]
    timeout: float | None = None
    """Seconds the call may take (None: the env's default), not counting time it spends waiting
    `off_the_clock()`. A Python function cannot be stopped from outside: after the limit the
    agent gets an error and the call is abandoned, so tools that can hang must also bound
    themselves (a subprocess, a socket timeout)."""
    slow_is_infra: bool = False
    """True when no call the agent can write takes long (the tool bounds the agent's part
    itself: a sandbox's time limit, a web site's request sizes): going over `timeout` then
    means our machinery stalled, and the step is an infrastructure error, not the agent's. Such
    a tool must wait for shared resources `off_the_clock()`: a queue that other envs fill is
    neither the agent's doing nor a failure."""

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise EnvConfigError(
                f"tool name {self.name!r} must match {_NAME.pattern} (OpenAI's rule for names)"
            )
        if self.parameters.get("type") != "object":
            raise EnvConfigError(
                f"tool {self.name!r}: parameters must be a JSON schema with type 'object'"
            )
        if self.timeout is not None and self.timeout <= 0:
            raise EnvConfigError(f"tool {self.name!r}: timeout must be > 0, got {self.timeout}")

    def spec(self) -> dict[str, Any]:
        """The tool in OpenAI's function-calling format (what chat templates take as `tools`)."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": json.loads(json.dumps(self.parameters)),
            },
        }

    @classmethod
    def from_function(
        cls,
        function: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        parameters: Mapping[str, Any] | None = None,
        timeout: float | None = None,
    ) -> Tool:
        """A tool from a function; the schema comes from its type hints and docstring unless
        given (parameter descriptions from an `Args:` section, `name: text` per line)."""
        summary, argument_docs = _parse_docstring(inspect.getdoc(function) or "")
        return cls(
            name=name or function.__name__,
            description=description if description is not None else summary,
            parameters=parameters
            if parameters is not None
            else _infer_schema(function, argument_docs),
            function=function,
            timeout=timeout,
        )


def tool(
    function: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    timeout: float | None = None,
) -> Any:
    """Decorator form of `Tool.from_function` (`@tool` or `@tool(timeout=...)`)."""

    def wrap(fn: Callable[..., Any]) -> Tool:
        return Tool.from_function(
            fn, name=name, description=description, parameters=parameters, timeout=timeout
        )

    return wrap(function) if function is not None else wrap


# --- schemas -------------------------------------------------------------------------------------


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The first paragraph, and `name: text` lines of an `Args:` section (ended by a blank line)."""
    summary = doc.split("\n\n", 1)[0].replace("\n", " ").strip()
    argument_docs: dict[str, str] = {}
    in_args = False
    for line in doc.splitlines():
        stripped = line.strip()
        if stripped in ("Args:", "Arguments:", "Parameters:"):
            in_args = True
        elif in_args and not stripped:
            in_args = False
        elif in_args:
            match = re.match(r"^(\w+)\s*(?:\([^)]*\))?\s*:\s*(.+)$", stripped)
            if match:
                argument_docs[match.group(1)] = match.group(2)
    return summary, argument_docs


def _infer_schema(function: Callable[..., Any], argument_docs: Mapping[str, str]) -> dict:
    hints = typing.get_type_hints(function)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for parameter in inspect.signature(function).parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise EnvConfigError(
                f"tool {function.__name__!r}: *args/**kwargs cannot be described; pass parameters="
            )
        schema = _schema_of(hints.get(parameter.name, Any))
        if parameter.name in argument_docs:
            schema["description"] = argument_docs[parameter.name]
        properties[parameter.name] = schema
        if parameter.default is inspect.Parameter.empty:
            required.append(parameter.name)
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _schema_of(hint: Any) -> dict[str, Any]:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        return _schema_of(options[0]) if len(options) == 1 else {}
    if origin is typing.Literal:
        return {"enum": list(typing.get_args(hint))}
    base = origin or hint
    if base in _JSON_TYPES:
        schema: dict[str, Any] = {"type": _JSON_TYPES[base]}
        args = typing.get_args(hint)
        if base in (list, tuple) and args:
            schema["items"] = _schema_of(args[0])
        if base is dict and len(args) == 2:
            schema["additionalProperties"] = _schema_of(args[1])
        return schema
    return {}  # Any, or a type JSON has no name for: accept anything


def object_schema(properties: Mapping[str, Any], required: Iterable[str] | None = None) -> dict:
    """The JSON schema of an arguments object; every property is required unless `required` says
    otherwise, and no other property is allowed."""
    return {
        "type": "object",
        "properties": dict(properties),
        "required": list(properties) if required is None else list(required),
        "additionalProperties": False,
    }


def validate_arguments(schema: Mapping[str, Any], value: Any, where: str = "") -> list[str]:
    """Problems of `value` against the subset of JSON schema tools use (type, enum, properties,
    required, additionalProperties, items); an empty list means it is valid."""
    problems: list[str] = []
    label = where or "arguments"
    expected = schema.get("type")
    if expected is not None and not _has_type(value, expected):
        return [f"{label} must be of type {expected}, got {_json_type(value)} {value!r:.40}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{label} must be one of {schema['enum']}, got {value!r:.40}"]
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        for key in schema.get("required", ()):
            if key not in value:
                problems.append(f"missing required argument {key!r}")
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in properties:
                problems += validate_arguments(properties[key], item, _join(where, key))
            elif extra is False:
                allowed = ", ".join(properties) or "none"
                problems.append(f"unknown argument {_join(where, key)!r} (allowed: {allowed})")
            elif isinstance(extra, Mapping):
                problems += validate_arguments(extra, item, _join(where, key))
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            problems += validate_arguments(schema["items"], item, f"{label}[{index}]")
    return problems


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _has_type(value: Any, expected: str | list[str]) -> bool:
    if isinstance(expected, list):
        return any(_has_type(value, one) for one in expected)
    actual = _json_type(value)
    return actual == expected or (expected == "number" and actual == "integer")


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


# --- running calls -------------------------------------------------------------------------------


@dataclass
class ToolResult:
    """What one call produced: text for the agent, or an `Outcome` that ends the episode."""

    name: str
    content: str
    ok: bool
    outcome: Outcome | None = None
    infra_error: bool = False


@dataclass
class Toolbox:
    """The tools of one episode, by name, and how to call them."""

    tools: Iterable[Tool]
    default_timeout: float = 10.0
    max_result_chars: int = 4000
    by_name: dict[str, Tool] = field(init=False)

    def __post_init__(self) -> None:
        self.by_name = {}
        for one in self.tools:
            if not isinstance(one, Tool):
                raise EnvConfigError(f"expected Tool objects, got {one!r}; wrap it with tool(fn)")
            if one.name in self.by_name:
                raise EnvConfigError(f"two tools are named {one.name!r}; tool names must differ")
            self.by_name[one.name] = one

    def specs(self) -> list[dict[str, Any]]:
        return [one.spec() for one in self.by_name.values()]

    def call(self, call: ToolCall) -> ToolResult:
        chosen = self.by_name.get(call.name)
        if chosen is None:
            names = ", ".join(self.by_name) or "none"
            return self._error(call.name, f"unknown tool {call.name!r}; available tools: {names}")
        problems = validate_arguments(chosen.parameters, call.arguments)
        if problems:
            return self._error(call.name, f"bad arguments for {call.name}: " + "; ".join(problems))
        timeout = chosen.timeout if chosen.timeout is not None else self.default_timeout
        try:
            value = _call_with_timeout(chosen.function, call.arguments, timeout)
        except ToolError as exc:
            return self._error(call.name, str(exc))
        except ToolInfraError as exc:
            return self._unavailable(call.name, str(exc))
        except TimeoutError:
            message = f"{call.name} timed out after {timeout:g} s"
            if chosen.slow_is_infra:
                return self._unavailable(call.name, message)
            return self._error(call.name, message)
        except Exception as exc:  # the tool boundary: the agent's call crashed the tool
            return self._error(call.name, f"{call.name} raised {type(exc).__name__}: {exc}")
        if isinstance(value, Outcome):
            return ToolResult(call.name, value.feedback, True, value)
        return ToolResult(call.name, self._truncate(_as_text(value)), True)

    def _unavailable(self, name: str, message: str) -> ToolResult:
        logger.warning("tool %s: infrastructure error: %s", name, message)
        return ToolResult(name, f"Error: the tool is unavailable ({message})", False, None, True)

    def _error(self, name: str, message: str) -> ToolResult:
        return ToolResult(name, self._truncate(f"Error: {message}"), False)

    def _truncate(self, text: str) -> str:
        if len(text) <= self.max_result_chars:
            return text
        cut = len(text) - self.max_result_chars
        return text[: self.max_result_chars] + f"\n... [{cut} more characters cut]"


def _as_text(value: Any) -> str:
    if value is None:
        return "(no output)"
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


class CallClock:
    """Seconds a tool call has been working: time since it started, less time spent waiting
    `off_the_clock()`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self._off = 0.0  # seconds spent off the clock, in finished waits
        self._off_since: float | None = None
        self._depth = 0

    def elapsed(self) -> float:
        now = time.monotonic()
        with self._lock:
            off = self._off + (now - self._off_since if self._off_since is not None else 0.0)
            return now - self._started - off

    def stop(self) -> None:
        with self._lock:
            self._depth += 1
            if self._depth == 1:
                self._off_since = time.monotonic()

    def resume(self) -> None:
        with self._lock:
            self._depth -= 1
            if self._depth == 0 and self._off_since is not None:
                self._off += time.monotonic() - self._off_since
                self._off_since = None


_CLOCK: contextvars.ContextVar[CallClock | None] = contextvars.ContextVar(
    "rlvr_tool_call_clock", default=None
)


@contextlib.contextmanager
def off_the_clock() -> Iterator[None]:
    """Inside a tool: time spent in this block does not count against the call's time limit.

    For waits on shared resources that say nothing about the agent's call, such as a free worker
    of a sandbox pool that many environments share. Outside a Toolbox call it does nothing."""
    clock = _CLOCK.get()
    if clock is None:
        yield
        return
    clock.stop()
    try:
        yield
    finally:
        clock.resume()


def _call_with_timeout(function: Callable[..., Any], arguments: Mapping[str, Any], timeout: float):
    """Run `function(**arguments)` in a daemon thread; `TimeoutError` if it is still running
    after `timeout` seconds of work (its waits `off_the_clock()` not counted)."""
    box: dict[str, Any] = {}
    clock = CallClock()

    def target() -> None:
        _CLOCK.set(clock)  # a new thread starts with a context of its own
        try:
            box["value"] = function(**arguments)
        except BaseException as exc:  # handed to the caller below
            box["error"] = exc

    thread = threading.Thread(target=target, name="rlvr-tool", daemon=True)
    thread.start()
    while thread.is_alive():
        left = timeout - clock.elapsed()
        if left <= 0:
            raise TimeoutError
        thread.join(left)
    if "error" in box:
        raise box["error"]
    return box["value"]
