"""Evaluate a policy on an environment: run episodes, keep every trace, summarise the rewards.

Works for single- and multi-turn envs alike: at each round the policy answers every episode that
is still running, in one batched `generate` call. Episode `i` resets with seed `seed + i`, so a
run is reproducible and two policies evaluated with the same seed face the same tasks; with
`samples_per_task=k`, the k samples of an episode all use that seed (the same task), for pass@k.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from rlvr.agents.policy import Completion, EnvAware, Policy, SamplingParams
from rlvr.envs.core import TextEnv
from rlvr.verifiers.types import Task


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

    @property
    def total_reward(self) -> float:
        return float(sum(self.rewards))

    @property
    def turns(self) -> int:
        return len(self.rewards)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "total_reward": self.total_reward}


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
    reset_options: Callable[[int], dict[str, Any]] | None = None,
) -> EvalReport:
    """Run `episodes * samples_per_task` episodes of `env_id` with `policy` and report.

    `env_probe(env)` is called once on a freshly made env; its result is `report.env_info`.
    `reset_options(episode)` gives the `options` of that episode's reset (e.g. to pin a task).
    """
    if episodes < 1 or samples_per_task < 1 or batch_size < 1:
        raise ValueError("episodes, samples_per_task and batch_size must all be >= 1")
    jobs = [(episode, sample) for episode in range(episodes) for sample in range(samples_per_task)]
    envs = [gym.make(env_id, **dict(env_kwargs or {})) for _ in range(min(batch_size, len(jobs)))]
    report = EvalReport(env_id)
    if env_probe is not None:
        report.env_info = dict(env_probe(envs[0]))
    bar = _progress_bar(len(jobs), env_id) if progress else None
    try:
        for start in range(0, len(jobs), len(envs)):
            batch = jobs[start : start + len(envs)]
            batch_envs = envs[: len(batch)]
            for record in _run_batch(batch_envs, batch, policy, seed, sampling, reset_options):
                report.episodes.append(record)
                if on_episode is not None:
                    on_episode(record)
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(mean_reward=f"{report.mean_reward:.3f}")
    finally:
        if bar is not None:
            bar.close()
        for env in envs:
            env.close()
    return report


def _run_batch(
    envs: Sequence[gym.Env],
    jobs: Sequence[tuple[int, int]],
    policy: Policy,
    seed: int,
    sampling: SamplingParams | None,
    reset_options: Callable[[int], dict[str, Any]] | None = None,
) -> list[EpisodeRecord]:
    def act(active: list[int], conversations: list[list[dict[str, Any]]]) -> list[Completion]:
        if isinstance(policy, EnvAware):
            policy.attach([envs[i] for i in active])
        return [samples[0] for samples in policy.generate(conversations, 1, sampling)]

    starts = [(episode, sample, seed + episode) for episode, sample in jobs]
    return play_episodes(envs, starts, act, reset_options=reset_options)


Act = Callable[[list[int], list[list[dict[str, Any]]]], list[Completion]]
"""`act(active, conversations) -> completions`: one reply for each still-running episode, where
`active[k]` is the episode's position in the batch and `conversations[k]` its messages so far."""


def play_episodes(
    envs: Sequence[gym.Env],
    starts: Sequence[tuple[int, int, int]],
    act: Act,
    *,
    reset_options: Callable[[int], dict[str, Any]] | None = None,
    max_turns: int | None = None,
) -> list[EpisodeRecord]:
    """Play one episode per env, all batched: `starts[i]` is (episode, sample, seed) of env i.

    Each round asks `act` for the replies of every episode still running. Evaluation and the
    training rollouts share this loop. `reset_options(episode)` gives the options of that
    episode's reset (e.g. to pin a task); `max_turns` cuts (and marks truncated) longer episodes.
    """
    records = []
    conversations: list[list[dict[str, Any]]] = []
    for env, (episode, sample, episode_seed) in zip(envs, starts):
        options = reset_options(episode) if reset_options is not None else None
        _, info = env.reset(seed=episode_seed, options=options)
        conversations.append(info["messages"])
        records.append(
            EpisodeRecord(
                episode,
                sample,
                episode_seed,
                info["task_id"],
                info["messages"],
                [],
                None,
                False,
                False,
                task_fingerprint(env),
                0,
                0,
            )
        )
    active = list(range(len(starts)))
    while active:
        completions = act(active, [conversations[i] for i in active])
        still_active = []
        for i, completion in zip(active, completions):
            _, reward, terminated, truncated, info = envs[i].step(completion.text)
            record = records[i]
            record.rewards.append(float(reward))
            record.messages = conversations[i] = info["messages"]
            record.verdict = info.get("verdict", record.verdict)
            record.infra_error = record.infra_error or bool(info["infra_error"])
            _count_tokens(record, completion)
            cut = max_turns is not None and record.turns >= max_turns
            record.truncated = bool(truncated) or (cut and not terminated)
            if not (terminated or truncated or cut):
                still_active.append(i)
        active = still_active
    return records


def task_fingerprint(env: gym.Env) -> str | None:
    """A hash of the current task (prompt, gold answer, metadata), if the env exposes it as
    `env.unwrapped.task` (every `TextEnv` with a judge does)."""
    base = env.unwrapped
    task = base.task if isinstance(base, TextEnv) else None
    if not isinstance(task, Task):
        return None
    text = json.dumps(task.to_dict(), sort_keys=True, default=str)
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def _count_tokens(record: EpisodeRecord, completion: Completion) -> None:
    """Add a completion's token counts to the episode's; an unknown count makes the total None."""
    generated = completion.metadata.get("completion_tokens")
    if completion.token_ids is not None:
        generated = len(completion.token_ids)
    prompt = completion.metadata.get("prompt_tokens")
    record.completion_tokens = _add(record.completion_tokens, generated)
    record.prompt_tokens = _add(record.prompt_tokens, prompt)


def _add(total: int | None, count: Any) -> int | None:
    if total is None or not isinstance(count, int):
        return None
    return total + count


def _progress_bar(total: int, label: str) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=label, unit="ep", dynamic_ncols=True)
