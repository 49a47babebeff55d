"""MathVerifier: equivalent forms score 1, everything else (wrong, hedged, inexact) scores 0."""

from __future__ import annotations

import copy
from fractions import Fraction

import pytest

from rlvr.verifiers import Status, Task, TaskFormatError, Verdict, VerifierConfigError
from rlvr.verifiers.math import MathVerifier, gold_text, read_literal, values_match
from rlvr.verifiers.math.form import operations

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
    ("5", "5 \\text{ more}"),  # "how many more ...?"
    ("5", "5 \\text{ years ago}"),
    ("30", "30^\\circ"),
    ("25", "25 \\text{ cm}^2"),
    ("50\\%", "50\\%"),
    ("50\\%", "50"),
    ("50\\%", "0.5"),
    ("0.5", "50\\%"),
    ("112.1", "112.10"),
    ("4", "{4}"),  # a brace group around the whole answer
    ("4", "4 \\textnormal{ cm}"),
    ("\\frac{1}{3}", "0.\\overline{3}"),  # repeating decimals are exact
    ("-\\frac{1}{6}", "-0.1\\overline{6}"),
    ("\\frac{1}{7}", "0.\\bar{142857}"),
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
    ("x^{2} + 5x + 6", "x^2+5x+6"),
    ("x^{3} - 4x^{2} + x + 6", "6 + x - 4x^2 + x^3"),
    ("(x+2)(x+3)", "(x+3)(x+2)"),
    ("(x+1)^{2}", "(1+x)^2"),
    ("\\frac{x+1}{2}", "\\frac{x}{2} + \\frac{1}{2}"),  # a constant factor is no factoring
    ("3x^{2} + 1", "3*x**2 + 1"),  # plain text, read by our whitelist parser
    ("\\{1 - \\sqrt{2}, 1 + \\sqrt{2}\\}", "1 \\pm \\sqrt{2}"),
    ("\\{1 - \\sqrt{2}, 1 + \\sqrt{2}\\}", "\\{1+\\sqrt{2}, 1-\\sqrt{2}\\}"),
    ("[3, \\infty)", "[3, \\infty)"),
    ("[3, \\infty)", "x \\geq 3"),
    ("(4, \\infty)", "4 < x"),
    ("[-1, 3]", "-1 \\le x \\le 3"),
    ("(-\\infty, -2) \\cup (3, \\infty)", "x < -2 \\text{ or } x > 3"),
    ("(-\\infty, 3) \\cup (3, \\infty)", "x \\neq 3"),
    ("\\emptyset", "\\varnothing"),
    ("2\\sqrt{2}", "\\sqrt{8} = 2\\sqrt{2}"),  # a true equation ending in the answer
    ("\\log_2 3", "\\frac{\\ln 3}{\\ln 2}"),  # the same kind of operation as the gold's
    ("e^{2}", "\\exp(2)"),
    ("e^{x}", "\\mathrm{e}^{x}"),
    ("\\{\\sqrt{2}, \\sqrt{3}\\}", "\\sqrt{2} \\text{ and } \\sqrt{3}"),
    ("(-1, 2]", "(-1, 2]"),
    ("\\frac{1}{2^{98}}", "2^{-98}"),
    ("y = 2x + 3", "y = 3 + 2x"),
]


# Golds as MATH's solutions write them, answers as chat models write them.
REAL_WORLD = [
    ("1,\\!000,\\!000", "1000000"),  # MATH's thousands mark: a comma, its space undone
    ("1,\\!000,\\!000", "1,000,000"),
    ("10,\\!000", "10{,}000"),
    ("\\$1,\\!000", "1000"),
    ("1234", "1,\\!234"),
    ("10,\\!000\\pi", "10000\\pi"),  # the symbolic path too
    ("3\\sqrt{2}", "3√2"),  # Unicode symbols, read as the LaTeX they render like
    ("\\sqrt{x+1}", "√(x+1)"),
    ("[3, \\infty)", "[3, ∞)"),
    ("(-\\infty, -2) \\cup (3, \\infty)", "(-∞, -2) ∪ (3, ∞)"),
    ("\\{-3, 3\\}", "±3"),
    ("x^2+7x+10", "x²+7x+10"),
    ("25", "25 cm²"),
    ("\\text{A, C}", "\\text{C, A}"),  # "enter the letters of the correct options"
    ("\\text{A, C}", "A, C"),
    ("\\text{A,C}", "\\text{(A), (C)}"),
    ("18", "\\text{18 dollars}"),  # the number inside the unit's text group
    ("\\sqrt{3}", "\\sqrt{3}."),  # a full stop inside the box, on the symbolic path
    ("x^2+7x+10", "x^{2}+7x+10~"),
    ("\\frac{\\sqrt{3}}{2}", "\\frac{\\sqrt{3}}{2}\\,"),
    ("(5, 0)", "(x, y) = (5, 0)"),  # the tuple labelled with its variables
    ("(1, 0, 0)", "(x,y,z)=(1,0,0)"),
    ("(x-2)(x+2)(x^2+4)", "(x+2)(x-2)(x^2+4)"),  # factored as far as the gold, in any order
    ("x^2(x+1)", "x \\cdot x \\cdot (x+1)"),
    ("2x(x+2)", "x(2x+4)"),
    ("50", "50 \\text{ percent}"),
    ("50\\%", "50\\text{\\%}"),
    ("18", "€18"),
    ("18", "\\textdollar 18"),
]


