"""The learning suite's stored results: reading and checking per-run results, the statistic,
and storing an experiment's runs (`learning_suite.py --store`). `learning_suite_report.py` makes
the tables and plots from them; no torch is needed here."""

from __future__ import annotations

import json
import math
import statistics
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from learning_suite_tasks import CUSTOM, EXPERIMENTS  # noqa: E402  (stdlib only: no torch)

RESULTS = HERE / "results" / "learning_suite"
REQUIRED = ("task", "learner", "seed", "before", "after", "curve", "steps", "cpu_seconds")
PROVENANCE = ("commit", "dirty", "title", "warm_start", "heldout", "settings", "versions")
# what runs sharing a task in one table must agree on; a row's runs also share SAME_ROW
SAME_TASK = ("warm_start", "heldout", "settings.task", "versions", "before")
SAME_ROW = ("settings.learner",)
BUDGET_FIELDS = ("budget", "eval_every")


class ReportError(ValueError):
    """Results that cannot make the table asked for; the message names the fix."""


# --- statistics ----------------------------------------------------------------------------------

# two-sided 95% quantiles of Student's t by degrees of freedom
T95 = {
    1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
    10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110,
    18: 2.101, 19: 2.093, 20: 2.086, 21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064, 25: 2.060,
    26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045, 30: 2.042,
}  # fmt: skip


def t95(df: float) -> float:
    """The two-sided 95% quantile of Student's t with `df` degrees of freedom (fractional df,
    as Welch's, round down: the wider interval); nan below 1."""
    if not df >= 1:
        return math.nan
    whole = int(df)
    if whole in T95:
        return T95[whole]
    z = 1.959964  # Cornish-Fisher expansion: within 0.001 of the exact quantile beyond 30 df
    return (
        z
        + (z**3 + z) / (4 * whole)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * whole**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * whole**3)
    )


@dataclass(frozen=True)
class Estimate:
    """A mean over seeds with its 95% interval (nan without two values) and the values."""

    mean: float
    low: float
    high: float
    values: tuple[float, ...] = ()


