"""Where the envs of a batch run: the `EnvBatch` that the episode loop resets and steps.

`LocalEnvs` holds its envs in this process; `rlvr.distributed.RemoteEnvs` holds them on Ray env
workers, which reset each with `reset_env` where it lives, so the loop keeps the same records
either way. An `EnvHost` makes a batch from an env id (`LocalEnvs.make` here,
`rlvr.distributed.EnvWorkers.host` on Ray). `EnvWorkersError`, what the Ray host raises when its
workers cannot go on, lives here so that the commands catch it without importing Ray.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import gymnasium as gym

from rlvr.rollout.records import Start, StepResult
from rlvr.rollout.tasks import task_fingerprint


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
