"""Reading answers and tagged blocks out of replies: the usual shapes, and adversarial replies
that made regular expressions take quadratic time."""

from __future__ import annotations

import time

import pytest

from rlvr.envs.replies import last_answer_line, last_tagged, shorten


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("I think so.\nAnswer: 42  ", "42"),
        ("answer = 1\nFinal answer: 7", "7"),
        ("Answer:\n\n  Velmora \nthanks", "Velmora"),
        ("Answer:\nAnswer: B", "B"),
        ("Answer:   ", ""),
        ("The answer is 5", None),
        ("", None),
    ],
)
def test_last_answer_line(reply, expected):
    assert last_answer_line(reply) == expected


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("<answer>A</answer> then <ANSWER>B</Answer>", "B"),
        ("<answer>A<answer>B</answer>", "B"),
        ("<answer>unclosed", None),
        ("</answer><answer>", None),
        ("no tags", None),
    ],
)
def test_last_tagged(reply, expected):
    assert last_tagged(reply, "answer") == expected


@pytest.mark.parametrize(
    "reply",
    ["\n" * 1_000_000, "\t\n" * 500_000, "<answer>" * 200_000, "answer:" + " " * 1_000_000 + "x"],
)
def test_adversarial_replies_are_read_in_linear_time(reply):
    start = time.process_time()
    last_answer_line(reply)
    last_tagged(reply, "answer")
    assert time.process_time() - start < 2.0  # the regular expressions took hours on these


def test_shorten_notes_what_it_cut():
    assert shorten("abc", 5) == "abc"
    assert shorten("x" * 10, 4) == "xxxx... [6 more characters]"
