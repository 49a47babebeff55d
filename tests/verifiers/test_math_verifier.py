"""MathVerifier: equivalent forms score 1, everything else (wrong, hedged, inexact) scores 0."""

from __future__ import annotations

import copy
from fractions import Fraction

import pytest

from rlvr.verifiers import Status, Task, TaskFormatError, Verdict, VerifierConfigError
from rlvr.verifiers.math import MathVerifier, gold_text, read_literal, values_match

VERIFIER = MathVerifier(timeout=10.0)


def judge(gold, reply: str, verifier: MathVerifier = VERIFIER) -> Verdict:
    return verifier.verify(reply, Task(id="t", prompt="?", answer=gold))


def boxed(answer: str) -> str:
    return f"Some work first.\n\nSo the answer is $\\boxed{{{answer}}}$."


EQUIVALENT = [
    # plain numbers, decided in-process
    ("85", "85"),
    ("85", "085"),
    ("-7", "-7"),
    ("\\frac{1}{2}", "0.5"),
    ("0.5", "\\frac{1}{2}"),
    ("\\frac{1}{2}", "1/2"),
    ("\\frac{3}{4}", "\\dfrac{3}{4}"),
    ("\\frac{3}{4}", "\\tfrac34"),
    ("-\\frac{3}{4}", "\\frac{-3}{4}"),
    ("-\\frac{3}{4}", "-0.75"),
    ("1234", "1,234"),
    ("1000000", "1\\,000\\,000"),
    ("1500", "1.5 \\times 10^{3}"),
    ("5", "x = 5"),
    ("5", "x=5"),
    ("18", "\\$18"),
    ("18", "18 \\text{ dollars}"),
    ("12", "12 apples"),
    ("30", "30^\\circ"),
    ("25", "25 \\text{ cm}^2"),
    ("50\\%", "50\\%"),
    ("50\\%", "50"),
    ("50\\%", "0.5"),
    ("0.5", "50\\%"),
    ("112.1", "112.10"),
    # sets in any order, tuples in order
    ("\\{-2, 3\\}", "\\{3, -2\\}"),
    ("\\{-2, 3\\}", "3, -2"),
    ("\\{-2, 3\\}", "x = 3 \\text{ or } x = -2"),
    ("\\{-2, 3\\}", "(3, -2)"),  # a tuple read as a set when the gold is a set
    ("\\{\\frac{1}{2}, 3\\}", "0.5, 3"),
    ("\\{-2, 2\\}", "\\pm 2"),
    ("\\{-2, 4\\}", "x = 1 \\pm 3"),
    ("(2, 3)", "(2, 3)"),
    ("(2, 3)", "x = 2, y = 3"),
    ("(2, 3)", "y = 3, x = 2"),
    ("(2, 3, -1)", "(2, 3, -1)"),
    # symbolic, decided by math-verify in a worker
    ("2\\sqrt{2}", "\\sqrt{8}"),
    ("\\frac{\\sqrt{3}}{2}", "\\frac{1}{2}\\sqrt{3}"),
    ("\\frac{\\sqrt{2}}{2}", "sqrt(2)/2"),
    ("\\frac{\\pi}{4}", "pi/4"),
    ("\\frac{\\pi}{4}", "\\frac{1}{4}\\pi"),
    ("x^{2} + 5x + 6", "(x+2)(x+3)"),
    ("x^{2} + 5x + 6", "x^2+5x+6"),
    ("3x^{2} + 1", "3*x**2 + 1"),  # plain text, read by our whitelist parser
    ("\\{1 - \\sqrt{2}, 1 + \\sqrt{2}\\}", "1 \\pm \\sqrt{2}"),
    ("\\{1 - \\sqrt{2}, 1 + \\sqrt{2}\\}", "\\{1+\\sqrt{2}, 1-\\sqrt{2}\\}"),
    ("[3, \\infty)", "[3, \\infty)"),
    ("[3, \\infty)", "x \\geq 3"),
    ("(-1, 2]", "(-1, 2]"),
    ("\\frac{1}{2^{98}}", "2^{-98}"),
    ("y = 2x + 3", "y = 3 + 2x"),
]


@pytest.mark.parametrize(("gold", "answer"), EQUIVALENT)
def test_equivalent_forms_score_one(gold, answer):
    verdict = judge(gold, boxed(answer))
    assert verdict.status is Status.CORRECT, verdict
    assert verdict.score == 1.0


