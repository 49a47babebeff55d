"""The learning suite's table, plot and target check, from the runs it saved (see
`learning_suite.py`). Each figure is a median over seeds; gains carry a 95% t-interval of the
mean over seeds, accuracies the binomial standard error of the held-out set.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# two-sided 95% quantiles of Student's t by degrees of freedom
T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26}
LABELS = {"grpo": "rlvr GRPO", "ppo": "rlvr PPO", "trl": "TRL GRPOTrainer"}
COLORS = {"grpo": "tab:blue", "ppo": "tab:green", "trl": "tab:orange"}
EXTRAS = {
    "toolmath": ("tool_call_rate", "tool-call rate"),
    "selfcorrect": ("delta", "acc@t2 - acc@t1"),
    "math": ("level_up", "level 3 accuracy"),
}
# a second figure of a task, shown before -> after (median) beside the first
SECOND = {"selfcorrect": ("repeat_rate", "second answer repeats the first")}


def load_runs(out: Path, task: str, learner: str, seeds: Sequence[int]) -> list[dict[str, Any]]:
    runs = []
    for seed in seeds:
        path = out / "runs" / task / f"{learner}-s{seed}" / "result.json"
        if path.exists():
            runs.append(json.loads(path.read_text()))
    return runs


def t_interval(values: Sequence[float]) -> tuple[float, float]:
    """95% t-interval of the mean (nan without two values)."""
    if len(values) < 2:
        return math.nan, math.nan
    mean, sd = statistics.mean(values), statistics.stdev(values)
    half = T95.get(len(values) - 1, 1.96) * sd / math.sqrt(len(values))
    return mean - half, mean + half


def time_to(run: dict[str, Any], gain: float) -> float | None:
    """Training CPU seconds of the first evaluation at or above before + gain."""
    target = run["before"]["accuracy"] + gain
    return next((p["cpu"] for p in run["curve"] if p["accuracy"] >= target - 1e-12), None)


def summarise(task: str, threshold: float, runs: list[dict[str, Any]]) -> dict[str, Any]:
    gains = [r["after"]["accuracy"] - r["before"]["accuracy"] for r in runs]
    low, high = t_interval(gains)
    times = [time_to(r, threshold) for r in runs]
    reached = sorted(t for t in times if t is not None)
    row: dict[str, Any] = {
        "seeds": len(runs),
        "before": runs[0]["before"]["accuracy"],
        "before_se": runs[0]["before"]["accuracy_se"],
        "after": statistics.median(r["after"]["accuracy"] for r in runs),
        "after_se": statistics.median(r["after"]["accuracy_se"] for r in runs),
        "gains": gains,
        "gain": statistics.median(gains),
        "gain_low": low,
        "gain_high": high,
        "steps": statistics.median(r["steps"] for r in runs),
        "cpu_per_step": statistics.median(r["cpu_seconds"] / max(r["steps"], 1) for r in runs),
        "wall": statistics.median(r["wall_seconds"] for r in runs),
        "cpu": statistics.median(r["cpu_seconds"] for r in runs),
        "time_to_threshold": statistics.median(times) if len(reached) == len(times) else None,
        "reached": f"{len(reached)}/{len(times)}",
    }
    if task in EXTRAS:
        key = EXTRAS[task][0]
        row["extra_before"] = runs[0]["before"].get(key)
        afters = [r["after"].get(key, math.nan) for r in runs]
        row["extra_after"] = statistics.median(afters)
        row["extra_low"], row["extra_high"] = t_interval(afters)
    if task in SECOND:
        key = SECOND[task][0]
        row["second_before"] = runs[0]["before"].get(key)
        row["second_after"] = statistics.median(r["after"].get(key, math.nan) for r in runs)
    if task == "selfcorrect":
        row["first_attempt_after"] = statistics.median(r["after"]["first_attempt"] for r in runs)
    return row


def _fmt(value: float | None, digits: int = 3, signed: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def _interval(row: dict[str, Any]) -> str:
    return f"[{_fmt(row['gain_low'], signed=True)}, {_fmt(row['gain_high'], signed=True)}]"


def markdown(summary: dict[str, dict[str, dict[str, Any]]], titles: dict[str, str]) -> str:
    lines = [
        "| task | learner | held-out before | after (median) | gain: median [95% CI] | "
        "steps | CPU s/step | time to +threshold | task figure before -> after |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for task, rows in summary.items():
        for learner, row in rows.items():
            extra = "-"
            if "extra_before" in row:
                extra = (
                    f"{EXTRAS[task][1]}: {_fmt(row['extra_before'])} -> "
                    f"{_fmt(row['extra_after'])} [{_fmt(row['extra_low'])}, "
                    f"{_fmt(row['extra_high'])}]"
                )
            if "second_before" in row:
                extra += (
                    f"; {SECOND[task][1]}: {_fmt(row['second_before'])} -> "
                    f"{_fmt(row['second_after'])}"
                )
            reach = _fmt(row["time_to_threshold"], 0)
            reach = f"{reach} s ({row['reached']})" if reach != "-" else f"- ({row['reached']})"
            lines.append(
                f"| {titles[task]} | {LABELS.get(learner, learner)} | "
                f"{row['before']:.3f} ± {row['before_se']:.3f} | "
                f"{row['after']:.3f} ± {row['after_se']:.3f} | "
                f"{_fmt(row['gain'], signed=True)} [{_fmt(row['gain_low'], signed=True)}, "
                f"{_fmt(row['gain_high'], signed=True)}] | {row['steps']:.0f} | "
                f"{row['cpu_per_step']:.2f} | {reach} | {extra} |"
            )
    return "\n".join(lines)


def check_targets(summary: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    """The issue's targets, each with whether it is met."""
    lines = []
    ratios = {}
    for task, rows in summary.items():
        if "grpo" in rows and "trl" in rows:
            ours, theirs = rows["grpo"]["gain"], rows["trl"]["gain"]
            ratios[task] = ours / theirs if theirs > 0 else math.inf if ours > 0 else math.nan
            verdict = "met" if ours >= theirs else "NOT met"
            overlap = rows["grpo"]["gain_low"] <= rows["trl"]["gain_high"] and (
                rows["trl"]["gain_low"] <= rows["grpo"]["gain_high"]
            )
            lines.append(
                f"{task}: our GRPO's median gain {ours:+.3f} {_interval(rows['grpo'])} vs TRL's "
                f"{theirs:+.3f} {_interval(rows['trl'])} (ratio {ratios[task]:.2f}): >= TRL's "
                f"{verdict}{' (the intervals overlap)' if overlap else ''}"
            )
    strong = [task for task, ratio in ratios.items() if ratio >= 1.5]
    lines.append(f">= 1.5x TRL's gain on {len(strong)} task(s) {strong}: target 2")
    tool = summary.get("toolmath", {}).get("grpo")
    if tool:
        rate_ok = tool["extra_after"] >= 0.8
        gain_ok = tool["gain"] >= 0.3
        lines.append(
            f"toolmath: tool-call rate {tool['extra_before']:.3f} -> {tool['extra_after']:.3f} "
            f"(target >= 0.80: {'met' if rate_ok else 'NOT met'}), accuracy gain "
            f"{tool['gain']:+.3f} (target >= +0.30: {'met' if gain_ok else 'NOT met'})"
        )
    correct = summary.get("selfcorrect", {}).get("grpo")
    if correct:
        ok = correct["extra_after"] > 0
        holds_zero = correct["extra_low"] <= 0  # False without an interval (nan)
        caveat = ", but the interval holds 0" if ok and holds_zero else ""
        lines.append(
            f"selfcorrect: delta {correct['extra_before']:+.3f} -> {correct['extra_after']:+.3f} "
            f"[{_fmt(correct['extra_low'], signed=True)}, "
            f"{_fmt(correct['extra_high'], signed=True)}] (target > 0 after training: "
            f"{'met' if ok else 'NOT met'}{caveat}"
            f"; raised by RL: {_raised(correct)})"
        )
    return lines


