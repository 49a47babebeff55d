"""Every registered multi-agent env passes PettingZoo's own tests and ours, among them
`rlvr.envs.multiagent.check_env` (the checker users run on their own envs)."""

from __future__ import annotations

import math

import pytest
from gymnasium.utils.env_checker import data_equivalence
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, seed_test
from pettingzoo.utils.conversions import aec_to_parallel

from rlvr.envs.errors import ActionError, EnvConfigError, NotTextError
from rlvr.envs.multiagent import (
    RetiredEnvWarning,
    TextAECEnv,
    check_env,
    env_ids,
    make,
    make_parallel,
    register,
    registry,
    spec,
)
from rlvr.envs.registration import multiagent_env_ids
from tests.test_registered_envs import CARD_SECTIONS as SINGLE_AGENT_CARD_SECTIONS

ENV_IDS = multiagent_env_ids()
INFO_KEYS = {"task_id", "messages", "turn", "to_move", "infra_error"}
CARD_SECTIONS = ("Description", "Agents", *SINGLE_AGENT_CARD_SECTIONS[1:])

# api_test warns that text is not a NumPy array / Box space (advice for numeric envs), and
# resets with options={"options": 1}, which our envs warn about.
pytestmark = [
    pytest.mark.filterwarnings("ignore::UserWarning:pettingzoo"),
    pytest.mark.filterwarnings("ignore:.*ignores unknown reset options \\['options'\\]"),
]


def test_the_builtin_envs_are_registered():
    assert ENV_IDS == [
        "rlvr/Connect4-v0",
        "rlvr/TicTacToe-v0",
        "rlvr/Nim-v0",
        "rlvr/Negotiation-v0",
        "rlvr/Debate-v0",
        "rlvr/ProposerSolver-v1",
        "rlvr/SQLDebate-v0",
        "rlvr/CodeProposerSolver-v1",
    ]
    assert env_ids()[: len(ENV_IDS)] == ENV_IDS


@pytest.mark.parametrize(
    "env_id",
    ENV_IDS,
)
def test_check_env(env_id):
    env = make(env_id)
    try:
        check_env(env)
    finally:
        env.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_pettingzoo_api_test(env_id):
    api_test(make(env_id), num_cycles=200)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_pettingzoo_parallel_api_test(env_id):
    parallel_api_test(make_parallel(env_id), num_cycles=200)
    env = make(env_id)
    if env.metadata["is_parallelizable"]:  # PettingZoo's own conversion works too
        parallel_api_test(aec_to_parallel(env), num_cycles=200)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_pettingzoo_seed_tests(env_id):
    seed_test(lambda: make(env_id), num_cycles=200)
    parallel_seed_test(lambda: make_parallel(env_id), num_cycles=200)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_env_card(env_id):
    cls = spec(env_id).load()
    for section in CARD_SECTIONS:
        assert f"## {section}" in (cls.__doc__ or ""), f"{env_id}'s card lacks '{section}'"
    module = __import__(cls.__module__, fromlist=["env"])
    assert callable(module.env) and callable(module.parallel_env) and module.raw_env is cls


def play(env: TextAECEnv, seed: int) -> tuple[list, dict[str, list[str]]]:
    """One episode with actions sampled from the (seeded) action spaces: a record of everything
    each agent was given, and each agent's actions."""
    env.reset(seed=seed)
    for index, agent in enumerate(env.possible_agents):
        env.action_space(agent).seed(seed + index)
    record, actions = [], {agent: [] for agent in env.possible_agents}
    for agent in env.agent_iter(500):
        observation, reward, terminated, truncated, info = env.last()
        record.append((agent, observation, reward, terminated, truncated, info))
        if terminated or truncated:
            env.step(None)
            continue
        action = env.action_space(agent).sample(info.get("action_mask"))
        actions[agent].append(action)
        env.step(action)
    return record, actions


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_episodes_keep_the_contract(env_id):
    env = make(env_id)
    for seed in range(5):
        record, actions = play(env, seed)
        assert env.agents == []  # every episode ends
        for agent, observation, reward, terminated, _, info in record:
            assert isinstance(observation, str) and env.observation_space(agent).contains(
                observation
            )
            assert math.isfinite(reward) and -1.0 <= reward <= 1.0
            assert set(info) >= INFO_KEYS, f"{agent} info lacks {INFO_KEYS - set(info)}"
            assert info["infra_error"] is False  # sampled junk is never our failure
            assert info["to_move"] is not terminated  # last() is called for the agent to move
        for agent in env.possible_agents:
            view = next(info["messages"] for a, *_, info in reversed(record) if a == agent)
            roles = [message["role"] for message in view]
            assert roles == ["user", "assistant"] * (len(roles) // 2) + ["user"] * (len(roles) % 2)
            own = [message["content"] for message in view if message["role"] == "assistant"]
            assert own == actions[agent], f"{agent}'s view must hold exactly its own replies"


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_the_same_seed_and_replies_give_the_same_episode(env_id):
    first, second = make(env_id), make(env_id)
    for seed in (0, 7):
        assert data_equivalence(play(first, seed), play(second, seed))


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_bad_input_gets_clear_errors(env_id):
    env = make(env_id)
    env.reset(seed=0)
    mover = env.agent_selection
    with pytest.raises(NotTextError, match=f"{mover}'s action must be the reply as a str"):
        env.step(b"bytes")
    others = [agent for agent in env.agents if agent != mover]
    with pytest.raises(ActionError, match=f"it is {mover}'s turn"):
        env.step("hello", agent=others[0])
    while not env.terminations[env.agent_selection]:
        env.step("")  # an empty reply is a malformed or empty move, never a crash
    with pytest.raises(ActionError, match="episode has ended"):
        env.step("one more")


def test_make_and_register_report_mistakes_clearly():
    with pytest.raises(EnvConfigError, match="did you mean"):
        make("rlvr/Connect-v0")
    with pytest.raises(EnvConfigError, match="already registered"):
        register("rlvr/Connect4-v0", "rlvr.envs.multiagent.connect4:Connect4Env")
    with pytest.raises(EnvConfigError, match="look like 'myorg/Name-v0'"):
        register("Connect4", "rlvr.envs.multiagent.connect4:Connect4Env")


def test_a_user_registered_env_is_made_like_a_builtin_one():
    from rlvr.envs.multiagent.connect4 import Connect4Env

    register("rlvrtest/SmallConnect4-v0", Connect4Env, kwargs={"max_text_length": 2000})
    try:
        env = make("rlvrtest/SmallConnect4-v0")
        assert env.action_space("player_0").max_length == 2000
        assert make("rlvrtest/SmallConnect4-v0", max_text_length=900).max_text_length == 900
        api_test(env, num_cycles=50)
        check_env(env)
        with pytest.raises(EnvConfigError, match="does not fit max_text_length=300"):
            make("rlvrtest/SmallConnect4-v0", max_text_length=300).reset()
    finally:
        del registry["rlvrtest/SmallConnect4-v0"]


@pytest.mark.parametrize(
    ("retired", "successor"),
    [
        ("rlvr/ProposerSolver-v0", "rlvr/ProposerSolver-v1"),
        ("rlvr/CodeProposerSolver-v0", "rlvr/CodeProposerSolver-v1"),
    ],
)
def test_a_retired_id_makes_its_successor_and_says_so(retired, successor):
    with pytest.warns(RetiredEnvWarning, match=f"{retired} is retired.*{successor}"):
        env = make(retired)
    try:
        assert type(env) is type(make(successor))
        assert retired not in env_ids()
    finally:
        env.close()
