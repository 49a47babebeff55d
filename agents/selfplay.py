"""Self-play training rollouts: multi-agent games (`rlvr.envs.multiagent`) as per-seat episodes.

`GameCollector.collect(tasks)` plays `group_size` games of each task with the episode loop's
multi-agent twin (`rlvr.rollout.play_games`) and returns one `Episode` per trained seat of each
game. Each seat's record holds only its own view, so the token actor of single-agent training
(`rlvr.agents.rollouts._TokenActor`), unchanged, keeps each seat's ids: the seat's own sampled
replies with loss mask 1, everything else (its prompt, the env's messages, which relay the other
seats' moves as text) with loss mask 0. An agent is trained only on its own tokens.

Who sits where:

- one trained policy in every seat (self-play, the default): every seat's episode is trained,
  all by the same model;
- a policy per seat (`GameCollector({"player_0": a, "player_1": b}, ...)`; in training
  `SelfPlayConfig.policy_per_seat`): each seat's episodes come back tagged with the seat, for
  that seat's learner (`SeatLearners`);
- the trained policy against a fixed `opponent` (a scripted agent, an earlier checkpoint): the
  trained policy takes seat k mod n in game k of a group, the opponent every other seat.

GRPO's groups are (task, seat): a seat's return is compared with the same seat's returns on the
same task, never with its opponent's (in a zero-sum game that would be the negation).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from rlvr.agents.learners.base import Learner
from rlvr.agents.policy import Policy, SamplingParams, TrainablePolicy
from rlvr.agents.rollouts import EnvSpec, Episode, _TokenActor, check_collector_args
from rlvr.config import check_numbers
from rlvr.rollout.games import game_policy_actor, play_games, seat_positions, seat_router
from rlvr.rollout.records import Act, Start

SELF = "self"
SNAPSHOT = "snapshot"


@dataclass(frozen=True)
class SelfPlayConfig:
    """Self-play on multi-agent envs (`rlvr train --env rlvr/Connect4-v0 --self-play`)."""

    opponent: str = SELF
    """Who the trained policy plays: "self" (it takes every seat, one shared model, each seat
    trained on its own tokens), "snapshot" (a frozen copy of it, refreshed from the trained
    weights every `snapshot_every` steps: an earlier checkpoint), or a fixed agent spec, e.g.
    "legal" (a random legal mover), "random:SEED", "hf:PATH"."""
    snapshot_every: int = 10
    """Steps between refreshes of the "snapshot" opponent."""
    eval_opponent: str = "legal"
    """The fixed opponent of held-out evaluation: eval/success_rate is the trained policy's win
    rate against it over `eval_episodes` games, seats alternating, greedy decoding."""
    policy_per_seat: bool = False
    """Give each seat its own policy: a copy of the starting model per seat, with its own learner
    and optimizer (same algo and settings), trained only on that seat's episodes. Checkpoints and
    `final/` hold a folder per seat (`final/player_0/`); each seat's model is evaluated against
    `eval_opponent` from its own seat. Needs opponent="self"."""

    def __post_init__(self) -> None:
        check_numbers(self)
        if not self.opponent or not self.eval_opponent:
            raise ValueError("self_play.opponent and eval_opponent must name an agent")
        if self.policy_per_seat and self.opponent != SELF:
            raise ValueError(
                f"self_play.policy_per_seat seats a trained policy in every seat, so there is no "
                f"place for opponent={self.opponent!r}: set opponent='self' or drop policy_per_seat"
            )
        if self.snapshot_every < 1:
            raise ValueError(f"self_play.snapshot_every must be >= 1, got {self.snapshot_every}")
        if self.eval_opponent in (SELF, SNAPSHOT):
            raise ValueError(
                "self_play.eval_opponent must be a fixed agent (e.g. 'legal', 'hf:PATH'), not "
                f"{self.eval_opponent!r}: a moving target measures nothing"
            )


@dataclass
class _Lineup:
    """Who sits in each seat position of a batch of games: `player[p]` indexes `players`."""

    players: list[Policy]
    trained: list[bool]
    player: list[int]


class GameCollector:
    """Plays groups of multi-agent games and returns the trained seats' episodes.

    `policy`: the trained `TrainablePolicy` (every seat, or the seats the opponent leaves), or a
    mapping seat -> `TrainablePolicy` (each seat its own; the same object twice shares it).
    `opponent`: None for self-play, else the `Policy` of every other seat.
    """

    def __init__(
        self,
        policy: TrainablePolicy | Mapping[str, TrainablePolicy],
        envs: Sequence[EnvSpec],
        *,
        group_size: int,
        sampling: SamplingParams,
        opponent: Policy | None = None,
        max_turns: int | None = None,
    ) -> None:
        from rlvr.envs.multiagent import make

        check_collector_args(group_size, envs, "EnvSpec of a multi-agent env")
        if isinstance(policy, Mapping) and opponent is not None:
            raise ValueError("give a policy per seat or an opponent, not both")
        self.policy = policy
        self.specs = list(envs)
        self.group_size = group_size
        self.sampling = sampling
        self.opponent = opponent
        self.max_turns = max_turns
        self._make = make
        self._pools: dict[int, list[Any]] = {}

    def collect(self, tasks: Sequence[tuple[int, int]], generator: Any = None) -> list[Episode]:
        """Play `group_size` games of each task `(env index, seed)`; the episodes of task g's
        seat s have group `g * seats + s`."""
        slots = [(group, spec, seed) for group, (spec, seed) in enumerate(tasks)]
        slots = [slot for slot in slots for _ in range(self.group_size)]
        games: list[Any] = []
        used: dict[int, int] = {}
        for _, spec, _ in slots:
            games.append(self._game(spec, used.get(spec, 0)))
            used[spec] = used.get(spec, 0) + 1
        starts = [
            Start(group, k % self.group_size, seed) for k, (group, _, seed) in enumerate(slots)
        ]
        seats = seat_positions(games)
        lineup = self._lineup(games, starts)
        actors: list[Act] = []
        token_actors: dict[int, _TokenActor] = {}
        for index, (player, trained) in enumerate(zip(lineup.players, lineup.trained)):
            if trained:
                assert isinstance(player, TrainablePolicy)
                token_actors[index] = _TokenActor(player, len(seats), self.sampling, generator)
                actors.append(token_actors[index])
            else:
                actors.append(game_policy_actor(player, games, self.sampling))
        act = seat_router(lineup.player, actors)
        records = play_games(games, starts, act, max_turns=self.max_turns)
        episodes = []
        for p, (game, agent) in enumerate(seats):
            token_actor = token_actors.get(lineup.player[p])
            record = records[game].seats[agent]
            if token_actor is None or record.turns == 0:  # not trained here, or never replied
                continue
            trace = token_actor.traces[p]
            group, spec, _ = slots[game]
            agents = games[game].possible_agents
            episodes.append(
                Episode(
                    record=record,
                    env_id=self.specs[spec].id,
                    group=group * len(agents) + agents.index(agent),
                    token_ids=trace.token_ids,
                    loss_mask=trace.loss_mask,
                    sampler_logprobs=trace.logprobs,
                    turn_ends=trace.turn_ends,
                    prompt_length=trace.prompt_length,
                    completion_truncated=trace.truncated,
                    seat=agent,
                )
            )
        return episodes

    def _lineup(self, games: Sequence[Any], starts: Sequence[Start]) -> _Lineup:
        seats = seat_positions(games)
        if isinstance(self.policy, Mapping):
            players: list[Policy] = []
            for policy in self.policy.values():
                if not any(policy is known for known in players):
                    players.append(policy)
            index = {
                agent: next(i for i, p in enumerate(players) if p is policy)
                for agent, policy in self.policy.items()
            }
            missing = sorted({agent for _, agent in seats} - set(index))
            if missing:
                raise ValueError(f"no policy for the seats {missing}")
            return _Lineup(players, [True] * len(players), [index[a] for _, a in seats])
        if self.opponent is None:
            return _Lineup([self.policy], [True], [0] * len(seats))
        mine = [
            games[game].possible_agents[starts[game].sample % len(games[game].possible_agents)]
            for game in range(len(games))
        ]
        player = [0 if agent == mine[game] else 1 for game, agent in seats]
        return _Lineup([self.policy, self.opponent], [True, False], player)

    def close(self) -> None:
        for pool in self._pools.values():
            for env in pool:
                env.close()
        self._pools.clear()

    def _game(self, spec: int, position: int) -> Any:
        pool = self._pools.setdefault(spec, [])
        while len(pool) <= position:
            pool.append(self._make(self.specs[spec].id, **dict(self.specs[spec].kwargs)))
        return pool[position]


class SeatLearners:
    """A learner per seat (`SelfPlayConfig.policy_per_seat`): `update` hands each seat's learner
    that seat's episodes only (`episode.seat`) and returns each seat's metrics under the seat
    (`seat_key`) and their mean over the seats under the usual keys; summed for counts."""

    SUMMED = ("rollout/infra_errors",)

    def __init__(self, learners: Mapping[str, Learner]) -> None:
        self.learners = dict(learners)

    def update(self, episodes: Sequence[Episode]) -> dict[str, float]:
        unknown = sorted({str(e.seat) for e in episodes} - set(self.learners))
        if unknown:
            raise ValueError(f"episodes of the seats {unknown}, which have no learner")
        per_seat: dict[str, dict[str, float]] = {}
        for seat, learner in self.learners.items():
            mine = [episode for episode in episodes if episode.seat == seat]
            if mine:  # a seat that never replied this step is not updated
                per_seat[seat] = learner.update(mine)
        return merge_seat_metrics(per_seat, summed=self.SUMMED)

    def state_dict(self) -> dict[str, Any]:
        return {seat: learner.state_dict() for seat, learner in self.learners.items()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for seat, learner in self.learners.items():
            learner.load_state_dict(state[seat])


def seat_key(key: str, seat: str) -> str:
    """A metric's per-seat key: the seat after the key's first part ("losses/policy" ->
    "losses/player_0/policy", "eval/success_rate" -> "eval/player_0/success_rate")."""
    head, _, rest = key.partition("/")
    return f"{head}/{seat}/{rest}" if rest else f"{key}/{seat}"


def merge_seat_metrics(
    per_seat: Mapping[str, Mapping[str, float]], summed: Sequence[str] = ()
) -> dict[str, float]:
    """Each seat's metrics under `seat_key`, and under the plain key their mean over the seats
    that have it (their sum for the keys in `summed`; a standard error, `*_se`, of the mean of
    independent seats)."""
    merged: dict[str, float] = {}
    values: dict[str, list[float]] = {}
    for seat, metrics in per_seat.items():
        for key, value in metrics.items():
            merged[seat_key(key, seat)] = value
            values.setdefault(key, []).append(value)
    for key, seen in values.items():
        if key in summed:
            merged[key] = float(sum(seen))
        elif key.endswith("_se"):
            merged[key] = math.sqrt(sum(v * v for v in seen)) / len(seen)
        else:
            merged[key] = float(sum(seen) / len(seen))
    return merged


def game_seats(specs: Sequence[EnvSpec]) -> list[str]:
    """The seats of the multi-agent envs `specs`, in their order of play; a policy per seat
    needs every env to have the same ones."""
    from rlvr.envs.multiagent import make

    found: dict[str, list[str]] = {}
    for spec in specs:
        env = make(spec.id, **dict(spec.kwargs))
        found[spec.id] = list(env.possible_agents)
        env.close()
    seats = next(iter(found.values()))
    for env_id, theirs in found.items():
        if theirs != seats:
            raise ValueError(
                f"self_play.policy_per_seat gives each seat a model, so every env needs the same "
                f"seats: {specs[0].id} has {seats}, {env_id} has {theirs}; train them in "
                "separate runs"
            )
    return seats


def is_multiagent(env_id: str) -> bool:
    """Whether `env_id` is a registered multi-agent env (`rlvr.envs.multiagent.make` makes it)."""
    from rlvr.envs.multiagent import registry

    return env_id in registry


def check_game_specs(specs: Sequence[EnvSpec]) -> None:
    """Make (and close) each multi-agent env with its kwargs, so that a bad id or argument fails
    at once, naming the fix, not after a model loaded."""
    from rlvr.envs.multiagent import make

    for spec in specs:
        for kwargs in {repr(k): k for k in (dict(spec.kwargs), game_eval_kwargs(spec))}.values():
            try:
                make(spec.id, **kwargs).close()
            except TypeError as exc:
                raise ValueError(f"{spec.id}: bad kwargs {kwargs}: {exc}") from None


def game_eval_kwargs(spec: EnvSpec) -> dict[str, Any]:
    """A game's held-out kwargs: `heldout_kwargs` when given, else its training kwargs (games
    have no split; the held-out measure is the match against a fixed opponent)."""
    return dict(spec.heldout_kwargs) if spec.heldout_kwargs is not None else dict(spec.kwargs)


def greedy(sampling: SamplingParams) -> SamplingParams:
    return replace(sampling, temperature=0.0)
