"""The learning suite's plots (`learning_suite_report.py`): held-out curves of an experiment,
and gain against training budget, drawn with matplotlib (imported only when drawing) into PNGs
with stable bytes."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from learning_suite_learners import LABELS
from learning_suite_results import (
    Key,
    by_task_and_learner,
    complete_runs,
)
from learning_suite_tables import budget_rows, in_all
from learning_suite_tasks import EXPERIMENTS

COLORS = {
    "grpo": "tab:blue",
    "ppo": "tab:green",
    "trl": "tab:orange",
    "grpo-score": "tab:purple",
    "ppo-score": "tab:olive",
    "rloo": "tab:red",
}


# --- plots ---------------------------------------------------------------------------------------


def curves_plot(runs: Mapping[Key, dict[str, Any]], title: str, path: Path) -> None:
    """Held-out accuracy against training CPU seconds, a panel per task: each seed thin, the
    mean over seeds thick."""
    plt = _pyplot()
    grouped = by_task_and_learner(runs)
    columns = min(len(grouped), 2)
    rows = math.ceil(len(grouped) / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(6 * columns, 4 * rows), squeeze=False)
    for index, learners in enumerate(grouped.values()):
        axis = axes[index // columns][index % columns]
        for learner, row in learners.items():
            color = COLORS.get(learner)
            for run in row:
                xs = [p["cpu"] for p in run["curve"]]
                axis.plot(xs, [p["accuracy"] for p in run["curve"]], color=color, alpha=0.25)
            points = min(len(run["curve"]) for run in row)
            xs = [statistics.fmean(run["curve"][i]["cpu"] for run in row) for i in range(points)]
            ys = [
                statistics.fmean(run["curve"][i]["accuracy"] for run in row) for i in range(points)
            ]
            axis.plot(xs, ys, color=color, linewidth=2, label=LABELS.get(learner, learner))
        axis.set_title(next(iter(learners.values()))[0]["provenance"]["title"])
        axis.set_xlabel("training CPU seconds (1 thread)")
        axis.set_ylabel("held-out accuracy (greedy)")
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)
    for index in range(len(grouped), rows * columns):
        axes[index // columns][index % columns].axis("off")
    figure.suptitle(f"{title}: held-out accuracy, seeds thin, their mean thick")
    _save(plt, figure, path)


def budget_plot(experiments: Sequence[str], results: Path, path: Path) -> None:
    """Gain against training budget per learner: means with 95% t-intervals, seeds as dots."""
    plt = _pyplot()
    from matplotlib import ticker

    loaded = {name: complete_runs(results, name) for name in experiments}
    tasks = [task for task in EXPERIMENTS[experiments[0]].tasks if in_all(task, loaded)]
    figure, axes = plt.subplots(1, len(tasks), figsize=(6 * len(tasks), 4), squeeze=False)
    for axis, task in zip(axes[0], tasks):
        rows = budget_rows(task, loaded)
        for offset, (learner, by_budget) in enumerate(rows.items()):
            budgets = [row["budget"] for row in by_budget.values()]
            gains = [row["gain"] for row in by_budget.values()]
            shift = 1 + 0.04 * (offset - (len(rows) - 1) / 2)  # side by side on a log axis
            xs = [budget * shift for budget in budgets]
            errors = [
                [g.mean - g.low for g in gains],
                [g.high - g.mean for g in gains],
            ]
            color = COLORS.get(learner)
            axis.errorbar(
                xs, [g.mean for g in gains], yerr=errors, color=color, marker="o", capsize=4,
                label=LABELS.get(learner, learner),
            )  # fmt: skip
            for x, gain in zip(xs, gains):
                axis.scatter([x] * len(gain.values), gain.values, color=color, alpha=0.3, s=12)
        axis.set_xscale("log")
        axis.set_xticks(sorted({row["budget"] for r in rows.values() for row in r.values()}))
        axis.xaxis.set_major_formatter(ticker.ScalarFormatter())
        axis.xaxis.set_minor_formatter(ticker.NullFormatter())
        axis.set_xlabel("training CPU seconds per run (1 thread)")
        axis.set_ylabel("held-out accuracy gain")
        axis.set_title(task)
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)
    figure.suptitle("Gain against training budget: mean and 95% t-interval, seeds as dots")
    _save(plt, figure, path)


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(plt: Any, figure: Any, path: Path) -> None:
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110, metadata={"Software": None})  # no version stamp: stable bytes
    plt.close(figure)
