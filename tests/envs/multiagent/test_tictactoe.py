"""rlvr/TicTacToe-v0: the rules, the board text, the action mask, illegal and malformed moves.

PettingZoo's api_test, parallel_api_test, seed_test and parallel_seed_test run on it with every
registered env (tests/test_registered_multiagent_envs.py)."""

from __future__ import annotations

import pytest
from pettingzoo.test import api_test, parallel_api_test, seed_test

from rlvr.envs.multiagent import make, make_parallel
from rlvr.envs.multiagent.tictactoe import TicTacToeEnv, env, parallel_env
from tests.envs.multiagent.support import play_moves as play


@pytest.mark.parametrize(
    ("cells", "winner"),
    [
        ([1, 4, 2, 5, 3], "player_0"),  # the top row
        ([1, 2, 4, 3, 7], "player_0"),  # the left column
        ([1, 2, 5, 3, 9], "player_0"),  # the main diagonal
        ([3, 1, 5, 2, 7], "player_0"),  # the other diagonal
        ([1, 7, 2, 8, 6, 9], "player_1"),  # the second player's bottom row
        ([1, 2, 4, 5, 9, 8], "player_1"),  # the second player's middle column
    ],
)
def test_three_in_a_line_wins(cells, winner):
    game = TicTacToeEnv()
    play(game, cells)
    loser = next(agent for agent in game.possible_agents if agent != winner)
    assert game._cumulative_rewards == {winner: 1.0, loser: -1.0}
    assert all(game.terminations.values())
    assert game.infos[winner]["outcome"] == "three_in_a_row"
    assert "gets three in a row and wins" in game.observe(loser)


def test_no_win_without_a_line():
    game = TicTacToeEnv()
    play(game, [1, 2, 3, 5, 4, 6])  # X: 1 3 4, O: 2 5 6
    assert not any(game.terminations.values()) and game.agent_selection == "player_0"


def test_a_full_board_is_a_draw():
    game = TicTacToeEnv()
    play(game, [1, 2, 3, 5, 4, 7, 6, 9, 8])  # X O X / X O X / O X O
    assert game.board_text() == "X O X\nX O X\nO X O"
    assert game._cumulative_rewards == {"player_0": 0.0, "player_1": 0.0}
    assert game.infos["player_0"]["outcome"] == "draw" and all(game.terminations.values())


def test_the_board_shows_the_numbers_of_the_empty_cells():
    game = TicTacToeEnv()
    game.reset(seed=0)
    assert game.board_text() == "1 2 3\n4 5 6\n7 8 9"
    game.step("<move>5</move>")
    game.step("<move>1</move>")
    assert game.board_text() == "O 2 3\n4 X 6\n7 8 9"
    assert game.observe("player_0").startswith("Your opponent played cell 1.\n\nO 2 3\n4 X 6")


def test_a_move_on_a_taken_cell_loses():
    game = TicTacToeEnv()
    play(game, [5, 1])
    assert game.infos["player_0"]["action_mask"].tolist() == [0, 1, 1, 1, 0, 1, 1, 1, 1]
    game.step("<move>1</move>")
    assert game._cumulative_rewards == {"player_0": -1.0, "player_1": 1.0}
    assert game.infos["player_1"]["outcome"] == "illegal_move"
    assert "cell 1 is taken" in game.observe("player_1")


@pytest.mark.parametrize(
    "reply", ["", "5", "<move>10</move>", "<move>0</move>", "<move>five</move>", "<move>5"]
)
def test_a_malformed_move_is_the_movers_loss(reply):
    game = TicTacToeEnv()
    game.reset(seed=0)
    game.step("<move>1</move>")
    game.step(reply)
    assert game._cumulative_rewards == {"player_0": 1.0, "player_1": -1.0}
    assert game.infos["player_0"]["outcome"] == "illegal_move"


def test_the_action_mask_is_the_movers_and_zeros_for_the_other():
    game = make("rlvr/TicTacToe-v0")
    game.reset(seed=0)
    assert game.infos["player_0"]["action_mask"].tolist() == [1] * 9
    assert game.infos["player_1"]["action_mask"].tolist() == [0] * 9
    for _ in range(9):  # legal moves sampled from the mask never lose by illegality
        if not game.agents or game.terminations[game.agent_selection]:
            break
        mover = game.agent_selection
        game.step(game.action_space(mover).sample(game.infos[mover]["action_mask"]))
    assert game.infos["player_0"]["outcome"] in {"three_in_a_row", "draw"}


def test_only_the_move_reaches_the_opponent():
    game = TicTacToeEnv()
    game.reset(seed=0)
    game.step("the centre is strongest <move>5</move>")
    observation = game.observe("player_1")
    assert observation.startswith("We are playing tic-tac-toe")
    assert "Your opponent played cell 5." in observation and "strongest" not in observation
    assert observation.rstrip().endswith("Your move.")


@pytest.mark.filterwarnings("ignore::UserWarning:pettingzoo")
@pytest.mark.filterwarnings("ignore:.*ignores unknown reset options")
def test_the_module_factories_pass_pettingzoos_tests():
    api_test(env(), num_cycles=100)
    parallel_api_test(parallel_env(), num_cycles=100)
    seed_test(env, num_cycles=100)
    assert type(make_parallel("rlvr/TicTacToe-v0")) is type(parallel_env())
