"""The proposer's problem grammar: solved exactly by us, hostile text refused quickly."""

from __future__ import annotations

import time
from fractions import Fraction

import pytest

from rlvr.envs.multiagent.problems import AMBIGUOUS_FORMS, answer_in_problem, pose, question


@pytest.mark.parametrize(
    ("text", "family", "answer"),
    [
        ("(3 + 4/5) * 2^3 - 7", "evaluate", Fraction(117, 5)),
        ("2^10 - 1000", "evaluate", Fraction(24)),
        ("-((-3)^3) / 9", "evaluate", Fraction(3)),
        ("(-2)^2 - (2^3)^2 + 2^(3^2)", "evaluate", Fraction(452)),
        ("(6/2)(1 + 2) + 6/(2(1 + 2))", "evaluate", Fraction(10)),
        ("2 * 3/4 - 2(3)/8", "evaluate", Fraction(3, 4)),  # a product, then one divisor
        ("2x/3 = 4 - -2", "solve", Fraction(9)),
        ("1/3 + 1/6", "evaluate", Fraction(1, 2)),
        ("3(x - 2) + 5 = x/2 + 14", "solve", Fraction(6)),
        ("2x = 7", "solve", Fraction(7, 2)),
        ("x/3 - 1 = 2x + 4", "solve", Fraction(-3)),
        ("(x + 1)(2) = 8", "solve", Fraction(3)),
        ("x^1 + 0x^0 = 5 - x", "solve", Fraction(5, 2)),
    ],
)
def test_well_posed_problems_are_solved_exactly(text, family, answer):
    posed = pose(text)
    assert (posed.family, posed.answer, posed.problem) == (family, answer, None)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "empty"),
        ("x * x = 4", "not linear"),
        ("x^2 = 4", "not linear"),
        ("1 / (x - 1) = 2", "dividing by an expression in x"),
        ("5 / (2 - 2)", "division by zero"),
        ("2^(1/2)", "whole numbers from 0 to 10"),
        ("2^-1", "an exponent is a whole number or an expression in parentheses"),
        ("2^x = 4", "an exponent is a whole number or an expression in parentheses"),
        ("2^11", "whole numbers from 0 to 10"),
        ("0^0", "undefined"),
        ("x + 1", "write an equation"),
        ("3 = 3", "no x"),
        ("x = x", "no single solution"),
        ("3 4", "unexpected '4'"),
        ("2 +", "ends too early"),
        ("(1 + 2", "not closed"),
        ("1 + 2) * 3", "unexpected ')'"),
        ("__import__('os')", "'_' is not allowed"),
        ("what is 2+2? the answer is 4", "'w' is not allowed"),
        ("1 = 2 = 3", "unexpected '='"),
        ("9" * 31, "beyond 10^30"),
        ("(10^10)^10", "beyond 10^30"),
        ("1" + "+1" * 150, "more than 200 characters"),
        ("(" * 30 + "1" + ")" * 30, "deeper than 20"),
        ("-" * 30 + "1", "deeper than 20"),
        ("2^2^2^2^2^2^2^2^2^2^2^2^2^2^2^2^2^2^2^2^2^2", "raised again is read two ways"),
    ],
)
def test_anything_else_is_ill_posed_with_a_reason(text, why):
    posed = pose(text)
    assert posed.answer is None and why in (posed.problem or "")


def test_hostile_problems_are_refused_quickly():
    start = time.process_time()
    for text in ["(" * 100_000, "x" * 100_000, "9^9^9^9^9", "((9^10)^10)^10" * 10]:
        assert pose(text).answer is None
    assert time.process_time() - start < 1.0


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("6/2(1 + 2)", "after a divisor"),  # 9 or 1
        ("1/2x = 4", "after a divisor"),  # x = 8 or x = 1/8
        ("6/2*3", "after a divisor"),
        ("8/4/2", "after a divisor"),
        ("x/2(3) = 1", "after a divisor"),
        ("-2^2", "a sign before a power"),  # -4 or 4
        ("-(3)^2 + 10", "a sign before a power"),
        ("2*-3^2", "a sign before a power"),
        ("x + -x^1 = 2x - 1", "a sign before a power"),
        ("2^3^2", "a power raised again"),  # 512 or 64
        ("2^(3)^2", "a power raised again"),
        ("2^3x = 16", "a factor right after a power"),  # x = 2 or x = 4/3
        ("2^2(3)", "a factor right after a power"),
    ],
)
def test_forms_read_two_ways_are_refused_with_the_parentheses_to_write(text, why):
    posed = pose(text)
    assert posed.answer is None and why in (posed.problem or "")
    assert "write" in posed.problem or "put" in posed.problem


def test_every_ambiguous_form_listed_is_refused_with_its_own_reason():
    for example, reason in AMBIGUOUS_FORMS.items():
        assert pose(example).problem == reason


@pytest.mark.parametrize(
    ("text", "hidden"),
    [
        ("41 + 0", True),
        ("x = 5", True),
        ("1 * -7/3", True),
        ("0 - 7 / 3", True),
        ("x = 007", True),  # leading zeros
        ("0041 * 1", True),
        ("x = +5", True),
        ("--5 + 0", True),
        ("x = 10/2", True),  # a fraction written out is its value
        ("x = 7/(3)", True),
        ("1 * (14)/(-6)", True),
        ("x + 5 = 0", True),  # the answer -5, sign aside
        ("2x = 10 * 1^5", True),  # the exponent is a number written too
        ("2x = 10", False),
        ("20 + 21", False),
        ("100 - 75", False),
        ("2 * 7/3", False),  # 14/3; the 7/3 written is not the answer
        ("3 * 7/3 - 14/3", True),  # 7/3, written in a product
        ("3x = 7", False),
    ],
)
def test_an_answer_written_in_the_problem_is_detected(text, hidden):
    assert answer_in_problem(pose(text)) is hidden


