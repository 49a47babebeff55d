"""The multi-agent base: bookkeeping, per-agent views, simultaneous rounds, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, seed_test
from pettingzoo.utils.conversions import aec_to_parallel

from rlvr.envs.errors import ActionError, NotTextError, ResetNeeded
from rlvr.envs.multiagent import MoveSpace, TextObservation, TextParallelEnv
from rlvr.envs.multiagent.connect4 import Connect4Env
from tests.envs.multiagent.toy import HighCardEnv

# api_test warns that text is not a NumPy array / Box space (advice for numeric envs), and
# resets with options={"options": 1}, which our envs warn about.
pytestmark = [
    pytest.mark.filterwarnings("ignore::UserWarning:pettingzoo"),
    pytest.mark.filterwarnings("ignore:.*ignores unknown reset options \\['options'\\]"),
]


def test_a_simultaneous_env_passes_pettingzoo_tests_in_both_apis():
    api_test(HighCardEnv(), num_cycles=50)
    parallel_api_test(TextParallelEnv(HighCardEnv()), num_cycles=50)
    parallel_api_test(aec_to_parallel(HighCardEnv()), num_cycles=50)  # PettingZoo's own wrapper
    seed_test(HighCardEnv)
    parallel_seed_test(lambda: TextParallelEnv(HighCardEnv()))


def test_no_mover_sees_another_move_of_the_same_round():
    env = HighCardEnv()
    env.reset(seed=0)
    env.step("7")
    assert env.agent_selection == "player_1"
    observation, *_ = env.last()
    assert "7" not in observation.replace(str(env.bonus["player_1"]), "")
    assert all(m["content"] != "7" for m in env.infos["player_1"]["messages"])
    assert env.rewards == {"player_0": 0.0, "player_1": 0.0}  # nothing resolved yet
    assert all(type(reward) is float for reward in env.rewards.values())  # not PettingZoo's 0


def test_rewards_accumulate_until_the_agent_acts_again():
    env = HighCardEnv(rounds=3)
    env.reset(seed=0)
    high = max(env.bonus, key=env.bonus.get)
    low = min(env.bonus, key=env.bonus.get)
    env.step("1")
    env.step("1")  # round 1 resolved: the higher bonus wins
    assert env.rewards == {high: 1.0, low: -1.0}
    assert env._cumulative_rewards == {high: 1.0, low: -1.0}
    assert env.infos[high]["rewards"] == {"round": 1.0}
    env.step("1")  # player_0 acts: its cumulative reward restarts, the round info goes
    assert env.rewards == {high: 0.0, low: 0.0}
    assert env._cumulative_rewards["player_0"] == 0.0
    assert "rewards" not in env.infos["player_0"]
    assert env.last()[1] == env._cumulative_rewards["player_1"] != 0.0


def test_views_alternate_and_hold_only_the_agents_own_replies():
    env = HighCardEnv(rounds=2)
    env.reset(seed=3)
    replies = {"player_0": ["1", "2"], "player_1": ["5", "6"]}
    for index in range(2):
        for agent in ("player_0", "player_1"):
            env.step(replies[agent][index], agent=agent)
    for agent in env.possible_agents:
        view = env.view(agent)
        roles = [message["role"] for message in view]
        assert roles == ["user", "assistant", "user", "assistant"]
        assert [m["content"] for m in view if m["role"] == "assistant"] == replies[agent]
        other = next(a for a in env.possible_agents if a != agent)
        assert str(env.bonus[other]) not in str(view)  # the other's secret never reaches it


def test_game_over_terminates_everyone_and_dead_steps_take_none():
    env = HighCardEnv(rounds=1)
    env.reset(seed=0)
    env.step("1")
    env.step("2")
    assert all(env.terminations.values())
    assert env.infos["player_0"]["turn"] == 1
    with pytest.raises(ActionError, match="step it with None"):
        env.step("3")
    env.step(None)
    env.step(None)
    assert env.agents == []
    with pytest.raises(ResetNeeded, match="ended for every agent"):
        env.step(None)
    env.reset(seed=0)
    assert env.agents == ["player_0", "player_1"]


def test_bad_actions_raise_clear_errors_and_change_nothing():
    env = Connect4Env(max_text_length=1000)
    with pytest.raises(ResetNeeded):
        env.step("<move>1</move>")
    with pytest.raises(ResetNeeded):
        env.last()
    env.reset(seed=0)
    before = (env.agent_selection, env.view("player_0"), env.board.copy())
    with pytest.raises(NotTextError, match="player_0's action must be the reply as a str"):
        env.step([1, 2, 3])
    with pytest.raises(NotTextError):
        env.step(None)  # None is only for a finished agent
    with pytest.raises(ActionError, match="it is player_0's turn, not player_1's"):
        env.step("<move>1</move>", agent="player_1")
    with pytest.raises(ActionError, match="no agent 'player_9'"):
        env.observe("player_9")
    assert (env.agent_selection, env.view("player_0")) == before[:2]
    assert (env.board == before[2]).all()
    env.step("x" * 5000)  # longer than the action space holds: still a move (a malformed one)
    assert env._cumulative_rewards == {"player_0": -1.0, "player_1": 1.0}


def test_parallel_step_refuses_bad_action_dicts_before_playing():
    env = TextParallelEnv(HighCardEnv())
    with pytest.raises(ResetNeeded):
        env.step({"player_0": "1", "player_1": "1"})
    env.reset(seed=0)
    with pytest.raises(ActionError, match=r"not live: \['player_7'\]"):
        env.step({"player_0": "1", "player_1": "1", "player_7": "1"})
    with pytest.raises(ActionError, match=r"no action for \['player_1'\]"):
        env.step({"player_0": "1"})
    with pytest.raises(NotTextError, match="player_1's action"):
        env.step({"player_0": "1", "player_1": 1})
    with pytest.raises(ActionError, match="must be a dict"):
        env.step(["1", "1"])
    assert env.aec_env.round == 0 and env.aec_env.view("player_0")[-1]["role"] == "user"
    observations, rewards, _, _, infos = env.step({"player_0": "1", "player_1": "1"})
    assert set(observations) == set(rewards) == set(infos) == {"player_0", "player_1"}
    assert sorted(rewards.values()) == [-1.0, 1.0]
    assert isinstance(observations["player_0"], str)


def test_a_turn_based_parallel_step_plays_the_mover_and_ignores_the_others():
    env = TextParallelEnv(Connect4Env())
    _, infos = env.reset(seed=0)
    assert infos["player_0"]["to_move"] and not infos["player_1"]["to_move"]
    _, _, _, _, infos = env.step({"player_0": "<move>4</move>", "player_1": "<move>1</move>"})
    assert env.aec_env.board[-1, 3] == "X" and (env.aec_env.board[:, 0] == ".").all()
    assert infos["player_1"]["to_move"]
    with pytest.raises(ActionError, match=r"no action for \['player_1'\]"):
        env.step({"player_0": "<move>4</move>"})
    observations, rewards, terminations, _, _ = env.step({"player_1": "no move"})
    assert rewards == {"player_0": 1.0, "player_1": -1.0}
    assert all(terminations.values()) and env.agents == []
    assert "player_1 loses" in observations["player_0"]


def test_observations_are_text_with_the_dtype_pettingzoo_compares():
    env = Connect4Env()
    env.reset(seed=0)
    observation = env.observe("player_0")
    assert isinstance(observation, str) and type(observation) is TextObservation
    assert observation.dtype is None is env.observation_space("player_0").dtype
    assert observation == str(observation) and observation.startswith("We are playing")


def test_unknown_reset_options_warn_and_are_ignored():
    env = Connect4Env()
    with pytest.warns(UserWarning, match=r"ignores unknown reset options \['bogus'\]"):
        env.reset(seed=0, options={"bogus": 1})
    assert env.agent_selection == "player_0"
    with pytest.raises(TypeError, match="options must be a dict"):
        env.reset(options=[1])


def test_infos_are_fresh_objects_each_step():
    env = HighCardEnv()
    env.reset(seed=0)
    first = env.infos["player_1"]
    first["messages"].append({"role": "user", "content": "tampered"})
    env.step("1")
    assert "tampered" not in str(env.infos["player_1"]["messages"])
    assert env.infos["player_1"] is not first


def test_move_space_samples_legal_moves_with_a_mask_and_accepts_any_text():
    space = MoveSpace(("a", "b", "c"), seed=0)
    mask = np.array([0, 1, 0], dtype=np.int8)
    assert {space.sample(mask) for _ in range(20)} == {"b"}
    assert {space.sample() for _ in range(50)} == {"a", "b", "c"}
    assert space.contains("anything at all") and not space.contains(3)
    with pytest.raises(ValueError, match="allows no move"):
        space.sample(np.zeros(3, dtype=np.int8))
    with pytest.raises(ValueError, match="shape"):
        space.sample(np.ones(2, dtype=np.int8))


def test_render_shows_each_agents_view():
    env = HighCardEnv(render_mode="ansi")
    env.reset(seed=0)
    env.step("4")
    text = env.render()
    assert "===== player_0 =====" in text and "===== player_1 =====" in text
    assert "[assistant]\n4" in text


def test_a_refused_reset_needs_a_new_reset_before_any_step():
    from rlvr.envs.errors import EnvConfigError
    from rlvr.envs.multiagent.negotiation import NegotiationEnv

    env = NegotiationEnv()
    env.reset(seed=0)
    with pytest.raises(EnvConfigError):
        env.reset(options={"counts": [9, 9, 9]})
    with pytest.raises(ResetNeeded):
        env.step("hello")
    env.reset(seed=0)
    env.step("hello")
    assert env.agent_selection == "player_1"


def test_a_system_prompt_opens_every_view():
    env = HighCardEnv(system_prompt="Be brief.")
    env.reset(seed=0)
    env.step("3")
    for agent in env.possible_agents:
        view = env.view(agent)
        assert view[0] == {"role": "system", "content": "Be brief."}
        assert view[1]["role"] == "user" and view[1]["content"].startswith("Your secret bonus")
