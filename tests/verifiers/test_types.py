"""Verdict is data with checked invariants; FunctionVerifier adapts plain functions."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rlvr.verifiers import FunctionVerifier, Status, Task, Verdict

TASK = Task("t1", "2+2?", "4")


def test_verdict_constructors_and_round_trip():
    verdicts = [
        Verdict.correct("4"),
        Verdict.incorrect("5", "off by one", score=0.25, tests_passed=1),
        Verdict.unparsable("no boxed answer"),
        Verdict.error("sandbox died"),
    ]
    for verdict in verdicts:
        assert Verdict.from_dict(verdict.to_dict()) == verdict
    assert [v.infra_error for v in verdicts] == [False, False, False, True]
    assert verdicts[1].data == {"tests_passed": 1}
    assert verdicts[0].to_dict()["status"] == "correct"


def test_verdict_scores_are_plain_floats_so_info_serialises():
    verdict = Verdict.incorrect(score=np.float32(0.5))
    assert type(verdict.score) is float and json.dumps(verdict.to_dict())


@pytest.mark.parametrize(
    "args, message",
    [
        ((Status.ERROR, 0.0), "score=None"),
        ((Status.INCORRECT, None), "within \\[0, 1\\]"),
        ((Status.INCORRECT, 1.5), "within \\[0, 1\\]"),
        ((Status.CORRECT, 0.5), "score 1.0"),
        (("maybe", 0.0), "not a valid Status"),
    ],
)
def test_verdict_rejects_inconsistent_values(args, message):
    with pytest.raises(ValueError, match=message):
        Verdict(*args)


@pytest.mark.parametrize(
    "returned, status, score",
    [
        (True, "correct", 1.0),
        (False, "incorrect", 0.0),
        (1, "correct", 1.0),
        (0.5, "incorrect", 0.5),
        (Verdict.unparsable("x"), "unparsable", 0.0),
        # what np.isclose / np.mean return: a user's check must not become an infra error
        (np.True_, "correct", 1.0),
        (np.False_, "incorrect", 0.0),
        (np.float32(0.5), "incorrect", 0.5),
        (np.int64(1), "correct", 1.0),
    ],
)
def test_function_verifier_converts_results(returned, status, score):
    verdict = FunctionVerifier(lambda reply, task: returned).verify("4", TASK)
    assert (verdict.status.value, verdict.score) == (status, score)


def test_function_verifier_turns_exceptions_into_errors(caplog):
    def explode(reply, task):
        raise KeyError("missing column")

    verdict = FunctionVerifier(explode).verify("4", TASK)
    assert verdict.status is Status.ERROR and verdict.score is None
    assert "explode" in verdict.details and "KeyError" in verdict.details
    assert "explode raised on task t1" in caplog.text


def test_function_verifier_needs_a_callable():
    with pytest.raises(TypeError, match="callable"):
        FunctionVerifier("not a function")
