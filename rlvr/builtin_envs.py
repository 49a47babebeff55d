"""The built-in environments: their ids and entry points, registered with Gymnasium.

`import rlvr` registers them as soon as Gymnasium is imported (at once if it already is), and
`import rlvr.envs` registers them too. Entry points are strings, so registering imports nothing
but Gymnasium: an env's module (and its dependencies) load only when `gym.make` builds it. This
module is standard library only, so that `import rlvr` costs nothing in a process that never
makes an env (a sandbox or verifier worker).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class EnvEntry:
    id: str
    entry_point: str
    max_episode_steps: int | None = None
    kwargs: Mapping[str, Any] = field(default_factory=dict)


BUILTIN_ENVS: tuple[EnvEntry, ...] = (
    EnvEntry("rlvr/Math-v0", "rlvr.envs.math:MathEnv"),
    EnvEntry("rlvr/ToolMath-v0", "rlvr.envs.tool_math:ToolMathEnv", max_episode_steps=10),
    EnvEntry("rlvr/WebShop-v0", "rlvr.envs.web.webshop:WebShopEnv", max_episode_steps=30),
    EnvEntry("rlvr/WikiQA-v0", "rlvr.envs.web.wikiqa:WikiQAEnv", max_episode_steps=20),
    EnvEntry("rlvr/SQL-v0", "rlvr.envs.sql:SQLEnv"),
    EnvEntry(
        "rlvr/SQLInteractive-v0", "rlvr.envs.sql_interactive:SQLInteractiveEnv", 8, {"max_turns": 8}
    ),
    EnvEntry("rlvr/Code-v0", "rlvr.envs.code:CodeEnv"),
    # No max_episode_steps: the env ends an episode at its own max_turns, grading the workspace.
    EnvEntry("rlvr/Repo-v0", "rlvr.envs.repo:RepoEnv"),
    EnvEntry("rlvr/RepoSelfCorrect-v0", "rlvr.envs.repo:RepoEnv", kwargs={"max_submissions": 3}),
)

# Self-correction variants of single-turn envs: base id -> (variant id, SelfCorrectEnv kwargs).
# A variant is registered only when its base env is built in.
SELF_CORRECT_VARIANTS: Mapping[str, tuple[str, Mapping[str, Any]]] = {
    "rlvr/Math-v0": ("rlvr/MathSelfCorrect-v0", {"feedback": "binary"}),
    # Binary: the Code verifier's details name the first failing test's input, and with the
    # graded tests in the feedback a policy can probe them and hard-code the answers (it passed
    # 5 of the 6 built-in boolean tasks in 3 attempts without solving them). "details" needs
    # feedback from tests that are not graded.
    "rlvr/Code-v0": ("rlvr/CodeSelfCorrect-v0", {"feedback": "binary"}),
    "rlvr/SQL-v0": ("rlvr/SQLSelfCorrect-v0", {"feedback": "details"}),
}


def self_correct_entries(entries: Iterable[EnvEntry]) -> tuple[EnvEntry, ...]:
    """The `SELF_CORRECT_VARIANTS` entries whose base env is among `entries`."""
    present = {entry.id for entry in entries}
    return tuple(
        EnvEntry(
            variant,
            "rlvr.envs.self_correct:SelfCorrectEnv",
            kwargs={"env": base, "max_attempts": 3, **kwargs},
        )
        for base, (variant, kwargs) in SELF_CORRECT_VARIANTS.items()
        if base in present
    )


BUILTIN_ENVS += self_correct_entries(BUILTIN_ENVS)


# Multi-agent envs (PettingZoo API) have no Gymnasium registry: `rlvr.envs.multiagent.make` reads
# this list, kept here so that listing them (`rlvr envs`) imports no PettingZoo.
MULTIAGENT_ENVS: tuple[EnvEntry, ...] = (
    EnvEntry("rlvr/Connect4-v0", "rlvr.envs.multiagent.connect4:Connect4Env"),
    EnvEntry("rlvr/TicTacToe-v0", "rlvr.envs.multiagent.tictactoe:TicTacToeEnv"),
    EnvEntry("rlvr/Nim-v0", "rlvr.envs.multiagent.nim:NimEnv"),
    EnvEntry("rlvr/Negotiation-v0", "rlvr.envs.multiagent.negotiation:NegotiationEnv"),
    EnvEntry("rlvr/Debate-v0", "rlvr.envs.multiagent.debate:DebateEnv"),
    EnvEntry("rlvr/ProposerSolver-v1", "rlvr.envs.multiagent.proposer_solver:ProposerSolverEnv"),
    EnvEntry("rlvr/SQLDebate-v0", "rlvr.envs.multiagent.sql_debate:SQLDebateEnv"),
    EnvEntry(
        "rlvr/CodeProposerSolver-v1",
        "rlvr.envs.multiagent.code_proposer_solver:CodeProposerSolverEnv",
    ),
)


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
    return [entry.id for entry in MULTIAGENT_ENVS]


# Gymnasium's PassiveEnvChecker (1.4) makes the first step() fail with "cannot unpack
# non-iterable NoneType" when the first reset() raised, e.g. on a bad option: a clear error would
# cost the env. Our envs skip it; `rlvr.envs.check_env` runs Gymnasium's full checker instead, and
# gym.make(id, disable_env_checker=False) still turns it on.
DISABLE_PASSIVE_CHECKER = True


def register_builtin_envs(gym: Any = None) -> None:
    """Register every built-in env with Gymnasium (`gym`: the imported module; idempotent: ids
    already registered are left alone)."""
    if gym is None:
        import gymnasium as gym
    for entry in (*BUILTIN_ENVS, *CLIENT_ENVS):
        if entry.id not in gym.registry:
            gym.register(
                id=entry.id,
                entry_point=entry.entry_point,
                max_episode_steps=entry.max_episode_steps,
                disable_env_checker=DISABLE_PASSIVE_CHECKER,
                kwargs=dict(entry.kwargs),
            )


def rlvr_env_ids() -> list[str]:
    """Ids of the built-in environments, in registration order."""
    return [entry.id for entry in BUILTIN_ENVS]
