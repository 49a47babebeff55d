"""Symbolic equivalence of a gold answer and a candidate: math-verify first, made exact.

This module runs inside the verifier's worker processes (`pool.py`), where a check that runs too
long is killed: parsing, printing and simplifying an answer can each take unbounded time.

Parsing: the text is rewritten into LaTeX math-verify reads well (decimals become exact
fractions, plain-text `pi`/`log`/`**` become LaTeX), then `math_verify.parse`; if that yields
nothing, our whitelist parser (`plain.py`) reads it as plain-text math. No path calls
`sympify`/`parse_expr` on the answer.

Comparing: `math_verify.verify`, with one change. math-verify compares numbers with a tolerance
(floats rounded to 6 places; other expressions equal when `(a - b).evalf(chop=True)` is 0, which
makes 2^-98 equal 2^-99 and sqrt(2) equal 1.41421356237310). `exact_numbers()` swaps that
comparison for an exact one for the duration of a call, so numbers are equal only when they are
the same rational, and other expressions only when sympy proves their difference is zero.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import re
from collections.abc import Iterator
from typing import Any

import math_verify
import sympy
from math_verify import LatexExtractionConfig
from math_verify import grader as _grader

from rlvr.verifiers.math.extract import find_boxed
from rlvr.verifiers.math.plain import PlainSyntaxError, parse_plain

if not callable(getattr(_grader, "sympy_numeric_eq", None)):  # pragma: no cover
    raise ImportError(
        "this math-verify version has no grader.sympy_numeric_eq, which rlvr replaces to make "
        "comparisons exact; install a supported version: pip install 'math-verify>=0.7,<0.10'"
    )

logging.getLogger("math_verify").setLevel(logging.ERROR)

EQUAL = "equal"
DIFFERENT = "different"
UNPARSABLE = "unparsable"
GOLD_UNPARSABLE = "gold_unparsable"

_EXTRACTION = [LatexExtractionConfig(boxed_match_priority=0)]
_PLAIN_NAMES = re.compile(r"(?<![\\A-Za-z])(pi|log|ln|exp|sin|cos|tan|infinity|inf|oo)(?![A-Za-z])")
_LATEX_NAMES = {"infinity": "infty", "inf": "infty", "oo": "infty"}
_DECIMAL = re.compile(r"(?<![\d.])(\d*)\.(\d+)(?![\d.])")
_DELIMITERS = ("$", "\\(", "\\)", "\\[", "\\]")


def latexify(text: str) -> str:
    """`text` rewritten for math-verify's LaTeX parser, with decimals as exact fractions."""
    text = text.strip()
    boxed = find_boxed(text)
    if len(boxed) == 1 and text.startswith(("\\boxed", "\\fbox")):
        text = boxed[0]
    for delimiter in _DELIMITERS:
        text = text.replace(delimiter, " ")
    text = text.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac").replace("−", "-")
    text = text.replace("**", "^")
    text = _PLAIN_NAMES.sub(lambda m: "\\" + _LATEX_NAMES.get(m.group(1), m.group(1)), text)
    return _DECIMAL.sub(_decimal_as_fraction, text).strip()


def _decimal_as_fraction(match: re.Match[str]) -> str:
    whole, digits = match.group(1), match.group(2)
    return f"{{\\frac{{{whole}{digits}}}{{1{'0' * len(digits)}}}}}"


def parse_answer(text: str) -> list[Any]:
    """sympy objects (and math-verify's normalised string) read from `text`; [] if unreadable."""
    parsed = math_verify.parse(
        "\\boxed{" + latexify(text) + "}", extraction_config=_EXTRACTION, parsing_timeout=None
    )
    objects = [
        _rationalize(item) for item in parsed if isinstance(item, (sympy.Basic, sympy.MatrixBase))
    ]
    if objects:
        return objects + [item for item in parsed if isinstance(item, str)]
    try:
        return [parse_plain(text)]
    except (PlainSyntaxError, ArithmeticError, TypeError, ValueError):
        return [item for item in parsed if isinstance(item, str) and item.strip()]


@functools.lru_cache(maxsize=4096)
def parse_gold(text: str) -> tuple[Any, ...]:
    """`parse_answer` for gold answers, cached: the same gold is checked many times."""
    return tuple(parse_answer(text))


def compare(gold: str, answer: str) -> tuple[str, str]:
    """(outcome, detail): outcome is EQUAL, DIFFERENT, UNPARSABLE or GOLD_UNPARSABLE."""
    golds = parse_gold(gold)
    if not golds:
        return GOLD_UNPARSABLE, "the task's gold answer could not be parsed"
    answers = parse_answer(answer)
    if not answers:
        return UNPARSABLE, "the answer could not be read as mathematics"
    with exact_numbers():
        equal = math_verify.verify(
            list(golds), answers, timeout_seconds=None, allow_set_relation_comp=True
        )
    return (EQUAL, "") if equal else (DIFFERENT, "")


@contextlib.contextmanager
def exact_numbers() -> Iterator[None]:
    """Make math-verify's number comparison exact while the block runs (single-threaded use)."""
    original = _grader.sympy_numeric_eq
    _grader.sympy_numeric_eq = exact_numeric_eq
    try:
        yield
    finally:
        _grader.sympy_numeric_eq = original


def exact_numeric_eq(a: Any, b: Any, float_rounding: int = 0, numeric_precision: int = 0) -> bool:
    """Replacement for math-verify's `sympy_numeric_eq`: equal only if exactly equal numbers.

    Non-numbers return False here; math-verify then tries its symbolic check
    (`simplify(a - b).is_zero`), which is exact.
    """
    if isinstance(a, sympy.MatrixBase) and isinstance(b, sympy.MatrixBase):
        if a.shape != b.shape:
            return False
        return all(exact_numeric_eq(x, y) for x, y in zip(a, b))
    a, b = _doit(a), _doit(b)
    if isinstance(a, sympy.Number) and isinstance(b, sympy.Number):
        return bool(_rationalize(a) == _rationalize(b))
    return False


def _doit(value: Any) -> Any:
    try:
        return value.doit()
    except Exception:
        return value


def _rationalize(value: Any) -> Any:
    """Replace floats by the rationals they were written as (`0.1` -> 1/10, not 2^-55 * ...)."""
    if isinstance(value, sympy.Float):
        return sympy.Rational(str(value))
    try:
        floats = value.atoms(sympy.Float)
    except Exception:
        return value
    if not floats:
        return value
    return value.xreplace({number: sympy.Rational(str(number)) for number in floats})
