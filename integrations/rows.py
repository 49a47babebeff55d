"""Dataset rows of an env's tasks: the chat prompt the model reads and the task columns.

`prompt_rows(env_id, n, split=..., env_kwargs=...)` is what `rlvr.integrations.trl.dataset`
and `rlvr export` write: one row per task, the first `n` tasks of the env's task source (item
`i` of a procedural source is the same on every machine).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rlvr.integrations.columns import encode_task, opening_messages
from rlvr.integrations.errors import IntegrationConfigError
from rlvr.integrations.scoring import judged_env

if TYPE_CHECKING:
    from rlvr.envs.core import TextEnv
    from rlvr.verifiers.types import Task

MAX_DEFAULT_TASKS = 100_000
"""`n=None` takes every task of a source up to this size; a bigger one (a procedural source of a
million) needs an explicit `n`."""


def env_kwargs_for(split: str | None, env_kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
    """`env_kwargs` with `split` added when given (None: the env's own default)."""
    kwargs = dict(env_kwargs or {})
    if split is not None:
        if "split" in kwargs and kwargs["split"] != split:
            raise IntegrationConfigError(
                f"split={split!r} and env kwargs split={kwargs['split']!r} disagree; give one"
            )
        kwargs["split"] = split
    return kwargs


def prompt_rows(
    env_id: str,
    n: int | None = None,
    *,
    split: str | None = None,
    env_kwargs: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """One row per task: `prompt` (chat messages, no gold), `env_id` and the task columns."""
    env = judged_env(env_id, env_kwargs_for(split, env_kwargs))
    try:
        return [prompt_row(env_id, env, task) for task in env_tasks(env, n, env_id)]
    finally:
        env.close()


def prompt_row(env_id: str, env: TextEnv, task: Task) -> dict[str, Any]:
    return {"prompt": opening_messages(env, task), "env_id": env_id, **encode_task(task)}


def env_tasks(env: TextEnv, n: int | None, env_id: str) -> list[Task]:
    """The first `n` tasks of the env's task source (all of them for None)."""
    source = getattr(env.judge, "tasks", None)
    if source is None:
        raise IntegrationConfigError(
            f"{env_id}: its judge has no task source (`tasks`) to read prompts from"
        )
    total = len(source)
    if n is None:
        if total > MAX_DEFAULT_TASKS:
            raise IntegrationConfigError(
                f"{env_id} generates {total} tasks; pass n, the number of tasks to take"
            )
        n = total
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise IntegrationConfigError(f"n must be a positive int (or None for all), got {n!r}")
    if n > total:
        raise IntegrationConfigError(
            f"n={n}, but {env_id} has {total} tasks with these arguments; pass n <= {total}"
        )
    return [source[index] for index in range(n)]
