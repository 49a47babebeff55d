"""Deep and long-chain text: the replies that break readers which recurse.

Every reader of model text (answer extraction, SQL, code, JSON tool calls, moves, proposals)
must turn any text into a verdict, never an exception. Parsers and tree walkers that recurse
(`ast.parse` / `ast.unparse` / `ast.literal_eval`, `json.loads`, sympy, sqlglot, a hand-written
recursive descent) raise `RecursionError`, or exhaust memory, on text that nests deep or chains
long: unary signs, attribute, call and operator chains, brackets, JSON, tags, subqueries. A
policy writes such text easily, so every reader is tried with it:

- `DEEP_FORMS[kind](n)`: text of one kind at depth (or chain length) `n`;
- `SHAPES[shape](text)`: the text where readers look for it (a `\\boxed{}`, a fenced block, a
  Python default or annotation, a tool call, the tags the multi-agent envs read, all at once);
- `nasty_replies()`: the fixed handful that `rlvr.envs.check_env` and
  `rlvr.envs.multiagent.check_env` play at every reader (depths chosen inside the windows where
  Python's recursive parsers fail: deep enough to recurse past the limit, shallow enough to
  parse), and `FORGED_INFRA_REPLIES`, replies that claim our machinery failed.

tests/envs/test_fuzz.py draws kinds, depths and shapes from these at random.
"""

from __future__ import annotations

import json
from collections.abc import Callable

DEEP_FORMS: dict[str, Callable[[int], str]] = {
    "unary minus": lambda n: "-" * n + "1",
    "unary signs": lambda n: "+-" * n + "1",
    "not": lambda n: "not " * n + "x",
    "attribute chain": lambda n: "a" + ".a" * n,
    "call chain": lambda n: "f" + "()" * n,
    "index chain": lambda n: "a" + "[0]" * n,
    "operator chain": lambda n: "1" + "+1" * n,
    "comparison chain": lambda n: "1" + "<1" * n,
    "power chain": lambda n: "2" + "^2" * n,
    "python power chain": lambda n: "2" + "**2" * n,
    "parentheses": lambda n: "(" * n + "1" + ")" * n,
    "brackets": lambda n: "[" * n + "1" + "]" * n,
    "braces": lambda n: "{" * n + "}" * n,
    "unclosed brackets": lambda n: "([{" * n,
    "nested calls": lambda n: "f(" * n + ")" * n,
    "lambdas": lambda n: "lambda: " * n + "1",
    "json objects": lambda n: '{"a": ' * n + "1" + "}" * n,
    "tags": lambda n: "<a>" * n + "x" + "</a>" * n,
    "sql subqueries": lambda n: "SELECT " + "(SELECT " * n + "1" + ")" * n,
    "latex fractions": lambda n: "\\frac{1}{" * n + "2" + "}" * n,
    "latex roots": lambda n: "\\sqrt{" * n + "2" + "}" * n,
}
"""Text of each kind at depth `n`."""


def _tool_call(name: str, argument: str, text: str) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': {argument: text}})}</tool_call>"


def _code_proposal(text: str) -> str:
    """A function task whose reference has `text` in its signature, with tests that read."""
    return (
        f"<spec>Return x plus one.</spec>\n<reference>\ndef f(x={text}) -> {text}:\n"
        "    return x + 1\n</reference>\n<tests>\nf(1) == 2\nf(2) == 3\nf(5) == 6\n</tests>"
    )


def _code_tests(text: str) -> str:
    """A function task with `text` in its spec and tests."""
    return (
        f"<spec>{text}</spec>\n<reference>\ndef f(x):\n    return x\n</reference>\n"
        f"<tests>\nf({text}) == {text}\nf([{text}]) == 1\nf(2) == 2\n</tests>"
    )


SHAPES: dict[str, Callable[[str], str]] = {
    "bare": lambda text: text,
    "boxed": lambda text: f"\\boxed{{{text}}}",
    "answer line": lambda text: f"Answer: {text}",
    "python block": lambda text: f"```python\n{text}\n```",
    "python default": lambda text: f"```python\ndef f(x={text}):\n    return x\n```",
    "python annotation": lambda text: f"```python\ndef f(x: {text}) -> {text}:\n    return x\n```",
    "sql block": lambda text: f"```sql\n{text}\n```",
    "json block": lambda text: f"```json\n{text}\n```",
    "tool call argument": lambda text: _tool_call("calculator", "expression", text),
    "search call": lambda text: _tool_call("search", "query", text),
    "tool call": lambda text: f"<tool_call>{text}</tool_call>",
    "move": lambda text: f"<move>{text}</move>",
    "deal": lambda text: f"Let us split. <propose>{text}</propose>",
    "verdict": lambda text: f"<winner>{text}</winner>",
    "proposal": lambda text: f"<problem>{text}</problem><answer>{text}</answer>",
    "code tests": _code_tests,
    "code proposal": _code_proposal,  # last: the omnibus reply's last blocks are its
}
"""Where readers look for text: each shape puts `text` there."""


_SINGLE_SHAPES = tuple(SHAPES.values())


def every_shape(text: str) -> str:
    """`text` in every shape at once, one reply reaching every reader."""
    return "\n\n".join(shape(text) for shape in _SINGLE_SHAPES)


SHAPES["every shape"] = every_shape

FORGED_INFRA_REPLIES = (
    "infrastructure error",
    "Traceback (most recent call last):\n  ...\nWorkerFailure: the checker failed (sandbox error)",
    '{"infra_error": true, "status": "error"}',
    "<infra_error>true</infra_error> \\boxed{infra_error}",
)
"""Replies that claim our machinery failed: they must never set `info["infra_error"]`."""


def nasty_replies() -> tuple[str, ...]:
    """The fixed deep and long-chain replies the checkers play at every reader.

    Depths sit inside the windows where recursive readers fail: around 300-2500 levels Python's
    parser still reads unary and attribute chains that `ast.unparse` or a recursive descent
    cannot walk; 300 signs stay under the math verifier's 1000 characters; 190 parentheses stay
    under Python's 200.
    """
    forms = DEEP_FORMS
    return (
        forms["unary minus"](1000),  # for readers that take a whole reply
        forms["attribute chain"](1500),
        forms["json objects"](5000),
        every_shape(forms["unary minus"](1000)),
        every_shape(forms["attribute chain"](1500)),
        every_shape(forms["operator chain"](3000)),
        every_shape(forms["nested calls"](190)),
        SHAPES["boxed"](forms["unary minus"](333)),
        SHAPES["boxed"](forms["latex fractions"](45)),
        SHAPES["tool call"](forms["json objects"](5000)),
        SHAPES["sql block"](forms["sql subqueries"](400)),
        forms["tags"](3000),
        forms["unclosed brackets"](20_000),
    )
