"""Small environments and models for the agents tests (no dependency on other env families).

`test/Add-v0`: two-digit addition, single turn, with train/test splits; the reference reply is
`The answer is \\boxed{85}.` like rlvr/Math-v0's arithmetic family.
`test/Retry-v0`: the same task, but a wrong reply gets "Incorrect, try again." and one more turn
(reward 1 per correct turn... only the final turn is judged), so rollouts are multi-turn.
`test/Flaky-v0`: the addition env whose verifier fails (an infrastructure error) on odd numbers.
"""

from __future__ import annotations

import re
from typing import Any

import gymnasium as gym
from rlvr.envs import Outcome, Problem, ProceduralSource, VerifiableEnv
from rlvr.verifiers import Verdict

_BOXED = re.compile(r"\\boxed\{(-?\d+)\}")


def _addition(rng, difficulty: int) -> Problem:
    a, b = (int(x) for x in rng.integers(10, 100, size=2))
    return Problem(prompt=f"What is {a} + {b}?", answer=a + b)


def _verify(reply: str, task) -> Verdict:
    found = _BOXED.findall(reply)
    if not found:
        return Verdict.unparsable("no \\boxed{} answer")
    ok = int(found[-1]) == task.answer
    return Verdict.correct(found[-1]) if ok else Verdict.incorrect(found[-1])


def _flaky_verify(reply: str, task) -> Verdict:
    if task.answer % 2:
        return Verdict.error("verifier backend unavailable")
    return _verify(reply, task)


class AdditionEnv(VerifiableEnv):
    def __init__(self, split: str = "train", flaky: bool = False, **kwargs: Any) -> None:
        source = ProceduralSource(_addition, name="add", split=split, test_fraction=0.2)
        super().__init__(source, _flaky_verify if flaky else _verify, **kwargs)

    def reference_reply(self, task) -> str:
        return f"The answer is \\boxed{{{task.answer}}}."


class RetryEnv(AdditionEnv):
    """Two tries: a wrong first reply gets feedback and a second turn."""

    def _answer(self, reply: str) -> Outcome:
        outcome = super()._answer(reply)
        if outcome.reward < 1.0 and self.turn == 0 and not outcome.infra_error:
            outcome.terminated = False
            outcome.feedback = "Incorrect, try again."
        return outcome


def register() -> None:
    for env_id, entry in (
        ("test/Add-v0", AdditionEnv),
        ("test/Retry-v0", RetryEnv),
    ):
        if env_id not in gym.registry:
            gym.register(env_id, entry_point=entry)
    if "test/Flaky-v0" not in gym.registry:
        gym.register("test/Flaky-v0", entry_point=AdditionEnv, kwargs={"flaky": True})