def mean_interval(values: Sequence[float]) -> Estimate:
    """The mean of `values` with its 95% t-interval."""
    values = tuple(values)
    if not values:
        return Estimate(math.nan, math.nan, math.nan)
    mean = statistics.fmean(values)
    if len(values) < 2:
        return Estimate(mean, math.nan, math.nan, values)
    half = t95(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    return Estimate(mean, mean - half, mean + half, values)


def welch_difference(a: Sequence[float], b: Sequence[float]) -> Estimate:
    """mean(a) - mean(b) with Welch's 95% t-interval (nan without two values on each side)."""
    difference = statistics.fmean(a) - statistics.fmean(b) if a and b else math.nan
    if len(a) < 2 or len(b) < 2:
        return Estimate(difference, math.nan, math.nan)
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    spread = math.sqrt(va + vb)
    if spread == 0:
        return Estimate(difference, difference, difference)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    half = t95(df) * spread
    return Estimate(difference, difference - half, difference + half)


# --- reading results -----------------------------------------------------------------------------

Key = tuple[str, str, int]
"""(task, learner, seed)"""


def read_run(path: Path) -> dict[str, Any]:
    """One run's result, refused (naming the file and what is missing) when it lacks a figure
    or the provenance the report checks."""
    try:
        run = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ReportError(f"{path}: not a readable result ({error}): rerun or delete it") from None
    if not isinstance(run, dict):
        raise ReportError(f"{path}: not a result (a JSON object): rerun or delete it")
    origin = run.get("provenance")
    missing = [key for key in REQUIRED if key not in run]
    missing += [f"provenance.{key}" for key in PROVENANCE if not _has(origin, key)]
    if missing:
        raise ReportError(
            f"{path}: no {', '.join(missing)} (made before runs recorded their provenance?): "
            f"rerun it"
        )
    return run


def stored_runs(results: Path, experiment: str) -> dict[Key, dict[str, Any]]:
    """The stored results of an experiment: results/<experiment>/<task>/<learner>-s<seed>.json,
    each checked to be the run its name says."""
    runs: dict[Key, dict[str, Any]] = {}
    for path in sorted((results / experiment).glob("*/*.json")):
        run = read_run(path)
        learner, _, seed = path.stem.rpartition("-s")
        named = (path.parent.name, learner, seed)
        held = (run["task"], run["learner"], str(run["seed"]))
        if named != held or run.get("experiment") != experiment:
            raise ReportError(
                f"{path} holds the run {run.get('experiment')}/{held[0]}/{held[1]}-s{held[2]}: "
                f"store results with learning_suite.py --store, not by hand"
            )
        runs[(run["task"], run["learner"], run["seed"])] = run
    return runs


def out_runs(
    out: Path, experiment: str, tasks: Iterable[str], learners: Iterable[str], seeds: Iterable[int]
) -> dict[Key, dict[str, Any]]:
    """The finished runs of an experiment in a suite's --out folder."""
    runs = {}
    for task in tasks:
        for learner in learners:
            for seed in seeds:
                path = out / "runs" / experiment / task / f"{learner}-s{seed}" / "result.json"
                if path.exists():
                    runs[(task, learner, seed)] = read_run(path)
    return runs


def expected_runs(experiment: str) -> list[Key]:
    spec = EXPERIMENTS[experiment]
    return [(t, lr, s) for t in spec.tasks for lr in spec.learners for s in spec.seeds]


def complete_runs(results: Path, experiment: str) -> dict[Key, dict[str, Any]]:
    """An experiment's stored runs, refused unless they are exactly the runs EXPERIMENTS lists
    for it (a partial experiment never reaches the docs)."""
    if experiment not in EXPERIMENTS:
        raise ReportError(
            f"no experiment {experiment!r}: choose from {', '.join(EXPERIMENTS)} "
            f"(or add it to EXPERIMENTS in learning_suite_tasks.py)"
        )
    runs = stored_runs(results, experiment)
    wanted = expected_runs(experiment)
    missing = [key for key in wanted if key not in runs]
    extra = [key for key in runs if key not in wanted]
    if missing:
        raise ReportError(
            f"{experiment}: {len(missing)} of {len(wanted)} runs are not stored in "
            f"{results / experiment} ({names(missing)}): run and --store them (the docs show "
            f"only complete experiments)"
        )
    if extra:
        raise ReportError(
            f"{experiment}: stored runs {names(extra)} are not in the experiment: add their "
            f"seeds or learners to EXPERIMENTS, or delete them"
        )
    check_experiment(experiment, runs)
    return {key: runs[key] for key in wanted}  # in the experiment's order


def names(keys: Sequence[Key], most: int = 6) -> str:
    names = [f"{task}/{learner}-s{seed}" for task, learner, seed in keys]
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")


def check_experiment(experiment: str, runs: Mapping[Key, dict[str, Any]]) -> None:
    """The runs ran with the budget the experiment sets."""
    spec = EXPERIMENTS.get(experiment)
    if spec is None:
        return
    for field, wanted in (("budget", spec.budget), ("eval_every", spec.eval_every)):
        for run in runs.values():
            ran = run["provenance"]["settings"]["task"].get(field)
            if wanted is not None and ran != wanted:
                raise ReportError(
                    f"{label(run)} ran with {field} {ran}, experiment {experiment} sets "
                    f"{wanted}: rerun it with --experiment {experiment}"
                )


def label(run: Mapping[str, Any]) -> str:
    return f"{run.get('experiment')}/{run['task']}/{run['learner']}-s{run['seed']}"


# --- what may share a table ----------------------------------------------------------------------


def first_difference(a: Any, b: Any, path: str) -> str | None:
    """Where two records first differ, as `path.to.key (a vs b)`; None where they agree."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for key in sorted(set(a) | set(b), key=str):
            where = first_difference(a.get(key), b.get(key), f"{path}.{key}")
            if where is not None:
                return where
        return None
    if a != b:
        return f"{path} ({_short(a)} vs {_short(b)})"
    return None


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 60 else text[:57] + "..."


def check_together(
    runs: Sequence[Mapping[str, Any]], fields: Sequence[str], ignore: Sequence[str] = ()
) -> None:
    """Refuse runs that differ in any of `fields` (dotted paths into a run's provenance;
    `before` is the warm start's figures), leaving out the keys `ignore` of each."""
    first = runs[0]
    for run in runs[1:]:
        for field in fields:
            where = first_difference(
                _field(first, field, ignore), _field(run, field, ignore), field
            )
            if where is not None:
                raise ReportError(
                    f"{label(run)} and {label(first)} differ in {where}: results from different "
                    f"warm starts, held-out sets or settings cannot share a table; rerun them "
                    f"alike, or report them apart"
                )


def _field(run: Mapping[str, Any], field: str, ignore: Sequence[str]) -> Any:
    value: Any = run["before"] if field == "before" else run["provenance"]
    if field != "before":
        for part in field.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
    if isinstance(value, Mapping):
        value = {key: item for key, item in value.items() if key not in ignore}
    return value


def _has(record: Any, key: str) -> bool:
    return isinstance(record, Mapping) and key in record


def by_task_and_learner(
    runs: Mapping[Key, dict[str, Any]],
) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Runs grouped by task, then learner, seeds in order, after checking they may share one
    table."""
    grouped: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for (task, learner, _), run in runs.items():  # tasks and learners in the order given
        grouped.setdefault(task, {}).setdefault(learner, []).append(run)
    for rows in grouped.values():
        for row in rows.values():
            row.sort(key=lambda run: run["seed"])
    everything = list(runs.values())
    if everything:
        check_together(everything, ("versions",))
    for rows in grouped.values():
        check_together([run for row in rows.values() for run in row], SAME_TASK)
        for row in rows.values():
            check_together(row, SAME_ROW)
    return grouped


# --- storing ------------------------------------------------------------------------------------


def store(out: Path, experiment: str, results: Path) -> list[Path]:
    """Copy an experiment's finished runs' results (no models) from a suite's --out folder into
    the stored results, refusing runs from uncommitted code and runs that could not share a
    table with those already stored."""
    if experiment == CUSTOM or experiment not in EXPERIMENTS:
        raise ReportError(f"only a named experiment is stored ({', '.join(EXPERIMENTS)})")
    spec = EXPERIMENTS[experiment]
    runs = out_runs(out, experiment, spec.tasks, spec.learners, spec.seeds)
    if not runs:
        raise ReportError(f"no finished runs of {experiment} in {out / 'runs' / experiment}")
    unclean = [key for key, run in runs.items() if run["provenance"]["dirty"] is not False]
    if unclean:
        raise ReportError(
            f"{names(unclean)} ran from uncommitted code (or outside git): commit, rerun "
            f"them, then store (a stored result must name the code that made it)"
        )
    check_experiment(experiment, runs)
    by_task_and_learner({**stored_runs(results, experiment), **runs})  # would they share a table?
    written = []
    for (task, learner, seed), run in sorted(runs.items()):
        path = results / experiment / task / f"{learner}-s{seed}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(run, indent=1) + "\n")
        written.append(path)
    wanted = expected_runs(experiment)
    stored = stored_runs(results, experiment)
    missing = [key for key in wanted if key not in stored]
    print(
        f"stored {len(written)} run{'s' if len(written) != 1 else ''} into {results / experiment}; "
        + (f"still missing: {names(missing)}" if missing else "the experiment is complete")
    )
    return written


def run_cli(work: Callable[[], Any]) -> Any:
    """Run `work`, turning a ReportError into a one-line message and exit status 1."""
    try:
        return work()
    except ReportError as error:
        raise SystemExit(f"learning suite report: {error}") from None
