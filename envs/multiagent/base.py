"""`TextAECEnv`: PettingZoo's AEC contract for text environments, with one owner of the bookkeeping.

PettingZoo environments usually hand-manage `rewards`, `_cumulative_rewards`, `terminations`,
`truncations`, `infos` and `agent_selection` in every `step`, which is easy to get wrong. Here the
base class owns all of it; a subclass only says how a game starts, who moves now and what a
round of moves leads to:

- `_start(options) -> {agent: opening text}` (draw everything random with `self.np_random`);
- `_movers() -> [agents]`: one agent in a turn-based round, several in a simultaneous one (the
  round is resolved once each of them has acted, so no mover sees another's move of the same
  round);
- `_play({agent: reply}) -> Round`: the new text each agent sees, rewards, verdicts, game over.

Each agent has its own view of the conversation, `infos[agent]["messages"]`: its opening, what
the env told it and its own replies, in alternating user/assistant turns (texts that arrive
between two of its replies are joined into one user message), so a chat template can take it
as it is. An agent never sees another's raw reply: a subclass decides what of it to relay.
`observe(agent)` is the text the agent got since its last reply.
"""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from gymnasium.utils import seeding
from pettingzoo import AECEnv

from rlvr.envs.core import Message, check_options, format_conversation, require_text
from rlvr.envs.errors import ActionError, EnvConfigError, ResetNeeded
from rlvr.envs.options import CheckedArguments
from rlvr.envs.spaces import TextSpace
from rlvr.verifiers.types import Verdict


class TextObservation(str):
    """An observation: a plain `str` in every use, that also has `dtype = None`.

    PettingZoo's `api_test` compares `observation_space.dtype` with the observation's `dtype`,
    assuming NumPy observations; a `TextSpace` has no dtype (None) and neither has text.
    """

    __slots__ = ()
    dtype = None


class MoveSpace(TextSpace):
    """Any `str` (a malformed reply is still an action, which the env scores as the mover's
    loss), whose `sample()` draws one of a fixed list of well-formed moves.

    `sample(mask)` with an action mask (`infos[agent]["action_mask"]`, an int8 array with one
    entry per move, PettingZoo's convention) draws a legal one; `sample()` draws any listed move.
    """

    def __init__(
        self,
        moves: Sequence[str],
        max_length: int = 1 << 16,
        seed: int | np.random.Generator | None = None,
    ) -> None:
        if not moves or not all(isinstance(move, str) for move in moves):
            raise EnvConfigError(f"moves must be a non-empty list of str, got {moves!r}")
        self.moves = tuple(moves)
        super().__init__(max_length, seed=seed)

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        if probability is not None:
            raise ValueError("MoveSpace.sample() takes a mask, not a probability")
        if mask is None:
            return self.moves[int(self.np_random.integers(len(self.moves)))]
        mask = np.asarray(mask)
        if mask.shape != (len(self.moves),):
            raise ValueError(f"the action mask must have shape ({len(self.moves)},): {mask.shape}")
        legal = np.flatnonzero(mask)
        if legal.size == 0:
            raise ValueError("the action mask allows no move")
        return self.moves[int(self.np_random.choice(legal))]

    def __repr__(self) -> str:
        return f"MoveSpace({len(self.moves)} moves, max_length={self.max_length})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, MoveSpace)
            and other.moves == self.moves
            and other.max_length == self.max_length
        )


@dataclass
class Round:
    """What one round of moves leads to.

    `messages`: the new text each agent sees (relay another agent's reply only through
    `quote()`, and never anything hidden from the receiver). `rewards`: per agent, 0.0 when
    missing. `reward_terms` and `verdicts` go into `infos[agent]["rewards"]` / `["verdict"]`
    until that agent acts again, `info` likewise. `infra_error`: agents whose reward could not be
    computed because our machinery failed (their reward is then 0.0 only because PettingZoo needs
    a number: trainers drop the sample). `game_over` ends the episode for every agent; the last
    `messages` are then observations only (like `TextEnv`, the views end with the replies).
    """

    messages: Mapping[str, str] = field(default_factory=dict)
    rewards: Mapping[str, float] = field(default_factory=dict)
    game_over: bool = False
    verdicts: Mapping[str, Verdict] = field(default_factory=dict)
    reward_terms: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    infra_error: frozenset[str] = frozenset()
    info: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