def test_the_question_names_the_family():
    assert question(pose("2x = 10")) == "Solve for x: 2x = 10"
    assert question(pose("  1 +\n 2 ")) == "Evaluate: 1 + 2"


# Honest problems, as a proposer writes them without reading the rules (one per line: the
# problem and its answer), and the ones the rules refuse. Measured: 8 of 32 refused (25%): the
# same 4 whose answer is a number written in them as before issue 25 (1, 1, 3, 3: small answers
# meet small coefficients), and 4 forms read two ways.
NATURAL_HONEST_PROBLEMS = [
    ("3(x - 2) + 5 = x/2 + 14", "6"),
    ("(3 + 4/5) * 2^3 - 7", "117/5"),
    ("2x + 7 = 3x - 5", "12"),
    ("5x - 3 = 2x + 9", "4"),
    ("x/3 + x/4 = 7", "12"),
    ("4(x + 3) = 2(x - 1)", "-7"),
    ("(2^5 - 7) / 5 + 3^2", "14"),
    ("1/2 + 1/3 + 1/6", "1"),
    ("7 - 3(2x - 1) = 4", "1"),
    ("(x + 5)/2 = (x - 1)/3", "-17"),
    ("2^10 / 2^7 - 3", "5"),
    ("-2^2 + 3^2", "5"),
    ("12 / 4 * 3", "9"),
    ("6x - 4 = 2x + 8", "3"),
    ("(5 - 8)^3 + 30", "3"),
    ("3/4 * 8 - 2/3 * 9", "0"),
    ("x - 2(x - 3) = 1", "5"),
    ("(1 + 2 + 3 + 4)^2 - (1^3 + 2^3 + 3^3 + 4^3)", "0"),
    ("9 - 4 * 2 + 10 / 5", "3"),
    ("2(3x + 1) - 4 = 5x + 6", "8"),
    ("x/2 - 3 = x/5 + 3", "20"),
    ("(7 + 5) * (9 - 4) / 6", "10"),
    ("3^4 - 4^3", "17"),
    ("10 - 2(x + 3) = 3x - 11", "3"),
    ("(2/3)x + 1 = 5", "6"),
    ("5 + 3 * (8 - 2)^2 / 4", "32"),
    ("4x + 1 = 2x + 2", "1/2"),
    ("(x - 4)/3 = 2", "10"),
    ("100 / (5 * 4) + 2^3", "13"),
    ("2/3 + 3/4", "17/12"),
    ("-3(x + 2) = 9", "-5"),
    ("8 - 2^3 + 6 / 3 * 2", "4"),
]
REFUSED_HONEST = {
    "1/2 + 1/3 + 1/6": "answer in problem",
    "7 - 3(2x - 1) = 4": "answer in problem",
    "(5 - 8)^3 + 30": "answer in problem",
    "10 - 2(x + 3) = 3x - 11": "answer in problem",
    "-2^2 + 3^2": "a sign before a power",
    "12 / 4 * 3": "after a divisor",
    "3/4 * 8 - 2/3 * 9": "after a divisor",
    "8 - 2^3 + 6 / 3 * 2": "after a divisor",
}
# The refused ones as a proposer who read the rules writes them: other numbers, parentheses.
REWRITTEN = {
    "1/2 + 1/3 + 1/6": ("1/2 + 1/3 + 1/4", "13/12"),
    "7 - 3(2x - 1) = 4": ("7 - 3(2x - 1) = -14", "4"),
    "(5 - 8)^3 + 30": ("(5 - 8)^3 + 40", "13"),
    "10 - 2(x + 3) = 3x - 11": ("10 - 2(x + 3) = 3x - 16", "4"),
    "-2^2 + 3^2": ("-(2^2) + 3^2", "5"),
    "12 / 4 * 3": ("(12/4) * 3", "9"),
    "3/4 * 8 - 2/3 * 9": ("(3/4) * 8 - (2/3) * 9", "0"),
    "8 - 2^3 + 6 / 3 * 2": ("8 - 2^3 + (6/3) * 2", "4"),
}


def refusal(text: str, answer: str) -> str | None:
    """Why the rules refuse an honest problem with this answer, or None."""
    posed = pose(text)
    if posed.answer is None:
        return posed.problem
    assert posed.answer == Fraction(answer), text  # honest: the answer is right
    return "answer in problem" if answer_in_problem(posed) else None


def test_the_false_refusal_rate_of_honest_problems_written_without_the_rules():
    refused = {text: refusal(text, answer) for text, answer in NATURAL_HONEST_PROBLEMS}
    refused = {text: why for text, why in refused.items() if why is not None}
    assert refused.keys() == REFUSED_HONEST.keys()
    assert all(REFUSED_HONEST[text] in why for text, why in refused.items())
    assert len(refused) / len(NATURAL_HONEST_PROBLEMS) == 0.25


def test_honest_problems_written_by_the_rules_all_pass():
    problems = [REWRITTEN.get(text, (text, answer)) for text, answer in NATURAL_HONEST_PROBLEMS]
    assert len(problems) == 32
    assert [text for text, answer in problems if refusal(text, answer) is not None] == []
