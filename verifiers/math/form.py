"""Whether an answer is in final form: no operation left that the expected answer does not use.

With a symbolic gold (`\\frac{\\sqrt{3}}{2}`, `\\frac{\\pi}{3}`, `x^3 - 4x^2 + x + 6`) any
equivalent expression is accepted, so without this rule a policy could box the question itself:
`\\sin(\\pi/3)`, `\\arccos\\frac{1}{2}`, `\\int_0^1 \\frac{4}{1+x^2}\\,dx`, `|-\\sqrt{2}|`. An
answer may use an operation only if the gold uses one of its kind (`\\ln` and `\\log` are one
kind, so are `\\sin` and `\\cos`): `\\frac{\\ln 3}{\\ln 2}` still answers `\\log_2 3`.

This is text-level, so it runs in the verifier's process before any worker is asked.
"""

from __future__ import annotations

import re

_KINDS = {
    "trigonometric": "sin cos tan cot sec csc",
    "inverse trigonometric": "arcsin arccos arctan arccot arcsec arccsc",
    "hyperbolic": "sinh cosh tanh coth sech csch arsinh arcosh artanh arcsinh arccosh arctanh",
    "logarithm": "log ln lg",
    "binomial": "binom dbinom tbinom choose",
    "sum": "sum",
    "product": "prod",
    "integral": "int iint iiint oint",
    "limit": "lim limsup liminf",
    "derivative": "partial nabla",
    "determinant": "det",
    "gcd": "gcd",
    "lcm": "lcm",
    "max": "max sup",
    "min": "min inf",
    "floor": "lfloor rfloor floor",
    "ceiling": "lceil rceil ceil",
    "mod": "mod bmod pmod",
    "absolute value": "vert lvert rvert abs",
    "real or imaginary part": "re im arg",
}
_KIND_OF = {name: kind for kind, names in _KINDS.items() for name in names.split()}
# `\\sin`, `\\operatorname{sin}`, plain-text `sin(`; `|x|`; `5!` (a factorial, not `\\!`);
# `\\frac{d}{dx}`.
_COMMAND = re.compile(r"\\(?:operatorname\*?\s*\{\s*)?([A-Za-z]+)")
_PLAIN_FUNCTION = re.compile(r"(?<![\\A-Za-z])([A-Za-z]+)\s*\(")
_FACTORIAL = re.compile(r"(?<!\\)!")
_DERIVATIVE = re.compile(
    r"\\frac\s*\{\s*(?:\\mathrm\s*\{\s*)?d\s*\}?\s*\}\s*\{\s*(?:\\mathrm\s*\{)?d"
)


def operations(text: str) -> frozenset[str]:
    """The kinds of operation written in `text` (see `_KINDS`, plus factorial and derivative)."""
    names = _COMMAND.findall(text) + _PLAIN_FUNCTION.findall(text)
    kinds = {_KIND_OF[name.lower()] for name in names if name.lower() in _KIND_OF}
    if "|" in text:
        kinds.add("absolute value")
    if _FACTORIAL.search(text):
        kinds.add("factorial")
    if _DERIVATIVE.search(text):
        kinds.add("derivative")
    return frozenset(kinds)


def leftover_operations(answer: str, gold: str) -> list[str]:
    """Kinds of operation the answer still performs that the gold does not (sorted)."""
    return sorted(operations(answer) - operations(gold))
