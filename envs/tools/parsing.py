"""Reading tool calls out of a model's reply.

Models write tool calls in several shapes; all of these are read:

- a tagged block: `<tool_call>{"name": "calculator", "arguments": {"expression": "2+2"}}
  </tool_call>` (also `<function_call>`; a missing closing tag at the end of the reply is
  forgiven, since generation often stops on it);
- a fenced ```json block or a bare JSON object anywhere in the reply;
- inside either: `{"name", "arguments"}` (also `parameters`/`args`/`input`), OpenAI's
  `{"type": "function", "function": {"name", "arguments": "<JSON string>"}}`, a list of calls, or
  `{"tool_calls": [...]}`. Inside tags, a Python-style dict (single quotes, True/False) is read
  too, with `ast.literal_eval`, which evaluates literals only.

A tagged block that cannot be read is reported as an error (the agent meant to call a tool); a bare
JSON object that is not a call is just text, so a final answer that contains JSON stays an answer.
"""

from __future__ import annotations

import ast
import itertools
import json
import re
from dataclasses import dataclass, field
from typing import Any

TAG_NAMES = ("tool_call", "function_call")
ARGUMENT_KEYS = ("arguments", "parameters", "args", "input")
# Scanning every '{' of a long adversarial reply with a JSON decoder is quadratic, and decoding
# a million code blocks slow: bound both.
MAX_BARE_CANDIDATES = 32
MAX_FENCED_BLOCKS = 32
# A longer call is refused unread: decoding megabytes (ast.literal_eval of a 15 MB dict took 25 s
# and 1.8 GB) would let one reply stall the env; real calls are far shorter.
MAX_CALL_CHARS = 100_000
# Deeper values would overflow the stack of the recursive code that handles them later (copies
# into `info`, JSON dumps); real calls nest a few levels.
MAX_NESTING = 32

_TAGGED = re.compile(
    r"<(?P<tag>" + "|".join(TAG_NAMES) + r")>(?P<body>.*?)(?:</(?P=tag)>|\Z)", re.DOTALL
)
_FENCED = re.compile(r"```(?:json|tool_call|tool)?[ \t]*\n(?P<body>.*?)```", re.DOTALL)
_BARE_START = re.compile(r"\{\s*\"|\[\s*\{")


@dataclass(frozen=True)
class ToolCall:
    """One call the agent asked for: a tool name and its arguments."""

    name: str
    arguments: dict[str, Any]


@dataclass
class ParsedReply:
    """The calls found in a reply, and the problems with calls that could not be read."""

    calls: list[ToolCall] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def is_tool_turn(self) -> bool:
        """True when the reply tried to call a tool (rather than give a final answer)."""
        return bool(self.calls or self.errors)


def parse_tool_calls(reply: str) -> ParsedReply:
    """Find the tool calls in `reply` (see the module docstring for the shapes understood)."""
    parsed = ParsedReply()
    tagged = list(_TAGGED.finditer(reply))
    if tagged:
        for match in tagged:
            body = _strip_fence(match.group("body").strip())
            try:
                parsed.calls.extend(_calls_from(_load_lenient(body)))
            except ValueError as exc:
                parsed.errors.append(f"could not read the <{match.group('tag')}> block: {exc}")
        return parsed
    for body in _fenced_blocks(reply):
        if len(body) > MAX_CALL_CHARS:
            continue
        try:
            parsed.calls.extend(_calls_from(json.loads(body)))
        except (ValueError, RecursionError):
            continue  # a code block that is not a call is part of the answer
    if parsed.calls:
        return parsed
    for value in _bare_json_values(reply):
        try:
            parsed.calls.extend(_calls_from(value))
        except ValueError:
            continue
    return parsed


def _strip_fence(body: str) -> str:
    """The inside of a ```json fence written within the tags (models do that)."""
    if not body.startswith("```"):
        return body
    inside = body.split("\n", 1)[1] if "\n" in body else ""
    if inside.rstrip().endswith("```"):
        inside = inside.rstrip()[:-3]
    return inside.strip()


def _fenced_blocks(reply: str) -> list[str]:
    matches = itertools.islice(_FENCED.finditer(reply), MAX_FENCED_BLOCKS)
    return [match.group("body").strip() for match in matches]


def _load_lenient(text: str) -> Any:
    if not text:
        raise ValueError("it is empty; put a JSON object with 'name' and 'arguments' inside")
    if len(text) > MAX_CALL_CHARS:
        raise ValueError(f"it is longer than {MAX_CALL_CHARS} characters")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        json_error = f"invalid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
    except RecursionError:
        raise ValueError(f"it is nested more than {MAX_NESTING} levels deep") from None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise ValueError(json_error) from None
    try:  # Python literals JSON cannot hold (tuple keys, sets, bytes) are not calls
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError, RecursionError):
        raise ValueError(json_error) from None


def _bare_json_values(reply: str) -> list[Any]:
    """JSON objects and lists that start at a '{"' or '[{' in the reply (bounded scan)."""
    decoder = json.JSONDecoder()
    values = []
    position, candidates = 0, 0
    while candidates < MAX_BARE_CANDIDATES:
        match = _BARE_START.search(reply, position)
        if match is None:
            break
        candidates += 1
        try:
            value, end = decoder.raw_decode(reply, match.start())
        except (json.JSONDecodeError, RecursionError):
            position = match.start() + 1
            continue
        if end - match.start() <= MAX_CALL_CHARS:
            values.append(value)
        position = end
    return values


def _calls_from(value: Any) -> list[ToolCall]:
    """The calls a decoded JSON value describes; `ValueError` if it describes none."""
    if _nesting(value) > MAX_NESTING:
        raise ValueError(f"it is nested more than {MAX_NESTING} levels deep")
    return _calls_in(value)


def _nesting(value: Any) -> int:
    """How deeply lists and objects nest in `value` (without recursion: it may be very deep)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (list, dict)):
            deepest = max(deepest, depth)
            if depth > MAX_NESTING:
                break
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return deepest


def _calls_in(value: Any) -> list[ToolCall]:
    if isinstance(value, list):
        if not value:
            raise ValueError("the list of calls is empty")
        return [call for item in value for call in _calls_in(item)]
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, got {type(value).__name__}")
    if "tool_calls" in value:
        return _calls_in(value["tool_calls"])
    if isinstance(value.get("function"), dict):
        return _calls_in(value["function"])
    name = value.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError("the call has no 'name' (a string naming the tool)")
    present = [key for key in ARGUMENT_KEYS if key in value]
    if not present and set(value) - {"name", "id", "type"}:
        raise ValueError("the call has no 'arguments' object")
    arguments = value[present[0]] if present else {}
    if isinstance(arguments, str):
        # OpenAI's format holds the arguments as a JSON string.
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            raise ValueError(f"'arguments' is a string but not JSON ({exc.msg})") from None
        except RecursionError:
            raise ValueError(f"'arguments' is nested more than {MAX_NESTING} levels deep") from None
        if _nesting(arguments) > MAX_NESTING:
            raise ValueError(f"'arguments' is nested more than {MAX_NESTING} levels deep")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise ValueError(f"'arguments' must be an object, got {type(arguments).__name__}")
    return [ToolCall(name, arguments)]


def format_tool_call(name: str, **arguments: Any) -> str:
    """A reply that calls `name` with `arguments`, in the tagged format (what oracles write)."""
    call = {"name": name, "arguments": arguments}
    return f"<tool_call>{json.dumps(call, ensure_ascii=False)}</tool_call>"