NOT_EQUIVALENT = [
    ("85", "84"),
    ("\\frac{1}{2}", "0.51"),
    ("0.5", "50"),  # a plain number is never rescaled as a percent
    ("50", "0.5"),
    ("50\\%", "0.5\\%"),
    ("\\{-2, 3\\}", "\\{-2, 3, 4\\}"),
    ("\\{-2, 3\\}", "3"),
    ("(2, 3)", "(3, 2)"),
    ("(2, 3)", "\\{2, 3\\}"),  # an ordered answer must be given in order
    ("2\\sqrt{2}", "\\sqrt{2}"),
    ("[3, \\infty)", "(3, \\infty)"),
    ("x^{2} + 5x + 6", "(x+2)(x-3)"),
    ("5", "5 \\text{ million}"),
    ("5", "5\\pi"),
]


@pytest.mark.parametrize(("gold", "answer"), NOT_EQUIVALENT)
def test_different_answers_score_zero(gold, answer):
    verdict = judge(gold, boxed(answer))
    assert verdict.status is Status.INCORRECT, verdict
    assert verdict.score == 0.0


# --- exactness: no numeric tolerance anywhere -----------------------------------------------------

INEXACT = [
    ("2^{-98}", "2^{-99}"),  # math-verify alone says these are equal
    ("\\frac{1}{2^{98}}", "\\frac{1}{2^{99}}"),
    ("\\sqrt{2}", "1.41421356237310"),
    ("\\sqrt{2}", "1.4142135623730951"),
    ("\\pi", "3.14159265358979"),
    ("\\frac{1}{3}", "0.333333"),
    ("\\frac{1}{3}", "0.3333333333333333333333"),
    ("100000000000000000001", "100000000000000000000"),
    ("0.1234567890123456789", "0.1234567890123456788"),
    ("\\frac{\\sqrt{2}}{10^{20}}", "\\frac{1.41421356237}{10^{20}}"),
]


@pytest.mark.parametrize(("gold", "answer"), INEXACT)
def test_comparison_is_exact(gold, answer):
    assert judge(gold, boxed(answer)).score == 0.0


def test_math_verify_alone_has_the_tolerance_we_remove():
    """Guards the premise of `equivalence.exact_numbers`: if math-verify became exact, this
    test tells us the patch can go."""
    from math_verify import LatexExtractionConfig, parse, verify

    config = [LatexExtractionConfig()]
    gold, answer = parse("$2^{-98}$", config), parse("$2^{-99}$", config)
    assert verify(gold, answer, timeout_seconds=None)
    from rlvr.verifiers.math.equivalence import compare

    assert compare("2^{-98}", "2^{-99}")[0] == "different"
    assert compare("2^{-98}", "\\frac{1}{2^{98}}")[0] == "equal"


# --- hedging and other reward hacks ---------------------------------------------------------------

HACKS = [
    ("85", "\\boxed{85} or \\boxed{86}"),  # several different boxed answers
    ("85", "\\boxed{84}\\boxed{85}\\boxed{86}"),
    ("3", "\\boxed{3 or 4}"),
    ("3", "\\boxed{3, 4}"),
    ("3", "\\boxed{3 \\text{ or } 4}"),
    ("3", "The answer is 3, 4 or 5."),  # a list of candidates for a single value
    ("3", "The answer is 3. No wait, the answer is 4."),
    ("3", "\\boxed{\\pm 3}"),
    ("\\sqrt{2}", "\\boxed{\\sqrt{2}, \\sqrt{3}}"),
    ("\\sqrt{2}", "\\boxed{\\sqrt{2}} \\boxed{\\sqrt{3}}"),
    ("85", "<think>47 + 38 = 85</think> The answer is \\boxed{84}."),  # gold only in reasoning
    ("85", "47 + 38 = 85, so I am done."),  # gold only in the text, no final answer
    ("85", "<think>\\boxed{85}"),  # the answer never left the reasoning
    ("85", "\\boxed{47 + 38}"),  # the question copied into the box
    ("\\frac{1}{2}", "\\boxed{\\frac{2}{4}}"),  # not in lowest terms
    ("2", "\\boxed{\\frac{4}{2}}"),
    ("2", "\\boxed{\\sqrt{4}}"),
    ("\\{-2, 3\\}", "\\boxed{-2, 3} \\boxed{-2}"),
    ("85", "\\boxed{85"),  # unbalanced
    ("85", "\\boxed{}"),
    ("85", "\\boxed{x}"),
    ("85", "\\boxed{\\text{eighty-five}}"),
    ("85", "\\boxed{8" + "5" * 3000 + "}"),
]


@pytest.mark.parametrize(("gold", "reply"), HACKS)
def test_hacks_score_zero(gold, reply):
    verdict = judge(gold, reply)
    assert verdict.score == 0.0, verdict
    assert verdict.status in (Status.INCORRECT, Status.UNPARSABLE)
    assert not verdict.infra_error