class TextAECEnv(CheckedArguments, AECEnv[str, str, str]):
    """Base class of rlvr's multi-agent text environments (PettingZoo AEC API).

    Arguments:
        agents: the agents' names (PettingZoo style, `player_0`).
        action_spaces: a space per agent where it is not a plain `TextSpace` (e.g. `MoveSpace`).
        system_prompt: first message of every agent's view, or None.
        render_mode: "ansi" (render returns every agent's view as text) or "human" (prints it).
        max_text_length: the spaces' `max_length` in characters. Observations never exceed
            it (another agent's reply is relayed clipped to an eighth of it, `quote`); a longer
            reply is still played, never refused, as a policy wrote it.
    """

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["ansi", "human"],
        "name": "text_aec_v0",
        "is_parallelizable": False,
        "render_fps": 1,
    }
    reset_options: ClassVar[frozenset[str]] = frozenset()
    """Names `reset(options=...)` understands; others are warned about and ignored."""

    def __init__(
        self,
        agents: Sequence[str],
        *,
        action_spaces: Mapping[str, TextSpace] | None = None,
        system_prompt: str | None = None,
        render_mode: str | None = None,
        max_text_length: int = 1 << 16,
    ) -> None:
        super().__init__()
        self.possible_agents = list(agents)
        self.render_mode = render_mode
        self.system_prompt = system_prompt
        self.max_text_length = max_text_length
        self._observation_spaces = {a: TextSpace(max_text_length) for a in self.possible_agents}
        given = dict(action_spaces or {})
        self._action_spaces = {
            a: given.get(a) or TextSpace(max_text_length) for a in self.possible_agents
        }
        self.agents: list[str] = []
        self.task_id: str | None = None
        self._np_random: np.random.Generator | None = None
        self._np_random_seed: int | None = None
        self._started = False
        self._views: dict[str, list[Message]] = {}
        self._observations: dict[str, str] = dict.fromkeys(self.possible_agents, "")
        self._queue: list[str] = []
        self._pending: dict[str, str] = {}
        self._round_info: dict[str, dict[str, Any]] = {}
        self._infra: set[str] = set()
        self._round = 0

    # --- what subclasses implement -------------------------------------------------------------

    def _start(self, options: dict[str, Any]) -> dict[str, str]:
        """Set up a new game; return every agent's opening message."""
        raise NotImplementedError

    def _movers(self) -> Sequence[str]:
        """The agents that act in the coming round (at least one while the game runs)."""
        raise NotImplementedError

    def _play(self, moves: dict[str, str]) -> Round:
        """Resolve one round: `moves` holds the reply of every mover, in turn order."""
        raise NotImplementedError

    def _agent_info(self, agent: str) -> dict[str, Any]:
        """Extra `infos[agent]` keys that follow the state (e.g. `action_mask`)."""
        return {}

    # --- PettingZoo API ------------------------------------------------------------------------

    @property
    def np_random(self) -> np.random.Generator:
        """The env's random generator; `reset(seed=...)` reseeds it."""
        if self._np_random is None:
            self._np_random, self._np_random_seed = seeding.np_random()
        return self._np_random

    def observation_space(self, agent: str) -> TextSpace:
        return self._observation_spaces[self._known(agent)]

    def action_space(self, agent: str) -> TextSpace:
        return self._action_spaces[self._known(agent)]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        if seed is not None:
            self._np_random, self._np_random_seed = seeding.np_random(seed)
        check_options(options)
        options = dict(options or {})
        unknown = sorted(set(options) - self.reset_options, key=repr)
        if unknown:
            # A warning, not an error: PettingZoo's api_test resets with options={"options": 1}.
            warnings.warn(
                f"{type(self).__name__} ignores unknown reset options {unknown}; "
                f"it understands {sorted(self.reset_options) or 'none'}",
                stacklevel=2,
            )
        self._started, self.agents, self.task_id = False, [], None  # a refused reset ends it
        openings = self._start(options)
        if set(openings) != set(self.possible_agents):
            raise RuntimeError(f"{type(self).__name__}._start must open every agent's view")
        self._new_episode()
        self._tell(openings)
        self._next_round()
        self._started = True
        self._refresh_infos()
        if self.render_mode == "human":
            self.render()

    def step(self, action: str | None, agent: str | None = None) -> None:
        """Take the reply of the agent to move (`agent_selection`).

        `agent`, optional, names who is replying: a reply routed to the wrong seat raises
        `ActionError` instead of being played. A finished agent is stepped with `None`
        (PettingZoo's convention); anything else for it raises `ActionError`.
        """
        current = self._current()
        if agent is not None and agent != current:
            raise ActionError(
                f"it is {current}'s turn, not {agent}'s; read env.agent_selection (or "
                "env.agent_iter()) to know who moves"
            )
        if self.terminations[current] or self.truncations[current]:
            if action is not None:
                raise ActionError(
                    f"{current}'s episode has ended; step it with None to remove it "
                    "(PettingZoo's convention for a finished agent), or reset()"
                )
            self._was_dead_step(None)
            return
        self.check_action(current, action)
        assert isinstance(action, str)  # check_action refused anything else
        self._cumulative_rewards[current] = 0.0
        self._round_info[current] = {}
        self._observations[current] = ""
        self._views[current].append({"role": "assistant", "content": action})
        self._pending[current] = action
        self._queue.remove(current)
        self._clear_rewards()
        if self._queue:
            self.agent_selection = self._queue[0]
        else:
            self._resolve(current)
        self._refresh_infos()
        if self.render_mode == "human":
            self.render()

    def observe(self, agent: str) -> TextObservation:
        self._require_started()
        return TextObservation(self._observations[self._known(agent)])

    def last(self, observe: bool = True) -> tuple[TextObservation | None, float, bool, bool, dict]:
        self._require_started()
        return super().last(observe)

    def render(self) -> str | None:
        if self.render_mode is None:
            warnings.warn(
                "render() called without a render_mode; pass render_mode='ansi'", stacklevel=2
            )
            return None
        text = "\n\n".join(
            f"===== {agent} =====\n{format_conversation(view)}"
            for agent, view in self._views.items()
        )
        if self.render_mode == "human":
            print(text, flush=True)
            return None
        return text

    def close(self) -> None:
        """Nothing to release here; subclasses holding resources override it."""

    def check_action(self, agent: str, action: Any) -> None:
        """Raise `NotTextError` for an action that is not text. Any text is a move, judged as
        such: even one longer than the action space's `max_length` (what a policy generates is
        never a crash; another agent reads it clipped by `quote`)."""
        self._known(agent)
        require_text(action, f"{agent}'s action")

    # --- helpers for subclasses ------------------------------------------------------------------

    @property
    def movers(self) -> tuple[str, ...]:
        """Agents still to act in the current round."""
        return tuple(self._queue)

    @property
    def round(self) -> int:
        """Rounds resolved so far in this episode."""
        return self._round

    def view(self, agent: str) -> list[Message]:
        """A copy of `agent`'s own view of the conversation."""
        return copy.deepcopy(self._views[self._known(agent)])

    def quote(self, text: str, parts: int = 8) -> str:
        """Another agent's text clipped to `max_text_length // parts` characters, so that an
        observation relaying fewer than `parts` texts stays within its space."""
        limit = max(1, self.max_text_length // parts)
        if len(text) <= limit:
            return text
        return text[:limit] + f"\n[... {len(text) - limit} more characters cut]"

    # --- bookkeeping -----------------------------------------------------------------------------

    def _clear_rewards(self) -> None:
        # PettingZoo's clears to the int 0: rewards stay floats, as learners expect.
        for agent in self.rewards:
            self.rewards[agent] = 0.0

    def _new_episode(self) -> None:
        """Every agent live, nothing earned, each view holding only the system prompt."""
        self.agents = list(self.possible_agents)
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        system = [] if self.system_prompt is None else [("system", self.system_prompt)]
        self._views = {a: [{"role": r, "content": c} for r, c in system] for a in self.agents}
        self._observations = dict.fromkeys(self.agents, "")
        self._round_info = {a: {} for a in self.agents}
        self._infra = set()
        self._pending = {}
        self._round = 0
        self._skip_agent_selection = None

    def _resolve(self, last_mover: str) -> None:
        moves, self._pending = self._pending, {}
        outcome = self._play(moves)
        self._round += 1
        for agent, reward in outcome.rewards.items():
            if agent not in self.rewards or not math.isfinite(reward):
                raise RuntimeError(f"{type(self).__name__}: bad reward {reward!r} for {agent!r}")
            self.rewards[agent] = float(reward)
        self._infra |= set(outcome.infra_error)
        for agent, verdict in outcome.verdicts.items():
            self._round_info[agent]["verdict"] = verdict.to_dict()
        for agent, terms in outcome.reward_terms.items():
            self._round_info[agent]["rewards"] = {k: float(v) for k, v in terms.items()}
        for agent, extra in outcome.info.items():
            self._round_info[agent].update(copy.deepcopy(dict(extra)))
        self._accumulate_rewards()
        if outcome.game_over:
            for agent, text in outcome.messages.items():
                self._observe(agent, text)
            self.terminations = dict.fromkeys(self.agents, True)
            self._queue = []
            order = self.agents
            self.agent_selection = order[(order.index(last_mover) + 1) % len(order)]
        else:
            self._tell(outcome.messages)
            self._next_round()

    def _next_round(self) -> None:
        self._queue = list(dict.fromkeys(self._movers()))
        if not self._queue or not set(self._queue) <= set(self.agents):
            raise RuntimeError(f"{type(self).__name__}._movers gave {self._queue!r}")
        self.agent_selection = self._queue[0]

    def _tell(self, messages: Mapping[str, str]) -> None:
        """Append each text to its agent's view, joined to a user message not yet answered."""
        for agent, text in messages.items():
            view = self._views[agent]
            if view and view[-1]["role"] == "user":
                view[-1]["content"] = _joined(view[-1]["content"], text)
            else:
                view.append({"role": "user", "content": text})
            self._observe(agent, text)

    def _observe(self, agent: str, text: str) -> None:
        observation = _joined(self._observations[agent], text)
        if len(observation) > self.max_text_length:  # our texts are too long for the setting
            raise EnvConfigError(
                f"{type(self).__name__}: an observation of {len(observation)} characters does "
                f"not fit max_text_length={self.max_text_length}; raise max_text_length"
            )
        self._observations[agent] = observation

    def _refresh_infos(self) -> None:
        self.infos = {agent: self._info(agent) for agent in self.agents}

    def _info(self, agent: str) -> dict[str, Any]:
        info = {
            "task_id": self.task_id,
            "messages": copy.deepcopy(self._views[agent]),
            "turn": self._round,
            "to_move": agent in self._queue,
            "infra_error": agent in self._infra,
        }
        info.update(self._agent_info(agent))
        info.update(copy.deepcopy(self._round_info[agent]))
        return info

    def _current(self) -> str:
        self._require_started()
        if not self.agents:
            raise ResetNeeded("the episode has ended for every agent; call env.reset()")
        return self.agent_selection

    def _require_started(self) -> None:
        if not self._started:
            raise ResetNeeded("call env.reset() first")

    def _known(self, agent: str) -> str:
        if agent not in self._observation_spaces:
            raise ActionError(f"no agent {agent!r} here; the agents are {self.possible_agents}")
        return agent


def _joined(first: str, second: str) -> str:
    return f"{first}\n\n{second}" if first else second
