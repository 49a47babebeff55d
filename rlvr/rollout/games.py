"""The multi-agent episode loop (`rlvr.envs.multiagent`), and matches between two policies.

`play_games(games, starts, act)` is `play_episodes`' twin: one `EpisodeRecord` per seat of each
game, holding only that seat's view, and the same actor contract (`Act`) over seat positions;
`seat_router` hands each seat to its own actor (self-play seats one policy everywhere; a match
seats two). `play_match` plays one policy against another, seats alternating game by game, and
scores the games (`MatchReport`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from rlvr.core.policy import Completion, EnvAware, Policy, SamplingParams
from rlvr.rollout.records import Act, EpisodeRecord, ResetOptions, Start
from rlvr.rollout.tasks import task_fingerprint

if TYPE_CHECKING:
    import gymnasium as gym

    from rlvr.envs.multiagent import TextAECEnv


@dataclass
class GameRecord:
    """One game: a record per seat (its own view, its own replies and their rewards) and what
    each seat earned over the whole game (`returns`: also what a seat earned without replying,
    e.g. when the opponent's first move was illegal)."""

    seats: dict[str, EpisodeRecord]
    returns: dict[str, float]
    outcome: str | None = None
    """How the game ended (`infos[agent]["outcome"]` where the env says it), else None."""

    @property
    def infra_error(self) -> bool:
        return any(record.infra_error for record in self.seats.values())

    @property
    def truncated(self) -> bool:
        return any(record.truncated for record in self.seats.values())


def seat_positions(games: Sequence[TextAECEnv]) -> list[tuple[int, str]]:
    """The (game, agent) of each seat position `play_games` hands its actor, in order."""
    return [(game, agent) for game, env in enumerate(games) for agent in env.possible_agents]


def play_games(
    games: Sequence[TextAECEnv],
    starts: Sequence[tuple[int, int, int]],
    act: Act,
    *,
    reset_options: ResetOptions | None = None,
    max_turns: int | None = None,
) -> list[GameRecord]:
    """Play one game per multi-agent env (`TextAECEnv`), all batched.

    Seat position p is `seat_positions(games)[p]`. Each round asks `act` for the replies of every
    seat to move in every running game (a turn-based game's mover, or all movers of a
    simultaneous round: none sees another's move of the round, so they are asked together), with
    each seat's record holding its own view only. A seat's reply becomes a turn of its record
    once its outcome is known: when that seat is asked again, or when the game ends (its reward
    is what it earned since it replied, PettingZoo's `last()`). A reply of None, or a seat
    reaching `max_turns` replies, stops its game (every seat truncated).
    """
    seats = seat_positions(games)
    position = {seat: p for p, seat in enumerate(seats)}
    games_records = [
        _begin_game(env, Start(*start), reset_options) for env, start in zip(games, starts)
    ]
    pending: dict[int, Completion] = {}
    running = [game for game, env in enumerate(games) if env.agents]
    while running:
        asked = [position[(game, agent)] for game in running for agent in games[game].movers]
        for p in asked:
            game, agent = seats[p]
            _catch_up(games[game], games_records[game].seats[agent], agent, pending.pop(p, None))
        replies = act(asked, [games_records[seats[p][0]].seats[seats[p][1]] for p in asked])
        if len(replies) != len(asked):
            raise RuntimeError(
                f"the actor gave {len(replies)} replies for {len(asked)} seats to move; "
                "it must give one per seat (None to stop that seat's game)"
            )
        stopped: set[int] = set()
        for p, reply in zip(asked, replies):
            game, agent = seats[p]
            if game in stopped:
                continue
            if reply is None:
                stopped.add(game)
                continue
            games[game].step(reply.text, agent=agent)
            _earn(games[game], games_records[game])
            pending[p] = reply
        for game in running:
            env, record = games[game], games_records[game]
            cut = max_turns is not None and any(
                seat.turns + (position[(game, a)] in pending) >= max_turns
                for a, seat in record.seats.items()
            )
            if _game_over(env) or game in stopped or cut:
                _end_game(env, record, seats, pending, game, truncated=not _game_over(env))
        running = [game for game in running if games_records[game].outcome is None]
    return games_records


def _begin_game(env: TextAECEnv, start: Start, reset_options: ResetOptions | None) -> GameRecord:
    options = reset_options(start.episode) if reset_options is not None else None
    env.reset(seed=start.seed, options=options)
    fingerprint = task_fingerprint(env)
    seats = {a: EpisodeRecord.begin(start, env.infos[a], fingerprint) for a in env.possible_agents}
    return GameRecord(seats, dict.fromkeys(env.possible_agents, 0.0))


def _catch_up(env: TextAECEnv, record: EpisodeRecord, agent: str, reply: Completion | None) -> None:
    """Bring a seat's record up to date before it is asked: its last reply's outcome, its view."""
    if reply is not None:
        step = (None, env._cumulative_rewards[agent], False, False, env.infos[agent])
        record.add_turn(reply, step)
    else:
        record.messages = env.infos[agent]["messages"]
        record.task_id = env.infos[agent]["task_id"]


def _earn(env: TextAECEnv, record: GameRecord) -> None:
    for agent, reward in env.rewards.items():
        record.returns[agent] += float(reward)


def _game_over(env: TextAECEnv) -> bool:
    return not env.agents or all(env.terminations[a] or env.truncations[a] for a in env.agents)


def _end_game(
    env: TextAECEnv,
    record: GameRecord,
    seats: Sequence[tuple[int, str]],
    pending: dict[int, Completion],
    game: int,
    *,
    truncated: bool,
) -> None:
    """Every seat's last reply gets its outcome; a cut game marks every seat truncated."""
    for p, (owner, agent) in enumerate(seats):
        if owner != game:
            continue
        seat, info = record.seats[agent], env.infos[agent]
        reply = pending.pop(p, None)
        if reply is not None:
            terminated = not truncated
            step = (None, env._cumulative_rewards[agent], terminated, truncated, info)
            seat.add_turn(reply, step)
        else:
            seat.messages = info["messages"]
            seat.infra_error = seat.infra_error or bool(info["infra_error"])
        seat.truncated = truncated
        seat.verdict = info.get("verdict", seat.verdict)
    outcomes = [env.infos[a].get("outcome") for a in env.possible_agents]
    record.outcome = next((o for o in outcomes if o), "truncated" if truncated else "over")


def seat_router(players: Sequence[int], actors: Sequence[Act]) -> Act:
    """An actor handing seat position p to `actors[players[p]]` and merging their replies in
    order (a trained seat to the token actor, its opponent to another policy's actor)."""

    def act(active: list[int], records: list[EpisodeRecord]) -> list[Completion | None]:
        replies: list[Completion | None] = [None] * len(active)
        for which, actor in enumerate(actors):
            mine = [k for k, p in enumerate(active) if players[p] == which]
            if not mine:
                continue
            given = actor([active[k] for k in mine], [records[k] for k in mine])
            if len(given) != len(mine):
                raise RuntimeError(f"actor {which} gave {len(given)} replies for {len(mine)}")
            for k, reply in zip(mine, given):
                replies[k] = reply
        return replies

    return act


def game_policy_actor(
    policy: Policy, games: Sequence[TextAECEnv], sampling: SamplingParams | None = None
) -> Act:
    """The actor of a `Policy` taking seats of `games`: one `generate` call per round for every
    seat it is asked for (an `EnvAware` policy, e.g. the legal-move baseline, is attached to
    those seats' games first)."""
    seats = seat_positions(games)

    def act(active: list[int], records: list[EpisodeRecord]) -> list[Completion | None]:
        if isinstance(policy, EnvAware):
            # the games are AEC envs, not gym.Envs: only policies written for games read them
            policy.attach(cast("list[gym.Env]", [games[seats[p][0]] for p in active]))
        conversations = [record.messages for record in records]
        return [samples[0] for samples in policy.generate(conversations, 1, sampling)]

    return act


# --- matches between two policies -----------------------------------------------------------------


@dataclass
class MatchReport:
    """Games of `first` against `second` in a multi-agent env; seats alternate game by game."""

    env_id: str
    games: list[GameRecord] = field(default_factory=list)
    first_seats: list[str] = field(default_factory=list)
    """The seat `first` took in each game (the other seats were `second`'s)."""

    def scores(self) -> list[float]:
        """`first`'s score in each game without an infrastructure error: 1 when it earned more
        than its opponent, 0.5 when as much, 0 when less."""
        return [
            _score(game.returns, seat)
            for game, seat in zip(self.games, self.first_seats)
            if not game.infra_error
        ]

    @property
    def infra_errors(self) -> int:
        return sum(game.infra_error for game in self.games)

    @property
    def wins(self) -> int:
        return sum(score == 1.0 for score in self.scores())

    @property
    def draws(self) -> int:
        return sum(score == 0.5 for score in self.scores())

    @property
    def losses(self) -> int:
        return sum(score == 0.0 for score in self.scores())

    @property
    def win_rate(self) -> float:
        scores = self.scores()
        return self.wins / len(scores) if scores else math.nan

    @property
    def mean_return(self) -> float:
        """`first`'s mean return over the judged games."""
        returns = [
            game.returns[seat]
            for game, seat in zip(self.games, self.first_seats)
            if not game.infra_error
        ]
        return float(np.mean(returns)) if returns else math.nan


def _score(returns: Mapping[str, float], seat: str) -> float:
    others = [value for agent, value in returns.items() if agent != seat]
    theirs = float(np.mean(others)) if others else 0.0
    return 1.0 if returns[seat] > theirs else 0.5 if returns[seat] == theirs else 0.0


def play_match(
    env_id: str,
    first: Policy,
    second: Policy,
    *,
    games: int,
    seed: int = 0,
    env_kwargs: Mapping[str, Any] | None = None,
    sampling: SamplingParams | None = None,
    batch_size: int = 16,
    max_turns: int | None = None,
    seat: str | None = None,
) -> MatchReport:
    """`games` games of the multi-agent env `env_id`: game i resets with seed `seed + i` and
    `first` takes seat i mod (number of seats), or `seat` in every game when given, `second`
    every other seat."""
    from rlvr.envs.multiagent import make

    if games < 1 or batch_size < 1:
        raise ValueError("games and batch_size must be >= 1")
    made = [make(env_id, **dict(env_kwargs or {})) for _ in range(min(batch_size, games))]
    report = MatchReport(env_id)
    try:
        agents = list(made[0].possible_agents)
        if seat is not None and seat not in agents:
            raise ValueError(f"{env_id} has no seat {seat!r}: its seats are {agents}")
        for begin in range(0, games, len(made)):
            batch = made[: min(len(made), games - begin)]
            mine = [seat or agents[(begin + k) % len(agents)] for k in range(len(batch))]
            seats = seat_positions(batch)
            actors = [game_policy_actor(p, batch, sampling) for p in (first, second)]
            players = [0 if agent == mine[game] else 1 for game, agent in seats]
            act = seat_router(players, actors)
            starts = [Start(begin + k, 0, seed + begin + k) for k in range(len(batch))]
            report.games.extend(play_games(batch, starts, act, max_turns=max_turns))
            report.first_seats.extend(mine)
    finally:
        for env in made:
            env.close()
    return report
