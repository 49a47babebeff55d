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

from rlvr.leaderboards.errors import InvalidResultError
from rlvr.leaderboards.fields import FieldError, differing_paths
from rlvr.leaderboards.provenance import dataset_hash, prompt_messages, traces_digest
from rlvr.leaderboards.records import check_episode, check_record
from rlvr.leaderboards.suites import Bootstrap, Suite, SuiteEnv
from rlvr.rollout.records import EpisodeRecord
from rlvr.rollout.reports import EvalReport


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
    def from_record(cls, record: Any, **extra: Any) -> BenchResult:
        """The result of a record, every field checked (`check_record`: a `ValueError` naming
        the field when one has the wrong type, is out of range or disagrees with the suite)."""
        check_record(record)
        return cls(
            name=record["name"],
            suite=Suite.from_dict(record["suite"], source=record.get("suite_source") or ""),
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
    """What keeps `result.traces` from being the complete, unchanged episodes of its suite the
    result was scored on (None: nothing): the suite's episodes (`_shape_problem`) and, where the
    result recorded one, the same digest."""
    problem = _shape_problem(result)
    if problem is not None:
        return problem
    for env, scored in zip(result.suite.envs, result.envs):
        if scored.traces_digest and traces_digest(result.traces[env.label]) != scored.traces_digest:
            return _changed(env.label)
    return None


def _changed(label: str) -> str:
    return f"the stored traces of {label} differ from those the result was scored on"


def _shape_problem(result: BenchResult) -> str | None:
    """Whether the traces are the suite's episodes: no env it lacks; per env `episodes x
    samples` of them (compared before anything is built from the counts), each (episode,
    sample) once, seeded as the suite seeds it, the samples of an episode posing one task."""
    unknown = sorted(set(result.traces) - set(result.suite.labels))
    if unknown:
        return f"there are traces of envs the suite does not have: {unknown}"
    for env in result.suite.envs:
        records = result.traces.get(env.label, [])
        samples = result.suite.samples
        problem = _count_problem(env, samples, records) or _episodes_problem(env, samples, records)
        if problem is not None:
            return problem
    return None


def _count_problem(env: SuiteEnv, samples: int, records: Sequence[EpisodeRecord]) -> str | None:
    expected = env.episodes * samples
    if len(records) != expected:
        return (
            f"{env.label} has {len(records)} stored episodes, not the {expected} it was scored on"
        )
    return None


def _episodes_problem(env: SuiteEnv, samples: int, records: Sequence[EpisodeRecord]) -> str | None:
    tasks: dict[int, tuple[Any, ...]] = {}
    seen = set()
    for record in records:
        where = f"episode {record.episode} sample {record.sample}"
        if not (0 <= record.episode < env.episodes and 0 <= record.sample < samples):
            return (
                f"{env.label}: {where} is not one of the suite's ({env.episodes} tasks x "
                f"{samples} samples)"
            )
        if (record.episode, record.sample) in seen:
            return f"{env.label}: {where} is stored twice"
        seen.add((record.episode, record.sample))
        if record.seed != env.seed + record.episode:
            seed = env.seed + record.episode
            return f"{env.label}: {where} has seed {record.seed}; the suite seeds it {seed}"
        task = (record.task_id, record.task_hash, prompt_messages(record.messages))
        if tasks.setdefault(record.episode, task) != task:
            return (
                f"{env.label}: {where} poses another task than the other samples of episode "
                f"{record.episode}"
            )
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


# --- checking what a result claims against its traces ----------------------------------------


def rescored(result: BenchResult) -> BenchResult:
    """`result` scored again from its traces: every figure recomputed (scores, intervals,
    pass@k, success rates, counts, tokens, dataset hashes, digests); what traces cannot give
    (name, agent, code, run, seconds, entry points, verifiers) is copied."""
    runs = []
    for env, claimed in zip(result.suite.envs, result.envs):
        records = sorted(result.traces.get(env.label, []), key=lambda r: (r.episode, r.sample))
        info = {"entry_point": claimed.entry_point, "verifier": claimed.verifier}
        runs.append(EnvRun(env.label, EvalReport(env.id, records, info), claimed.seconds))
    again = score_runs(
        result.suite, runs, name=result.name, agent=result.agent, code=result.code, run=result.run
    )
    again.reverified_from = result.reverified_from
    again.traces = result.traces
    return again


def figures_mismatch(
    record: Mapping[str, Any], result: BenchResult, given: Mapping[str, Any] | None = None
) -> list[str]:
    """Where `record` (what a result claims) differs from the result its traces give (`given`,
    by default `rescored(result).to_record()`), one line per field, e.g. `envs[0].score is 1.0,
    recomputed from its suite and traces 0.183`."""
    given = rescored(result).to_record() if given is None else given
    return [
        f"{path or 'the result'} is {_clipped(claimed)}, recomputed from its suite and traces "
        f"{_clipped(actual)}"
        for path, claimed, actual in differing_paths(dict(record), given)
    ]


def _clipped(value: Any) -> str:
    shown = repr(value)
    return shown if len(shown) <= 80 else shown[:77] + "..."


def check_result(result: BenchResult, record: Mapping[str, Any] | None = None) -> None:
    """Raise `InvalidResultError` unless `result` may be stored: every field of its record
    (`record`, by default `result.to_record()`) and of its episodes has its type and range, its
    traces are the suite's episodes, and every figure is what the traces give."""
    record = result.to_record() if record is None else record
    try:
        check_record(record)
        for label, records in result.traces.items():
            for episode in records:
                try:
                    check_episode(episode)
                except FieldError as exc:
                    raise FieldError(f"traces of {label}: {exc}") from None
    except ValueError as exc:
        raise InvalidResultError(str(exc)) from None
    for index, env in enumerate(record["envs"]):
        if not env.get("traces_digest"):  # what the traces are checked against, when re-judged
            raise InvalidResultError(f"envs[{index}].traces_digest is missing")
    problem = _shape_problem(result)
    if problem is not None:
        raise InvalidResultError(problem)
    given = rescored(result).to_record()  # each digest computed once, here
    for claimed, actual in zip(record["envs"], given["envs"]):
        if claimed["traces_digest"] != actual["traces_digest"]:
            raise InvalidResultError(_changed(actual["label"]))
    differences = figures_mismatch(record, result, given)
    if differences:
        shown = "; ".join(differences[:MAX_SHOWN]) + (
            "; ..." if len(differences) > MAX_SHOWN else ""
        )
        raise InvalidResultError(f"figures that its traces do not give: {shown}")


MAX_SHOWN = 6
"""Differences named in one message."""


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if values else math.nan


def _total(counts: Sequence[int | None]) -> int | None:
    return None if any(count is None for count in counts) else int(sum(counts))  # type: ignore[arg-type]
