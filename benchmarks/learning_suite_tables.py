"""The learning suite's tables (`learning_suite_report.py`): an experiment's table, gain against
training budget, and the issue's targets, in markdown, from complete stored runs
(`learning_suite_results.py`). One statistic throughout (the report's docstring states it)."""

from __future__ import annotations

import itertools
import math
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from learning_suite_learners import LABELS
from learning_suite_results import (
    BUDGET_FIELDS,
    SAME_ROW,
    SAME_TASK,
    Estimate,
    Key,
    ReportError,
    by_task_and_learner,
    check_together,
    complete_runs,
    mean_interval,
    welch_difference,
)
from learning_suite_tasks import EXPERIMENTS

HERE = Path(__file__).resolve().parent
REFERENCE = "trl"
"""The learner every other one is compared with."""
SELF_CORRECTING = ("grpo", "grpo-score")
"""Our learners whose self-correction delta the targets judge: GRPO and its SCoRe recipe."""
# a task's own figures (key in the held-out figures, label), before -> after
SELF_CORRECTION_FIGURES = [
    ("delta", "acc@t2 - acc@t1"),
    ("fix_rate", "second attempt fixes"),
    ("repeat_rate", "second answer repeats the first"),
]
REPO_FIGURES = [
    ("read_before_edit", "read the file before editing"),
    ("submitted", "submitted"),
]
FIGURES = {
    "math": [("level_up", "level 3 accuracy")],
    "toolmath": [("tool_call_rate", "tool-call rate")],
    "toolmath-suppressed": [("tool_call_rate", "tool-call rate")],
    "selfcorrect": SELF_CORRECTION_FIGURES,
    "selfcorrect-choice": SELF_CORRECTION_FIGURES,
    "repo": REPO_FIGURES,
    "repo-trainsplit": [("sampled_accuracy", "solved, sampled (4 a task, T 0.7)"), *REPO_FIGURES],
}
STATISTIC = (
    "Mean over seeds [95% t-interval], per-seed values beside it; ± is one evaluation's "
    "binomial standard error"
)


# --- summaries -----------------------------------------------------------------------------------


