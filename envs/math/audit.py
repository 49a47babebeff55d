"""Probes for `rlvr/Math-v0`: the gold written the ways models write it, and wrong answers.

Gold probes wrap the gold in every common reply format (a box, "The answer is", GSM8K's `####`
after the dataset's own worked solution, Minerva's "Final Answer: The final answer is $N$",
`<answer>` tags, a "**Final Answer**" heading) and, for plain numbers, write the value the ways
answer keys do: thousands separators, `$` amounts, units, trailing zeros, `\\frac`, `\\dfrac`,
`a/b`, decimals and mixed numbers. Wrong probes are the gold perturbed (plus one, times ten,
negated), hedged with a wrong value, stated in the reasoning but not as the final answer, or the
question's own arithmetic left unevaluated (GSM8K's `<<16-3-4=9>>` annotations, "What is 7/9 +
6/9?"), which the final-form policy refuses.
"""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path
from typing import Any

from rlvr.envs.audit.report import Probe
from rlvr.envs.errors import DatasetError
from rlvr.envs.tasks import read_jsonl
from rlvr.verifiers.math.literals import format_fraction, read_literal
from rlvr.verifiers.math.verifier import gold_text
from rlvr.verifiers.types import Task

# GSM8K's calculator annotations, `<<48/2=24>>`.
_ANNOTATION = re.compile(r"<<([^<>=]+)=([^<>=]+)>>")
# "What is 7/9 + 6/9?" / "What is (15 * 10 - 108) / 3 + (2)^2?": arithmetic to restate.
_WHAT_IS = re.compile(r"What is ([-+*/^()\d\s.]+|[-+*/^()\d\s.]*\\frac[^?]*)\?")
_OPERATOR = re.compile(r"\d\s*[-+*/^]|\\frac|\\times|\\div")


class MathAudit:
    env_id = "rlvr/Math-v0"
    datasets = "'procedural' (the env's own generator, test split) or a GSM8K/MATH .jsonl file"

    def __init__(self) -> None:
        self.solutions: list[str | None] = []

    def open(self, dataset: str) -> tuple[dict[str, Any], str]:
        """The env kwargs for `dataset`, and a name for it."""
        from rlvr.envs.math import load_gsm8k, load_math

        if dataset == "procedural":
            return {"split": "test"}, "Math-v0 procedural (test split)"
        path = Path(dataset)
        rows = _read_rows(path)
        if all("question" in row and "####" in str(row.get("answer", "")) for row in rows[:5]):
            self.solutions = [str(row["answer"]) for row in rows]
            return {"tasks": load_gsm8k(path)}, f"GSM8K-format {path.name}"
        if all("problem" in row and "solution" in row for row in rows[:5]):
            return {"tasks": load_math(path)}, f"MATH-format {path.name}"
        raise DatasetError(
            f"{path}: rows have neither GSM8K's question/answer ('#### N') nor MATH's "
            "problem/solution fields; pass one of those, or 'procedural'"
        )

    def probes(self, env: Any, item: int, task: Task) -> list[Probe]:
        gold = gold_text(task)
        solution = self.solutions[item] if item < len(self.solutions) else None
        right = gold_replies(gold, solution)
        wrong = wrong_replies(gold, solution, task.prompt)
        return [Probe(item, style, True, reply) for style, reply in right] + [
            Probe(item, style, False, reply) for style, reply in wrong
        ]

    def close(self) -> None:
        pass


