"""What an audit measures: rates with Wilson intervals, per reply style, with every disagreement.

A *probe* is one reply sent to the env for one task: a right answer written some way (a gold
probe, which must score 1) or a known-wrong answer (a wrong probe, which must score 0). A gold
probe scored below 1 is a false negative, a wrong probe scored above 0 a false positive. A
probe whose step reports `info["infra_error"]` is neither: it is counted apart, as the trainers
drop such samples, and so is a probe our machinery failed to make (`Probe.infra_error`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

Z95 = 1.959963984540054  # two-sided 95% normal quantile

EXAMPLE_CHARS = 600
"""Replies and details are clipped to this many characters in a report (the end is kept: the
final answer is there)."""


def wilson_interval(errors: int, total: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion `errors / total` (0..1 when total is 0)."""
    if total <= 0:
        return 0.0, 1.0
    p = errors / total
    denominator = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denominator
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class Rate:
    """`errors` out of `total`, with its 95% Wilson interval."""

    errors: int
    total: int

    @property
    def value(self) -> float:
        return self.errors / self.total if self.total else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.errors, self.total)

    def __str__(self) -> str:
        if not self.total:
            return "n/a (no probes)"
        low, high = self.interval
        if self.errors == 0:
            return f"0% (0/{self.total}; < {_pct(high)} at 95%)"
        return f"{_pct(self.value)} ({self.errors}/{self.total}; 95% CI {_pct(low)}-{_pct(high)})"

    def to_dict(self) -> dict[str, Any]:
        low, high = self.interval
        return {
            "errors": self.errors,
            "total": self.total,
            "rate": round(self.value, 6),
            "ci95": [round(low, 6), round(high, 6)],
        }


def _pct(value: float) -> str:
    return f"{100 * value:.2g}%" if value < 0.01 else f"{100 * value:.1f}%"


@dataclass(frozen=True)
class Probe:
    """One reply to judge for the task at `item`; `right` says whether it must score 1."""

    item: int
    style: str
    right: bool
    reply: str
    infra_error: str = ""
    """Why our machinery failed to make this probe (a sandbox that broke while checking that a
    wrong answer is wrong): then it is counted as an infrastructure error, never judged."""


@dataclass(frozen=True)
class Disagreement:
    """A probe the env judged the other way (or could not judge: `infra`)."""

    item: int
    task_id: str
    style: str
    right: bool
    reply: str
    reward: float | None
    status: str
    details: str
    extracted: str | None
    infra: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "item": self.item,
            "task_id": self.task_id,
            "style": self.style,
            "expected": "right" if self.right else "wrong",
            "reward": self.reward,
            "status": self.status,
            "extracted": _clip(self.extracted),
            "details": _clip(self.details),
            "reply": _clip(self.reply),
            "infra_error": self.infra,
        }


def _clip(text: str | None) -> str | None:
    if text is None or len(text) <= EXAMPLE_CHARS:
        return text
    return "..." + text[-EXAMPLE_CHARS:]


@dataclass
class StyleResult:
    """The probes of one style: how many were judged, how many the other way."""

    style: str
    right: bool
    judged: int = 0
    errors: int = 0
    infra: int = 0
    disagreements: list[Disagreement] = field(default_factory=list)

    @property
    def rate(self) -> Rate:
        return Rate(self.errors, self.judged)

    def to_dict(self) -> dict[str, Any]:
        return {
            "style": self.style,
            "expected": "right" if self.right else "wrong",
            **self.rate.to_dict(),
            "infra_errors": self.infra,
            "disagreements": [d.to_dict() for d in self.disagreements],
        }


@dataclass
class AuditReport:
    """Every style's result for one env on one dataset."""

    env_id: str
    dataset: str
    items: int
    styles: dict[tuple[str, bool], StyleResult] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def style(self, name: str, right: bool) -> StyleResult:
        key = (name, right)
        if key not in self.styles:
            self.styles[key] = StyleResult(name, right)
        return self.styles[key]

    def _total(self, right: bool) -> Rate:
        chosen = [s for s in self.styles.values() if s.right == right]
        return Rate(sum(s.errors for s in chosen), sum(s.judged for s in chosen))

    @property
    def false_negatives(self) -> Rate:
        """Right answers scored below 1, over all gold probes."""
        return self._total(True)

    @property
    def false_positives(self) -> Rate:
        """Known-wrong answers scored above 0, over all wrong probes."""
        return self._total(False)

    @property
    def infra_errors(self) -> int:
        return sum(s.infra for s in self.styles.values())

    def summary(self) -> dict[str, Any]:
        """The rates alone (what the rates file and the leaderboard page keep)."""
        return {
            "dataset": self.dataset,
            "items": self.items,
            "false_negative": self.false_negatives.to_dict(),
            "false_positive": self.false_positives.to_dict(),
            "infra_errors": self.infra_errors,
            "styles": {
                f"{s.style} ({'right' if s.right else 'wrong'})": s.rate.to_dict()
                for s in self.ordered()
            },
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "env_id": self.env_id,
            **self.summary(),
            "seconds": round(self.seconds, 2),
            "not_applicable": dict(self.skipped),
            "by_style": [s.to_dict() for s in self.ordered()],
        }

    def ordered(self) -> list[StyleResult]:
        """Gold styles first, then wrong ones, each in the order they were first probed."""
        return [s for s in self.styles.values() if s.right] + [
            s for s in self.styles.values() if not s.right
        ]

    def table(self) -> str:
        """A Markdown table: one row per style, then the totals."""
        lines = [
            f"{self.env_id} on {self.dataset} ({self.items} items, {self.seconds:.0f} s)",
            "",
            "| style | answers | probes | scored the other way | rate (95% interval) |",
            "| --- | --- | ---: | ---: | --- |",
        ]
        for s in self.ordered():
            kind = "right" if s.right else "wrong"
            lines.append(f"| {s.style} | {kind} | {s.judged} | {s.errors} | {s.rate} |")
        lines.append(f"| **false negatives** | right | | | {self.false_negatives} |")
        lines.append(f"| **false positives** | wrong | | | {self.false_positives} |")
        if self.infra_errors:
            lines.append(f"\ninfrastructure errors (not counted): {self.infra_errors}")
        return "\n".join(lines)

    def examples(self, per_style: int | None = None) -> str:
        """Every disagreement (or the first `per_style` of each style), for reading."""
        blocks = []
        for s in self.ordered():
            shown = s.disagreements if per_style is None else s.disagreements[:per_style]
            for d in shown:
                what = "infra error" if d.infra else f"reward {d.reward}, {d.status}"
                blocks.append(
                    f"- [{d.style}, {'right' if d.right else 'wrong'}] {d.task_id}: {what}; "
                    f"read {d.extracted!r}; {d.details}\n  reply: {_clip(d.reply)!r}"
                )
            hidden = len(s.disagreements) - len(shown)
            if hidden > 0:
                blocks.append(f"- ... {hidden} more for {s.style} (see --json)")
        return "\n".join(blocks) if blocks else "no disagreements"
