"""rlvr/Connect4-v0: the rules, the action mask, illegal and malformed moves."""

from __future__ import annotations

import time

import numpy as np
import pytest

from rlvr.envs.multiagent import make
from rlvr.envs.multiagent.connect4 import EMPTY, Connect4Env
from tests.envs.multiagent.support import play_moves as play


@pytest.mark.parametrize(
    ("columns", "winner"),
    [
        ([1, 1, 2, 2, 3, 3, 4], "player_0"),  # a row
        ([1, 2, 1, 2, 1, 2, 1], "player_0"),  # a column
        ([1, 2, 2, 3, 3, 4, 3, 4, 4, 7, 4], "player_0"),  # a rising diagonal
        ([7, 6, 6, 5, 5, 4, 5, 4, 4, 1, 4], "player_0"),  # a falling diagonal
        ([1, 2, 1, 2, 1, 2, 3, 2], "player_1"),  # the second player's column
    ],
)
def test_four_in_a_line_wins(columns, winner):
    env = Connect4Env()
    play(env, columns)
    loser = next(agent for agent in env.possible_agents if agent != winner)
    assert env._cumulative_rewards == {winner: 1.0, loser: -1.0}
    assert all(env.terminations.values())
    assert env.infos[winner]["outcome"] == "four_in_a_row"


def test_no_win_before_four():
    env = Connect4Env()
    play(env, [1, 1, 2, 2, 3, 3])
    assert not any(env.terminations.values()) and env.agent_selection == "player_0"


def test_a_full_board_is_a_draw():
    env = Connect4Env()
    env.reset(seed=0)
    # A drawn board (no four anywhere) with the top of column 7 still empty.
    rows = ["XOXOXO.", "XOXOXOO", "OXOXOXX", "OXOXOXO", "XOXOXOX", "XOXOXOO"]
    env.board = np.array([list(row) for row in rows])
    assert not any(env._wins(r, c) for r in range(6) for c in range(7) if env.board[r, c] != ".")
    env.step("<move>7</move>")
    assert env._cumulative_rewards == {"player_0": 0.0, "player_1": 0.0}
    assert env.infos["player_0"]["outcome"] == "draw" and all(env.terminations.values())


def test_a_move_into_a_full_column_loses():
    env = Connect4Env()
    play(env, [3, 3, 3, 3, 3, 3])
    assert env.infos["player_0"]["action_mask"].tolist() == [1, 1, 0, 1, 1, 1, 1]
    env.step("<move>3</move>")
    assert env._cumulative_rewards == {"player_0": -1.0, "player_1": 1.0}
    assert env.infos["player_1"]["outcome"] == "illegal_move"
    assert "column 3 is full" in env.observe("player_1")


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "4",
        "<move>8</move>",
        "<move>0</move>",
        "<move>four</move>",
        "<move>4",
        "<move>4.0</move>",
    ],
)
def test_a_malformed_move_is_the_movers_loss(reply):
    env = Connect4Env()
    env.reset(seed=0)
    env.step("<move>1</move>")
    env.step(reply)
    assert env._cumulative_rewards == {"player_0": 1.0, "player_1": -1.0}
    assert all(env.terminations.values())


def test_the_last_move_tag_counts():
    env = Connect4Env()
    env.reset(seed=0)
    env.step("I could play <move>1</move>, but better is <move> 5 </move>.")
    assert env.board[-1, 4] == "X" and env.board[-1, 0] == EMPTY


def test_the_action_mask_is_the_movers_and_zeros_for_the_other():
    env = make("rlvr/Connect4-v0")
    env.reset(seed=0)
    assert env.infos["player_0"]["action_mask"].dtype == np.int8
    assert env.infos["player_0"]["action_mask"].tolist() == [1] * 7
    assert env.infos["player_1"]["action_mask"].tolist() == [0] * 7
    sampled = env.action_space("player_0").sample(env.infos["player_0"]["action_mask"])
    env.step(sampled)
    assert (env.board != EMPTY).sum() == 1


def test_the_opponents_move_and_the_board_reach_the_next_player():
    env = Connect4Env()
    env.reset(seed=0)
    env.step("thinking... <move>4</move>")
    observation = env.observe("player_1")
    assert observation.startswith("We are playing Connect Four")  # its opening, not yet answered
    assert "Your opponent played column 4." in observation
    assert "thinking" not in observation  # only the move is relayed
    assert observation.rstrip().endswith("Your move.")


def test_a_hostile_reply_is_read_quickly():
    env = Connect4Env()
    env.reset(seed=0)
    reply = "<move>" * 10_000 + "</move>" * 2
    start = time.process_time()
    env.step(reply)
    assert time.process_time() - start < 1.0
    assert env._cumulative_rewards["player_0"] == -1.0
