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

Final form (`compare(..., final_form=True)`, the verifier's `require_simplified`): an equivalent
expression is not always an answer. A condition is not its solution: `2x - 3 > 5` (the question)
does not answer `(4, \\infty)`, only a solved one such as `x > 4` does. A polynomial must be in the
gold's shape: an expanded gold (`x^3 - 4x^2 + x + 6`, "write it expanded") takes no product of
sums, and a factored gold (`(x+2)(x+3)`, "factor") takes no expanded polynomial, nor one with
fewer factors (`(x^2-4)(x^2+4)` for `(x-2)(x+2)(x^2+4)`, "factor completely").

Words between values: math-verify drops everything from the first `\\text{...}` to the end as
a unit, which would read `\\sqrt{2} \\text{ or maybe } \\sqrt{3}` as `\\sqrt{2}`. Here words
followed by more mathematics separate a list (`\\sqrt{2}, \\sqrt{3}`), and a number inside
`\\text{}` makes the answer unreadable.
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

from rlvr.verifiers.math.extract import find_boxed, matching_braces
from rlvr.verifiers.math.literals import THOUSANDS_MARK
from rlvr.verifiers.math.plain import PlainSyntaxError, parse_plain
from rlvr.verifiers.math.shapes import reused_parse_trees

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
_AND = re.compile(r"\band\b|\\land\b|\\wedge\b")
_TEXT_NAMES = (
    "text|textbf|textit|textrm|textnormal|textsf|texttt|textup|"
    "mathrm|mathbf|mathit|mathsf|mathtt|mbox|hbox"
)
_TEXT_COMMAND = re.compile(r"\\(?:" + _TEXT_NAMES + r")\s*(?=\{)")
_TEXT_GROUP = re.compile(r"\\(?:" + _TEXT_NAMES + r")\s*\{[^{}]*\}")
_NUMBER_TEXT = re.compile(r"[+-]?\d[\d.,]*")
# Letters of several multiple-choice options: `A, C`, `(B), (E)`.
_CHOICE_LIST = re.compile(r"\(?[A-Z]\)?(?:\s*,\s*\(?[A-Z]\)?)+")
# What may follow a trailing unit: spaces, a power (`cm^2`), punctuation, more text.
# (Alternatives that cannot match the same text: no backtracking blow-up on `^2   ^2   ...x`.)
_AFTER_UNIT = re.compile(r"(?:\s|\^\s*(?:\{\s*\d\s*\}|\d)|[.,;]|" + _TEXT_GROUP.pattern + r")*")


class UnreadableText(ValueError):
    """Text in the answer hides a number (`\\text{ (or 3)}`) or never closes."""


def latexify(text: str) -> str:
    """`text` rewritten for math-verify's LaTeX parser, with decimals as exact fractions."""
    text = text.strip()
    boxed = find_boxed(text)
    if len(boxed) == 1 and text.startswith(("\\boxed", "\\fbox")):
        text = boxed[0]
    for delimiter in _DELIMITERS:
        text = text.replace(delimiter, " ")
    text = _strip_trailing_punctuation(text.replace("~", " "))  # `~` is a space in LaTeX
    text = text.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac").replace("−", "-")
    text = text.replace("**", "^").replace("\\varnothing", "\\emptyset")
    text = THOUSANDS_MARK.sub("", text)  # `10,\!000\pi` is 10000 pi
    text = re.sub(r"\\mathrm\s*\{\s*e\s*\}", "e", text)  # upright e is Euler's number
    text = _rewrite_text_groups(text)
    text = _PLAIN_NAMES.sub(lambda m: "\\" + _LATEX_NAMES.get(m.group(1), m.group(1)), text)
    return _DECIMAL.sub(_decimal_as_fraction, text).strip()


def _strip_trailing_punctuation(text: str) -> str:
    """`\\sqrt{3}.` -> `\\sqrt{3}`: a sentence's full stop is no part of the answer (a spacing
    command such as `\\,` is kept whole)."""
    text = text.rstrip()
    while text and text[-1] in ".,;" and not text.endswith(("\\,", "\\;")):
        text = text[:-1].rstrip()
    return text


def _rewrite_text_groups(text: str) -> str:
    """`\\text{ or }` -> `,`; words followed by more mathematics -> `,` (a list); `\\textbf{2}` ->
    `2`; `\\text{A, C}` (options) -> `A, C`; a number among words, or an unclosed group ->
    `UnreadableText`. Units (`\\text{ cm}^2` at the end) and labels are left alone. Groups may
    nest braces."""
    parts, position, closers = [], 0, None
    for match in _TEXT_COMMAND.finditer(text):
        if match.start() < position:
            continue  # inside a group already handled
        closers = closers or matching_braces(text)
        end = closers.get(match.end(), -1)
        if end == -1:
            raise UnreadableText(f"an unclosed {match.group(0)!r}")
        group, content = text[match.start() : end + 1], text[match.end() + 1 : end].strip()
        if _NUMBER_TEXT.fullmatch(content):
            replacement = f" {content} "
        elif any(char.isdigit() for char in content) and text.strip() != group:
            raise UnreadableText(f"a number inside {group!r:.60}")
        elif _CHOICE_LIST.fullmatch(content):  # `\\text{A, C}`: the set of letters {A, C}
            replacement = " " + ", ".join(re.findall("[A-Z]", content)) + " "
        elif content.strip(", ").lower() in ("or", "and") or (
            re.search(r"[A-Za-z]{2}", content) and _AFTER_UNIT.fullmatch(text[end + 1 :]) is None
        ):
            replacement = " , "
        else:
            continue
        parts.append(text[position : match.start()] + replacement)
        position = end + 1
    return "".join(parts) + text[position:]


def _decimal_as_fraction(match: re.Match[str]) -> str:
    whole, digits = match.group(1), match.group(2)
    return f"{{\\frac{{{whole}{digits}}}{{1{'0' * len(digits)}}}}}"


def parse_answer(text: str) -> list[Any]:
    """sympy objects (and math-verify's normalised string) read from `text`; [] if unreadable."""
    try:
        latex = latexify(text)
    except UnreadableText:
        return []
    with reused_parse_trees():  # same results, far less ANTLR work (shapes.py)
        parsed = math_verify.parse(
            "\\boxed{" + latex + "}", extraction_config=_EXTRACTION, parsing_timeout=None
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


def compare(gold: str, answer: str, *, final_form: bool = True) -> tuple[str, str]:
    """(outcome, detail): outcome is EQUAL, DIFFERENT, UNPARSABLE or GOLD_UNPARSABLE.

    With `final_form`, an answer not in the gold's final form (module docstring) is DIFFERENT.
    """
    golds = parse_gold(gold)
    if not golds:
        return GOLD_UNPARSABLE, "the task's gold answer could not be parsed"
    answers = parse_answer(answer)
    if not answers:
        return UNPARSABLE, "the answer could not be read as mathematics"
    if not _AND.search(answer):  # "x < -2 and x > 3" is no union
        answers = [_relations_as_set(item, golds[0]) for item in answers]
    if final_form:
        problem = form_problem(golds[0], answers[0])
        if problem:
            return DIFFERENT, problem
    with exact_numbers():
        equal = math_verify.verify(
            list(golds), answers, timeout_seconds=None, allow_set_relation_comp=True
        )
    return (EQUAL, "") if equal else (DIFFERENT, "")


def form_problem(gold: Any, answer: Any) -> str:
    """Why `answer` is not in `gold`'s final form ("" if it is): an unsolved condition, or a
    polynomial expanded where the gold is factored or the other way round."""
    gold_solved = _solved(gold) if _is_relation(gold) else True  # else both are conditions
    if _is_condition(answer) and gold_solved and not _solved(answer):
        return "the final answer restates a condition instead of solving it"
    if not _is_polynomial(gold):
        return ""
    if isinstance(answer, sympy.Expr) and not _is_polynomial(answer):
        # `\\frac{(x^2+5x+6)(x+1)}{x+1}` equals `(x+2)(x+3)` but is neither form
        return "the final answer must be a polynomial, like the expected answer"
    if _expanded(gold) and not _expanded(answer):
        return "the final answer must be written expanded, like the expected answer"
    if _factored(gold) and not _factored(answer):
        return "the final answer must be written factored, like the expected answer"
    if _factored(gold) and _factor_count(answer) < _factor_count(gold):
        # "factor completely": `(x^2-4)(x^2+4)` is halfway to `(x-2)(x+2)(x^2+4)`
        return "the final answer must be factored as far as the expected answer"
    return ""


def _is_relation(value: Any) -> bool:
    if isinstance(value, sympy.core.relational.Relational):
        return True
    return isinstance(value, (sympy.And, sympy.Or)) and all(map(_is_relation, value.args))


def _is_condition(value: Any) -> bool:
    """An inequality in a variable (or several joined): math-verify compares it with a set of
    reals by solving it. Equations are not solved against a non-equation gold (math-verify reads
    their right side), so `\\sqrt{8} = 2\\sqrt{2}` is no condition."""
    return (
        _is_relation(value)
        and bool(value.free_symbols)
        and any(
            not isinstance(node, sympy.Eq)
            for node in sympy.preorder_traversal(value)
            if isinstance(node, sympy.core.relational.Relational)
        )
    )


def _solved(relation: Any) -> bool:
    """`x > 4`, `4 < x`, `-1 \\le x \\le 3`: each side a lone variable or free of it."""
    if isinstance(relation, (sympy.And, sympy.Or)):
        return all(map(_solved, relation.args))
    lhs, rhs = relation.lhs, relation.rhs
    return (isinstance(lhs, sympy.Symbol) and lhs not in rhs.free_symbols) or (
        isinstance(rhs, sympy.Symbol) and rhs not in lhs.free_symbols
    )


def _relations_as_set(value: Any, gold: Any) -> Any:
    """`x < -2 \\text{ or } x > 3` (read as a set of two inequalities) is the union of their
    solution sets when the gold is a set of reals such as `(-\\infty, -2) \\cup (3, \\infty)`."""
    if not (isinstance(value, sympy.FiniteSet) and isinstance(gold, (sympy.Interval, sympy.Union))):
        return value
    relations = list(value.args)
    if not relations or not all(
        isinstance(item, sympy.core.relational.Relational)
        and not isinstance(item, sympy.Eq)
        and _solved(item)
        and len(item.free_symbols) == 1
        for item in relations
    ):
        return value
    try:
        return sympy.Union(*(item.as_set() for item in relations))
    except Exception:
        return value


def _is_polynomial(value: Any) -> bool:
    if not isinstance(value, sympy.Expr) or isinstance(value, sympy.Number):
        return False
    symbols = value.free_symbols
    return bool(symbols) and value.is_polynomial(*symbols)


def _expanded(value: Any) -> bool:
    """No product with a sum of variable terms in it, and no power of such a sum."""
    for node in sympy.preorder_traversal(value):
        if isinstance(node, sympy.Mul) and any(_variable_sum(arg) for arg in node.args):
            return False
        if isinstance(node, sympy.Pow) and _variable_sum(node.base) and node.exp != 1:
            return False
    return True


def _factored(value: Any) -> bool:
    """A product of at least two variable factors, or a power of a variable sum."""
    if isinstance(value, sympy.Pow):
        return _variable_sum(value.base) and value.exp != 1
    if not isinstance(value, sympy.Mul):
        return False
    variable = [arg for arg in value.args if arg.free_symbols]
    return len(variable) >= 2 or any(_factored(arg) for arg in variable)


def _factor_count(value: Any) -> int:
    """How many non-constant factors a product has, with multiplicity: `x^2(x+1)` has 3."""
    if isinstance(value, sympy.Pow) and value.base.free_symbols:
        exponent = value.exp
        return int(exponent) if exponent.is_Integer and exponent > 0 else 1
    if isinstance(value, sympy.Mul):
        return sum(_factor_count(arg) for arg in value.args)
    return 1 if getattr(value, "free_symbols", None) else 0


def _variable_sum(value: Any) -> bool:
    return isinstance(value, sympy.Add) and bool(value.free_symbols)


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
