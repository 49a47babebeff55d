"""A benchmark result: scores per env with bootstrap intervals, and what is needed to reproduce it.

The score of an env is its mean episode return over judged samples (episodes with an
infrastructure error are left out and counted), averaged per task first; the suite's score is the
mean of its envs' scores. Intervals are percentile bootstraps over tasks, seeded by the suite.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from rlvr.leaderboards.provenance import dataset_hash, traces_digest
from rlvr.leaderboards.suites import Bootstrap, Suite, SuiteEnv
from rlvr.rollout import EpisodeRecord, EvalReport


@dataclass
class EnvResult:
    """One env's outcome within a result, with the facts that make it comparable."""

    label: str
    env_id: str
    score: float
    ci_low: float
    ci_high: float
    success_rate: float
    pass_at_k: dict[str, float]
    episodes: int
    """Episodes run (tasks x samples)."""
    judged: int
    """Episodes that count (no infrastructure error)."""
    infra_errors: int
    completion_tokens: int | None
    prompt_tokens: int | None
    seconds: float
    entry_point: str
    verifier: dict[str, Any]
    """`{"name", "version", "declared"}` of the verifier that judged the replies."""
    dataset_hash: str
    traces_digest: str = ""
    """sha256 of the stored episodes (`rlvr bench reverify` refuses traces that no longer match;
    empty for results stored before it was recorded)."""

    @property
    def verifier_id(self) -> str:
        return f"{self.verifier['name']} {self.verifier['version']}"


@dataclass
class BenchResult:
    """A stored (or about to be stored) benchmark run. `traces` maps env labels to episodes."""

    name: str
    suite: Suite
    agent: dict[str, Any]
    """The agent's spec, its description and the sampling settings it ran with."""
    score: float
    ci_low: float
    ci_high: float
    pass_at_k: dict[str, float]
    envs: list[EnvResult]
    code: dict[str, Any]
    """Package versions, git commit, platform and time of the run."""
    run: dict[str, Any]
    """How it ran: parallel mode, workers, wall seconds."""
    traces: dict[str, list[EpisodeRecord]] = field(default_factory=dict, repr=False)
    id: int | None = None
    reverified_from: int | None = None
    superseded_by: int | None = None

    def env(self, label: str) -> EnvResult:
        for env in self.envs:
            if env.label == label:
                return env
        raise KeyError(f"result {self.id} has no env {label!r}")

    @property
    def completion_tokens(self) -> int | None:
        counts = [env.completion_tokens for env in self.envs]
        known = [count for count in counts if count is not None]
        return sum(known) if len(known) == len(counts) else None

    @property
    def seconds(self) -> float:
        return float(self.run.get("seconds", 0.0))

    def to_record(self) -> dict[str, Any]:
        """Everything but the traces, as JSON-compatible data (what the store keeps per row)."""
        return {
            "name": self.name,
            "suite": self.suite.to_dict(),
            "suite_source": self.suite.source,
            "suite_fingerprint": self.suite.fingerprint(),
            "agent": self.agent,
            "score": self.score,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "pass_at_k": self.pass_at_k,
            "envs": [asdict(env) for env in self.envs],
            "code": self.code,
            "run": self.run,
            "reverified_from": self.reverified_from,
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any], **extra: Any) -> BenchResult:
        return cls(
            name=record["name"],
            suite=Suite.from_dict(record["suite"], source=record.get("suite_source", "")),
            agent=record["agent"],
            score=record["score"],
            ci_low=record["ci_low"],
            ci_high=record["ci_high"],
            pass_at_k=record["pass_at_k"],
            envs=[EnvResult(**env) for env in record["envs"]],
            code=record["code"],
            run=record["run"],
            reverified_from=record.get("reverified_from"),
            **extra,
        )


def traces_mismatch(result: BenchResult) -> str | None:
    """What keeps `result.traces` from being the complete, unchanged episodes the result was
    scored on (None: nothing)."""
    for env, scored in zip(result.suite.envs, result.envs):
        records = result.traces.get(env.label, [])
        expected = {(e, s) for e in range(env.episodes) for s in range(result.suite.samples)}
        found = {(r.episode, r.sample) for r in records}
        if found != expected or len(records) != len(expected):
            return (
                f"{env.label} has {len(records)} stored episodes, not the {len(expected)} it was "
                "scored on"
            )
        if scored.traces_digest and traces_digest(records) != scored.traces_digest:
            return f"the stored traces of {env.label} differ from those the result was scored on"
    return None


# --- scoring --------------------------------------------------------------------------------------


@dataclass
class EnvRun:
    """What running one env of a suite produced (before scoring)."""

    label: str
    report: EvalReport
    seconds: float