def summarise(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One learner's row on one task: the warm start's figures, and the mean [95% t] of every
    figure over its seeds."""
    before = runs[0]["before"]
    settings = runs[0]["provenance"]["settings"]["task"]
    gains = [run["after"]["accuracy"] - run["before"]["accuracy"] for run in runs]
    times = [time_to(run, settings["threshold"]) for run in runs]
    reached = [t for t in times if t is not None]
    row: dict[str, Any] = {
        "seeds": [run["seed"] for run in runs],
        "before": before["accuracy"],
        "before_se": before["accuracy_se"],
        "heldout_n": before["accuracy_n"],
        "after": mean_interval([run["after"]["accuracy"] for run in runs]),
        "after_se": max(run["after"]["accuracy_se"] for run in runs),
        "gain": mean_interval(gains),
        "steps": statistics.fmean(run["steps"] for run in runs),
        "cpu_per_step": statistics.fmean(run["cpu_seconds"] / max(run["steps"], 1) for run in runs),
        "time_to": mean_interval(reached) if len(reached) == len(times) else None,
        "reached": (len(reached), len(times)),
        "threshold": settings["threshold"],
        "budget": settings["budget"],
        "figures": [
            (
                name,
                before.get(key),
                mean_interval([run["after"].get(key, math.nan) for run in runs]),
            )
            for key, name in FIGURES.get(runs[0]["task"], [])
        ],
    }
    row["noise"] = max(row["before_se"], row["after_se"])
    return row


def time_to(run: Mapping[str, Any], gain: float) -> float | None:
    """Training CPU seconds of the first evaluation at or above before + gain."""
    target = run["before"]["accuracy"] + gain
    return next((p["cpu"] for p in run["curve"] if p["accuracy"] >= target - 1e-12), None)


def _fmt(value: float | None, digits: int = 3, signed: bool = False) -> str:
    if value is None or math.isnan(value):
        return "-"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def interval(estimate: Estimate, signed: bool = False) -> str:
    """`mean [low, high]`."""
    bounds = f"[{_fmt(estimate.low, signed=signed)}, {_fmt(estimate.high, signed=signed)}]"
    return f"{_fmt(estimate.mean, signed=signed)} {bounds}"


def per_seed(estimate: Estimate, signed: bool = False) -> str:
    return ", ".join(_fmt(value, signed=signed) for value in estimate.values)


def noise_check(row: Mapping[str, Any]) -> str:
    """One evaluation's standard error against a third of the mean gain: a gain below three
    standard errors of one evaluation is one the held-out set is too small to show."""
    third = abs(row["gain"].mean) / 3
    verdict = "ok" if row["noise"] <= third else "held-out set too small"
    return f"{row['noise']:.4f} vs {third:.4f}: {verdict}"


# --- tables --------------------------------------------------------------------------------------


def experiment_table(experiment: str, runs: Mapping[Key, dict[str, Any]], source: str) -> str:
    """The table of one experiment's runs: a row per task and learner, then what it was made
    from."""
    grouped = by_task_and_learner(runs)
    lines = [
        "| task | learner | seeds | held-out before (± 1 eval SE, tasks) | after: mean [95% CI] | "
        "gain: mean [95% CI] | gain per seed | 1 eval SE vs gain/3 | steps | CPU s/step | "
        "time to +threshold | task figures: before -> after, mean [95% CI] |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for rows in grouped.values():
        title = next(iter(rows.values()))[0]["provenance"]["title"]
        for learner, row_runs in rows.items():
            row = summarise(row_runs)
            reached, total = row["reached"]
            reach = f"- ({reached}/{total})"
            if row["time_to"] is not None:
                reach = f"{row['time_to'].mean:.0f} s ({reached}/{total})"
            figures = "; ".join(
                f"{name}: {_fmt(start)} -> {interval(after)}"
                for name, start, after in row["figures"]
            )
            lines.append(
                f"| {title} | {LABELS.get(learner, learner)} | {len(row['seeds'])} | "
                f"{row['before']:.3f} ± {row['before_se']:.3f} ({row['heldout_n']}) | "
                f"{interval(row['after'])} | {interval(row['gain'], signed=True)} | "
                f"{per_seed(row['gain'], signed=True)} | {noise_check(row)} | "
                f"{row['steps']:.0f} | {row['cpu_per_step']:.2f} | {reach} | {figures or '-'} |"
            )
    return "\n".join([*lines, "", provenance_note(experiment, grouped, source)])


def provenance_note(
    experiment: str, grouped: Mapping[str, Mapping[str, list[dict[str, Any]]]], source: str
) -> str:
    """What a table was made from: the statistic, the stored results, each task's warm start,
    held-out set and budget, the commits and the library versions."""
    runs = [run for rows in grouped.values() for row in rows.values() for run in row]
    parts = [f"{STATISTIC}. Experiment `{experiment}`, {runs_count(len(runs))} from `{source}`."]
    for task, rows in grouped.items():
        first = next(iter(rows.values()))[0]
        origin, settings = first["provenance"], first["provenance"]["settings"]["task"]
        seeds = sorted({run["seed"] for row in rows.values() for run in row})
        repeat = origin.get("baseline_repeat_identical")
        parts.append(
            f"{task}: warm start `{origin['warm_start']}` (evaluated twice, identical: "
            f"{'yes' if repeat else 'no' if repeat is False else 'not recorded'}), held-out set "
            f"`{origin['heldout']}` ({first['before']['accuracy_n']} tasks), "
            f"{settings['budget']:g} training CPU s per run, evaluated every "
            f"{settings['eval_every']:g}, threshold +{settings['threshold']:g}, seeds "
            f"{_seed_list(seeds)}."
        )
    parts.append(code_note(runs))
    return " ".join(parts)


def code_note(runs: Sequence[Mapping[str, Any]]) -> str:
    """The commits the runs were made at (with how many runs each) and the library versions."""
    commits = Counter(
        (run["provenance"]["commit"] or "unknown", run["provenance"]["dirty"]) for run in runs
    )
    made = ", ".join(
        f"`{commit[:10]}`{' with uncommitted changes' if dirty else ''} ({runs_count(count)})"
        for (commit, dirty), count in sorted(commits.items(), key=lambda item: str(item[0]))
    )
    versions = runs[0]["provenance"]["versions"]
    stack = ", ".join(f"{name} {version}" for name, version in versions.items() if version)
    return f"Code: commit {made}; {stack}."


def _seed_list(seeds: Sequence[int]) -> str:
    if len(seeds) > 2 and list(seeds) == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}-{seeds[-1]}"
    return ", ".join(str(seed) for seed in seeds)


def budget_table(experiments: Sequence[str], results: Path) -> str:
    """Gain against training budget: per task common to the experiments, a row per learner and
    budget, with the gain's lead over the reference learner's (Welch), so a reader sees whether
    a lead is speed per step or survives longer training."""
    loaded = {name: complete_runs(results, name) for name in experiments}
    tasks = [task for task in EXPERIMENTS[experiments[0]].tasks if in_all(task, loaded)]
    if not tasks:
        raise ReportError(f"experiments {', '.join(experiments)} share no task: nothing to plot")
    lines = [
        "| task | learner | training CPU s | seeds | steps | after: mean [95% CI] | "
        "gain: mean [95% CI] | gain per seed | 1 eval SE vs gain/3 | "
        f"gain minus {LABELS.get(REFERENCE, REFERENCE)}'s: mean [95% Welch CI] |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    notes = [f"{STATISTIC}; a difference of gains is Welch's."]
    for task in tasks:
        rows = budget_rows(task, loaded)
        for learner, by_budget in rows.items():
            for name, row in by_budget.items():
                reference = rows.get(REFERENCE, {}).get(name)
                lead = "-"
                if reference is not None and learner != REFERENCE:
                    lead = interval(
                        welch_difference(row["gain"].values, reference["gain"].values), True
                    )
                lines.append(
                    f"| {task} | {LABELS.get(learner, learner)} | {row['budget']:g} | "
                    f"{len(row['seeds'])} | {row['steps']:.0f} | {interval(row['after'])} | "
                    f"{interval(row['gain'], signed=True)} | "
                    f"{per_seed(row['gain'], signed=True)} | {noise_check(row)} | {lead} |"
                )
        for name in experiments:
            runs = [run for key, run in loaded[name].items() if key[0] == task]
            notes.append(
                f"`{name}` ({runs_count(len(runs))} from `{shown_path(results / name)}`): "
                + code_note(runs)
            )
        first = next(run for key, run in loaded[experiments[0]].items() if key[0] == task)
        notes.append(
            f"{task}: one warm start `{first['provenance']['warm_start']}` and held-out set "
            f"`{first['provenance']['heldout']}` ({first['before']['accuracy_n']} tasks) in "
            f"every row."
        )
    return "\n".join([*lines, "", " ".join(notes)])


def in_all(task: str, loaded: Mapping[str, Mapping[Key, Any]]) -> bool:
    return all(any(key[0] == task for key in runs) for runs in loaded.values())


def budget_rows(
    task: str, loaded: Mapping[str, Mapping[Key, dict[str, Any]]]
) -> dict[str, dict[str, dict[str, Any]]]:
    """learner -> experiment -> row of `task`, after checking that the experiments differ in
    the training budget only."""
    everything = [run for runs in loaded.values() for key, run in runs.items() if key[0] == task]
    check_together(everything, SAME_TASK, ignore=BUDGET_FIELDS)
    rows: dict[str, dict[str, dict[str, Any]]] = {}
    for name, runs in loaded.items():
        grouped = by_task_and_learner({key: run for key, run in runs.items() if key[0] == task})
        for learner, row_runs in grouped[task].items():
            rows.setdefault(learner, {})[name] = summarise(row_runs)
    for learner in rows:
        check_together(
            [
                run
                for runs in loaded.values()
                for k, run in runs.items()
                if k[:2] == (task, learner)
            ],
            SAME_ROW,
        )
    return rows


def targets_table(experiments: Sequence[str], results: Path) -> str:
    """The issue's targets on the tasks of `experiments`, each with whether it is met."""
    rows: dict[str, dict[str, dict[str, Any]]] = {}
    for name in experiments:
        for task, learners in by_task_and_learner(complete_runs(results, name)).items():
            if task in rows:
                raise ReportError(f"task {task} is in two of {', '.join(experiments)}: pick one")
            rows[task] = {learner: summarise(runs) for learner, runs in learners.items()}
    lines = [
        *targets_markdown(rows),
        "",
        f"{STATISTIC}; `ours - TRL` is the difference of mean gains with Welch's 95% interval. "
        f"From experiments {', '.join(f'`{name}`' for name in experiments)} "
        f"(`{shown_path(results)}`).",
    ]
    return "\n".join(lines)


def targets_markdown(rows: Mapping[str, Mapping[str, dict[str, Any]]]) -> list[str]:
    """The targets' table lines (no lines where no target applies to `rows`)."""
    lines = target_lines(rows)
    header = ["| target | figure: mean [95% CI] over seeds | met? |", "| --- | --- | --- |"]
    return header + lines if lines else []


def target_lines(rows: Mapping[str, Mapping[str, dict[str, Any]]]) -> list[str]:
    pairs = {task: r for task, r in rows.items() if "grpo" in r and REFERENCE in r}
    lines = []
    if pairs:
        figures, ahead, beyond, ratios = [], [], [], {}
        for task, r in pairs.items():
            ours, theirs = r["grpo"]["gain"], r[REFERENCE]["gain"]
            lead = welch_difference(ours.values, theirs.values)
            ratios[task] = gain_ratio(ours.mean, theirs.mean)
            figures.append(
                f"{task} ({len(ours.values)} seeds) {interval(ours, True)} vs "
                f"{interval(theirs, True)}, ours - TRL {interval(lead, True)}"
            )
            ahead += [task] if ours.mean >= theirs.mean else []
            beyond += [task] if lead.low > 0 else []
        verdict = "met" if len(ahead) == len(pairs) else f"NOT met (met on {_list(ahead)})"
        lines.append(
            f"| our GRPO's gain >= TRL's on every task | {'; '.join(figures)} | {verdict} in the "
            f"means; beyond the interval on {_list(beyond)} |"
        )
        strong = [task for task, ratio in ratios.items() if ratio >= 1.5]
        shown = ", ".join(f"{task} {_ratio(ratio)}" for task, ratio in ratios.items())
        lines.append(
            f"| >= 1.5x TRL's gain on two tasks | {shown} (ratio of mean gains) | "
            f"{'met' if len(strong) >= 2 else 'NOT met'}: 1.5x or more on {_list(strong)} |"
        )
    tool = rows.get("toolmath", {}).get("grpo")
    if tool:
        _, start, rate = tool["figures"][0]
        met = rate.mean >= 0.8 and tool["gain"].mean >= 0.3
        lines.append(
            f"| ToolMath tool-call rate ~0 -> >= 80%, accuracy +30 points | tool-call rate "
            f"{_fmt(start)} -> {interval(rate)}, accuracy gain {interval(tool['gain'], True)} | "
            f"{'met' if met else 'NOT met'} |"
        )
    corrections = [task for task in rows if FIGURES.get(task) is SELF_CORRECTION_FIGURES]
    for task, learner in itertools.product(corrections, SELF_CORRECTING):
        correct = rows[task].get(learner)
        if not correct:
            continue
        _, start, delta = correct["figures"][0]
        raised = "raised beyond the interval" if delta.low > start else "not raised beyond it"
        lines.append(
            f"| self-correction delta positive after training (and raised by RL), "
            f"{LABELS[learner]}, {task} | acc@t2 - acc@t1 {_fmt(start, signed=True)} -> "
            f"{interval(delta, True)} | {'met' if delta.mean > 0 else 'NOT met'} ({raised}) |"
        )
    return lines


def gain_ratio(ours: float, theirs: float) -> float:
    """Our mean gain over theirs: inf where only ours is positive, nan where neither is."""
    if theirs > 0:
        return ours / theirs
    return math.inf if ours > 0 else math.nan


def _ratio(ratio: float) -> str:
    if math.isinf(ratio):
        return "(TRL's mean gain <= 0, ours > 0)"
    if math.isnan(ratio):
        return "(neither mean gain > 0)"
    return f"{ratio:.2f}x"


def runs_count(count: int) -> str:
    return f"{count} run" if count == 1 else f"{count} runs"


def shown_path(path: Path) -> str:
    """A path as the docs show it: from the repository's root when inside it (the same on every
    checkout), else as given."""
    try:
        return str(path.resolve().relative_to(HERE.parent))
    except ValueError:
        return str(path)


def _list(items: Sequence[str]) -> str:
    return ", ".join(items) if items else "none"
