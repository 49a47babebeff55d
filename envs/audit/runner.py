"""Run an audit: every probe is one episode of the env itself, so it measures what training sees."""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import gymnasium as gym
import numpy as np

from rlvr.envs.audit.report import AuditReport, Disagreement, Probe
from rlvr.envs.errors import EnvConfigError
from rlvr.families import family_audits
from rlvr.verifiers.types import Task

LARGE_SOURCE = 100_000
"""A source longer than this (a procedural one) is sampled only with an explicit `n`."""


class Auditor(Protocol):
    """Writes the probes for one env id (each family's audit.py: `rlvr.envs.math.audit`, ...)."""

    env_id: str
    datasets: str  # what `open` accepts, for error messages and --help

    def open(self, dataset: str) -> tuple[dict[str, Any], str]: ...
    def probes(self, env: Any, item: int, task: Task) -> list[Probe]: ...
    def close(self) -> None: ...


def auditors() -> dict[str, Callable[[], Auditor]]:
    """Env id -> auditor factory, for every env whose family's descriptor names an audit
    (`rlvr.builtin_envs.family_audits`; importing an auditor is deferred to this call: code and
    SQL bring their own machinery)."""
    return {env_id: _resolve(target) for env_id, target in family_audits().items()}


def _resolve(target: str) -> Callable[[], Auditor]:
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


def auditor_for(env_id: str) -> Auditor:
    known = auditors()
    if env_id not in known:
        raise EnvConfigError(f"no audit for {env_id!r}; audited envs: {', '.join(sorted(known))}")
    return known[env_id]()


def choose_items(size: int, n: int | None, seed: int) -> list[int]:
    """All items, or `n` of them drawn without replacement by `seed` (in index order)."""
    if n is not None and n < 1:
        raise EnvConfigError(f"n must be a positive number of items, got {n}")
    if n is None:
        if size > LARGE_SOURCE:
            raise EnvConfigError(f"the dataset has {size} items; pass n (--n) to sample some")
        return list(range(size))
    if n >= size:
        return list(range(size))
    rng = np.random.default_rng(seed)
    return sorted(int(i) for i in rng.choice(size, size=n, replace=False))


def run_audit(
    env_id: str,
    dataset: str,
    *,
    n: int | None = None,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
    env_options: Mapping[str, Any] | None = None,
) -> AuditReport:
    """Audit `env_id`'s verifier on `dataset` (see each auditor's `datasets`): every probe is
    a `reset(options={"task_index": i})` and one `step(reply)` of `gym.make(env_id, ...)`.
    `env_options` are more arguments for `gym.make` (e.g. `{"backend": "docker"}`)."""
    auditor = auditor_for(env_id)
    started = time.perf_counter()
    try:
        kwargs, name = auditor.open(dataset)
        clash = sorted(set(kwargs) & set(env_options or {}))
        if clash:
            raise EnvConfigError(f"env_options cannot set {', '.join(clash)}: the dataset sets it")
        env = gym.make(env_id, **kwargs, **(env_options or {}))
        try:
            base: Any = env.unwrapped  # a TextEnv with a TaskJudge (each auditor's own family)
            items = choose_items(len(base.judge.tasks), n, seed)
            report = AuditReport(env_id, name, len(items))
            for done, item in enumerate(items, start=1):
                task = base.judge.tasks[item]
                for probe in auditor.probes(base, item, task):
                    _judge(env, probe, task, report)
                if progress is not None:
                    progress(done, len(items))
        finally:
            env.close()
    finally:
        auditor.close()
    report.skipped = dict(getattr(auditor, "skipped", {}))
    report.seconds = time.perf_counter() - started
    return report


def _judge(env: gym.Env, probe: Probe, task: Task, report: AuditReport) -> None:
    if probe.infra_error:
        verdict = {"status": "error", "details": probe.infra_error}
        _record(report, probe, task, None, verdict, infra=True)
        return
    env.reset(options={"task_index": probe.item})
    _, reward, _, _, info = env.step(probe.reply)
    infra = bool(info.get("infra_error"))
    _record(report, probe, task, None if infra else float(reward), info.get("verdict"), infra)


def _record(
    report: AuditReport,
    probe: Probe,
    task: Task,
    reward: float | None,
    verdict: dict[str, Any] | None,
    infra: bool,
) -> None:
    verdict = verdict or {}
    result = report.style(probe.style, probe.right)
    wrong_way = reward is not None and ((reward < 1.0) if probe.right else (reward > 0.0))
    if infra:
        result.infra += 1
    else:
        result.judged += 1
        result.errors += int(wrong_way)
    if infra or wrong_way:
        result.disagreements.append(
            Disagreement(
                item=probe.item,
                task_id=task.id,
                style=probe.style,
                right=probe.right,
                reply=probe.reply,
                reward=reward,
                status=str(verdict.get("status")),
                details=str(verdict.get("details", "")),
                extracted=verdict.get("extracted"),
                infra=infra,
            )
        )
