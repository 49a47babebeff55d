"""A registry of multi-agent envs: PettingZoo has none, so `make("rlvr/NAME-v0")` lives here.

Entry points are `"module:attribute"` strings (imported by `make`, so listing ids imports
nothing) or callables returning an AEC env. `make` gives the AEC env; `make_parallel` its
Parallel face (`TextParallelEnv` for ours, PettingZoo's `aec_to_parallel` for any other AEC env,
which must then be parallelizable).
"""

from __future__ import annotations

import difflib
import importlib
import re
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pettingzoo import AECEnv, ParallelEnv
from pettingzoo.utils.conversions import aec_to_parallel

from rlvr.envs.errors import EnvConfigError
from rlvr.envs.multiagent.base import TextAECEnv
from rlvr.envs.multiagent.parallel import TextParallelEnv
from rlvr.envs.registration import MULTIAGENT_ENVS, RETIRED_MULTIAGENT_IDS

_ID = re.compile(r"^(?:[\w:.-]+/)?[\w:.-]+-v\d+$")


@dataclass(frozen=True)
class MultiAgentSpec:
    """How `make(id)` builds an env: `entry_point(**kwargs, **make_kwargs)`."""

    id: str
    entry_point: str | Callable[..., AECEnv]
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    def load(self) -> Callable[..., AECEnv]:
        if callable(self.entry_point):
            return self.entry_point
        module_name, _, attribute = self.entry_point.partition(":")
        return getattr(importlib.import_module(module_name), attribute)


registry: dict[str, MultiAgentSpec] = {}


def register(
    id: str,
    entry_point: str | Callable[..., AECEnv],
    *,
    kwargs: Mapping[str, Any] | None = None,
    override: bool = False,
) -> None:
    """Register a multi-agent env under `id` (`[namespace/]Name-vN`; bump N when it changes)."""
    if not isinstance(id, str) or not _ID.match(id):
        raise EnvConfigError(f"env ids look like 'myorg/Name-v0', got {id!r}")
    if id in registry and not override:
        raise EnvConfigError(
            f"{id!r} is already registered; pick a new version or pass override=True"
        )
    if not callable(entry_point) and ":" not in str(entry_point):
        raise EnvConfigError(
            f"entry_point must be a callable or 'module:attribute', got {entry_point!r}"
        )
    registry[id] = MultiAgentSpec(id, entry_point, dict(kwargs or {}))


class RetiredEnvWarning(UserWarning):
    """`make` was asked for an id a newer version replaced; it built the newer one."""


def spec(id: str) -> MultiAgentSpec:
    """The registered spec of `id`, or `EnvConfigError` naming close ids. A retired built-in id
    (`RETIRED_MULTIAGENT_IDS`) gives its successor's spec, with a `RetiredEnvWarning`."""
    if id not in registry and id in RETIRED_MULTIAGENT_IDS:
        successor, why = RETIRED_MULTIAGENT_IDS[id]
        warnings.warn(
            f"{id} is retired ({why}); this is {successor}: ask for it by that id",
            RetiredEnvWarning,
            stacklevel=3,
        )
        id = successor
    if id not in registry:
        close = difflib.get_close_matches(str(id), list(registry), n=3)
        hint = f"; did you mean {close}?" if close else f"; registered: {sorted(registry)}"
        raise EnvConfigError(f"no multi-agent env {id!r}{hint}")
    return registry[id]


def make(id: str, **kwargs: Any) -> AECEnv:
    """The AEC env registered as `id`, built with its registered kwargs updated by `kwargs`."""
    entry = spec(id)
    env = entry.load()(**{**entry.kwargs, **kwargs})
    if not isinstance(env, AECEnv):
        raise EnvConfigError(f"{id!r}'s entry point built a {type(env).__name__}, not an AECEnv")
    return env


def make_parallel(id: str, **kwargs: Any) -> ParallelEnv:
    """The Parallel env registered as `id` (one round per `step`)."""
    return to_parallel(make(id, **kwargs))


def to_parallel(env: AECEnv) -> ParallelEnv:
    """The Parallel face of an AEC env."""
    if isinstance(env, TextAECEnv):
        return TextParallelEnv(env)
    return aec_to_parallel(env)


def env_ids() -> list[str]:
    """Every registered multi-agent id, built-in first."""
    return list(registry)


for _entry in MULTIAGENT_ENVS:
    register(_entry.id, _entry.entry_point, kwargs=_entry.kwargs)
