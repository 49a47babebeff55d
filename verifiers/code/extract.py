"""Read the code out of a model's reply: a fenced block, or the whole reply if it is Python."""

from __future__ import annotations

import ast
import re
import textwrap

# An opening fence with an optional language tag, the body, then a closing fence at the end of a
# line (or the end of the reply: a truncated reply still has its code).
_FENCE = re.compile(r"^[ \t]*```[ \t]*([\w+.-]*)[^\n]*\n(.*?)(?:```[ \t]*$|\Z)", re.M | re.S)
_PYTHON_TAGS = {"", "python", "py", "python3", "py3"}


def fenced_blocks(reply: str) -> list[tuple[str, str]]:
    """`(language, body)` of every fenced block, in order; an unclosed last fence counts."""
    return [(tag.lower(), body) for tag, body in _FENCE.findall(reply)]


def parse_python(code: str) -> ast.Module | None:
    """The syntax tree of `code`, or None when it is not Python this interpreter parses: a
    syntax error, a NUL byte, a lone surrogate (no text), or nesting deeper than the parser goes
    (`RecursionError` or `MemoryError`, which `ast.parse` raises rather than a SyntaxError)."""
    try:
        return ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def defines(code: str, name: str) -> bool:
    """Does `code` define a function (or class) called `name` at top level?"""
    pattern = rf"^(?:async[ \t]+)?(?:def|class)[ \t]+{re.escape(name)}\b"
    return re.search(pattern, code, re.M) is not None


def extract_code(reply: str, entry_point: str | None = None) -> str | None:
    """The Python code of `reply`, or None if there is none.

    Prefers the last Python fenced block that defines `entry_point`, then the last Python block;
    a reply without fences is taken whole if it parses as Python and, when `entry_point` is
    given, defines it.
    """
    if not isinstance(reply, str) or not reply.strip():
        return None
    # Windows line endings: a closing fence is found at the end of a line, and Python reads
    # "\r\n" and "\r" as "\n" anyway.
    reply = reply.replace("\r\n", "\n").replace("\r", "\n")
    blocks = [
        textwrap.dedent(body)  # a block indented as a whole, e.g. in a list item
        for tag, body in fenced_blocks(reply)
        if tag in _PYTHON_TAGS and body.strip()
    ]
    if blocks:
        if entry_point:
            defining = [body for body in blocks if defines(body, entry_point)]
            if defining:
                return defining[-1].strip("\n")
        return blocks[-1].strip("\n")
    if "```" in reply:
        return None  # fenced, but not in Python
    code = reply.strip("\n")
    if parse_python(code) is None:
        return None
    if entry_point and not defines(code, entry_point):
        return None
    return code