def score_runs(
    suite: Suite,
    runs: Sequence[EnvRun],
    *,
    name: str,
    agent: dict[str, Any],
    code: dict[str, Any],
    run: dict[str, Any],
) -> BenchResult:
    """Turn per-env reports into a `BenchResult` with bootstrap intervals."""
    by_label = {env_run.label: env_run for env_run in runs}
    missing = [label for label in suite.labels if label not in by_label]
    if missing:
        raise ValueError(f"no run for {missing}; every env of the suite must have run")
    ordered = [by_label[label] for label in suite.labels]
    task_scores = [per_task_scores(env_run.report.episodes) for env_run in ordered]
    replicates = [
        bootstrap_means(scores, suite.bootstrap, env.label)
        for scores, env in zip(task_scores, suite.envs)
    ]
    envs = [
        _env_result(env, env_run, scores, reps, suite)
        for env, env_run, scores, reps in zip(suite.envs, ordered, task_scores, replicates)
    ]
    overall = np.mean(np.stack(replicates), axis=0)
    low, high = percentile_interval(overall, suite.bootstrap.confidence)
    return BenchResult(
        name=name,
        suite=suite,
        agent=agent,
        score=_mean([env.score for env in envs]),
        ci_low=low,
        ci_high=high,
        pass_at_k={k: _mean([env.pass_at_k[k] for env in envs]) for k in envs[0].pass_at_k},
        envs=envs,
        code=code,
        run=run,
        traces={env_run.label: env_run.report.episodes for env_run in ordered},
    )


def _env_result(
    env: SuiteEnv, env_run: EnvRun, scores: np.ndarray, replicates: np.ndarray, suite: Suite
) -> EnvResult:
    report = env_run.report
    low, high = percentile_interval(replicates, suite.bootstrap.confidence)
    info = report.env_info
    return EnvResult(
        label=env.label,
        env_id=env.id,
        score=float(scores.mean()) if scores.size else math.nan,
        ci_low=low,
        ci_high=high,
        success_rate=report.success_rate,
        pass_at_k={str(k): report.pass_at_k(k) for k in suite.pass_at_k},
        episodes=len(report.episodes),
        judged=len(report.judged),
        infra_errors=report.infra_errors,
        completion_tokens=_total([r.completion_tokens for r in report.episodes]),
        prompt_tokens=_total([r.prompt_tokens for r in report.episodes]),
        seconds=round(env_run.seconds, 3),
        entry_point=info.get("entry_point", ""),
        verifier=info.get("verifier", {"name": "unknown", "version": "unknown"}),
        dataset_hash=dataset_hash(report.episodes),
        traces_digest=traces_digest(report.episodes),
    )


BOOTSTRAP_CHUNK = 1 << 22
"""Resampled task indices drawn at once (32 MiB of int64)."""


def per_task_scores(records: Sequence[EpisodeRecord]) -> np.ndarray:
    """Mean return of each task's judged samples, in episode order (tasks with none dropped)."""
    by_task: dict[int, list[float]] = {}
    for record in records:
        if not record.infra_error:
            by_task.setdefault(record.episode, []).append(record.total_reward)
    return np.array([np.mean(by_task[episode]) for episode in sorted(by_task)], dtype=float)


def bootstrap_means(scores: np.ndarray, bootstrap: Bootstrap, salt: str) -> np.ndarray:
    """`bootstrap.resamples` means of `scores` resampled with replacement (NaN when empty).

    The generator is seeded from the bootstrap seed and `salt` (the env's label), so adding an
    env to a suite leaves the other envs' intervals unchanged.
    """
    if scores.size == 0:
        return np.full(bootstrap.resamples, math.nan)
    salt_int = int.from_bytes(hashlib.blake2b(salt.encode(), digest_size=8).digest(), "little")
    rng = np.random.default_rng([bootstrap.seed, salt_int])
    rows = max(1, BOOTSTRAP_CHUNK // scores.size)  # bounded memory however many tasks
    means = []
    for first in range(0, bootstrap.resamples, rows):
        count = min(rows, bootstrap.resamples - first)
        means.append(scores[rng.integers(0, scores.size, size=(count, scores.size))].mean(axis=1))
    return np.concatenate(means)


def percentile_interval(replicates: np.ndarray, confidence: float) -> tuple[float, float]:
    if np.isnan(replicates).any():
        return math.nan, math.nan
    tail = (1.0 - confidence) / 2 * 100
    low, high = np.percentile(replicates, [tail, 100 - tail])
    return float(low), float(high)


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if values else math.nan


def _total(counts: Sequence[int | None]) -> int | None:
    return None if any(count is None for count in counts) else int(sum(counts))  # type: ignore[arg-type]
