"""`rlvr demo`: the main job on embedded defaults, as a sequence of ordinary `rlvr` commands.

1. build a tiny model offline and warm-start it on two-digit addition (`rlvr tiny`);
2. smoke-check the other verifiers with the oracle: code in the local sandbox, SQL on SQLite;
3. benchmark the warm-started model on the held-out `demo` suite (`rlvr bench`);
4. train it with GRPO on CPU for a fixed time budget (`rlvr train`), evaluating on the same
   `demo` suite as `rlvr bench` runs it, so its `held-out A -> B` line and the leaderboard's
   rows are one measurement;
5. benchmark the trained model, plus oracle and random baselines;
6. a multi-agent arena: Connect Four between scripted players, rated by Elo (`rlvr bench arena`);
7. rank everything (`rlvr leaderboard show`) and write the HTML page (`rlvr leaderboard html`).

Each command is printed before it runs, so the demo doubles as a tour of the command line, and
the end shows how long each took. Everything lands under `--out` (default `runs/demo`).
"""

from __future__ import annotations

import argparse
import itertools
import json
import resource
import shlex
import time
from pathlib import Path
from typing import Any, NamedTuple

EASY_MATH = {"families": ["arithmetic"], "difficulty": 1}
# Code runs in the local sandbox (bubblewrap + cgroups); skipped with the reason if unavailable.
SANDBOX_SMOKE_TEST = "eval rlvr/Code-v0"


def add_commands(subparsers: Any) -> None:
    demo = subparsers.add_parser(
        "demo", help="the main job: tiny model, GRPO on CPU, leaderboard (about 10 minutes)"
    )
    demo.add_argument("--out", default="runs/demo", help="folder for everything the demo writes")
    demo.add_argument(
        "--train-seconds", type=float, default=300.0, help="GRPO training budget in seconds"
    )
    demo.add_argument("--seed", type=int, default=0)
    demo.set_defaults(func=run_demo)


def demo_commands(out: Path, train_seconds: float, seed: int) -> list[list[str]]:
    """The `rlvr` command lines the demo runs, in order."""
    tiny, trained = shlex.quote(str(out / "tiny")), shlex.quote(str(out / "grpo"))
    final = shlex.quote(str(out / "grpo" / "final"))
    site, db = shlex.quote(str(out / "site")), shlex.quote(str(out / "leaderboard.sqlite"))
    easy = shlex.quote(json.dumps(EASY_MATH))
    bench = f"bench --suite demo --no-progress --db {db}"
    lines = [
        f"tiny --env rlvr/Math-v0 --kwargs {easy} --target-accuracy 0.35 --seed {seed} "
        f"--out {tiny}",
        f"{SANDBOX_SMOKE_TEST} --agent oracle --episodes 8 --no-progress",
        "eval rlvr/SQL-v0 --agent oracle --episodes 8 --no-progress",
        f"{bench} --agent hf:{tiny} --name 'tiny, warm start'",
        f"train --env rlvr/Math-v0 --kwargs {easy} --model {tiny} --algo grpo --lr 2e-4 "
        f"--prompts 16 --group-size 8 --max-new-tokens 16 --steps 100000 "
        f"--time-budget {train_seconds} --eval-every 20 --eval-suite demo --threads 2 "
        f"--seed {seed} --out {trained}",
        f"{bench} --agent hf:{final} --name 'tiny, warm start + GRPO'",
        f"{bench} --agent oracle",
        f"{bench} --agent random",
        f"bench arena --suite connect4 --db {db} --agent legal --agent random",
        f"leaderboard show --db {db}",
        f"leaderboard html {site} --db {db}",
    ]
    return [shlex.split(line) for line in lines]


def _sandbox_problem() -> str | None:
    """Why the local sandbox cannot run here, or None when it works."""
    from rlvr.sandboxes.doctor import check_local

    report = check_local()
    failed = [f"{check.name}: {check.detail}" for check in report.checks if not check.ok]
    return "; ".join(failed) if failed else None


def stage_name(argv: list[str]) -> str:
    """A command's short name in the timing table: `bench oracle`, `eval rlvr/SQL-v0`, ..."""
    words = argv[:2] if len(argv) > 1 and not argv[1].startswith("-") else argv[:1]
    agents = [value for flag, value in itertools.pairwise(argv) if flag == "--agent"]
    return " ".join(words + agents)


def _cpu_seconds() -> float:
    """CPU time of this process and of its children that have ended (bench workers, sandboxes)."""
    own, children = (
        resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


class Stage(NamedTuple):
    name: str
    wall: float = 0.0
    """Seconds of wall clock."""
    cpu: float = 0.0
    """CPU seconds (user + system) of the demo and its finished worker processes."""
    skipped: bool = False


def timing_table(stages: list[Stage]) -> str:
    """Wall and CPU seconds per stage, and their totals."""
    width = max(len(stage.name) for stage in [*stages, Stage("total")])
    lines = [f"{'stage':<{width}}  {'wall':>8}  {'CPU':>8}"]
    for stage in stages:
        times = "skipped" if stage.skipped else f"{stage.wall:7.1f}s  {stage.cpu:7.1f}s"
        lines.append(f"{stage.name:<{width}}  {times:>8}")
    wall, cpu = sum(stage.wall for stage in stages), sum(stage.cpu for stage in stages)
    lines.append(f"{'total':<{width}}  {wall:7.1f}s  {cpu:7.1f}s")
    return "\n".join(lines)


def run_demo(args: argparse.Namespace) -> int:
    from rlvr.cli import main

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stages: list[Stage] = []
    for argv in demo_commands(out, args.train_seconds, args.seed):
        print(f"\n$ rlvr {shlex.join(argv)}", flush=True)
        if shlex.join(argv).startswith(SANDBOX_SMOKE_TEST):
            problem = _sandbox_problem()
            if problem is not None:
                print(
                    f"skipped: the local sandbox cannot run here ({problem}); see "
                    "`rlvr sandbox doctor` (bubblewrap from apt; cgroups need root)"
                )
                stages.append(Stage(stage_name(argv), skipped=True))
                continue
        wall, cpu = time.perf_counter(), _cpu_seconds()
        status = main(argv)
        stages.append(Stage(stage_name(argv), time.perf_counter() - wall, _cpu_seconds() - cpu))
        if status != 0:
            print(f"\nthe demo stopped: `rlvr {argv[0]}` exited with {status}")
            return status
    print("\nTime per stage (wall clock; CPU of the demo and its finished workers):")
    print(timing_table(stages))
    minutes = sum(stage.wall for stage in stages) / 60
    print(f"\nDone in {minutes:.1f} min. Learning curve: {out / 'grpo' / 'learning_curve.png'}")
    print(f"Leaderboard page: {out / 'site' / 'index.html'}")
    return 0
