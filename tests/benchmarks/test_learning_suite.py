"""The learning suite's self-correction warm start: its demonstrations are episodes of the env
itself, with the right/wrong mix asked for, and only the replies to learn are trained on."""

from __future__ import annotations

import sys
from pathlib import Path

import gymnasium as gym
import pytest

import rlvr  # noqa: F401  (registers the environments)
from rlvr.verifiers.math.extract import find_boxed

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import learning_suite as suite

TASK = suite.TASKS["selfcorrect"]


def replay(seed: int, replies: list[str]) -> tuple[list[dict], bool]:
    """The env's messages after playing `replies` on the task of `seed`, and whether it ended."""
    env = gym.make(TASK.env_id, **dict(TASK.kwargs))
    _, info = env.reset(seed=seed)
    terminated = False
    for reply in replies:
        _, _, terminated, _, info = env.step(reply)
    env.close()
    return info["messages"], terminated


@pytest.mark.parametrize(("count", "share"), [(12, 0.25), (10, 0.0), (6, 1.0)])
def test_retry_demos_mix_right_and_wrong_first_attempts_as_configured(count, share):
    demos = suite.retry_demos(TASK, count, share, seed=3)
    assert len(demos) == count
    right = [len(replies) == 1 for _, replies, _ in demos]
    assert sum(right) == round(count * share)
    for messages, replies, learnt in demos:
        assert learnt == replies[-1:]  # only the answer that is right is learnt
        assert [m["role"] for m in messages][-1] == "assistant"


def test_retry_demos_are_the_envs_own_episodes():
    demos = suite.retry_demos(TASK, 16, 0.25, seed=7)
    wrong_first = 0
    for i, (messages, replies, _) in enumerate(demos):
        said = [messages[k]["content"] for k in replies]
        played, terminated = replay(7 + i, said)
        assert terminated
        # the same prompt, feedback and replies, to the character, minus the closing "Correct."
        assert messages == played[: replies[-1] + 1]
        if len(replies) == 2:
            wrong_first += 1
            assert (
                messages[2]["content"] == "Your answer is incorrect.\nTry again (1 attempt left)."
            )
            first, second = (find_boxed(reply)[-1] for reply in said)
            assert first != second and 1 <= abs(int(first) - int(second)) <= 100
            _, ended = replay(7 + i, said[:1])
            assert not ended  # the first attempt really is wrong
    assert wrong_first == 12


def test_retry_demos_are_reproducible_and_seeded():
    assert suite.retry_demos(TASK, 8, 0.5, seed=1) == suite.retry_demos(TASK, 8, 0.5, seed=1)
    assert suite.retry_demos(TASK, 8, 0.5, seed=1) != suite.retry_demos(TASK, 8, 0.5, seed=2)


def test_retry_demos_reject_a_share_outside_0_1():
    with pytest.raises(ValueError, match="right_share must be in"):
        suite.retry_demos(TASK, 4, 1.5, seed=0)


def test_a_near_miss_needs_an_integer_answer():
    import numpy as np

    rng = np.random.default_rng(0)
    misses = {suite._near_miss("42", rng) for _ in range(200)}
    assert "42" not in misses and all(1 <= abs(int(m) - 42) <= 100 for m in misses)
    with pytest.raises(ValueError, match="integer answers"):
        suite._near_miss("3/4", rng)


def test_only_the_learnt_reply_of_a_demo_is_trained(tmp_path):
    pytest.importorskip("torch")
    from rlvr.agents.hf import HFPolicy
    from tests.agents.support import tiny_model

    policy = HFPolicy(tiny_model(tmp_path / "tiny"))
    messages, replies, learnt = next(d for d in suite.retry_demos(TASK, 8, 0.0, 0))
    ids, mask = suite._episode_ids(policy, messages, replies, learnt)
    everything = suite._episode_ids(policy, messages, replies)
    assert ids == everything[0] and len(mask) == len(ids)
    eos = policy.tokenizer.eos_token_id
    second = [*policy._encode(messages[3]["content"]), eos]
    first = [*policy._encode(messages[1]["content"]), eos]
    assert sum(mask) == len(second) and ids[-len(second) :] == second
    assert mask[-len(second) :] == [1] * len(second)
    assert sum(everything[1]) == len(first) + len(second)