def _read_rows(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise DatasetError(f"{path}: no such file; pass a .jsonl file or 'procedural'")
    return [row if isinstance(row, dict) else {} for _, row in read_jsonl(path)]


def _boxed(text: str) -> str:
    return f"So the final answer is $\\boxed{{{text}}}$."


def gold_replies(gold: str, solution: str | None = None) -> list[tuple[str, str]]:
    """(style, reply) pairs that state the gold; every one must score 1."""
    replies = [
        ("boxed", _boxed(gold)),
        ("the answer is", f"Putting it together, the answer is ${gold}$."),
        ("minerva final answer", f"Final Answer: The final answer is ${gold}$. I hope so."),
        ("answer tag", f"<think>\nWork it out step by step.\n</think>\n<answer>{gold}</answer>"),
        ("final answer heading", f"Done.\n\n**Final Answer**\n\\[\n\\boxed{{{gold}}}\n\\]"),
        ("gsm8k ####", solution if solution else f"Work it out step by step.\n#### {gold}"),
    ]  # fmt: skip
    literal = read_literal(gold)
    if literal is not None and literal.kind == "scalar" and not literal.percent:
        replies += _number_forms(literal.values[0])
    return replies


def _number_forms(value: Fraction) -> list[tuple[str, str]]:
    """The same number as answer keys and models write it."""
    forms = []
    if value.denominator == 1:
        number = value.numerator
        if abs(number) >= 1000:
            forms.append(("thousands separators", _boxed(f"{number:,}")))
            forms.append(("thousands in text", f"The answer is {number:,}."))
        if number >= 0:
            forms.append(
                (
                    "dollar amount in text",
                    f"She ends up with ${number:,}. The answer is ${number:,}.",
                )
            )
            forms.append(("boxed dollars", _boxed(f"\\${number}")))
        forms.append(("trailing zeros", _boxed(f"{number}.00")))
        forms.append(("unit in box", _boxed(f"{number} \\text{{ apples}}")))
        forms.append(("unit in text", f"The answer is {number} apples."))
        return forms  # fmt: skip
    sign = "-" if value < 0 else ""
    top, bottom = abs(value.numerator), value.denominator
    forms.append(("\\frac", _boxed(format_fraction(value))))
    forms.append(("\\dfrac", _boxed(f"{sign}\\dfrac{{{top}}}{{{bottom}}}")))
    forms.append(("a/b", f"The answer is {sign}{top}/{bottom}."))
    decimal = _terminating_decimal(value)
    if decimal is not None:
        forms.append(("decimal", _boxed(decimal)))
    if top > bottom:
        whole, rest = divmod(top, bottom)
        forms.append(("mixed number (LaTeX)", _boxed(f"{sign}{whole}\\frac{{{rest}}}{{{bottom}}}")))
        forms.append(("mixed number (text)", f"The answer is {sign}{whole} {rest}/{bottom}."))
    return forms


def _terminating_decimal(value: Fraction) -> str | None:
    bottom = value.denominator
    for prime in (2, 5):
        while bottom % prime == 0:
            bottom //= prime
    if bottom != 1:
        return None
    text = f"{float(value):.12f}".rstrip("0").rstrip(".")
    return text if Fraction(text) == value else None


def wrong_replies(gold: str, solution: str | None, prompt: str) -> list[tuple[str, str]]:
    """(style, reply) pairs that do not answer the question; every one must score 0."""
    literal = read_literal(gold)
    if literal is None or literal.kind != "scalar" or literal.percent:
        if re.search(r"[,=<>]|\\\{|\\cup|\\infty", gold):
            return []  # sets, tuples, intervals: no perturbation that is surely wrong
        return [("gold plus one", _boxed(f"{gold} + 1"))]
    value = literal.values[0]
    off = format_fraction(value + 1)
    replies = [
        ("plus one", _boxed(off)),
        ("hedged", f"It is either $\\boxed{{{gold}}}$ or $\\boxed{{{off}}}$."),
        ("gold only in reasoning", f"At first I got {gold}, but that is wrong. {_boxed(off)}"),
    ]
    if value != 0:
        replies.append(("times ten", _boxed(format_fraction(value * 10))))
        replies.append(("negated", _boxed(format_fraction(-value))))
    if value.denominator != 1 and abs(value) > 1:
        whole, rest = divmod(abs(value.numerator), value.denominator)
        sign = "-" if value < 0 else ""
        wrong_part = f"{sign}{whole}\\frac{{{rest + 1}}}{{{value.denominator}}}"
        replies.append(("mixed number, wrong part", _boxed(wrong_part)))
    restated = _unevaluated(value, solution, prompt)
    if restated is not None:
        replies.append(("unevaluated arithmetic", _boxed(restated)))
    return replies


def _unevaluated(value: Fraction, solution: str | None, prompt: str) -> str | None:
    """The arithmetic that computes the gold, left undone: from GSM8K's last annotation whose
    result is the gold, or the question's own "What is ...?"."""
    for expression, result in reversed(_ANNOTATION.findall(solution or "")):
        try:
            if Fraction(result.strip().replace(",", "")) == value and _OPERATOR.search(expression):
                return expression.strip()
        except (ValueError, ZeroDivisionError):
            continue
    match = _WHAT_IS.search(prompt)
    if match is not None and _OPERATOR.search(match.group(1)):
        return match.group(1).strip()
    return None
