"""The built-in environments: the registry of their families, and their registration with
Gymnasium.

A *family* is one folder of envs/: its env modules, judge, task source and data, audit and
leaderboard suite, and a descriptor, `family.toml`, naming its env ids with their entry points,
its self-correction variants, its suite, the audit of each audited env and its docs page.
`FAMILIES` below is the registry: one line per built-in family. `rlvr.families` reads the
descriptors (and `register_family` adds a family of your own: CONTRIBUTING.md, "Adding a
family"); docs/design.md says why.

`import rlvr` registers the envs as soon as Gymnasium is imported (at once if it already is),
and `import rlvr.envs` registers them too. Entry points are strings, so registering imports
nothing but Gymnasium: an env's module (and its dependencies) load only when `gym.make` builds
it. This module is standard library only and reads no descriptor when imported, so that
`import rlvr` costs nothing in a process that never makes an env (a sandbox or verifier worker).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

FAMILIES: tuple[str, ...] = (
    "math",
    "tool_math",
    "web",
    "sql",
    "code",
    "repo",
    "multiagent",
)
"""The registry of built-in families: each names a folder of envs/ holding a `family.toml`."""


@dataclass(frozen=True)
class EnvEntry:
    id: str
    entry_point: str
    max_episode_steps: int | None = None
    kwargs: Mapping[str, Any] = field(default_factory=dict)


# Clients of envs that run elsewhere, registered beside the built-in envs but not listed among
# them (they hold no tasks of their own): `remote/OpenEnv-v0` is an env served by `rlvr serve`.
CLIENT_ENVS: tuple[EnvEntry, ...] = (
    EnvEntry("remote/OpenEnv-v0", "rlvr.integrations.openenv:RemoteEnv"),
)


# Ids retired by a new version, and why: `make` builds the successor and warns (the old rules
# paid proposers for ill-posed tasks, issue 25, so they are not kept).
RETIRED_MULTIAGENT_IDS: dict[str, tuple[str, str]] = {
    "rlvr/ProposerSolver-v0": (
        "rlvr/ProposerSolver-v1",
        "v0 paid proposers for problems that state their answer or read two ways",
    ),
    "rlvr/CodeProposerSolver-v0": (
        "rlvr/CodeProposerSolver-v1",
        "v0 paid proposers for tasks whose results vary between runs, vacuous tests and leaks",
    ),
}


def multiagent_env_ids() -> list[str]:
    """Ids of the built-in multi-agent environments (`rlvr.envs.multiagent.make`)."""
    from rlvr.families import builtin_multiagent_envs

    return [entry.id for entry in builtin_multiagent_envs()]


# Gymnasium's PassiveEnvChecker (1.4) makes the first step() fail with "cannot unpack
# non-iterable NoneType" when the first reset() raised, e.g. on a bad option: a clear error would
# cost the env. Our envs skip it; `rlvr.envs.check_env` runs Gymnasium's full checker instead, and
# gym.make(id, disable_env_checker=False) still turns it on.
DISABLE_PASSIVE_CHECKER = True


def register_builtin_envs(gym: Any = None) -> None:
    """Register every family's envs with Gymnasium (`gym`: the imported module; idempotent: ids
    already registered are left alone)."""
    if gym is None:
        import gymnasium as gym
    from rlvr.families import families

    register_entries(gym, (*(entry for f in families() for entry in f.envs), *CLIENT_ENVS))


def register_entries(gym: Any, entries: Iterable[EnvEntry]) -> None:
    """Register `entries` with Gymnasium (`gym`), leaving ids already registered alone."""
    for entry in entries:
        if entry.id not in gym.registry:
            gym.register(
                id=entry.id,
                entry_point=entry.entry_point,
                max_episode_steps=entry.max_episode_steps,
                disable_env_checker=DISABLE_PASSIVE_CHECKER,
                kwargs=dict(entry.kwargs),
            )


def rlvr_env_ids() -> list[str]:
    """Ids of the built-in (single-agent) environments, in registration order."""
    from rlvr.families import builtin_envs

    return [entry.id for entry in builtin_envs()]


_TABLES = {
    "BUILTIN_ENVS": "builtin_envs",
    "MULTIAGENT_ENVS": "builtin_multiagent_envs",
    "SELF_CORRECT_VARIANTS": "self_correct_variants",
}


def __getattr__(name: str) -> Any:
    """The tables the families' descriptors make (`rlvr.families`), read when first asked for:
    `import rlvr` reads none."""
    if name in _TABLES:
        import rlvr.families

        return getattr(rlvr.families, _TABLES[name])()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
