"""What an evaluation reports: its episodes, and the mean reward, success rate and pass@k of those
that count.

An episode with an infrastructure error (`EpisodeRecord.infra_error`) is never scored 0: it is
counted apart (`infra_errors`) and left out of every figure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rlvr.rollout.records import EpisodeRecord


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
