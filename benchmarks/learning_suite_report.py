"""The learning suite's tables and plots, from its per-run results (`learning_suite.py`).

Every learning table and plot of docs/agents.md is made from the results stored in
benchmarks/results/learning_suite/<experiment>/<task>/<learner>-s<seed>.json: one small summary
per run (held-out figures before and after, the held-out curve, steps, CPU and wall seconds, and
the run's provenance: commit, warm-start and held-out-set fingerprints, every setting, library
versions; no models), written by `learning_suite.py --experiment NAME --out DIR --store`
(`learning_suite_results.py` reads, checks and stores them).

    .venv/bin/python benchmarks/learning_suite_report.py --docs   # rewrite every table and plot
    .venv/bin/python benchmarks/learning_suite_report.py --check  # exit 1 where the docs differ
    .venv/bin/python benchmarks/learning_suite_report.py --experiment math-30  # print one table

docs/agents.md marks each generated block with a comment that names what it shows; the report
rewrites the text between it and the next `<!-- /learning-suite -->`:

    <!-- learning-suite:table math-30 -->                      an experiment's table
    <!-- learning-suite:budget math-30 math-120 math-300 -->   gain against training budget
    <!-- learning-suite:targets math-30 selfcorrect toolmath sql -->  the issue's targets
    <!-- learning-suite:plot math-30 agents_suite.png -->      held-out curves (docs/<file>)
    <!-- learning-suite:budget-plot math-30 math-120 math-300 agents_budget.png -->

One statistic throughout: a figure over seeds is the mean with its 95% Student-t interval
(n - 1 degrees of freedom), the per-seed values beside it; the difference between two learners'
gains is the difference of their means with Welch's 95% t-interval; a figure of one evaluation
(the warm start's) carries its binomial standard error (±). A gain is flagged when one
evaluation's standard error is above a third of it: the held-out set is too small to show it.

Rules: runs that differ in warm start, held-out set, task settings (budget aside in a budget
table), library versions or, within one learner's row, learner settings never share a table
(the error names the field); an experiment enters the docs only when every run EXPERIMENTS lists
for it is stored (a report of an unfinished --out folder is written as table-partial.md).
"""

from __future__ import annotations

import argparse
import math
import re
import statistics
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from learning_suite import EXPERIMENTS, LABELS  # noqa: E402  (stdlib only: no torch)
from learning_suite_results import (  # noqa: E402
    BUDGET_FIELDS,
    RESULTS,
    SAME_ROW,
    SAME_TASK,
    Estimate,
    Key,
    ReportError,
    by_task_and_learner,
    check_experiment,
    check_together,
    complete_runs,
    expected_runs,
    mean_interval,
    names,
    out_runs,
    run_cli,
    welch_difference,
)

