"""Scripted baselines for tests and leaderboards: an oracle, a random replier, a fixed reply, and a
random legal mover for multi-agent games."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

import gymnasium as gym
import numpy as np

from rlvr.agents.errors import PolicyError
from rlvr.agents.policy import Completion, Conversation, SamplingParams

if TYPE_CHECKING:
    from rlvr.envs.core import TextEnv

_WORDS = ("the", "answer", "is", "maybe", "yes", "no", "x", "=", "+", "7", "42", "0", "1/2")


class FixedPolicy:
    """Always replies with the same text."""

    def __init__(self, text: str) -> None:
        self.text = text

    def generate(
        self,
        conversations: Sequence[Conversation],
        n: int = 1,
        sampling: SamplingParams | None = None,
    ) -> list[list[Completion]]:
        return [[Completion(self.text) for _ in range(n)] for _ in conversations]


class RandomPolicy:
    """Replies with a few random words and numbers, from its own seeded generator."""

    def __init__(self, seed: int = 0, max_words: int = 12) -> None:
        self.rng = np.random.default_rng(seed)
        self.max_words = max_words

    def generate(
        self,
        conversations: Sequence[Conversation],
        n: int = 1,
        sampling: SamplingParams | None = None,
    ) -> list[list[Completion]]:
        return [[Completion(self._reply()) for _ in range(n)] for _ in conversations]

    def _reply(self) -> str:
        length = int(self.rng.integers(1, self.max_words + 1))
        return " ".join(self.rng.choice(_WORDS, size=length))


class _EnvReplyPolicy:
    """A scripted policy that answers each conversation from the env attached for it (runners
    attach the round's envs, in conversation order, before each `generate`)."""

    def __init__(self) -> None:
        self.envs: list[Any] = []

    def attach(self, envs: Sequence[Any]) -> None:
        self.envs = list(envs)

    def generate(
        self,
        conversations: Sequence[Conversation],
        n: int = 1,
        sampling: SamplingParams | None = None,
    ) -> list[list[Completion]]:
        if len(conversations) != len(self.envs):
            raise RuntimeError(
                f"{type(self).__name__} got {len(conversations)} conversations but is attached "
                f"to {len(self.envs)} envs; call attach(envs) with the envs in conversation order"
            )
        return [[Completion(self._reply(env)) for _ in range(n)] for env in self.envs]

    def _reply(self, env: Any) -> str:
        raise NotImplementedError


class OraclePolicy(_EnvReplyPolicy):
    """Replies with each environment's reference answer: an upper bound, and a check of the env.

    It reads the gold answers, so it is for evaluation sanity checks only.
    """

    def _reply(self, env: gym.Env) -> str:
        oracle = cast("TextEnv", env.unwrapped)
        if not callable(getattr(oracle, "oracle_reply", None)):
            raise PolicyError(
                f"the oracle agent replays an env's reference reply, and "
                f"{type(oracle).__name__} has none (a multi-agent game has no oracle): "
                "play it with legal, random or an hf: model"
            )
        return oracle.oracle_reply()


class LegalMovePolicy(_EnvReplyPolicy):
    """Plays a uniformly random legal move in a multi-agent game whose action space lists its
    moves (a `MoveSpace`, e.g. `rlvr/Connect4-v0`): the fixed scripted opponent of self-play.

    Runners attach the game of each conversation (`rlvr.rollout.game_policy_actor` does); the
    mover is the game's `agent_selection` and its legal moves are `infos[mover]["action_mask"]`
    (every listed move when there is no mask). Its draws come from its own seeded generator.
    """

    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        self.rng = np.random.default_rng(seed)

    def _reply(self, game: Any) -> str:
        base = game.unwrapped
        agent = base.agent_selection
        moves = getattr(base.action_space(agent), "moves", None)
        if not moves:
            raise RuntimeError(
                f"{type(base).__name__} lists no moves for {agent} (its action space is not a "
                "MoveSpace): the legal agent plays games like rlvr/Connect4-v0 only"
            )
        mask = base.infos[agent].get("action_mask")
        legal = np.flatnonzero(mask) if mask is not None else np.arange(len(moves))
        if legal.size == 0:
            legal = np.arange(len(moves))
        return str(moves[int(self.rng.choice(legal))])
