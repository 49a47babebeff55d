"""Every built-in environment passes `check_env` (Gymnasium's checker plus ours)."""

from __future__ import annotations

import gymnasium as gym
import pytest

import rlvr.envs
from rlvr.envs import Judge, TextEnv, check_env
from rlvr.envs.interactions import Interaction

ENV_IDS = rlvr.envs.rlvr_env_ids()
EPISODE_HOOKS = ("_start", "_answer", "oracle_reply")
CARD_SECTIONS = (
    "Description",
    "Action Space",
    "Observation Space",
    "Rewards",
    "Starting State",
    "Episode End",
    "Arguments",
    "Version History",
)


def test_builtin_envs_are_registered():
    assert "rlvr/Math-v0" in ENV_IDS
    assert all(env_id in gym.registry for env_id in ENV_IDS)
    assert len(set(ENV_IDS)) == len(ENV_IDS)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_check_env(env_id):
    env = gym.make(env_id)
    try:
        check_env(env)
    finally:
        env.close()


def episode_code_of_its_own(env: gym.Env) -> list[str]:
    """What keeps `env` from being `TextEnv(judge, interaction)`: the hooks it overrides, or the
    part it lacks (empty for an env written the one way, docs/design.md)."""
    base = env.unwrapped
    if not isinstance(base, TextEnv):
        return [f"{type(base).__name__} is not a TextEnv"]
    problems = [
        f"{type(base).__name__} overrides TextEnv.{hook}"
        for hook in EPISODE_HOOKS
        if getattr(type(base), hook) is not getattr(TextEnv, hook)
    ]
    if not isinstance(base.judge, Judge):
        problems.append(f"{type(base).__name__} has no judge")
    if not isinstance(base.interaction, Interaction):
        problems.append(f"{type(base).__name__} has no interaction")
    return problems


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_env_is_a_judge_and_an_interaction(env_id):
    env = gym.make(env_id)
    try:
        assert episode_code_of_its_own(env) == []
    finally:
        env.close()


def test_an_env_running_episodes_of_its_own_is_told_apart():
    from tests.envs.toy_envs import GuessNumberEnv  # implements the hooks itself

    assert episode_code_of_its_own(GuessNumberEnv()) == [
        f"GuessNumberEnv overrides TextEnv.{hook}" for hook in EPISODE_HOOKS
    ] + ["GuessNumberEnv has no judge", "GuessNumberEnv has no interaction"]


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_env_card(env_id):
    entry = gym.spec(env_id).entry_point
    module_name, _, class_name = entry.partition(":")
    cls = getattr(__import__(module_name, fromlist=[class_name]), class_name)
    for section in CARD_SECTIONS:
        assert f"## {section}" in (cls.__doc__ or ""), f"{env_id}'s env card lacks '{section}'"


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_a_refused_first_reset_leaves_the_env_usable(env_id):
    # Gymnasium 1.4's PassiveEnvChecker breaks the first step() when the first reset() raised
    # (TypeError: cannot unpack non-iterable NoneType): a clear error must not cost the env.
    env = gym.make(env_id)
    try:
        with pytest.raises(rlvr.envs.EnvConfigError, match="unknown reset options"):
            env.reset(options={"bogus": 1})
        env.reset(seed=0)
        _, reward, *_ = env.step(env.unwrapped.oracle_reply())
        assert 0.0 <= reward <= 1.0
    finally:
        env.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_an_episode_the_agent_finishes_is_terminated_not_truncated(env_id):
    # truncated=True tells learners and leaderboards a turn limit cut the episode short.
    env = gym.make(env_id)
    try:
        env.reset(seed=0)
        for _ in range(50):
            _, _, terminated, truncated, _ = env.step(env.unwrapped.oracle_reply())
            if terminated or truncated:
                break
        assert (terminated, truncated) == (True, False)
    finally:
        env.close()
