"""Exact numbers written plainly: the fast path of the math verifier.

Most gold answers (and most of a policy's replies) are an integer, a decimal or a fraction, or a
short list of them. `read_literal` turns such text into exact `fractions.Fraction`s without sympy
and without a worker process; anything else returns None and goes to the symbolic path.

Read as numbers: `42`, `-3.5`, `.5`, `1,234` (thousands), `3/4`, `\\frac{3}{4}`, `\\dfrac34`,
`1.5 \\times 10^{3}`, `2e-3`, `0.1\\overline{6}` (repeating); wrapped in `$`, `\\text{}` units
(`5 \\text{ cm}^2`, `\\$18`, `€18`, `30^\\circ`, `12 apples`), `x = 5`; a trailing `%` (kept as a
flag: see `values_match`). Lists: `\\{1, 2\\}` (a set), `(1, 2)` (an ordered tuple), `1, 2` /
`1 or 2` / `x = 1 and x = 2` (bare). Mixed numbers as answer keys write them: `2\\frac{1}{2}`,
`2 \\tfrac12`, `2 1/2`, `-2\\frac{1}{2}` (= -5/2): a whole number and a proper fraction.
Never read: scale words (`5 million`), operators (`47 + 38`, `2 + \\frac{1}{2}`), roots, `\\pi`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from math import gcd

# Longest number we read in-process; longer ones go to the symbolic path (Python refuses to
# convert more than 4300 digits anyway).
MAX_DIGITS = 2000
MAX_EXPONENT = 400

# A thousands mark written for LaTeX: `1\,000`, `1\!000`, `1{,}000` and MATH's `1,\!000` (a
# comma whose space is undone), so `1,\!000,\!000` is one number, not the list 1, 0, 0. (`1,\,234`
# is not one: a thin space after a comma separates a list.)
THOUSANDS_MARK = re.compile(r"(?<=\d)(?:,\s*\\!|\\[,!]|\{,\})\s*(?=\d{3}(?!\d))")
_SPACING = re.compile(
    r"\\[,;:! ]|\\q?quad\b|~|\\displaystyle|\\left(?![a-zA-Z])|\\right(?![a-zA-Z])"
)
_TEXT_GROUP = re.compile(
    r"\\(?:text|textrm|textbf|textit|textnormal|textsf|mathrm|mathbf|mathit|mbox|operatorname)"
    r"\s*\{([^{}]*)\}"
    r"(\s*\^\s*\{?\s*[23]\s*\}?)?"
)
_CURRENCY = re.compile(r"[€£]|\\(?:textdollar|euro|pounds|textsterling)\b\s*")
_NUMBER_THEN_WORDS = re.compile(r"[+-]?\d[\d.,]*\s+[^\d]*")
_DEGREES = re.compile(r"\^\s*\{?\s*\\circ\s*\}?|°|\\degree\b")
_PERCENT = re.compile(r"(?:\\?%|\s+percent)$", re.IGNORECASE)
_UNIT_POWER = re.compile(r"\^\s*\{?\s*[23]\s*\}?$")
_UNIT_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ .")
# Words that change the value or make it not a plain number: never strip them as a unit.
_MEANINGFUL_WORDS = frozenset(
    re.findall(
        r"\w+",
        """or and of to by times plus minus over divided squared cubed root roots sqrt pi e i x y z
        n k mod modulo choose factorial power half halves third thirds quarter quarters dozen
        dozens hundred hundreds thousand thousands million millions billion billions trillion
        trillions percent percentage pct approximately approx about around nearly almost roughly
        inf infinity not no none undefined k bn mn mil lakh lakhs crore crores tens tenth tenths
        hundredth hundredths thousandth thousandths fourth fourths fifth fifths sixth sixths
        seventh sevenths eighth eighths ninth ninths negative negatives neg below least
        most wrong incorrect false ish inverse reciprocal""",
    )
)
_NAME = r"[A-Za-z](?:_\{?\w+\}?)?"  # a variable: `x`, `x_1`, `x_{12}`
_ASSIGNMENT = re.compile(rf"({_NAME})\s*=\s*")
# `(x, y) = (5, 0)`: the names label the tuple's entries in order (math-verify reads it so too).
_TUPLE_LABEL = re.compile(rf"^\(\s*{_NAME}(?:\s*,\s*{_NAME})+\s*\)\s*=\s*(?=\()")
_SEPARATOR = re.compile(r"\s*(?:,|;|\bor\b|\band\b)\s*")

_DECIMAL = r"(?:\d+(?:\.\d*)?|\.\d+)"
_REPEATING = re.compile(r"([+-]?)\s*(\d*)\.(\d*)\s*\\(?:overline|bar)\s*\{\s*(\d+)\s*\}")
_PLAIN_NUMBER = re.compile(r"([+-]?)\s*(" + _DECIMAL + r")")
_THOUSANDS = re.compile(r"([+-]?)\s*(\d{1,3}(?:,\d{3})+(?:\.\d+)?)")
_SLASH_FRACTION = re.compile(r"([+-]?)\s*(\d+)\s*/\s*(\d+)")
_LATEX_FRACTION = re.compile(
    r"([+-]?)\s*\\frac\s*(?:\{\s*([+-]?\d+)\s*\}|(\d))\s*(?:\{\s*(\d+)\s*\}|(\d))"
)
# A whole number then a proper fraction, `2\\frac{1}{2}` or `2 1/2` (a space is needed between
# digits, so `21/2` stays a fraction).
_MIXED = re.compile(
    r"([+-]?)\s*(\d+)(?:\s*\\frac\s*(?:\{\s*(\d+)\s*\}|(\d))\s*(?:\{\s*(\d+)\s*\}|(\d))"
    r"|\s+(\d+)\s*/\s*(\d+))"
)
_SCIENTIFIC = re.compile(
    r"([+-]?)\s*(" + _DECIMAL + r")\s*(?:(?:\\times|\\cdot|\*|×)\s*10\s*\^\s*\{?\s*([+-]?\d+)\s*\}?"
    r"|[eE]([+-]?\d+))"
)


@dataclass(frozen=True)
class Literal:
    """Exact value(s) read from text.

    `kind` is "scalar", "set" (`\\{...\\}`: order free), "tuple" (`(...)`: ordered) or "bare"
    (a list without brackets). `simplest` is False when a fraction is not in lowest terms
    (`6/8`, `4/2`). `percent` marks a scalar written with `%`.
    """

    kind: str
    values: tuple[Fraction, ...]
    simplest: bool = True
    percent: bool = False


def clean(text: str) -> str:
    """Strip what never changes a plain number's value: math delimiters, spacing commands,
    `\\left`/`\\right`, `\\dfrac`, boxes, `\\text{unit}`s, `$`, degrees, trailing punctuation
    (not `!`: `5!` is a factorial)."""
    from rlvr.verifiers.math.extract import find_boxed, matching_braces

    text = text.strip()
    boxed = find_boxed(text)
    if len(boxed) == 1 and text.startswith(("\\boxed", "\\fbox")):
        text = boxed[0].strip()
    while text.startswith("{") and matching_braces(text).get(0) == len(text) - 1:
        text = text[1:-1].strip()  # `{4}`: a group around the whole answer
    text = text.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    text = text.replace("−", "-").replace("{,}", ",").replace("\\$", "").replace("$", "")
    text = _CURRENCY.sub("", text)
    text = text.replace("\\(", "").replace("\\)", "").replace("\\[", "").replace("\\]", "")
    text = THOUSANDS_MARK.sub("", text)
    text = _SPACING.sub(" ", text)
    text = _TEXT_GROUP.sub(_text_group, text)
    text = _DEGREES.sub("", text)
    return text.strip().rstrip(".,;:").strip()


def _text_group(match: re.Match[str]) -> str:
    content = match.group(1).strip()
    if not content:
        return " "
    if content.lower() in ("or", "and"):
        return f" {content.lower()} "
    if content.lower() in ("%", "\\%", "percent"):
        return "%"  # `50\text{ percent}`: a percent sign
    if re.fullmatch(r"[\d.,+\-/ ]*", content):
        return content + (match.group(2) or "")
    if _NUMBER_THEN_WORDS.fullmatch(content):
        return f" {content} "  # `\text{18 dollars}`: read as `18 dollars` (a unit, or not)
    if any(char.isdigit() for char in content):
        return match.group(0)  # `\text{apples, maybe 4}` hides a number: not a unit
    words = re.findall(r"[A-Za-z]+", content)
    if words and not any(word.lower() in _MEANINGFUL_WORDS for word in words):
        return " "  # a unit such as \text{ cm}^2
    return match.group(0)


def read_literal(text: str) -> Literal | None:
    """Exact value(s) of `text` if it is a plain number or a list of them, else None."""
    if len(text) > MAX_DIGITS:
        return None
    text = _TUPLE_LABEL.sub("", clean(text), count=1)
    percent = _PERCENT.search(text)
    if percent is not None:
        scalar = _read_scalar(text[: percent.start()])
        return Literal("scalar", (scalar[0],), scalar[1], percent=True) if scalar else None
    scalar = _read_scalar(text)
    if scalar is not None:
        return Literal("scalar", (scalar[0],), scalar[1])
    return _read_list(text)


def _read_plus_minus(text: str) -> Literal | None:
    """`\\pm 2`, `x = 1 \\pm 3`: the set {center - offset, center + offset}."""
    assignment = _ASSIGNMENT.match(text)
    if assignment is not None:
        text = text[assignment.end() :]
    before, _, after = text.partition("\\pm")
    center = _read_scalar(before) if before.strip() else (Fraction(0), True)
    offset = _read_scalar(after)
    if center is None or offset is None:
        return None
    values = (center[0] - offset[0], center[0] + offset[0])
    return Literal("set", values, center[1] and offset[1])


def _read_list(text: str) -> Literal | None:
    if text.count("\\pm") == 1:
        return _read_plus_minus(text)
    kind, inner = "bare", text
    if text.startswith("\\{") and text.endswith("\\}"):
        kind, inner = "set", text[2:-2]
    elif text.startswith("(") and text.endswith(")"):
        kind, inner = "tuple", text[1:-1]
    parts = _SEPARATOR.split(inner.strip())
    if kind == "bare" and len(parts) < 2:
        return None
    names, values, simplest = [], [], True
    for part in parts:
        assignment = _ASSIGNMENT.match(part)
        if assignment is not None:
            names.append(assignment.group(1))
            part = part[assignment.end() :]
        scalar = _read_scalar(part)
        if scalar is None:
            return None
        values.append(scalar[0])
        simplest = simplest and scalar[1]
    if len(names) == len(values) and len(set(names)) == len(names) and kind != "set":
        values = [value for _, value in sorted(zip(names, values))]  # x=.., y=.. in name order
    if kind == "tuple" and len(values) == 1:
        kind = "scalar"
    return Literal(kind, tuple(values), simplest)


def _read_scalar(text: str) -> tuple[Fraction, bool] | None:
    """(value, in simplest form) of one plain number, or None."""
    text = text.strip()
    assignment = _ASSIGNMENT.match(text)
    if assignment is not None:
        text = text[assignment.end() :]
    text = _strip_unit_words(text.strip())
    if not text or sum(char.isdigit() for char in text) > MAX_DIGITS:
        return None
    if text.startswith("(") and text.endswith(")") and "," not in text:
        text = text[1:-1].strip()
    for pattern, reader in _READERS:
        match = pattern.fullmatch(text)
        if match is not None:
            return reader(match)
    return None


def _strip_unit_words(text: str) -> str:
    """`12 apples` -> `12`, `5 cm^2` -> `5`; `5 million`, `3 x` and `5 or 6` are left alone."""
    end = len(text)
    power = _UNIT_POWER.search(text)
    if power is not None:
        end = power.start()
    start = end
    while start > 0 and text[start - 1] in _UNIT_CHARS:
        start -= 1
    words = re.findall(r"[A-Za-z]+", text[start:end])
    if not words or start == 0 or not (text[start - 1].isdigit() or text[start - 1] == "}"):
        return text
    if len("".join(words)) < 2 or any(word.lower() in _MEANINGFUL_WORDS for word in words):
        return text
    return text[:start].strip()


def _sign(symbol: str) -> int:
    return -1 if symbol == "-" else 1


def _plain(match: re.Match[str]) -> tuple[Fraction, bool]:
    return _sign(match.group(1)) * Fraction(match.group(2)), True


def _thousands(match: re.Match[str]) -> tuple[Fraction, bool]:
    return _sign(match.group(1)) * Fraction(match.group(2).replace(",", "")), True


def _fraction(sign: str, numerator: str, denominator: str) -> tuple[Fraction, bool] | None:
    top, bottom = int(numerator), int(denominator)
    if bottom == 0:
        return None
    simplest = bottom > 1 and gcd(top, bottom) == 1
    return _sign(sign) * Fraction(top, bottom), simplest


def _slash(match: re.Match[str]) -> tuple[Fraction, bool] | None:
    return _fraction(match.group(1), match.group(2), match.group(3))


def _latex_fraction(match: re.Match[str]) -> tuple[Fraction, bool] | None:
    numerator = match.group(2) or match.group(3)
    sign = match.group(1)
    if numerator.startswith(("-", "+")):
        if sign:  # "-\frac{-3}{4}": a double sign is not a simplified form
            return None
        sign, numerator = numerator[0], numerator[1:]
    return _fraction(sign, numerator, match.group(4) or match.group(5))


def _mixed(match: re.Match[str]) -> tuple[Fraction, bool] | None:
    """`2\\frac{1}{2}` = 5/2: a whole number of at least 1 and a proper fraction (`2\\frac{3}{2}`
    and `0\\frac{1}{2}` are no mixed numbers). Simplest when the fraction is in lowest terms."""
    sign, whole, *parts = match.groups()
    numerator = parts[0] or parts[1] or parts[4]
    denominator = parts[2] or parts[3] or parts[5]
    top, bottom, units = int(numerator), int(denominator), int(whole)
    if units == 0 or not 0 < top < bottom:
        return None
    value = units + Fraction(top, bottom)
    return _sign(sign) * value, gcd(top, bottom) == 1


def _repeating(match: re.Match[str]) -> tuple[Fraction, bool]:
    """`0.1\\overline{6}` = 0.1666... = 1/6, exactly."""
    sign, whole, fixed, period = match.groups()
    scale = Fraction(1, 10 ** len(fixed))
    value = Fraction(int(whole or "0")) + int(fixed or "0") * scale
    value += Fraction(int(period), 10 ** len(period) - 1) * scale
    return _sign(sign) * value, True


def _scientific(match: re.Match[str]) -> tuple[Fraction, bool] | None:
    exponent = int(match.group(3) or match.group(4))
    if abs(exponent) > MAX_EXPONENT:
        return None
    return _sign(match.group(1)) * Fraction(match.group(2)) * Fraction(10) ** exponent, True


_READERS = (
    (_PLAIN_NUMBER, _plain),
    (_THOUSANDS, _thousands),
    (_SLASH_FRACTION, _slash),
    (_LATEX_FRACTION, _latex_fraction),
    (_MIXED, _mixed),
    (_SCIENTIFIC, _scientific),
    (_REPEATING, _repeating),
)


def values_match(gold: Literal, answer: Literal) -> bool:
    """Exact comparison of two literals, following the gold's shape.

    A scalar gold needs exactly one value. A set gold takes any list in any order; a tuple gold
    an unbracketed or parenthesised list in order; a bare-list gold is a set. A `%` is read both
    ways only on the side that wrote it: gold `50%` takes `50`, `50%` and `0.5`; gold `0.5` takes
    `50%` but not `50`; both with `%` compare the numbers as written.
    """
    if gold.kind == "scalar":
        if len(answer.values) != 1:
            return False
        return _scalar_match(gold, answer)
    if answer.percent:
        return False
    if gold.kind == "tuple":
        return answer.kind in ("tuple", "bare") and answer.values == gold.values
    return answer.kind != "scalar" and set(answer.values) == set(gold.values)


def _scalar_match(gold: Literal, answer: Literal) -> bool:
    gold_value, answer_value = gold.values[0], answer.values[0]
    if gold.percent == answer.percent:
        return gold_value == answer_value
    if gold.percent:
        return answer_value in (gold_value, gold_value / 100)
    return gold_value in (answer_value, answer_value / 100)


def format_fraction(value: Fraction) -> str:
    """LaTeX of an exact rational: `7`, `-\\frac{3}{4}`."""
    if value.denominator == 1:
        return str(value.numerator)
    sign = "-" if value < 0 else ""
    return f"{sign}\\frac{{{abs(value.numerator)}}}{{{value.denominator}}}"
