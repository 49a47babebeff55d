"""Which task an episode poses: its fingerprint, and seeds whose episodes never repeat a task.

`task_fingerprint(env)` hashes the posed task, gold answer included; each `EpisodeRecord` keeps
it, so a replay or an import can tell whether an env still poses the stored task.
`distinct_tasks` finds episodes that pose distinct tasks, since plain seeds repeat the tasks of
a small split.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import gymnasium as gym

from rlvr.envs.errors import EnvConfigError
from rlvr.verifiers.types import Task


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
