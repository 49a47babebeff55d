"""Reading final answers out of replies (no judging)."""

from __future__ import annotations

import time

import pytest

from rlvr.verifiers.math import extract_answers, find_boxed, outside_think


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("so \\boxed{42}.", ["42"]),
        ("\\boxed{\\frac{1}{2}}", ["\\frac{1}{2}"]),
        ("\\boxed{\\{1, 2\\}}", ["\\{1, 2\\}"]),  # escaped braces do not close the box
        ("\\boxed{a^{b^{c}}} then \\boxed{7}", ["a^{b^{c}}", "7"]),
        ("\\boxed 5.", ["5"]),
        ("\\boxed  12 apples", ["12"]),
        ("\\fbox{3}", ["3"]),
        ("\\boxed{\\boxed{4}}", ["\\boxed{4}"]),  # the inner box is part of the outer one
        ("\\boxed{unclosed", []),
        ("\\boxedx{1}", []),  # another command
        ("$\\boxed{-3}$", ["-3"]),
    ],
)
def test_find_boxed(text, expected):
    assert find_boxed(text) == expected


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("no tags here", "no tags here"),
        ("<think>maybe 3</think>It is 4", "It is 4"),
        ("<think>a</think>b<think>c</think>d", "bd"),
        ("reasoning the template opened</think> answer", " answer"),  # orphan close
        ("before <think>never closed", None),
        ("<think>a</think> b <think>again", None),
    ],
)
def test_outside_think(reply, expected):
    assert outside_think(reply) == expected


def test_boxes_and_tags_both_count_and_win_over_phrases():
    extraction = extract_answers("<answer>3</answer> The answer is 4. \\boxed{5}")
    assert extraction.candidates == ("5", "3")  # two final answers: the verifier sees a hedge
    assert extraction.source == "boxed"
    assert extract_answers("The answer is 4. \\boxed{5}").candidates == ("5",)
    # a tag around a box states that box once
    assert extract_answers("<answer>so \\boxed{5}</answer>").candidates == ("5",)


def test_every_box_is_a_candidate():
    assert extract_answers("\\boxed{3} or maybe \\boxed{4}").candidates == ("3", "4")


def test_empty_boxes_are_ignored():
    extraction = extract_answers("Put it in \\boxed{} like \\boxed{ }")
    assert extraction.candidates == ()
    assert "no final answer" in extraction.problem


def test_answer_tags():
    extraction = extract_answers("work...\n<answer> 17 </answer>")
    assert extraction.candidates == ("17",)
    assert extraction.source == "answer_tag"
    # a phrase inside the tag is read as a phrase
    assert extract_answers("<answer>The answer is 9.</answer>").candidates == ("9",)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("So the answer is 42.", ("42",)),
        ("The final answer is $\\frac{3}{4}$. I hope it is correct.", ("\\frac{3}{4}",)),
        ("Final Answer: 3.5", ("3.5",)),
        ("**Answer:** **12**", ("12",)),
        ("Natalia sold 72 clips.\n#### 72", ("72",)),
        ("The answer is 3, 4 or 5", ("3, 4 or 5",)),
        ("The answer is not obvious. After work, the answer is 8.", ("8",)),  # prose skipped
        ("The answer is x.", ("x",)),
        ("The answer is 3. Wait, the answer is 4.", ("3", "4")),
        # Llama's MATH format: one phrase inside another states one answer
        ("Final Answer: The final answer is $18$. I hope it is correct.", ("18",)),
        ("**Final Answer:** the answer is 18", ("18",)),
        ("Answer: e, the answer is 5", ("e, the answer is 5", "5")),  # a value between: both
        ("Answer: x\nThe answer is 5", ("x", "5")),
        ("Final Answer:\n\nThe final answer is 18.", ("18",)),
        # markdown: bold label, heading with the answer on the next line
        ("**Final Answer**: 18", ("18",)),
        ("**Answer**: 18", ("18",)),
        ("### Final Answer\n\n18", ("18",)),
        ("**Final Answer**\n$$18$$", ("18",)),
        ("**Final Answer:**\n\n18", ("18",)),
        ("To get the final answer\nwe add 2 and 3.", ()),  # prose, not a heading
    ],
)
def test_phrases(reply, expected):
    assert extract_answers(reply).candidates == expected


def test_answers_are_read_only_outside_think():
    assert extract_answers("<think>\\boxed{85}</think> \\boxed{84}").candidates == ("84",)
    assert extract_answers("<think>the answer is 85</think>").candidates == ()
    unclosed = extract_answers("<think>the answer is \\boxed{85}")
    assert unclosed.candidates == ()
    assert "never closes" in unclosed.problem


def test_no_answer():
    extraction = extract_answers("I think it is about 85 or so")
    assert extraction.candidates == ()
    assert extraction.source == "none"


def test_extraction_is_linear_on_adversarial_text():
    # Many unclosed openers of every kind: a backtracking pattern would take minutes here.
    reply = ("\\boxed{" * 5000) + ("<answer>" * 5000) + ("answer is " * 5000)
    start = time.process_time()
    extract_answers(reply)
    extract_answers("answer" + " " * 100_000 + "x")  # a phrase with space but no colon
    extract_answers(("\n" + " " * 50) * 2000 + "final answer")  # heading-like lines
    extract_answers("</think>" + "{" * 60000)
    assert time.process_time() - start < 2.0
