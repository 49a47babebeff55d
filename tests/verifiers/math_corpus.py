"""Golds and replies for differential tests of the math verifier (same verdicts before/after).

The golds: MATH-style answers (radicals, pi, intervals and unions, root sets, tuples, vectors,
polynomials factored and expanded, equations, complex numbers, logs, degrees, option letters),
every family and level of rlvr/Math-v0's generator, and GSM8K-style integers. Each gold gets
replies that matter to a parser cache: the gold itself, the gold with one number changed (same
shape, other text: wrong), with a sign flipped or a bracket swapped, respaced, as `\\dfrac`,
labelled `x = `, negated, extended, hedged, and the pairs of `test_math_verifier`.
"""

from __future__ import annotations

import re

from rlvr.envs.math import procedural_source
from rlvr.envs.math.families import FAMILIES
from tests.verifiers.test_math_verifier import (
    EQUIVALENT,
    HACKS,
    INEXACT,
    NOT_EQUIVALENT,
    REAL_WORLD,
)

MATH_STYLE_GOLDS = [
    "\\frac{\\sqrt{3}}{2}",
    "2\\sqrt{2}",
    "3\\sqrt{5}",
    "\\frac{5\\sqrt{2}}{3}",
    "\\sqrt{13}",
    "-\\frac{\\sqrt{5}}{5}",
    "6 - 2\\sqrt{5}",
    "\\frac{1 + \\sqrt{5}}{2}",
    "\\frac{3 - \\sqrt{17}}{4}",
    "\\sqrt[3]{2}",
    "4\\pi",
    "\\frac{\\pi}{6}",
    "\\frac{3\\pi}{4}",
    "16\\pi",
    "10,\\!000\\pi",
    "\\frac{32\\pi}{3}",
    "2\\pi - 4",
    "[-2, 7]",
    "(-\\infty, 3)",
    "(0, 1]",
    "[5, \\infty)",
    "(-\\infty, -1) \\cup (2, \\infty)",
    "(-3, 0] \\cup [2, 5)",
    "(-\\infty, \\frac{1}{2}]",
    "\\{-2 + \\sqrt{7}, -2 - \\sqrt{7}\\}",
    "\\{1 - \\sqrt{2}, 1 + \\sqrt{2}\\}",
    "\\{\\frac{3}{2}, -4\\}",
    "(2, -3)",
    "(\\frac{1}{2}, 4)",
    "(1, \\sqrt{3})",
    "(3, \\frac{\\pi}{2})",
    "(6, \\frac{4\\pi}{3}, 2)",
    "\\begin{pmatrix} 1 \\\\ -2 \\end{pmatrix}",
    "\\begin{pmatrix} 2 & 0 \\\\ 0 & 3 \\end{pmatrix}",
    "x^2 + 4x + 4",
    "(x+2)^2",
    "(x-1)(x+3)",
    "2x^3 - 5x^2 + x - 7",
    "x^{3} - 4x^{2} + x + 6",
    "(x-2)(x+2)(x^2+4)",
    "3x + 7",
    "-2x^2 + 8x - 6",
    "\\frac{x+1}{x-1}",
    "y = 2x - 3",
    "y = -\\frac{1}{2}x + 4",
    "x^2 + y^2 = 25",
    "3 + 4i",
    "-1 - 2i",
    "2i",
    "\\log_2 5",
    "\\ln 2",
    "e^{2}",
    "2^{10}",
    "\\frac{1}{2^{98}}",
    "30^\\circ",
    "\\text{(C)}",
    "\\text{A, C}",
    "\\infty",
    "\\emptyset",
    "\\frac{a+b}{2}",
    "\\frac{7}{12}",
    "-\\frac{27}{4}",
    "\\{1, 2, 3\\}",
    "(-1, 2]",
]

GSM8K_STYLE_GOLDS = ["18", "3600", "0", "-7", "1234", "52", "1000000", "7", "125", "96"]

_NUMBER = re.compile(r"\d+")
_SIGN = re.compile(r" ([+-]) ")


def procedural_golds(items_per_level: int = 2) -> list[str]:
    """Golds of every family and level of rlvr/Math-v0, as text."""
    golds = []
    for family in FAMILIES:
        for level in range(1, 6):
            source = procedural_source(families=[family], difficulty=level, seed=7)
            golds.extend(str(source[index].answer) for index in range(items_per_level))
    return list(dict.fromkeys(golds))


def answer_variants(gold: str) -> list[str]:
    """The final answers a cache could mix up with `gold`, right and wrong."""
    variants = [gold]
    for match in list(_NUMBER.finditer(gold))[:3]:  # same shape, other text
        bumped = str(int(match.group()) + 1)
        variants.append(gold[: match.start()] + bumped + gold[match.end() :])
    sign = _SIGN.search(gold)
    if sign:
        flipped = " - " if sign.group(1) == "+" else " + "
        variants.append(gold[: sign.start()] + flipped + gold[sign.end() :])
    if gold[:1] in "([" and gold[-1:] in ")]":
        variants.append({"(": "[", "[": "("}[gold[0]] + gold[1:])
    variants.append(gold.replace(" ", ""))
    variants.append(gold.replace("\\frac", "\\dfrac"))
    if "=" not in gold:
        variants.append(f"x = {gold}")
    variants.append(f"-({gold})")
    variants.append(f"{gold} + 1")
    return list(dict.fromkeys(variants))


def boxed(answer: str) -> str:
    return f"Some work first.\n\nSo the answer is $\\boxed{{{answer}}}$."


def replies(gold: str) -> list[str]:
    answers = answer_variants(gold)
    texts = [boxed(answer) for answer in answers]
    if len(answers) > 1:
        texts.append(f"It is $\\boxed{{{gold}}}$ or maybe $\\boxed{{{answers[1]}}}$.")
    texts.append(f"<think>so {gold}</think> The answer is {answers[-1]}.")
    return texts


def cases() -> list[tuple[str, str]]:
    """(gold, reply) pairs, in a fixed order."""
    pairs = [
        (gold, reply)
        for gold in [*MATH_STYLE_GOLDS, *procedural_golds(), *GSM8K_STYLE_GOLDS]
        for reply in replies(gold)
    ]
    for table in (EQUIVALENT, REAL_WORLD, NOT_EQUIVALENT, INEXACT, HACKS):
        pairs.extend((gold, boxed(answer)) for gold, answer in table)
    return list(dict.fromkeys(pairs))
