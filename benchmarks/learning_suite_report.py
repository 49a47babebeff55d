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
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from learning_suite_plots import budget_plot, curves_plot  # noqa: E402
from learning_suite_results import (  # noqa: E402
    RESULTS,
    ReportError,
    by_task_and_learner,
    check_experiment,
    complete_runs,
    expected_runs,
    names,
    out_runs,
    run_cli,
)
from learning_suite_tables import (  # noqa: E402
    budget_table,
    experiment_table,
    shown_path,
    summarise,
    targets_markdown,
    targets_table,
)
from learning_suite_tasks import EXPERIMENTS  # noqa: E402

DOCS = HERE.parent / "docs" / "agents.md"

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
