"""The audited error rate of each suite's verifiers, for the leaderboard views.

The rates come from `verifier_audit.json` beside this module, written by `rlvr audit ENV_ID
--dataset ... --record leaderboards/verifier_audit.json` (see docs/leaderboards.md): how often
the env's reward scored a right answer 0 (false negatives) or a known-wrong answer 1 (false
positives) on a public dataset. Nothing here is typed in by hand.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from rlvr.envs.audit.rates import load_rates
from rlvr.envs.audit.report import Rate


def audit_lines(env_ids: Iterable[str], rates_file: str | Path | None = None) -> list[str]:
    """One line per audit of each env (in order, each env once): its dataset, size and rates;
    `<env>: not audited` for an env without one."""
    rates = load_rates(rates_file)
    lines = []
    for env_id in dict.fromkeys(env_ids):
        audits = rates.get(env_id) or []
        if not audits:
            lines.append(f"{env_id}: verifier not audited")
        lines += [f"{env_id}: {describe(audit)}" for audit in audits]
    return lines


def describe(audit: Mapping[str, Any]) -> str:
    """`false negatives 0% (0/1319; < 0.29% at 95%), false positives ... on <dataset> (n items)`."""
    negatives = _rate(audit.get("false_negative"))
    positives = _rate(audit.get("false_positive"))
    return (
        f"verifier audit on {audit.get('dataset')} ({audit.get('items')} items): false negatives "
        f"{negatives}, false positives {positives}"
    )


def _rate(data: Any) -> Rate | str:
    if not isinstance(data, Mapping):
        return "n/a"
    return Rate(int(data.get("errors", 0)), int(data.get("total", 0)))
