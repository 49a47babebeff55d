"""Does RL teach a tiny model what its demonstrations did not? Four tasks, several seeds, our
GRPO and PPO against TRL's GRPOTrainer from the same warm start, at equal CPU time.

Tasks (each with a tiny Qwen2 built offline and warm-started below its ceiling):

- `math`: rlvr/Math-v0, three procedural families (arithmetic, linear equations, word
  problems) at levels 1 and 2; held-out tasks of the same, and of level 3 to see whether
  anything generalises a level up.
- `toolmath`: rlvr/ToolMath-v0 level 1 (numbers of 3-4 digits multiplied and added), from a
  natural warm start: supervised for a fixed number of steps on demonstrations of which half
  call the calculator and half answer directly (the right number, which a model this size
  cannot compute), so it calls on some problems and guesses on others. What RL changes: the
  tool-call rate and accuracy; 90 training CPU s per run, evaluated every 45.
- `toolmath-suppressed` (a labelled experiment, not run by default): "recover a suppressed
  skill". The warm start learnt calculator episodes until its sampled calls were right, then
  direct answers until greedy decoding stopped calling (knife-edge: where that stop falls
  decides what RL starts from); RL must bring the call back.
- `selfcorrect`: rlvr/MathSelfCorrect-v0 over the math task's families (two attempts, binary
  feedback, SCoRe-style shaped reward: `reward="shaped"`, `bonus=0.5`), 90 training CPU
  seconds; our GRPO credits each attempt with its own reward-to-go (`turn_credit`). Its warm
  start is the math task's, then supervised on two-attempt episodes of the env itself
  (`build_retry_model`): a wrong first attempt (a near miss of the answer, not trained on),
  the feedback, and the right answer; and some right first attempts. It stops as soon as the
  second attempt beats the first by a little, below its ceiling. Accuracy after the second
  attempt, and the SCoRe measure: second-attempt accuracy minus first-attempt accuracy,
  before and after, with how often the second answer repeats the first and fixes it.
- `selfcorrect-choice`: the same over Math-v0's `arithmetic_choice` (the question with three
  options, one right), where a second attempt that avoids the rejected option and picks well
  among the other two is worth much. Its warm start is the math task's, supervised on the
  same kind of two-attempt episodes (the wrong first attempt is another option) for a fixed
  1200 steps, with no stop rule.
- `sql`: rlvr/SQL-v0 level 1 (filters on one table) on one domain's schema (flights), without
  example rows, 2000 databases, both splits stratified by question template (`stratify`);
  warm start supervised on reference queries. Its held-out questions carry values no
  training question has (the split is by prompt), so only the templates with many values
  have any (a distance count and a year range) and accuracy needs the model to copy a number
  from the question (docs/agents.md). 120 training CPU s per run, every learner at lr 4e-4
  (`Task.lr`).

Each run (task x learner x seed) is its own process with one torch thread, trains for the same
budget of the process's own CPU seconds spent in training steps (rollouts and updates; the
held-out evaluations are excluded), so other work on a shared machine slows a run without
shortening its budget; wall seconds are reported too. Runs are ordered seed by seed, the
learners' order rotating, so that load drift hits every learner alike. Every run is evaluated
on the same held-out tasks, greedily, every `--eval-every` CPU seconds and at the end.

Each run writes out/runs/<experiment>/<task>/<learner>-s<seed>/result.json as it finishes (the
suite resumes where it stopped, and refuses to resume runs made with other settings, another
warm start or held-out set), with its provenance: the commit and whether tracked files had
uncommitted changes, fingerprints of the warm start's files and of the held-out task list,
every task and learner setting (`run_settings`), library versions, the seed. Named experiments
(`EXPERIMENTS`: `math-30`, `math-120`, `math-300`, `selfcorrect`, `selfcorrect-choice`,
`toolmath`, `toolmath-suppressed`, `sql`, `repo`, `ablation`) fix the tasks, learners, seeds
and budget of one table of docs/agents.md:

    .venv/bin/python benchmarks/learning_suite.py --experiment math-30      # run it
    .venv/bin/python benchmarks/learning_suite.py --experiment math-30 --store  # keep results
    .venv/bin/python benchmarks/learning_suite_report.py --docs  # every table and plot in docs
    .venv/bin/python benchmarks/learning_suite.py --tasks math --seeds 0 --budget 10  # a try
    .venv/bin/python benchmarks/learning_suite.py --report-only  # --out's table and plot again

`--store` copies the finished runs' result.json (no models) into
benchmarks/results/learning_suite/<experiment>/<task>/<learner>-s<seed>.json, from committed
code only; the report makes docs/agents.md's learning tables and plots from those alone, and
only from complete experiments (`learning_suite_report.py`). A report of an unfinished --out
folder goes to out/reports/<experiment>/table-partial.md, never over table.md.

The warm starts are built once into `--out`/models (ToolMath's takes ~30 CPU minutes) and
shared by every experiment in that --out. SCoRe's stages on the self-correction task
(`score_stages`) are the learners `grpo-score` and `ppo-score`; `--experiment selfcorrect` runs
`grpo-score` beside `grpo`, `ppo` and `trl`.

Needs the `bench` extra for TRL: pip install -e '.[agents,bench]' -c .ci/constraints.txt
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from learning_suite_heldout import heldout_tasks
from learning_suite_learners import split_learners
from learning_suite_provenance import heldout_fingerprint, run_settings, warm_start_fingerprint
from learning_suite_tasks import CUSTOM, DEFAULT_TASKS, EXPERIMENTS, TASKS
from learning_suite_warm import model_folder
from learning_suite_worker import run_folder, run_worker

# The suite's parts, a module each: learning_suite_tasks (TASKS, EXPERIMENTS),
# learning_suite_learners (learner settings, SCoRe's stages), learning_suite_warm and
# learning_suite_demos (the warm starts), learning_suite_heldout (held-out figures),
# learning_suite_provenance (the settings and fingerprints a result records) and
# learning_suite_worker (one run in its own process). This file plans and schedules the runs and
# is the command line; learning_suite_report.py makes the tables and plots.
HERE = Path(__file__).resolve().parent


# --- the schedule --------------------------------------------------------------------------------


def schedule(tasks: Sequence[str], learners: Sequence[str], seeds: Sequence[int]) -> list[tuple]:
    """(task, learner, seed) in the order to run: seed by seed, task by task, the learners'
    order rotating with the seed so that none always runs first."""
    order = []
    for position, seed in enumerate(seeds):
        shift = position % len(learners)
        rotated = [*learners[shift:], *learners[:shift]]
        order += [(task, learner, seed) for task in tasks for learner in rotated]
    return order


def spawn(args: argparse.Namespace, worker: str, task: str, seed: int = 0) -> bool:
    """Run one worker in its own process; whether it succeeded."""
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--worker",
        worker,
        "--task",
        task,
        "--seed",
        str(seed),
        "--out",
        args.out,
        "--experiment",
        args.experiment,
        "--budget",
        str(args.budget if args.budget is not None else TASKS[task].budget),
        "--eval-every",
        str(args.eval_every if args.eval_every is not None else TASKS[task].eval_every),
    ]
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1"}
    return subprocess.run(command, env=env).returncode == 0


def plan(args: argparse.Namespace) -> tuple[list[str], list[str], list[int]]:
    """The tasks, learners and seeds to run (or report): the experiment's, or the part of it
    that --tasks, --learners and --seeds pick; without --experiment, those flags or the
    defaults. Sets args.budget and args.eval_every from the experiment."""
    if args.experiment not in (None, CUSTOM, *EXPERIMENTS):
        raise SystemExit(
            f"unknown experiment {args.experiment!r}: choose from {', '.join(EXPERIMENTS)}, "
            f"or add it to EXPERIMENTS"
        )
    experiment = EXPERIMENTS.get(args.experiment)
    defaults = (
        (list(DEFAULT_TASKS), ["grpo", "ppo", "trl"], [0, 1, 2])
        if experiment is None
        else (list(experiment.tasks), list(experiment.learners), list(experiment.seeds))
    )
    tasks = args.tasks.split(",") if args.tasks else defaults[0]
    learners = split_learners(args.learners) if args.learners else defaults[1]
    try:
        seeds = [int(seed) for seed in args.seeds.split(",")] if args.seeds else defaults[2]
    except ValueError:
        raise SystemExit(f"--seeds {args.seeds!r}: give integers separated by commas") from None
    unknown = [task for task in tasks if task not in TASKS]
    if unknown:
        raise SystemExit(f"unknown task(s) {unknown}: choose from {', '.join(TASKS)}")
    if experiment is not None:
        for flag, picked, allowed in (
            ("--tasks", tasks, defaults[0]),
            ("--learners", learners, defaults[1]),
            ("--seeds", seeds, defaults[2]),
        ):
            outside = [value for value in picked if value not in allowed]
            if outside:
                raise SystemExit(
                    f"{flag} {outside} are not in experiment {args.experiment} ({allowed}): "
                    f"pick a part of it, or add an experiment to EXPERIMENTS"
                )
        if args.budget is not None or args.eval_every is not None:
            raise SystemExit(
                f"experiment {args.experiment} sets the budget ({experiment.budget}) and "
                f"--eval-every ({experiment.eval_every}): drop --budget/--eval-every"
            )
        args.budget, args.eval_every = experiment.budget, experiment.eval_every
    return tasks, learners, seeds


def check_resumable(path: Path, expected: Mapping[str, Any]) -> None:
    """A finished run is kept (the suite resumes) only when it was made with the settings, warm
    start and held-out set it would be made with now."""
    from learning_suite_results import first_difference

    made = json.loads(path.read_text()).get("provenance")
    if made is None:
        raise SystemExit(
            f"{path} has no provenance (made before results recorded it): use another --out"
        )
    for key, value in expected.items():
        where = first_difference(made.get(key), value, key)
        if where is not None:
            raise SystemExit(
                f"{path} was made with another {where} than this command would use: "
                f"use another --out or --experiment, or delete the run to redo it"
            )


def run_all(
    args: argparse.Namespace, tasks: list[str], learners: list[str], seeds: list[int]
) -> None:
    """Build the warm starts and baselines, then every run not yet finished."""
    import rlvr  # noqa: F401  (registers the environments)

    out = Path(args.out)
    for task in tasks:
        built = (model_folder(out, task) / "config.json").exists()
        if not built and not spawn(args, "build", task):
            raise SystemExit(f"building the {task} model failed")
        measured = (out / "baseline" / f"{task}.json").exists()
        if not measured and not spawn(args, "baseline", task):
            raise SystemExit(f"the {task} baseline failed")
    if args.prepare_only:
        return
    for task, learner, seed in schedule(tasks, learners, seeds):
        budget = args.budget if args.budget is not None else TASKS[task].budget
        every = args.eval_every if args.eval_every is not None else TASKS[task].eval_every
        result = run_folder(out, args.experiment, task, learner, seed) / "result.json"
        if result.exists():
            expected = {
                "settings": run_settings(task, learner, budget, every),
                "warm_start": warm_start_fingerprint(model_folder(out, task)),
                "heldout": heldout_fingerprint(heldout_tasks(out, task)),
            }
            check_resumable(result, expected)
            continue
        print(f"run {task} {learner} seed {seed} (load {os.getloadavg()[0]:.1f})", flush=True)
        if not spawn(args, learner, task, seed):  # the others still run; rerun resumes
            print(f"run {task} {learner} seed {seed} FAILED", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--task", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument(
        "--experiment",
        help=f"a named experiment ({', '.join(EXPERIMENTS)}): its tasks, learners, seeds and "
        "budget; --tasks, --learners, --seeds then pick a part of it",
    )
    parser.add_argument(
        "--tasks",
        help=f"comma-separated, of {', '.join(TASKS)} (default: {', '.join(DEFAULT_TASKS)})",
    )
    parser.add_argument(
        "--learners",
        help="comma-separated: grpo, ppo, rloo, trl, or a variant (grpo-base, grpo-ds, "
        "grpo-overlong, grpo-curriculum; grpo-score and ppo-score train in SCoRe's stages), "
        "each optionally NAME@lr=X,group=G,prompts=P,temp=T (GRPO also mu=M; a SCoRe learner "
        "also share, pin1, pin2, bonus, pg1) (default: grpo,ppo,trl)",
    )
    parser.add_argument("--seeds", help="comma-separated integers (default: 0,1,2)")
    parser.add_argument(
        "--budget", type=float, help="training CPU seconds per run (default: each task's own)"
    )
    parser.add_argument(
        "--eval-every",
        type=float,
        help="training CPU seconds between held-out evaluations (default: each task's own)",
    )
    parser.add_argument(
        "--out",
        default="runs/bench/suite",
        help="models, baselines and runs (default: %(default)s)",
    )
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="no runs: the table and plot of the runs in --out (into --out/reports/<experiment>, "
        "named -partial while runs are missing)",
    )
    parser.add_argument(
        "--prepare-only", action="store_true", help="only build the warm starts and baselines"
    )
    parser.add_argument(
        "--store",
        action="store_true",
        help="no runs: copy the experiment's finished results (per-run summaries, no models) "
        "from --out into --results, for the docs (learning_suite_report.py --docs)",
    )
    parser.add_argument(
        "--results",
        default=str(HERE / "results" / "learning_suite"),
        help="stored results (default: benchmarks/results/learning_suite)",
    )
    args = parser.parse_args()
    if args.worker:
        args.experiment = args.experiment or CUSTOM
        run_worker(args)
        return
    sys.path.insert(0, str(HERE))
    import learning_suite_report as report
    import learning_suite_results as results

    tasks, learners, seeds = plan(args)
    args.experiment = args.experiment or CUSTOM
    if args.store:
        if args.experiment == CUSTOM:
            raise SystemExit("--store needs --experiment: only named experiments are stored")
        results.run_cli(lambda: results.store(Path(args.out), args.experiment, Path(args.results)))
        return
    if not args.report_only:
        run_all(args, tasks, learners, seeds)
        if args.prepare_only:
            return
    results.run_cli(
        lambda: report.report_runs(Path(args.out), args.experiment, tasks, learners, seeds)
    )


if __name__ == "__main__":
    main()
