"""rlvr/Nim-v0: the heap drawn from the seed, the rules, the action mask, illegal moves.

PettingZoo's api_test, parallel_api_test, seed_test and parallel_seed_test run on it with every
registered env (tests/test_registered_multiagent_envs.py)."""

from __future__ import annotations

import pytest
from pettingzoo.test import api_test, parallel_api_test, seed_test

from rlvr.envs.errors import EnvConfigError
from rlvr.envs.multiagent import make
from rlvr.envs.multiagent.nim import NimEnv, env, parallel_env


def test_the_heap_is_drawn_from_the_seed_within_the_range():
    heaps = set()
    for seed in range(40):
        game = NimEnv(min_stones=5, max_stones=9)
        game.reset(seed=seed)
        heaps.add(game.heap)
        assert f"Stones left: {game.heap}." in game.observe("player_0")
        again = NimEnv(min_stones=5, max_stones=9)
        again.reset(seed=seed)
        assert again.heap == game.heap
    assert heaps == set(range(5, 10))


def test_taking_the_last_stone_wins():
    game = NimEnv(min_stones=6, max_stones=6)
    game.reset(seed=0)
    for take in (3, 1, 2):  # 6 -> 3 -> 2 -> 0: player_0 takes the last two
        game.step(f"<move>{take}</move>")
    assert game._cumulative_rewards == {"player_0": 1.0, "player_1": -1.0}
    assert game.infos["player_0"]["outcome"] == "last_stone" and all(game.terminations.values())
    assert "player_0 took 2 stones, takes the last stone and wins." in game.observe("player_1")


def test_the_opponents_move_and_the_heap_reach_the_next_player():
    game = NimEnv(min_stones=10, max_stones=10)
    game.reset(seed=0)
    game.step("I take one. <move>1</move>")
    observation = game.observe("player_1")
    assert "Your opponent took 1 stone.\n\nStones left: 9.\n\nYour move." in observation
    assert "I take one" not in observation


def test_taking_more_than_is_left_loses_and_the_mask_says_so():
    game = NimEnv(min_stones=4, max_stones=4)
    game.reset(seed=0)
    game.step("<move>2</move>")
    assert game.infos["player_1"]["action_mask"].tolist() == [1, 1, 0]
    assert game.infos["player_0"]["action_mask"].tolist() == [0, 0, 0]
    game.step("<move>3</move>")
    assert game._cumulative_rewards == {"player_0": 1.0, "player_1": -1.0}
    assert game.infos["player_0"]["outcome"] == "illegal_move"
    assert "cannot take 3: only 2 stones are left" in game.observe("player_0")


@pytest.mark.parametrize("reply", ["", "2", "<move>4</move>", "<move>0</move>", "<move>two</move>"])
def test_a_malformed_move_is_the_movers_loss(reply):
    game = make("rlvr/Nim-v0")
    game.reset(seed=0)
    game.step(reply)
    assert game._cumulative_rewards == {"player_0": -1.0, "player_1": 1.0}


@pytest.mark.parametrize(
    ("low", "high", "message"),
    [
        (0, 5, "min_stones must be an int >= 1, got 0"),
        (2.5, 5, "min_stones must be an int >= 1"),
        (3, "9", "max_stones must be an int >= 1"),
        (6, 5, "need min_stones <= max_stones, got 6 > 5"),
    ],
)
def test_a_bad_heap_range_is_refused_naming_the_fix(low, high, message):
    with pytest.raises(EnvConfigError, match=message):
        NimEnv(min_stones=low, max_stones=high)


@pytest.mark.filterwarnings("ignore::UserWarning:pettingzoo")
@pytest.mark.filterwarnings("ignore:.*ignores unknown reset options")
def test_the_module_factories_pass_pettingzoos_tests():
    api_test(env(), num_cycles=100)
    parallel_api_test(parallel_env(min_stones=3, max_stones=30), num_cycles=100)
    seed_test(env, num_cycles=100)
