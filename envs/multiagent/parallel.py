"""`TextParallelEnv`: PettingZoo's Parallel API over a `TextAECEnv` (the same game, one round per
`step`).

A Parallel `step` takes one round: the replies of the agents to move (`infos[agent]["to_move"]`;
every live agent in a simultaneous game, one in a turn-based game). The dict may hold every live
agent, as PettingZoo's parallel loops send, and replies of agents not to move are ignored; an
agent that is not live, a missing mover or a reply that is not text raises before anything is
played. Unlike PettingZoo's `aec_to_parallel`, this works for turn-based games too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pettingzoo import ParallelEnv

from rlvr.envs.errors import ActionError, ResetNeeded
from rlvr.envs.multiagent.base import TextAECEnv, TextObservation
from rlvr.envs.spaces import TextSpace

Step = tuple[
    dict[str, TextObservation],
    dict[str, float],
    dict[str, bool],
    dict[str, bool],
    dict[str, dict[str, Any]],
]


class TextParallelEnv(ParallelEnv[str, str, str]):
    """The Parallel face of a `TextAECEnv` (`env.unwrapped` is that AEC env)."""

    def __init__(self, env: TextAECEnv) -> None:
        self.aec_env = env
        self.metadata = env.metadata
        self.possible_agents = env.possible_agents
        self.render_mode = env.render_mode
        self.agents: list[str] = []
        self._started = False

    @property
    def unwrapped(self) -> TextAECEnv:
        return self.aec_env

    def observation_space(self, agent: str) -> TextSpace:
        return self.aec_env.observation_space(agent)

    def action_space(self, agent: str) -> TextSpace:
        return self.aec_env.action_space(agent)

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, TextObservation], dict[str, dict[str, Any]]]:
        env = self.aec_env
        env.reset(seed=seed, options=options)
        self._started = True
        self.agents = list(env.agents)
        return {a: env.observe(a) for a in self.agents}, {a: env.infos[a] for a in self.agents}

    def step(self, actions: Mapping[str, str]) -> Step:
        env = self.aec_env
        if not self._started:
            raise ResetNeeded("call env.reset() before env.step()")
        if not self.agents:
            raise ResetNeeded("the episode has ended for every agent; call env.reset()")
        self._check(actions)
        live = list(self.agents)
        for mover in env.movers:
            env.step(actions[mover], agent=mover)
        observations = {a: env.observe(a) for a in live}
        rewards = {a: float(env.rewards[a]) for a in live}
        terminations = {a: env.terminations[a] for a in live}
        truncations = {a: env.truncations[a] for a in live}
        infos = {a: env.infos[a] for a in live}
        while env.agents and (
            env.terminations[env.agent_selection] or env.truncations[env.agent_selection]
        ):
            env.step(None)
        self.agents = list(env.agents)
        return observations, rewards, terminations, truncations, infos

    def _check(self, actions: Mapping[str, str]) -> None:
        """Refuse a bad actions dict before any of it is played."""
        if not isinstance(actions, Mapping):
            raise ActionError(
                f"actions must be a dict {{agent: reply}}, got {type(actions).__name__}"
            )
        unknown = [agent for agent in actions if agent not in self.agents]
        if unknown:
            raise ActionError(
                f"actions for agents that are not live: {unknown}; live agents: {self.agents}"
            )
        missing = [agent for agent in self.aec_env.movers if agent not in actions]
        if missing:
            raise ActionError(f"no action for {missing}, whose turn it is")
        for agent, action in actions.items():
            self.aec_env.check_action(agent, action)

    def render(self) -> str | None:
        return self.aec_env.render()

    def close(self) -> None:
        self.aec_env.close()

    def __str__(self) -> str:
        return str(self.aec_env)
