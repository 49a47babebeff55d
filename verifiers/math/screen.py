"""Screening an answer before any parser sees it.

Nothing in this package evaluates text as Python (the symbolic path parses LaTeX with
math-verify's grammar and plain text with our own whitelist parser), but sympy has corners that
do (`sympify`, `parse_expr`, `lambdify`), and a symbol's name survives parsing. So text that
looks like code never reaches a parser, and neither does text big or deep enough to make a
parser itself the attack.
"""

from __future__ import annotations

import re

MAX_ANSWER_CHARS = 1000
MAX_NESTING = 40

_CODE = re.compile(
    r"__|['\"`]|\b(?:import|lambda|exec|eval|compile|getattr|setattr|delattr|globals|locals|"
    r"vars|open|system|popen|subprocess|builtins|class|def|os|sys)\b|[A-Za-z_]\w*\.[A-Za-z_]"
)


def screen(answer: str, max_chars: int = MAX_ANSWER_CHARS) -> str | None:
    """Why `answer` must not be parsed, or None if it may be."""
    if len(answer) > max_chars:
        return f"the answer is longer than {max_chars} characters"
    if _CODE.search(answer):
        return "the answer looks like code, not mathematics"
    if nesting_depth(answer) > MAX_NESTING:
        return f"the answer nests brackets more than {MAX_NESTING} deep"
    return None


def nesting_depth(text: str) -> int:
    """Deepest nesting of (), [] and {} in `text` (unbalanced text counts what it opens)."""
    depth = deepest = 0
    for char in text:
        if char in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in ")]}" and depth > 0:
            depth -= 1
    return deepest
