"""A small simultaneous game for the tests of the multi-agent base (not registered)."""

from __future__ import annotations

from typing import Any, ClassVar

from rlvr.envs.multiagent import Round, TextAECEnv


class HighCardEnv(TextAECEnv):
    """Each round both players name a number at the same time; the higher one scores +1 and the
    other -1 (a tie or an unreadable number: 0). `rounds` rounds; the secret bonus card of each
    player (drawn with np_random) is added to its numbers and never shown to the other."""

    metadata: ClassVar[dict[str, Any]] = {
        **TextAECEnv.metadata,
        "name": "high_card_v0",
        "is_parallelizable": True,
    }

    def __init__(self, rounds: int = 2, **kwargs: Any) -> None:
        super().__init__(("player_0", "player_1"), **kwargs)
        self.rounds = rounds
        self.played = 0
        self.bonus: dict[str, int] = {}

    def _start(self, options: dict[str, Any]) -> dict[str, str]:
        self.played = 0
        self.bonus = {a: int(self.np_random.integers(100, 1000)) for a in self.possible_agents}
        return {a: f"Your secret bonus is {self.bonus[a]}. Name a number." for a in self.bonus}

    def _movers(self) -> list[str]:
        return list(self.possible_agents)

    def _play(self, moves: dict[str, str]) -> Round:
        self.played += 1
        first, second = self.possible_agents
        values = {a: (int(m) if m.isdigit() else 0) + self.bonus[a] for a, m in moves.items()}
        winner = None
        if values[first] != values[second]:
            winner = first if values[first] > values[second] else second
        rewards = {a: 0.0 if winner is None else (1.0 if a == winner else -1.0) for a in moves}
        messages = {a: f"Round {self.played}: winner {winner}." for a in moves}
        return Round(
            messages=messages,
            rewards=rewards,
            game_over=self.played >= self.rounds,
            reward_terms={a: {"round": rewards[a]} for a in moves},
        )
