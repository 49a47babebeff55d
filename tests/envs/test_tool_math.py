"""rlvr/ToolMath-v0: generated problems, their verifier, and the calculator trajectory."""

from __future__ import annotations

from fractions import Fraction

import gymnasium as gym
import pytest

import rlvr  # noqa: F401
from rlvr.envs import Task, check_env
from rlvr.envs.tool_math import NumericAnswerVerifier, ToolMathEnv
from rlvr.envs.tools.calculator import evaluate, format_number


def test_passes_check_env():
    env = gym.make("rlvr/ToolMath-v0")
    check_env(env)
    env.close()


@pytest.mark.parametrize("difficulty", [1, 2, 3])
def test_the_calculator_reproduces_every_gold_answer(difficulty):
    source = ToolMathEnv(difficulty=difficulty).inner.tasks
    families = set()
    for index in range(60):
        task = source[index]
        families.add(task.metadata["family"])
        computed = format_number(evaluate(task.metadata["expression"]))
        assert Fraction(computed) == Fraction(str(task.answer)), task.id
    assert len(families) >= 2


def test_sum_of_multiples_gold_matches_brute_force():
    source = ToolMathEnv(difficulty=3).inner.tasks
    checked = 0
    for index in range(40):
        task = source[index]
        if task.metadata["family"] != "multiples":
            continue
        numbers = [int(word) for word in task.prompt.replace("?", " ").split() if word.isdigit()]
        low, high, k = numbers[:3]
        assert task.answer == sum(n for n in range(low, high + 1) if n % k == 0)
        checked += 1
    assert checked >= 3


def test_train_and_test_splits_are_disjoint():
    train = {ToolMathEnv(split="train").inner.tasks[i].prompt for i in range(300)}
    test = {ToolMathEnv(split="test").inner.tasks[i].prompt for i in range(300)}
    assert not train & test


@pytest.mark.parametrize(
    ("reply", "answer", "status"),
    [
        ("so \\boxed{18126888}", 18126888, "correct"),
        ("\\boxed{18,126,888.}", 18126888, "correct"),
        ("Answer: 18126888", 18126888, "correct"),
        ("\\boxed{18126887}", 18126888, "incorrect"),
        ("\\boxed{25570.74}", "25570.74", "correct"),
        ("\\boxed{\\$25570.745}", "25570.74", "correct"),
        ("\\boxed{25570.76}", "25570.74", "incorrect"),
        ("\\boxed{<number>}", 5, "unparsable"),
        ("\\boxed{}", 5, "unparsable"),
        ("the answer is 5", 5, "unparsable"),
        ("\\boxed{5} no wait \\boxed{6}", 6, "correct"),
    ],
)
def test_numeric_verifier(reply, answer, status):
    verdict = NumericAnswerVerifier().verify(reply, Task("t", "q", answer))
    assert verdict.status.value == status


def test_oracle_computes_with_the_calculator_then_answers():
    env = gym.make("rlvr/ToolMath-v0")
    env.reset(seed=7)
    first = env.unwrapped.oracle_reply()
    assert first.startswith('<tool_call>{"name": "calculator"')
    observation, reward, terminated, _, info = env.step(first)
    assert (reward, terminated) == (0.0, False)
    assert info["tool_calls"][0]["ok"]
    second = env.unwrapped.oracle_reply()
    assert f"\\boxed{{{observation}}}" in second
    _, reward, terminated, _, info = env.step(second)
    assert (reward, terminated) == (1.0, True)
    assert info["verdict"]["status"] == "correct"
    env.close()


def test_a_policy_that_only_calls_tools_is_truncated():
    env = gym.make("rlvr/ToolMath-v0")
    env.reset(seed=0)
    call = '<tool_call>{"name": "calculator", "arguments": {"expression": "1+1"}}</tool_call>'
    total = 0.0
    turn = 0
    while turn < 20:
        turn += 1
        _, reward, terminated, truncated, _ = env.step(call)
        total += reward
        if terminated or truncated:
            break
    assert (turn, truncated, total) == (10, True, 0.0)
    env.close()
