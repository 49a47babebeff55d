"""Registering environments with Gymnasium's registry.

Built-in environments are listed by their families' descriptors, found through the registry
`rlvr.builtin_envs.FAMILIES` (standard library only, so that `import rlvr` can register them
without importing anything of rlvr.envs); `register_family` adds a family of your own, and
`register_task_env` registers one env of your own in one call.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import gymnasium as gym

from rlvr.builtin_envs import (  # noqa: F401 (re-exported: the table's former home)
    BUILTIN_ENVS,
    DISABLE_PASSIVE_CHECKER,
    MULTIAGENT_ENVS,
    RETIRED_MULTIAGENT_IDS,
    SELF_CORRECT_VARIANTS,
    EnvEntry,
    multiagent_env_ids,
    register_builtin_envs,
    rlvr_env_ids,
)
from rlvr.envs.errors import EnvConfigError
from rlvr.envs.tasks import TaskSource, as_source
from rlvr.families import (  # noqa: F401 (re-exported: rlvr.envs.register_family)
    Family,
    FamilyError,
    families,
    load_family,
    register_family,
    self_correct_entries,
)
from rlvr.verifiers.function import VerifyFunction
from rlvr.verifiers.types import Task, Verifier

_USER_ENV_IDS: list[str] = []


def user_env_ids() -> list[str]:
    """Ids registered in this process with `register_task_env`."""
    return list(_USER_ENV_IDS)


def register_task_env(
    id: str,
    tasks: TaskSource | Iterable[Task | Mapping[str, Any]],
    verify: Verifier | VerifyFunction,
    *,
    system_prompt: str | None = None,
    prompt_template: str = "{prompt}",
    format_weight: float = 0.0,
    override: bool = False,
) -> None:
    """Register a single-turn env built from tasks and a verifier, in one call.

    `verify` is a `Verifier` or a plain function `fn(reply, task) -> bool | float | Verdict`.
    Afterwards `gym.make(id)` works like for any built-in env. Ids follow Gymnasium's
    `[namespace/]Name-vN`: bump N whenever the tasks or the reward change.
    """
    if id in gym.registry and not override:
        raise EnvConfigError(
            f"{id!r} is already registered; pick a new version or pass override=True"
        )
    source = as_source(tasks)  # validates the tasks now rather than at make()
    gym.register(
        id=id,
        entry_point="rlvr.envs.verifiable:VerifiableEnv",
        disable_env_checker=DISABLE_PASSIVE_CHECKER,
        kwargs={
            "tasks": source,
            "verifier": verify,
            "system_prompt": system_prompt,
            "prompt_template": prompt_template,
            "format_weight": format_weight,
        },
    )
    if id not in _USER_ENV_IDS:
        _USER_ENV_IDS.append(id)
