"""Unicode math symbols rewritten as the LaTeX they render like, before an answer is judged.

Models often write `2√3`, `[3, ∞)`, `±3` or `x²` instead of LaTeX; the parsers read only LaTeX
(and ASCII), so without this a correct answer would score 0. Only symbols with a single reading
are rewritten: `½` is left alone, since `1½` would become a product, not a mixed number.
"""

from __future__ import annotations

import re

_SYMBOLS = str.maketrans(
    {
        "−": "-",
        "∞": "\\infty ",
        "∪": "\\cup ",
        "∩": "\\cap ",
        "±": "\\pm ",
        "∓": "\\mp ",
        "≤": "\\le ",
        "≥": "\\ge ",
        "≠": "\\ne ",
        "×": "\\times ",
        "⋅": "\\cdot ",
        "·": "\\cdot ",
        "π": "\\pi ",
        "∅": "\\emptyset ",
    }
)
_SUPERSCRIPTS = {"⁰": "0", "¹": "1", "²": "2", "³": "3", "⁴": "4"}
_SUPERSCRIPTS.update({"⁵": "5", "⁶": "6", "⁷": "7", "⁸": "8", "⁹": "9", "⁻": "-"})
_SUPERSCRIPT_RUN = re.compile("[" + "".join(_SUPERSCRIPTS) + "]+")
# `√(x+1)` (no nested parentheses), `√2`, `√x`, `√\pi`; `√{...}` needs only the command.
_ROOT_OF_GROUP = re.compile(r"√\s*\(([^()]*)\)")
_ROOT_OF_TOKEN = re.compile(r"√\s*(\d+(?:\.\d+)?|[A-Za-z]|\\[A-Za-z]+)")


def latex_symbols(text: str) -> str:
    """`text` with Unicode math symbols written as LaTeX (`2√3` -> `2\\sqrt{3}`)."""
    if text.isascii():
        return text
    text = text.translate(_SYMBOLS)
    text = _SUPERSCRIPT_RUN.sub(
        lambda match: "^{" + "".join(_SUPERSCRIPTS[char] for char in match.group(0)) + "}", text
    )
    text = _ROOT_OF_GROUP.sub(r"\\sqrt{\1}", text)
    text = _ROOT_OF_TOKEN.sub(r"\\sqrt{\1}", text)
    return text.replace("√", "\\sqrt")