def _raised(row: dict[str, Any]) -> str:
    """Whether a figure rose in training: its interval after training above its start."""
    if math.isnan(row["extra_low"]):
        return "no interval"
    if row["extra_low"] > row["extra_before"]:
        return "yes (the interval is above the start)"
    return (
        "yes in the median, not beyond the interval"
        if row["extra_after"] > row["extra_before"]
        else "no"
    )


def plot(out: Path, tasks: Sequence[str], learners: Sequence[str], seeds: Sequence[int],
         titles: dict[str, str]) -> Path:  # fmt: skip
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = min(len(tasks), 2)
    rows = math.ceil(len(tasks) / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(6 * columns, 4 * rows), squeeze=False)
    for index, task in enumerate(tasks):
        axis = axes[index // columns][index % columns]
        for learner in learners:
            runs = load_runs(out, task, learner, seeds)
            if not runs:
                continue
            color = COLORS.get(learner)
            for run in runs:
                xs = [p["cpu"] for p in run["curve"]]
                axis.plot(xs, [p["accuracy"] for p in run["curve"]], color=color, alpha=0.25)
            points = min(len(run["curve"]) for run in runs)
            xs = [statistics.median(run["curve"][i]["cpu"] for run in runs) for i in range(points)]
            ys = [
                statistics.median(run["curve"][i]["accuracy"] for run in runs)
                for i in range(points)
            ]
            axis.plot(xs, ys, color=color, linewidth=2, label=LABELS.get(learner, learner))
        axis.set_title(titles[task])
        axis.set_xlabel("training CPU seconds (1 thread)")
        axis.set_ylabel("held-out accuracy (greedy)")
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)
    for index in range(len(tasks), rows * columns):
        axes[index // columns][index % columns].axis("off")
    figure.suptitle("Held-out accuracy against training CPU time: thin lines seeds, thick medians")
    figure.tight_layout()
    path = out / "suite.png"
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def report(
    out: Path,
    tasks: Sequence[str],
    learners: Sequence[str],
    seeds: Sequence[int],
    docs: str | None = None,
) -> dict[str, Any]:
    from learning_suite import TASKS

    titles = {task: TASKS[task].title for task in tasks}
    summary: dict[str, dict[str, dict[str, Any]]] = {}
    for task in tasks:
        for learner in learners:
            runs = load_runs(out, task, learner, seeds)
            if runs:
                summary.setdefault(task, {})[learner] = summarise(task, TASKS[task].threshold, runs)
    table = markdown(summary, titles)
    targets = check_targets(summary)
    print(table)
    print()
    print("\n".join(targets))
    noise = []
    for task in tasks:
        path = out / "baseline" / f"{task}.json"
        if path.exists():
            base = json.loads(path.read_text())
            noise.append(
                f"{task}: warm start {base['figures']['accuracy']:.3f} "
                f"± {base['figures']['accuracy_se']:.3f} on {base['figures']['accuracy_n']} "
                f"held-out tasks; a second evaluation identical: {base['repeat_identical']}"
            )
    print("\n".join(noise))
    (out / "table.md").write_text(table + "\n\n" + "\n".join(targets + noise) + "\n")
    (out / "summary.json").write_text(
        json.dumps({"summary": summary, "targets": targets, "noise": noise}, indent=1) + "\n"
    )
    finished = [t for t in tasks if t in summary]
    if not finished:  # every run failed or is still to come: nothing to draw
        print(f"no finished runs to plot; table: {out / 'table.md'}")
        return summary
    picture = plot(out, finished, learners, seeds, titles)
    if docs:
        Path(docs).write_bytes(picture.read_bytes())
    print(f"plot: {picture}\ntable: {out / 'table.md'}")
    return summary