@pytest.mark.parametrize(("gold", "answer"), REAL_WORLD)
def test_real_world_forms_score_one(gold, answer):
    verdict = judge(gold, boxed(answer))
    assert verdict.status is Status.CORRECT, verdict


@pytest.mark.parametrize(
    ("gold", "reply"),
    [
        ("18", "Final Answer: The final answer is $18$. I hope it is correct."),  # Llama
        ("18", "Adding them up gives 18.\n\n**Final Answer**: 18"),  # markdown, no box
        ("18", "Adding them up gives 18.\n\n### Final Answer\n\n$18$"),
        ("18", "...\n\n**Final Answer**\n\n\\[\n\\boxed{18}\n\\]"),  # Qwen
        ("18", "Okay, so ... 18.\n</think>\n\nThe total is $\\boxed{18}$."),  # DeepSeek-R1
        ("18.9", "The answer is: \\$18.90."),
        ("\\frac{3}{4}", "So the probability is $\\boxed{\\dfrac34}$."),
    ],
)
def test_real_world_replies_score_one(gold, reply):
    verdict = judge(gold, reply)
    assert verdict.status is Status.CORRECT, verdict


@pytest.mark.parametrize(
    ("gold", "answer"),
    [
        ("1,\\!000", "1"),
        ("1234", "1,\\,234"),
        ("3", "±3"),
        ("\\sqrt{2}", "√3"),
        ("6", "2·3"),
        ("\\text{A, C}", "\\text{A, C, D}"),
        ("\\text{(C)}", "\\text{C, D}"),
        ("5", "\\text{5 million}"),
        ("5", "\\text{5 apples, maybe 6}"),
        ("(5, 0)", "(x, y) = (0, 5)"),
        ("5", "(x, y) = (5, 0)"),
    ],
)
def test_real_world_forms_keep_their_meaning(gold, answer):
    # a thin space after a comma separates a list; `±3` is two values; `2·3` is undone work
    assert judge(gold, boxed(answer)).score == 0.0


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
    ("(-\\infty, -2) \\cup (3, \\infty)", "x < -2 \\text{ and } x > 3"),  # empty, not a union
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
    # an <answer> tag and a box stating different answers
    ("3", "<answer>4</answer> so \\boxed{3}"),
    ("3", "\\boxed{3} <answer>4</answer>"),
    # a zero-width character hiding a box from the reader but not from a renderer
    ("3", "\\box\u200bed{4} \\boxed{3}"),
    # a second value hidden in words
    ("3", "\\boxed{3 \\text{apples, maybe 4}}"),
    ("\\sqrt{2}", "\\boxed{\\sqrt{2} \\text{ maybe } \\sqrt{3}}"),  # math-verify read sqrt(2)
    ("\\sqrt{2}", "\\boxed{\\sqrt{2} \\textbf{ or } \\sqrt{3}}"),
    ("\\sqrt{2}", "\\boxed{\\sqrt{2}\\ \\mathrm{or}\\ \\sqrt{3}}"),
    ("\\sqrt{2}", "\\boxed{\\sqrt{2} \\text{ (or 3)}}"),
    # words that change the value are not units
    ("5", "\\boxed{5!}"),
    ("5", "\\boxed{5 \\text{ wrong}}"),
    ("5", "\\boxed{5 \\text{ below zero}}"),
    ("5", "\\boxed{5 \\text{ bn}}"),
    ("5", "\\boxed{5 \\text{ tenths}}"),
    # the question restated: a condition instead of its solution
    ("(4, \\infty)", "\\boxed{2x - 3 > 5}"),
    ("[-1, 3]", "\\boxed{x^2 - 2x - 3 \\le 0}"),
    ("x > 4", "\\boxed{2x - 3 > 5}"),
    # ... a polynomial not in the asked form ("write it expanded", "factor")
    ("x^{3} - 4x^{2} + x + 6", "\\boxed{(x+1)(x-2)(x-3)}"),
    ("x^{2} + 5x + 6", "\\boxed{(x+2)(x+3)}"),
    ("2x + 2", "\\boxed{2(x+1)}"),
    ("(x+2)(x+3)", "\\boxed{x^2+5x+6}"),
    ("(x+1)^{2}", "\\boxed{x^2+2x+1}"),
    ("(x+2)(x+3)", "\\boxed{\\frac{(x^2+5x+6)(x+1)}{x+1}}"),  # neither form: not a polynomial
    ("(x-2)(x+2)(x^{2}+4)", "\\boxed{(x^2-4)(x^2+4)}"),  # "factor completely": halfway
    ("x^{2}(x+1)", "\\boxed{x(x^2+x)}"),
    # ... or an operation left for the verifier to do
    ("\\frac{\\sqrt{3}}{2}", "\\boxed{\\sin(\\pi/3)}"),
    ("\\frac{\\sqrt{3}}{2}", "\\boxed{sin(pi/3)}"),
    ("\\frac{\\pi}{3}", "\\boxed{\\arccos\\frac{1}{2}}"),
    ("\\pi", "\\boxed{\\int_0^1 \\frac{4}{1+x^2}\\,dx}"),
    ("2\\pi", "\\boxed{\\lim_{x \\to 0} 2\\pi}"),
    ("2\\pi", "\\boxed{\\sum_{k=1}^{2} \\pi}"),
    ("\\sqrt{2}", "\\boxed{|-\\sqrt{2}|}"),
    ("2x", "\\boxed{\\frac{d}{dx} x^2}"),
]


