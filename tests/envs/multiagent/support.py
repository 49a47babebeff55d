"""Helpers shared by the multi-agent env tests."""

from __future__ import annotations

from typing import Any


def play_moves(game: Any, moves: list[int]) -> None:
    """Reset a board game (seed 0) and play `moves` as `<move>N</move>` replies, the seats
    taking turns."""
    game.reset(seed=0)
    for move in moves:
        game.step(f"<move>{move}</move>")


def assert_learnability_rewards(
    env: Any, replies: list[str], outcome: str, reward: float, right: str
) -> None:
    """After the solvers' `replies`: the game is over, the proposer's outcome and learnability
    reward are as given, and each solver earned 1 for the `right` reply, else 0."""
    assert all(env.terminations.values())
    assert env.infos["proposer_0"]["outcome"] == outcome
    assert env._cumulative_rewards["proposer_0"] == reward
    assert env.infos["proposer_0"]["rewards"] == {"learnability": reward}
    for solver, reply in zip(env.solvers, replies):
        assert env._cumulative_rewards[solver] == (1.0 if reply == right else 0.0)
