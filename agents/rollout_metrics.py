"""What a training step's rollouts measure, logged under `rollout/`: reward, success, length,
entropy and turns of the judged episodes, and per env the share of episodes that hit an
infrastructure error, with the window of steps over which that share stops a run
(`TrainConfig.max_infra_error_rate`).

An episode with an infrastructure error (our verifier, sandbox or database failed, not the
policy) has no measured reward: it counts towards the infra-error rate only, never as a 0.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rlvr.agents.rollouts import EnvSpec, Episode
from rlvr.agents.selfplay import seat_key


def rollout_metrics(episodes: Sequence[Episode], specs: Sequence[EnvSpec]) -> dict[str, float]:
    """The `rollout/` metrics of a step's `episodes` (with several `specs`, per env as well)."""
    metrics = {"rollout/episodes": float(len(episodes))}
    metrics["rollout/infra_error_rate"] = _rate(sum(e.infra_error for e in episodes), len(episodes))
    for env_id, (errors, total) in infra_error_counts(episodes).items():
        metrics[f"rollout/{env_id}/infra_error_rate"] = _rate(errors, total)
    judged = [e for e in episodes if not e.infra_error]
    if not judged:  # no reward was measured: reporting the failed episodes' 0 would invent one
        return metrics
    rewards = np.array([e.reward for e in judged])
    metrics |= {
        "rollout/reward_mean": float(rewards.mean()),
        "rollout/reward_std": float(rewards.std()),
        "rollout/success_rate": float(np.mean(rewards >= 1.0)),
        "rollout/completion_tokens": float(np.mean([e.generated_tokens for e in judged])),
        "rollout/entropy": float(np.mean([e.entropy_estimate for e in judged])),
        "rollout/truncated_fraction": float(np.mean([e.completion_truncated for e in judged])),
        "rollout/turns": float(np.mean([e.record.turns for e in judged])),
    }
    if len(specs) > 1:
        for spec in specs:
            mine = [e.reward for e in judged if e.env_id == spec.id]
            if mine:
                metrics[f"rollout/{spec.id}/reward_mean"] = float(np.mean(mine))
    return metrics


def seat_rollout_metrics(episodes: Sequence[Episode], specs: Sequence[EnvSpec]) -> dict[str, float]:
    """`rollout_metrics` of each seat's episodes, under the seat (`rollout/player_0/...`)."""
    metrics: dict[str, float] = {}
    for seat in sorted({str(episode.seat) for episode in episodes}):
        mine = [episode for episode in episodes if episode.seat == seat]
        metrics |= {seat_key(k, seat): v for k, v in rollout_metrics(mine, specs).items()}
    return metrics


def infra_error_counts(episodes: Sequence[Episode]) -> dict[str, tuple[int, int]]:
    """`{env id: (episodes with an infrastructure error, episodes)}` of one step."""
    counts: dict[str, tuple[int, int]] = {}
    for episode in episodes:
        errors, total = counts.get(episode.env_id, (0, 0))
        counts[episode.env_id] = (errors + episode.infra_error, total + 1)
    return counts


def _rate(errors: int, total: int) -> float:
    return errors / total if total else 0.0


@dataclass(frozen=True)
class InfraErrorRate:
    """An env's infra-error rate over the last `steps` steps."""

    env_id: str
    errors: int
    episodes: int
    steps: int

    @property
    def rate(self) -> float:
        return _rate(self.errors, self.episodes)

    def explain(self, limit: float, checkpoint: Path) -> str:
        return (
            f"{self.env_id}: {self.rate:.0%} of its episodes in the last {self.steps} steps "
            f"({self.errors} of {self.episodes}) hit an infrastructure error (our verifier, "
            f"sandbox or database failed, not the policy), above max_infra_error_rate={limit:g}: "
            "training on the rest would silently skew the tasks learned from. Fix the machinery "
            f"(`rlvr sandbox doctor` checks the sandboxes; `rlvr eval {self.env_id} --agent "
            "oracle` counts the errors), then continue from the checkpoint just saved "
            f"({checkpoint}) with --resume; or raise --max-infra-error-rate"
        )


class InfraErrorWindow:
    """Per-env infrastructure-error counts of the last `size` steps."""

    def __init__(self, size: int) -> None:
        self.steps: deque[dict[str, tuple[int, int]]] = deque(maxlen=size)

    def add(self, episodes: Sequence[Episode]) -> None:
        self.steps.append(infra_error_counts(episodes))

    def worst(self, needed: int) -> InfraErrorRate | None:
        """The env with the highest rate over the window, once it holds `needed` steps."""
        if len(self.steps) < needed:
            return None
        totals: dict[str, tuple[int, int]] = {}
        for counts in self.steps:
            for env_id, (errors, total) in counts.items():
                before = totals.get(env_id, (0, 0))
                totals[env_id] = (before[0] + errors, before[1] + total)
        rates = [InfraErrorRate(env, *counts, len(self.steps)) for env, counts in totals.items()]
        return max(rates, key=lambda entry: entry.rate, default=None)
