"""The single-agent episode loop: evaluation, training rollouts and leaderboard replay all play
episodes here.

`play_episodes(envs, starts, act)` plays one episode per env, batched and multi-turn: it resets
each env with its own seed, then each round asks the actor `act` for the replies of every episode
still running and steps them. What answers is the actor's business:

- evaluation (`evaluate`): a `Policy`'s batched `generate` (`policy_actor`);
- training (`rlvr.agents.rollouts.RolloutCollector`): a token-level actor that keeps the ids it
  sampled;
- leaderboard replay (`rlvr bench reverify`): an actor that returns the stored replies.

`run_episodes` plays a list of starts a batch at a time on envs that an `EnvHost` makes
(`rlvr.rollout.hosts`); `evaluate` runs it with a policy's actor.

Episode `i` of `evaluate` resets with seed `seed + i`, so a run is reproducible and two policies
evaluated with the same seed face the same tasks; with `samples_per_task=k`, the k samples of an
episode all use that seed (the same task), for pass@k.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import gymnasium as gym

from rlvr.core.policy import Completion, EnvAware, Policy, SamplingParams
from rlvr.rollout.hosts import EnvBatch, EnvHost, LocalEnvs
from rlvr.rollout.records import Act, EpisodeRecord, ResetOptions, Start
from rlvr.rollout.reports import EvalReport


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
