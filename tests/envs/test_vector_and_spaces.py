"""Vectorised use the Gymnasium way, and the permissive TextSpace."""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from rlvr.envs import TextSpace, Verdict, register_task_env
from tests.envs.toy_envs import exact_match

TASKS = [
    {"prompt": "Écris « bonjour » — 中文 π ✓", "answer": "bonjour"},
    {"prompt": "Say hello", "answer": "hello"},
    {"prompt": "Say bye\nin two lines", "answer": "bye"},
]


@pytest.fixture(scope="module")
def env_id() -> str:
    register_task_env("rlvrtest/Words-v0", TASKS, exact_match, override=True)
    return "rlvrtest/Words-v0"


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_make_vec_with_autoreset(env_id, mode):
    envs = gym.make_vec(env_id, num_envs=4, vectorization_mode=mode)
    try:
        obs, info = envs.reset(seed=5)
        assert isinstance(obs, tuple) and all(isinstance(o, str) for o in obs)
        assert set(obs) <= {task["prompt"] for task in TASKS}
        answers = [next(t["answer"] for t in TASKS if t["prompt"] == o) for o in obs]
        obs2, rewards, terminated, truncated, info = envs.step(answers)
        assert rewards.tolist() == [1.0] * 4
        assert terminated.all() and not truncated.any()
        assert list(info["verdict"]["status"]) == ["correct"] * 4
        assert obs2 == ("Correct.",) * 4
        # next step autoresets (Gymnasium's next-step mode): the action is ignored, prompts return
        obs3, rewards, terminated, _, _ = envs.step(["ignored"] * 4)
        assert set(obs3) <= {task["prompt"] for task in TASKS}
        assert rewards.tolist() == [0.0] * 4 and not terminated.any()
    finally:
        envs.close()


def test_async_observations_are_snapshots(env_id):
    envs = gym.make_vec(env_id, num_envs=2, vectorization_mode="async")
    try:
        first, _ = envs.reset(seed=1)
        kept = tuple(first)
        envs.step(["x", "y"])
        assert first == kept  # later steps must not rewrite what the user already holds
    finally:
        envs.close()


def test_async_matches_sync(env_id):
    results = {}
    for mode in ("sync", "async"):
        envs = gym.make_vec(env_id, num_envs=3, vectorization_mode=mode)
        obs, _ = envs.reset(seed=11)
        step = envs.step(["bonjour", "hello", "bye"])
        results[mode] = (obs, step[0], step[1].tolist())
        envs.close()
    assert results["sync"] == results["async"]


def test_text_space_accepts_any_string_up_to_max_length():
    space = TextSpace(max_length=10)
    assert space.contains("") and space.contains("中文 ✓ \n\t{}")
    assert not space.contains("x" * 11)
    assert not space.contains(b"bytes") and not space.contains(None)


def test_text_space_sampling_is_seeded():
    a, b = TextSpace(seed=3), TextSpace(seed=3)
    samples = [a.sample() for _ in range(20)]
    assert samples == [b.sample() for _ in range(20)]
    assert all(a.contains(s) for s in samples)
    assert len(set(samples)) > 10


def test_text_space_copies_and_compares():
    space = TextSpace(max_length=50)
    assert copy.deepcopy(space) == space and space != TextSpace(max_length=51)
    with pytest.raises(ValueError, match="positive int"):
        TextSpace(max_length=0)


def test_text_too_long_for_shared_memory_names_the_fix():
    from gymnasium.vector.utils import create_shared_memory, write_to_shared_memory

    space = TextSpace(max_length=4)
    memory = create_shared_memory(space, n=1)
    with pytest.raises(ValueError, match="shared_memory.*max_text_length"):
        write_to_shared_memory(space, 0, "this is too long", memory)
    write_to_shared_memory(space, 0, "中文✓π", memory)  # 4 chars, 12 bytes: fits
    from gymnasium.vector.utils import read_from_shared_memory

    assert tuple(read_from_shared_memory(space, memory, n=1)) == ("中文✓π",)
    assert np.frombuffer(memory.get_obj(), dtype=np.uint8).size == 4 + 16


def echo_reply(reply: str, task: Any) -> Verdict:
    return Verdict.incorrect(reply, details=f"you said {reply}")


def test_async_passes_an_observation_with_a_lone_surrogate():
    # A decoded policy reply can hold lone surrogates (e.g. errors="surrogateescape"); an env
    # that echoes it must not crash its async worker, and the text must come back unchanged.
    register_task_env("rlvrtest/Echo-v0", TASKS[:1], echo_reply, override=True)
    reply = "bad \ud800 byte \udcff"
    envs = gym.make_vec("rlvrtest/Echo-v0", num_envs=2, vectorization_mode="async")
    try:
        envs.reset(seed=0)
        obs, rewards, *_ = envs.step([reply, "fine"])
    finally:
        envs.close()
    assert obs[0].endswith(f"you said {reply}") and obs[1].endswith("you said fine")
    assert rewards.tolist() == [0.0, 0.0]
