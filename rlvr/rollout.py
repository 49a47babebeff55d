"""The episode loop: evaluation, training rollouts and leaderboard replay all play episodes here.

`play_episodes(envs, starts, act)` plays one episode per env, batched and multi-turn: it resets
each env with its own seed, then each round asks the actor `act` for the replies of every episode
still running and steps them. What answers is the actor's business:

- evaluation (`evaluate`): a `Policy`'s batched `generate` (`policy_actor`);
- training (`rlvr.agents.rollouts.RolloutCollector`): a token-level actor that keeps the ids it
  sampled;
- leaderboard replay (`rlvr bench reverify`): an actor that returns the stored replies.

`play_games(games, starts, act)` is its multi-agent twin (`rlvr.envs.multiagent`): one
`EpisodeRecord` per seat of each game, holding only that seat's view, and the same actor contract
over seat positions; `seat_router` hands each seat to its own actor (self-play seats one policy
everywhere; a match seats two).

Episode `i` of `evaluate` resets with seed `seed + i`, so a run is reproducible and two policies
evaluated with the same seed face the same tasks; with `samples_per_task=k`, the k samples of an
episode all use that seed (the same task), for pass@k.

This module imports Gymnasium, numpy, the envs and the ground's Policy protocol
(`rlvr.core.policy`) only: it sits below `rlvr.agents` and `rlvr.distributed` in the layer order
that `lint-imports` enforces (docs/design.md).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, SupportsFloat, cast

import gymnasium as gym
import numpy as np

from rlvr.core.policy import Completion, EnvAware, Policy, SamplingParams
from rlvr.envs.errors import EnvConfigError
from rlvr.verifiers.types import Task

if TYPE_CHECKING:
    from rlvr.envs.multiagent import TextAECEnv

StepResult = tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]
"""What `env.step` returns: observation, reward, terminated, truncated, info."""


class Start(NamedTuple):
    """Which episode an env plays: its number, which sample of it, and the seed of its reset."""

    episode: int
    sample: int
    seed: int


@dataclass
class EpisodeRecord:
    """Everything that happened in one episode (enough to re-verify it later)."""

    episode: int
    sample: int
    seed: int
    task_id: str
    messages: list[dict[str, Any]]
    rewards: list[float]
    verdict: dict[str, Any] | None
    infra_error: bool
    truncated: bool
    task_hash: str | None = None
    """Fingerprint of the posed task, gold answer included (None if the env exposes no `task`)."""
    completion_tokens: int | None = None
    """Tokens the policy generated over the episode (None when the policy does not report them)."""
    prompt_tokens: int | None = None
    """Prompt tokens the policy reported (API servers do; None otherwise)."""

    @classmethod
    def begin(cls, start: Start, info: Mapping[str, Any], task_hash: str | None) -> EpisodeRecord:
        """The record of an episode just reset (`info` is what `reset` returned)."""
        episode, sample, seed = start
        return cls(
            episode,
            sample,
            seed,
            info["task_id"],
            messages=info["messages"],
            rewards=[],
            verdict=None,
            infra_error=False,
            truncated=False,
            task_hash=task_hash,
            completion_tokens=0,
            prompt_tokens=0,
        )

    def add_turn(self, reply: Completion, step: StepResult, max_turns: int | None = None) -> bool:
        """Record a reply and what `env.step(reply.text)` returned (`step`): its reward, the
        conversation after it, verdict, flags and token counts (an unknown count makes the
        episode's total unknown). Returns whether the episode goes on: not once the env ended
        it, nor after `max_turns` replies (truncated unless the env terminated it)."""
        _, reward, terminated, truncated, info = step
        self.rewards.append(float(reward))
        self.messages = info["messages"]
        self.verdict = info.get("verdict", self.verdict)
        self.infra_error = self.infra_error or bool(info["infra_error"])
        generated = reply.metadata.get("completion_tokens")
        if reply.token_ids is not None:
            generated = len(reply.token_ids)
        self.completion_tokens = _add(self.completion_tokens, generated)
        self.prompt_tokens = _add(self.prompt_tokens, reply.metadata.get("prompt_tokens"))
        cut = max_turns is not None and self.turns >= max_turns
        self.truncated = bool(truncated) or (cut and not terminated)
        return not (terminated or truncated or cut)

    @property
    def total_reward(self) -> float:
        return float(sum(self.rewards))

    @property
    def turns(self) -> int:
        return len(self.rewards)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "total_reward": self.total_reward}


def _add(total: int | None, count: Any) -> int | None:
    if total is None or not isinstance(count, int):
        return None
    return total + count


@dataclass
class EvalReport:
    env_id: str
    episodes: list[EpisodeRecord] = field(default_factory=list)
    env_info: dict[str, Any] = field(default_factory=dict)
    """What `evaluate(env_probe=...)` said about the env (e.g. its verifier's version)."""

    @property
    def judged(self) -> list[EpisodeRecord]:
        """Episodes without an infrastructure error (the only ones that count)."""
        return [record for record in self.episodes if not record.infra_error]

    @property
    def infra_errors(self) -> int:
        return sum(record.infra_error for record in self.episodes)

    @property
    def mean_reward(self) -> float:
        judged = self.judged
        return float(np.mean([r.total_reward for r in judged])) if judged else math.nan

    @property
    def success_rate(self) -> float:
        """Share of judged episodes whose return is 1.0 (the task fully solved)."""
        judged = self.judged
        return float(np.mean([r.total_reward >= 1.0 for r in judged])) if judged else math.nan

    def pass_at_k(self, k: int) -> float:
        """Unbiased pass@k (Chen et al., 2021) over tasks with n >= k judged samples."""
        by_episode: dict[int, list[bool]] = {}
        for record in self.judged:
            by_episode.setdefault(record.episode, []).append(record.total_reward >= 1.0)
        estimates = [_pass_at_k(len(s), sum(s), k) for s in by_episode.values() if len(s) >= k]
        return float(np.mean(estimates)) if estimates else math.nan

    def summary(self) -> dict[str, Any]:
        return {
            "env_id": self.env_id,
            "episodes": len(self.episodes),
            "infra_errors": self.infra_errors,
            "mean_reward": self.mean_reward,
            "success_rate": self.success_rate,
            "mean_turns": float(np.mean([r.turns for r in self.episodes])) if self.episodes else 0,
        }


def _pass_at_k(n: int, c: int, k: int) -> float:
    if n - c < k:
        return 1.0
    return 1.0 - math.prod((n - c - i) / (n - i) for i in range(k))


# --- the loop -------------------------------------------------------------------------------------

Act = Callable[[list[int], list[EpisodeRecord]], Sequence[Completion | None]]
"""`act(active, records) -> replies`: one reply for each still-running episode, where `active[k]`
is the episode's position in the batch and `records[k]` its record so far (read it, do not change
it: `records[k].messages` is the conversation to answer, `.turns` the replies already given).
A reply of None means the actor has none to give: the episode stops there, marked truncated."""

ResetOptions = Callable[[int], dict[str, Any] | None]
"""`reset_options(episode)`: the `options` of that episode's reset (e.g. to pin a task)."""


class EnvBatch(Protocol):
    """The envs of a batch, wherever they run: `LocalEnvs` (here) or env workers in other
    processes (`rlvr.distributed`, on Ray). The loop only resets and steps them through this, and
    the records it keeps are the same either way."""

    @property
    def envs(self) -> Sequence[gym.Env]:
        """One object per position for actors that read the env (an `EnvAware` oracle); remote
        batches give stand-ins that forward `unwrapped.oracle_reply()`."""
        ...

    def reset(
        self, starts: Sequence[Start], options: Sequence[dict[str, Any] | None]
    ) -> list[tuple[Mapping[str, Any], str | None]]:
        """Reset env i with `starts[i].seed` and `options[i]` for each start (envs past the last
        start sit out the round): (reset info, task fingerprint) of each."""
        ...

    def step(self, positions: Sequence[int], texts: Sequence[str]) -> list[StepResult]:
        """Step env `positions[k]` with `texts[k]`, for every k (the envs step concurrently
        where they can)."""
        ...

    def probe(self, probe: Callable[[gym.Env], Mapping[str, Any]]) -> Mapping[str, Any]:
        """`probe(env)` on one of the batch's envs (where it runs)."""
        ...

    def close(self) -> None: ...


class LocalEnvs:
    """An `EnvBatch` of envs in this process, stepped one after another."""

    def __init__(self, envs: Sequence[gym.Env], *, owned: bool = False) -> None:
        self._envs = list(envs)
        self.owned = owned
        """Close the envs with the batch (they were made for it)."""

    @classmethod
    def make(cls, env_id: str, env_kwargs: Mapping[str, Any] | None, size: int) -> LocalEnvs:
        return cls([gym.make(env_id, **dict(env_kwargs or {})) for _ in range(size)], owned=True)

    @property
    def envs(self) -> Sequence[gym.Env]:
        return self._envs

    def reset(
        self, starts: Sequence[Start], options: Sequence[dict[str, Any] | None]
    ) -> list[tuple[Mapping[str, Any], str | None]]:
        return [
            reset_env(env, start, option) for env, start, option in zip(self._envs, starts, options)
        ]

    def step(self, positions: Sequence[int], texts: Sequence[str]) -> list[StepResult]:
        return [self._envs[i].step(text) for i, text in zip(positions, texts)]

    def probe(self, probe: Callable[[gym.Env], Mapping[str, Any]]) -> Mapping[str, Any]:
        return probe(self._envs[0])

    def close(self) -> None:
        if self.owned:
            for env in self._envs:
                env.close()


def reset_env(
    env: gym.Env, start: Start, options: dict[str, Any] | None
) -> tuple[Mapping[str, Any], str | None]:
    """Reset `env` for `start`: its reset info and the posed task's fingerprint (what a record
    begins from, whichever process the env lives in)."""
    _, info = env.reset(seed=start.seed, options=options)
    return info, task_fingerprint(env)


EnvHost = Callable[[str, Mapping[str, Any] | None, int], EnvBatch]
"""`host(env_id, env_kwargs, size)`: a batch of `size` envs of `env_id`, made where the host
runs them (`LocalEnvs.make` here; `rlvr.distributed.EnvWorkers.host` on Ray)."""


class EnvWorkersError(RuntimeError):
    """Ray env workers cannot go on: they did not start, or every one of them died."""


def play_episodes(
    envs: Sequence[gym.Env] | EnvBatch,
    starts: Sequence[tuple[int, int, int]],
    act: Act,
    *,
    reset_options: ResetOptions | None = None,
    max_turns: int | None = None,
) -> list[EpisodeRecord]:
    """Play one episode per env, all batched: `starts[i]` is the (episode, sample, seed) of env i
    (`envs`: envs here, or an `EnvBatch` of envs that run elsewhere).

    Each round asks `act` for the replies of every episode still running. An episode ends when
    its env terminates or truncates it, when the actor gives no reply (truncated), or after
    `max_turns` replies (truncated unless the env terminated it on the last one).
    """
    batch = LocalEnvs(envs) if isinstance(envs, Sequence) else envs
    begun = [Start(*start) for start in starts]
    options = [reset_options(s.episode) if reset_options is not None else None for s in begun]
    records = [
        EpisodeRecord.begin(start, info, fingerprint)
        for start, (info, fingerprint) in zip(begun, batch.reset(begun, options))
    ]
    active = list(range(len(records)))
    while active:
        replies = act(active, [records[i] for i in active])
        if len(replies) != len(active):
            raise RuntimeError(
                f"the actor gave {len(replies)} replies for {len(active)} running episodes; "
                "it must give one per episode (None to stop one)"
            )
        going = [(i, reply) for i, reply in zip(active, replies) if reply is not None]
        for i, reply in zip(active, replies):
            if reply is None:  # the actor has no more replies (a replay with none left)
                records[i].truncated = True
        results = batch.step([i for i, _ in going], [reply.text for _, reply in going])
        active = [
            i
            for (i, reply), result in zip(going, results)
            if records[i].add_turn(reply, result, max_turns)
        ]
    return records


def policy_actor(
    policy: Policy, envs: Sequence[gym.Env], sampling: SamplingParams | None = None
) -> Act:
    """The actor of a `Policy` playing `envs`: one `generate` call per round for every running
    episode (an `EnvAware` policy, the oracle, is attached to those episodes' envs first)."""

    def act(active: list[int], records: list[EpisodeRecord]) -> list[Completion | None]:
        if isinstance(policy, EnvAware):
            policy.attach([envs[i] for i in active])
        conversations = [record.messages for record in records]
        return [samples[0] for samples in policy.generate(conversations, 1, sampling)]

    return act


def run_episodes(
    env_id: str,
    starts: Sequence[tuple[int, int, int]],
    actor_for: Callable[[Sequence[gym.Env]], Act],
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    batch_size: int = 16,
    reset_options: ResetOptions | None = None,
    on_episode: Callable[[EpisodeRecord], None] | None = None,
    env_probe: Callable[[gym.Env], Mapping[str, Any]] | None = None,
    env_host: EnvHost | None = None,
) -> EvalReport:
    """Play `starts` on `batch_size` envs of `env_id` (made by `env_host`, here by default;
    closed at the end), a batch at a time; `actor_for(envs)` gives the actor of a batch.
    `env_probe(env)` is called once on a freshly made env, its result is `report.env_info`;
    `on_episode(record)` after each episode."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    size = min(batch_size, len(starts))
    envs = (env_host or LocalEnvs.make)(env_id, env_kwargs, size)
    report = EvalReport(env_id)
    try:
        if env_probe is not None and size:
            report.env_info = dict(envs.probe(env_probe))
        for first in range(0, len(starts), size):
            batch = starts[first : first + size]
            actor = actor_for(envs.envs[: len(batch)])
            records = play_episodes(envs, batch, actor, reset_options=reset_options)
            for record in records:
                report.episodes.append(record)
                if on_episode is not None:
                    on_episode(record)
    finally:
        envs.close()
    return report


def evaluate(
    env_id: str,
    policy: Policy,
    *,
    episodes: int,
    seed: int = 0,
    samples_per_task: int = 1,
    batch_size: int = 16,
    sampling: SamplingParams | None = None,
    env_kwargs: Mapping[str, Any] | None = None,
    progress: bool = False,
    on_episode: Callable[[EpisodeRecord], None] | None = None,
    env_probe: Callable[[gym.Env], Mapping[str, Any]] | None = None,
    reset_options: ResetOptions | None = None,
    env_host: EnvHost | None = None,
    seeds: Sequence[int] | None = None,
) -> EvalReport:
    """Run `episodes * samples_per_task` episodes of `env_id` with `policy` and report.

    `env_probe(env)` is called once on a freshly made env; its result is `report.env_info`.
    `reset_options(episode)` gives the `options` of that episode's reset (e.g. to pin a task).
    `env_host` makes the envs (default: here; `rlvr.distributed.EnvWorkers.host` runs them on
    Ray workers, with the same records). `seeds` replaces the reset seeds `seed + episode`
    with its own, one per episode (e.g. `distinct_tasks(...)`: no task asked twice).
    """
    if episodes < 1 or samples_per_task < 1 or batch_size < 1:
        raise ValueError("episodes, samples_per_task and batch_size must all be >= 1")
    if seeds is not None and len(seeds) != episodes:
        raise ValueError(f"give one seed per episode: {len(seeds)} seeds for {episodes} episodes")
    starts = [
        Start(episode, sample, seed + episode if seeds is None else seeds[episode])
        for episode in range(episodes)
        for sample in range(samples_per_task)
    ]
    bar = _ProgressBar(len(starts), env_id, on_episode) if progress else None
    try:
        return run_episodes(
            env_id,
            starts,
            lambda envs: policy_actor(policy, envs, sampling),
            env_kwargs=env_kwargs,
            batch_size=batch_size,
            reset_options=reset_options,
            on_episode=bar.update if bar is not None else on_episode,
            env_probe=env_probe,
            env_host=env_host,
        )
    finally:
        if bar is not None:
            bar.close()


def distinct_tasks(
    env_id: str,
    count: int,
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    seed: int = 0,
    pin: bool = False,
    scan: int = 50,
) -> list[int]:
    """Up to `count` episodes of `env_id` that each pose a task no earlier one posed (told apart
    by their opening messages), in order: the reset seeds among `seed, seed + 1, ...`, or with
    `pin` the task indexes `i` of `reset(seed=seed, options={"task_index": i})` (the first
    distinct tasks of the split). At most `scan * count` resets are tried, so a split with fewer
    distinct tasks gives them all (with `pin`, so does a source of fewer than that).

    Seeded episodes repeat problems when the split is small (rlvr/Math-v0's level-1 quadratic
    test split holds about ten): 1000 episodes would ask each about 90 times, and a success
    rate's binomial standard error would understate the noise. Evaluate on these instead
    (`evaluate(..., seeds=distinct_tasks(...))`).
    """
    if count < 1 or scan < 1:
        raise ValueError(f"count and scan must be >= 1, got {count} and {scan}")
    env = gym.make(env_id, **dict(env_kwargs or {}))
    seen: set[str] = set()
    found: list[int] = []
    try:
        for i in range(scan * count):
            if pin:
                try:
                    _, info = env.reset(seed=seed, options={"task_index": i})
                except EnvConfigError:
                    if i == 0:
                        raise
                    break  # past the source's last task
            else:
                _, info = env.reset(seed=seed + i)
            opening = json.dumps(info["messages"], sort_keys=True, default=str)
            if opening not in seen:
                seen.add(opening)
                found.append(i if pin else seed + i)
                if len(found) == count:
                    break
    finally:
        env.close()
    return found


class _ProgressBar:
    """A tqdm bar over episodes showing the running mean reward of the judged ones."""

    def __init__(
        self, total: int, label: str, on_episode: Callable[[EpisodeRecord], None] | None
    ) -> None:
        from tqdm.auto import tqdm

        self.bar = tqdm(total=total, desc=label, unit="ep", dynamic_ncols=True)
        self.on_episode = on_episode
        self.judged = 0
        self.reward = 0.0

    def update(self, record: EpisodeRecord) -> None:
        if self.on_episode is not None:
            self.on_episode(record)
        if not record.infra_error:
            self.judged += 1
            self.reward += record.total_reward
        mean = self.reward / self.judged if self.judged else math.nan
        self.bar.update(1)
        self.bar.set_postfix(mean_reward=f"{mean:.3f}")

    def close(self) -> None:
        self.bar.close()


def task_fingerprint(env: Any) -> str | None:
    """A hash of the current task (prompt, gold answer, metadata), if the env exposes it as
    `env.unwrapped.task` (every `TextEnv` with a judge does, and multi-agent envs with a task),
    or, for an env served elsewhere (`rlvr.integrations.openenv.RemoteEnv`), the hash its
    server computed, as `env.unwrapped.task_fingerprint`."""
    served = getattr(env.unwrapped, "task_fingerprint", None)
    if isinstance(served, str):
        return served
    task = getattr(env.unwrapped, "task", None)
    if not isinstance(task, Task):
        return None
    text = json.dumps(task.to_dict(), sort_keys=True, default=str)
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


# --- multi-agent games ----------------------------------------------------------------------------


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
