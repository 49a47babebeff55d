"""The proposer's problem grammar: solved exactly by us, hostile text refused quickly."""

from __future__ import annotations

import time
from fractions import Fraction

import pytest

from rlvr.envs.multiagent.problems import answer_in_problem, pose, question


@pytest.mark.parametrize(
    ("text", "family", "answer"),
    [
        ("(3 + 4/5) * 2^3 - 7", "evaluate", Fraction(117, 5)),
        ("2^10 - 1000", "evaluate", Fraction(24)),
        ("-(-3)^3 / 9", "evaluate", Fraction(3)),
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
        ("2^2^2^2^2^2^2^2^2^2^2^2^2^2^2^2^2^2^2^2^2^2", "deeper than 20"),
    ],
)
def test_anything_else_is_ill_posed_with_a_reason(text, why):
    posed = pose(text)
    assert posed.answer is None and why in (posed.problem or "")


def test_hostile_problems_are_refused_quickly():
    start = time.perf_counter()
    for text in ["(" * 100_000, "x" * 100_000, "9^9^9^9^9", "((9^10)^10)^10" * 10]:
        assert pose(text).answer is None
    assert time.perf_counter() - start < 1.0


@pytest.mark.parametrize(
    ("text", "hidden"),
    [
        ("41 + 0", True),
        ("x = 5", True),
        ("-7/3 * 1", True),
        ("0 - 7 / 3", True),
        ("2x = 10", False),
        ("20 + 21", False),
        ("14/6", False),  # 7/3 is not written: it is worked out
        ("100 - 75", False),
    ],
)
def test_an_answer_written_in_the_problem_is_detected(text, hidden):
    assert answer_in_problem(pose(text)) is hidden


def test_the_question_names_the_family():
    assert question(pose("2x = 10")) == "Solve for x: 2x = 10"
    assert question(pose("  1 +\n 2 ")) == "Evaluate: 1 + 2"
