"""How an episode of a text env begins (`Start`) and how the env answers a reply (`Outcome`).

They are what an interaction (`rlvr.envs.interactions`) and a tool hand to `TextEnv`, data of the
ground layer so that any layer may build or read them. `rlvr.envs.core` and `rlvr.envs` export
the same classes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rlvr.core.types import Verdict


@dataclass
class Start:
    """How an episode begins: the first user message and what goes into `info`."""

    prompt: str
    task_id: str
    info: dict[str, Any] = field(default_factory=dict)


@dataclass
class Outcome:
    """How the environment answers one reply.

    `reward` is the total of `rewards` when several named terms exist. When `infra_error` is set
    the reply could not be judged; the reward is then 0.0 only because Gymnasium needs a number,
    and trainers must drop the sample (`info["infra_error"]` is True).
    """

    feedback: str
    reward: float
    terminated: bool
    verdict: Verdict | None = None
    rewards: dict[str, float] | None = None
    infra_error: bool = False
    role: str = "user"
    info: dict[str, Any] = field(default_factory=dict)
