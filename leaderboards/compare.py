"""Which results may be ranked together, and why the others may not.

Two results are comparable when they ran the same suite definition (same envs with the same
versions and kwargs, split, seeds, episodes, samples, pass@k, sampling and bootstrap settings)
and, env by env, were judged by the same verifier version on the same tasks (equal dataset
hashes) with the same env entry point.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import gymnasium as gym

from rlvr.leaderboards.errors import NotComparableError
from rlvr.leaderboards.fields import differing_paths
from rlvr.leaderboards.provenance import verifier_info
from rlvr.leaderboards.results import BenchResult

MAX_LISTED = 8


def differences(a: BenchResult, b: BenchResult) -> list[str]:
    """Why `a` and `b` cannot be ranked together (empty when they can), one line per reason."""
    x, y = _ref(a), _ref(b)
    if a.suite.name != b.suite.name:
        return [f"different suites: {a.suite.name!r} ({x}) vs {b.suite.name!r} ({y})"]
    reasons = [
        f"suite definition differs at {path}: {left!r} ({x}) vs {right!r} ({y})"
        for path, left, right in differing_paths(a.suite.to_dict(), b.suite.to_dict())
    ]
    if reasons:
        return reasons[:MAX_LISTED]
    b_envs = {env.label: env for env in b.envs}
    for env in a.envs:
        other = b_envs.get(env.label)
        if other is None:
            reasons.append(f"{env.label}: missing from {y}")
            continue
        if env.verifier_id != other.verifier_id:
            reasons.append(
                f"{env.label}: judged by different verifiers: {env.verifier_id} ({x}) vs "
                f"{other.verifier_id} ({y})"
            )
        if env.entry_point != other.entry_point:
            reasons.append(
                f"{env.label}: different env code: {env.entry_point} ({x}) vs "
                f"{other.entry_point} ({y})"
            )
        if env.dataset_hash != other.dataset_hash:
            reasons.append(
                f"{env.label}: different tasks (dataset hash {env.dataset_hash[:12]} ({x}) vs "
                f"{other.dataset_hash[:12]} ({y})): the env's tasks or gold answers changed "
                "without a version bump"
            )
    return reasons


def _ref(result: BenchResult) -> str:
    return f"#{result.id}" if result.id is not None else repr(result.name)


def split_comparable(
    results: Sequence[BenchResult], reference: BenchResult
) -> tuple[list[BenchResult], list[tuple[BenchResult, list[str]]]]:
    """Results comparable with `reference`, and the others with their reasons."""
    keep, excluded = [], []
    for result in results:
        reasons = differences(result, reference)
        if reasons:
            excluded.append((result, reasons))
        else:
            keep.append(result)
    return keep, excluded


def check_comparable(results: Sequence[BenchResult]) -> None:
    """Raise `NotComparableError` explaining every result that differs from the newest one."""
    if len(results) < 2:
        return
    reference = max(results, key=lambda r: r.id or 0)
    _, excluded = split_comparable(results, reference)
    if not excluded:
        return
    lines = [
        f"refusing to rank {len(results)} results of suite {reference.suite.name!r}: "
        f"{len(excluded)} cannot be compared with the newest, #{reference.id} "
        f"{reference.name!r}:"
    ]
    stale = []
    for result, reasons in excluded:
        lines.append(f"  #{result.id} {result.name!r}:")
        lines += [f"    - {reason}" for reason in reasons]
        if all("verifier" in reason for reason in reasons):
            stale.append(result.id)
    if stale:
        ids = " ".join(str(i) for i in stale)
        lines.append(f"re-judge with today's verifiers: rlvr bench reverify {ids}")
    lines.append("or rank a comparable subset: --latest (those comparable with the newest), --ids")
    raise NotComparableError("\n".join(lines))


def rank(results: Sequence[BenchResult]) -> list[BenchResult]:
    """Comparable results, best score first (ties: the earlier result first)."""
    check_comparable(results)

    def key(result: BenchResult) -> tuple[float, int]:
        score = -result.score if not math.isnan(result.score) else math.inf
        return score, result.id or 0

    return sorted(results, key=key)


def stale_results(results: Sequence[BenchResult]) -> list[BenchResult]:
    """Results judged by a verifier other than the one their envs use today (re-judge them)."""
    today: dict[str, dict[str, Any]] = {}
    stale = []
    for result in results:
        result.suite.import_modules()
        for env in result.envs:
            spec = result.suite.env(env.label)
            key = json.dumps([spec.id, dict(spec.kwargs)], sort_keys=True, default=str)
            if key not in today:
                if spec.id not in gym.registry:
                    continue  # not runnable here: reverify would say why
                made = gym.make(spec.id, **dict(spec.kwargs))
                try:
                    today[key] = verifier_info(made)
                finally:
                    made.close()
            verifier = today[key]
            if f"{verifier['name']} {verifier['version']}" != env.verifier_id:
                stale.append(result)
                break
    return stale