def test_the_same_answer_repeated_is_fine():
    assert judge("85", "\\boxed{85}. Again: \\boxed{85}. The answer is 85.").is_correct
    assert judge("\\frac{1}{2}", "\\boxed{\\frac{1}{2}} = \\boxed{0.5}").is_correct
    assert judge("2\\sqrt{2}", "\\boxed{2\\sqrt{2}} or \\boxed{\\sqrt{8}}").is_correct


def test_hedge_details_say_why():
    verdict = judge("85", "\\boxed{85} or \\boxed{86}")
    assert "several different final answers" in verdict.details


def test_no_answer_is_unparsable_with_advice():
    verdict = judge("85", "I am not sure.")
    assert verdict.status is Status.UNPARSABLE
    assert "\\boxed{}" in verdict.details


def test_details_never_reveal_the_gold():
    for reply in ("\\boxed{84}", "\\boxed{47+38}", "\\boxed{84} \\boxed{85}", "nothing"):
        assert "85" not in judge("85", reply).details
    assert "sqrt" not in judge("\\sqrt{7}", "\\boxed{\\sqrt{8}}").details


def test_verdict_data_is_deterministic_and_small():
    verdict = judge("\\sqrt{2}", boxed("\\sqrt{2}"))
    assert verdict.data == {"source": "boxed", "checked_by": "sympy"}
    assert judge("2", boxed("2")).data == {"source": "boxed", "checked_by": "fraction"}


def test_require_simplified_off_accepts_any_equivalent_expression():
    lenient = MathVerifier(timeout=10.0, require_simplified=False)
    assert judge("85", "\\boxed{47 + 38}", lenient).is_correct
    assert judge("\\frac{1}{2}", "\\boxed{\\frac{2}{4}}", lenient).is_correct
    assert judge("2", "\\boxed{\\sqrt{4}}", lenient).is_correct
    assert not judge("85", "\\boxed{47 + 37}", lenient).is_correct


def test_gold_may_be_an_int_or_a_fraction():
    import numpy as np

    assert judge(85, boxed("85")).is_correct
    assert judge(np.int64(-3), boxed("-3")).is_correct
    assert judge(Fraction(-3, 4), boxed("-0.75")).is_correct
    assert gold_text(Task(id="t", prompt="?", answer=Fraction(6, 8))) == "\\frac{3}{4}"


@pytest.mark.parametrize("gold", [None, "", "   ", 0.5, True, ["1"]])
def test_a_task_without_a_usable_gold_is_rejected(gold):
    with pytest.raises(TaskFormatError):
        judge(gold, boxed("1"))


@pytest.mark.parametrize("kwargs", [{"timeout": 0}, {"timeout": -1}, {"max_answer_chars": 0}])
def test_bad_config_names_the_field(kwargs):
    with pytest.raises(VerifierConfigError, match=next(iter(kwargs))):
        MathVerifier(**kwargs)


def test_verifier_is_light_to_copy():
    verifier = MathVerifier(timeout=3.0)
    clone = copy.deepcopy(verifier)
    assert clone == verifier
    assert judge("4", boxed("4"), clone).is_correct


# --- the literal reader on its own ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind", "values"),
    [
        ("42", "scalar", (42,)),
        ("-\\frac{3}{4}", "scalar", (Fraction(-3, 4),)),
        ("2e-3", "scalar", (Fraction(1, 500),)),
        ("\\{1, 2\\}", "set", (1, 2)),
        ("(1, 2)", "tuple", (1, 2)),
        ("1 or 2", "bare", (1, 2)),
        ("(5)", "scalar", (5,)),
    ],
)
def test_read_literal(text, kind, values):
    literal = read_literal(text)
    assert literal is not None
    assert literal.kind == kind
    assert literal.values == tuple(Fraction(value) for value in values)


@pytest.mark.parametrize(
    "text", ["47 + 38", "\\sqrt{4}", "5 million", "2^{3}", "x", "1 \\frac{1}{2}", "", "3 x"]
)
def test_read_literal_refuses_non_numbers(text):
    assert read_literal(text) is None


def test_unreduced_fractions_are_flagged():
    assert read_literal("6/8").simplest is False
    assert read_literal("4/2").simplest is False
    assert read_literal("3/4").simplest is True


def test_values_match_follows_the_gold_shape():
    assert values_match(read_literal("\\{1, 2\\}"), read_literal("2, 1"))
    assert not values_match(read_literal("(1, 2)"), read_literal("2, 1"))
    assert not values_match(read_literal("1"), read_literal("1, 1"))