@pytest.mark.parametrize(("gold", "reply"), HACKS)
def test_hacks_score_zero(gold, reply):
    verdict = judge(gold, reply)
    assert verdict.score == 0.0, verdict
    assert verdict.status in (Status.INCORRECT, Status.UNPARSABLE)
    assert not verdict.infra_error


def test_too_many_final_answers_are_a_hedge_judged_without_parsing():
    reply = "".join(f"\\boxed{{{value}}}" for value in range(100_000))
    verdict = judge("5", reply)
    assert verdict.status is Status.INCORRECT
    assert "more than" in verdict.details
    assert len(verdict.extracted) < 200


def test_final_form_details_name_the_rule_not_the_gold():
    assert "expanded" in judge("x^{2} + 5x + 6", boxed("(x+2)(x+3)")).details
    assert "factored" in judge("(x+2)(x+3)", boxed("x^2+5x+6")).details
    assert "condition" in judge("(4, \\infty)", boxed("2x - 3 > 5")).details
    assert "trigonometric" in judge("\\frac{\\sqrt{3}}{2}", boxed("\\sin(\\pi/3)")).details


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
    assert judge("x^{2} + 5x + 6", "\\boxed{(x+2)(x+3)}", lenient).is_correct
    assert judge("(4, \\infty)", "\\boxed{2x - 3 > 5}", lenient).is_correct
    assert judge("\\frac{\\sqrt{3}}{2}", "\\boxed{\\sin(\\pi/3)}", lenient).is_correct
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


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        ("\\frac{\\sqrt{3}}{2} + \\pi - e^{2} + \\infty", set()),
        ("\\sin x + \\operatorname{cos}(x) + tan(x)", {"trigonometric"}),
        ("\\ln 3 - log(2)", {"logarithm"}),
        ("5! + \\binom{5}{2}", {"factorial", "binomial"}),
        ("1\\!000 + 2\\,5", set()),  # a negative thin space is no factorial
        ("|x| + \\left\\lvert y \\right\\rvert", {"absolute value"}),
        ("\\frac{d}{dx} x^2 + \\frac{\\mathrm{d}}{\\mathrm{d}t} t", {"derivative"}),
        ("\\lim_{n \\to \\infty} \\sum_{k=1}^n \\int_0^1 x^k dx", {"limit", "sum", "integral"}),
    ],
)
def test_operations_are_found_by_kind(text, kinds):
    assert operations(text) == kinds


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
        ("0.1\\overline{6}", "scalar", (Fraction(1, 6),)),
        ("\\boxed{{-2}}", "scalar", (-2,)),
    ],
)
def test_read_literal(text, kind, values):
    literal = read_literal(text)
    assert literal is not None
    assert literal.kind == kind
    assert literal.values == tuple(Fraction(value) for value in values)