DOCS = HERE.parent / "docs" / "agents.md"
REFERENCE = "trl"
"""The learner every other one is compared with."""
COLORS = {
    "grpo": "tab:blue",
    "ppo": "tab:green",
    "trl": "tab:orange",
    "grpo-score": "tab:purple",
    "ppo-score": "tab:olive",
    "rloo": "tab:red",
}
SELF_CORRECTING = ("grpo", "grpo-score")
"""Our learners whose self-correction delta the targets judge: GRPO and its SCoRe recipe."""
# a task's own figures (key in the held-out figures, label), before -> after
FIGURES = {
    "math": [("level_up", "level 3 accuracy")],
    "toolmath": [("tool_call_rate", "tool-call rate")],
    "toolmath-suppressed": [("tool_call_rate", "tool-call rate")],
    "selfcorrect": [
        ("delta", "acc@t2 - acc@t1"),
        ("fix_rate", "second attempt fixes"),
        ("repeat_rate", "second answer repeats the first"),
    ],
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
    tasks = [task for task in EXPERIMENTS[experiments[0]].tasks if _in_all(task, loaded)]
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


def _in_all(task: str, loaded: Mapping[str, Mapping[Key, Any]]) -> bool:
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
    for learner in SELF_CORRECTING:
        correct = rows.get("selfcorrect", {}).get(learner)
        if not correct:
            continue
        _, start, delta = correct["figures"][0]
        raised = "raised beyond the interval" if delta.low > start else "not raised beyond it"
        lines.append(
            f"| self-correction delta positive after training (and raised by RL), "
            f"{LABELS[learner]} | acc@t2 - acc@t1 {_fmt(start, signed=True)} -> "
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
    tasks = [task for task in EXPERIMENTS[experiments[0]].tasks if _in_all(task, loaded)]
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


# --- the docs ------------------------------------------------------------------------------------

OPENING = re.compile(r"^<!-- learning-suite:(?P<kind>[a-z-]+) (?P<args>[^>\n]*?) -->\n", re.M)
CLOSING = re.compile(r"^<!-- /learning-suite -->$", re.M)
PICTURE = re.compile(r"[\w.-]+\.png")


@dataclass(frozen=True)
class Block:
    """One generated block of the docs: what it shows and its text now."""

    kind: str
    args: tuple[str, ...]
    body: str
    start: int
    end: int

    @property
    def name(self) -> str:
        return f"learning-suite:{self.kind} {' '.join(self.args)}"


def blocks(text: str) -> list[Block]:
    """The generated blocks of a docs file: each opening comment at the start of a line, up to
    the next closing one; an opening without its closing is refused."""
    found = []
    for opening in OPENING.finditer(text):
        closing = CLOSING.search(text, opening.end())
        following = OPENING.search(text, opening.end())
        if closing is None or (following is not None and following.start() < closing.start()):
            raise ReportError(
                f"<!-- learning-suite:{opening['kind']} {opening['args']} --> has no "
                f"<!-- /learning-suite --> line before the next block: add it"
            )
        body = text[opening.end() : closing.start()]
        found.append(
            Block(
                opening["kind"],
                tuple(opening["args"].split()),
                body,
                opening.end(),
                closing.start(),
            )
        )
    return found


def render(block: Block, results: Path) -> str:
    """The text a block should hold, made from the stored results."""
    args = block.args
    if not args:
        raise ReportError(f"<!-- {block.name} -->: name its experiment(s)")
    if block.kind == "table" and len(args) == 1:
        source = shown_path(results / args[0])
        return experiment_table(args[0], complete_runs(results, args[0]), source) + "\n"
    if block.kind == "budget":
        return budget_table(args, results) + "\n"
    if block.kind == "targets":
        return targets_table(args, results) + "\n"
    if block.kind in ("plot", "budget-plot") and len(args) >= 2 and PICTURE.fullmatch(args[-1]):
        for name in args[:-1]:
            complete_runs(results, name)  # refuse a partial or mixed experiment here too
        what = "held-out accuracy against training CPU seconds"
        if block.kind == "budget-plot":
            what = "gain against training budget"
        return f"![{what}: {', '.join(args[:-1])}]({args[-1]})\n"
    raise ReportError(
        f"<!-- {block.name} -->: write table EXPERIMENT, budget EXPERIMENTS, targets "
        f"EXPERIMENTS, plot EXPERIMENT FILE.png or budget-plot EXPERIMENTS FILE.png"
    )


def draw(block: Block, results: Path, folder: Path) -> Path | None:
    """The picture of a plot block, drawn into `folder` (None: not a plot block)."""
    path = folder / block.args[-1]
    if block.kind == "plot":
        runs = complete_runs(results, block.args[0])
        curves_plot(runs, block.args[0], path)
    elif block.kind == "budget-plot":
        budget_plot(block.args[:-1], results, path)
    else:
        return None
    return path


def update_docs(docs: Path, results: Path, pictures: bool = True) -> list[str]:
    """Rewrite every generated block of `docs` from the stored results (and draw its plots);
    nothing is written unless every block can be made."""
    text = docs.read_text()
    found = blocks(text)
    made = [render(block, results) for block in found]
    for block, body in reversed(list(zip(found, made))):
        text = text[: block.start] + body + text[block.end :]
    drawn = [draw(block, results, docs.parent) for block in found] if pictures else []
    docs.write_text(text)
    return [block.name for block in found] + [str(path) for path in drawn if path]


def check_docs(docs: Path, results: Path) -> list[str]:
    """Where `docs` differs from what the stored results make (empty: it agrees): a block
    whose text differs, one that cannot be made, a picture missing, or a stored experiment
    that is not registered."""
    problems = []
    try:
        found = blocks(docs.read_text())
    except ReportError as error:
        return [str(error)]
    for block in found:
        try:
            wanted = render(block, results)
        except ReportError as error:
            problems.append(f"<!-- {block.name} -->: {error}")
            continue
        if block.body != wanted:
            difference = _diff(block.body, wanted)
            problems.append(f"<!-- {block.name} -->: differs from the stored results\n{difference}")
        if block.kind.endswith("plot") and not (docs.parent / block.args[-1]).exists():
            problems.append(f"<!-- {block.name} -->: {docs.parent / block.args[-1]} is missing")
    if results.exists():
        for folder in sorted(p for p in results.iterdir() if p.is_dir()):
            if folder.name not in EXPERIMENTS:
                problems.append(f"{folder}: not an experiment of EXPERIMENTS")
    return problems


def _diff(have: str, want: str) -> str:
    import difflib

    lines = difflib.unified_diff(
        have.splitlines(), want.splitlines(), "docs", "stored results", lineterm="", n=0
    )
    return "\n".join(lines)


# --- a suite's --out folder, and storing its results ---------------------------------------------


def report_runs(
    out: Path, experiment: str, tasks: Sequence[str], learners: Sequence[str], seeds: Sequence[int]
) -> Path:
    """The table and plot of the runs in a suite's --out folder, into
    out/reports/<experiment>/: table.md and curves.png when every run of the experiment (or of
    the command, for `custom`) is there, table-partial.md and curves-partial.png, labelled,
    while some are missing. A partial report never replaces a complete one."""
    if experiment in EXPERIMENTS:
        wanted = expected_runs(experiment)
        spec = EXPERIMENTS[experiment]
        tasks, learners, seeds = spec.tasks, spec.learners, spec.seeds
    else:
        wanted = [(t, lr, s) for t in tasks for lr in learners for s in seeds]
    runs = out_runs(out, experiment, tasks, learners, seeds)
    check_experiment(experiment, runs)
    folder = out / "reports" / experiment
    folder.mkdir(parents=True, exist_ok=True)
    missing = [key for key in wanted if key not in runs]
    suffix = "-partial" if missing else ""
    table = folder / f"table{suffix}.md"
    if not runs:
        print(f"no finished runs of {experiment} in {out}: nothing to report")
        return table
    text = experiment_table(experiment, runs, str(out / "runs" / experiment))
    rows = {
        task: {learner: summarise(row) for learner, row in learners_runs.items()}
        for task, learners_runs in by_task_and_learner(runs).items()
    }
    text += "\n\n" + "\n".join(targets_markdown(rows))
    if missing:
        text = f"PARTIAL: {len(runs)} of {len(wanted)} runs ({names(missing)} missing).\n\n{text}"
    table.write_text(text + "\n")
    print(text)
    curves_plot(
        runs, experiment + (" (PARTIAL)" if missing else ""), folder / f"curves{suffix}.png"
    )
    print(f"table: {table}\nplot: {folder / f'curves{suffix}.png'}")
    return table


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument(
        "--docs", action="store_true", help="rewrite every generated block and plot of --file"
    )
    action.add_argument(
        "--check", action="store_true", help="exit 1, saying where, if --file differs"
    )
    action.add_argument("--experiment", help="print one stored experiment's table")
    parser.add_argument("--file", default=str(DOCS), help="the docs (default: docs/agents.md)")
    parser.add_argument(
        "--results",
        default=str(RESULTS),
        help="stored results (default: benchmarks/results/learning_suite)",
    )
    args = parser.parse_args()
    docs, results = Path(args.file), Path(args.results)
    if args.experiment:
        source = str(results / args.experiment)
        print(
            run_cli(
                lambda: experiment_table(
                    args.experiment, complete_runs(results, args.experiment), source
                )
            )
        )
    elif args.check:
        problems = check_docs(docs, results)
        print("\n".join(problems) or f"{docs} agrees with {results}")
        raise SystemExit(1 if problems else 0)
    else:
        for name in run_cli(lambda: update_docs(docs, results)):
            print(f"wrote {name}")


if __name__ == "__main__":
    main()