@pytest.mark.parametrize(
    "text",
    [
        "47 + 38",
        "\\sqrt{4}",
        "5 million",
        "2^{3}",
        "x",
        "1 + \\frac{1}{2}",  # a mixed number (`1 \\frac{1}{2}`) is read; a sum is not
        "1 \\frac{3}{2}",
        "",
        "3 x",
        "5!",
        "3\\text{ }4",
        "3 \\text{apples, maybe 4}",
    ],
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


# The plain-number policy of docs/math.md ("Plain numbers: accepted and refused forms"): the forms
# answer keys use for the same simplified value score 1; restatements of a computation score 0.
PLAIN_NUMBER_ACCEPTED = [
    ("\\frac{5}{2}", "2\\frac{1}{2}"),  # a mixed number in LaTeX
    ("\\frac{5}{2}", "2 \\frac{1}{2}"),
    ("\\frac{5}{2}", "2\\,\\tfrac12"),
    ("\\frac{5}{2}", "2\\dfrac{1}{2} \\text{ cups}"),
    ("-\\frac{5}{2}", "-2\\frac{1}{2}"),  # the sign is the whole number's
    ("\\frac{13}{9}", "1\\frac{4}{9}"),
    ("2.5", "2\\frac{1}{2}"),
    ("2\\frac{1}{2}", "\\frac{5}{2}"),  # a mixed-number gold (MATH writes some)
]
PLAIN_NUMBER_ACCEPTED_TEXT = [
    ("\\frac{5}{2}", "The answer is 2 1/2."),  # a mixed number in plain text
    ("\\frac{31}{4}", "The answer is 7 3/4 hours."),
]
PLAIN_NUMBER_REFUSED = [
    ("\\frac{5}{2}", "2+\\frac{1}{2}"),  # an operation left undone
    ("\\frac{5}{2}", "2 \\cdot \\frac{5}{4}"),
    ("\\frac{5}{2}", "2\\frac{2}{4}"),  # its fraction is not in lowest terms
    ("\\frac{7}{2}", "2\\frac{3}{2}"),  # an improper fraction part: no mixed number
    ("\\frac{1}{2}", "0\\frac{1}{2}"),  # no whole part
    ("1", "2\\frac{1}{2}"),  # never read as 2 times 1/2
    ("\\frac{21}{2}", "21/2 + 0"),
    ("\\frac{5}{2}", "-2\\frac{1}{2}"),
    ("\\frac{5}{2}", "2\\frac{1}{3}"),
]


@pytest.mark.parametrize(("gold", "answer"), PLAIN_NUMBER_ACCEPTED)
def test_mixed_numbers_answer_their_value(gold, answer):
    verdict = judge(gold, boxed(answer))
    assert verdict.status is Status.CORRECT, verdict


@pytest.mark.parametrize(("gold", "reply"), PLAIN_NUMBER_ACCEPTED_TEXT)
def test_mixed_numbers_in_plain_text_answer_their_value(gold, reply):
    verdict = judge(gold, reply)
    assert verdict.status is Status.CORRECT, verdict


@pytest.mark.parametrize(("gold", "answer"), PLAIN_NUMBER_REFUSED)
def test_restatements_and_malformed_mixed_numbers_score_zero(gold, answer):
    verdict = judge(gold, boxed(answer))
    assert verdict.score == 0.0 and verdict.status is Status.INCORRECT, verdict


def test_a_mixed_number_is_read_exactly():
    assert read_literal("2\\frac{1}{2}").values == (Fraction(5, 2),)
    assert read_literal("-3 1/4").values == (Fraction(-13, 4),)
    assert read_literal("21/2").values == (Fraction(21, 2),)  # no space: a plain fraction
    assert read_literal("2\\frac{2}{4}").simplest is False
