"""Time and peak memory of `rlvr leaderboard show` and `html` on a result with many episodes.

Builds a store holding one result whose two envs have `--episodes` traces each (a real run's
records, copied, each message padded to ~`--chars` characters), then runs each command in a fresh
process `--repeats` times, interleaved. The baseline is what `html` used to do: read every trace
of the result into memory at once (`ResultStore.traces`). The table gives median wall seconds and
median peak RSS (MB) per command, and each one's memory as a multiple of that baseline.

    .venv/bin/python benchmarks/leaderboard_store_scale.py [--episodes 100000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rlvr.envs import register_task_env
from rlvr.leaderboards import ResultStore, parse_suite, run_suite
from rlvr.leaderboards.results import rescored

ENV_ID = "bench/Echo-v0"

# Each command runs in its own process and prints its peak RSS (KiB on Linux) last.
COMMANDS = {
    "load all traces (baseline)": (
        "from rlvr.leaderboards import ResultStore; "
        "store = ResultStore(sys.argv[1], readonly=True); traces = store.traces(1)"
    ),
    "leaderboard show": (
        "from rlvr.cli import main; main(['leaderboard', 'show', '--db', sys.argv[1]])"
    ),
    "leaderboard html": (
        "from rlvr.cli import main; main(['leaderboard', 'html', sys.argv[2], '--db', sys.argv[1]])"
    ),
}
PROLOGUE = "import resource, sys; "  # show and html need no envs registered
EPILOGUE = "; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)"


def _register() -> None:
    tasks = [{"prompt": f"Say {i}.", "answer": str(i)} for i in range(1000)]
    register_task_env(ENV_ID, tasks, lambda reply, task: reply == task.answer, override=True)


def _build_store(path: Path, episodes: int, chars: int) -> None:
    _register()
    suite = parse_suite(
        f'name = "scale"\nsplit = false\nepisodes = 2\n[[envs]]\nid = "{ENV_ID}"\n'
        f'[[envs]]\nid = "{ENV_ID}"\nlabel = "again"\nseed = 5\n'
    )
    result = run_suite(suite, "oracle", parallel="serial")
    result.suite = suite.with_episodes(episodes)
    for env in result.suite.envs:
        base = result.traces[env.label][0]
        padded = [dict(m, content=m["content"] + "x" * chars) for m in base.messages]
        result.traces[env.label] = [
            dataclasses.replace(base, episode=i, seed=env.seed + i, messages=padded)
            for i in range(episodes)
        ]
    result = rescored(result)  # the store takes only figures its traces give
    with ResultStore(path) as store:
        store.add(result)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=100_000, help="per env (two envs)")
    parser.add_argument("--chars", type=int, default=500, help="characters per message")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "scale.sqlite"
        started = time.perf_counter()
        _build_store(db, args.episodes, args.chars)
        size = db.stat().st_size / 1e6
        print(f"store: 2 envs x {args.episodes} episodes, {size:.0f} MB, built in "
              f"{time.perf_counter() - started:.1f} s")  # fmt: skip
        seconds: dict[str, list[float]] = {name: [] for name in COMMANDS}
        peak_mb: dict[str, list[float]] = {name: [] for name in COMMANDS}
        for _ in range(args.repeats):
            for name, body in COMMANDS.items():  # interleaved: load hits every command alike
                started = time.perf_counter()
                run = subprocess.run(
                    [sys.executable, "-c", PROLOGUE + body + EPILOGUE, str(db), f"{folder}/site"],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                seconds[name].append(time.perf_counter() - started)
                peak_mb[name].append(int(run.stderr.split()[-1]) / 1024)
        baseline = statistics.median(peak_mb["load all traces (baseline)"])
        print(f"median of {args.repeats} runs, each in a fresh process")
        print(f"{'command':<28} {'seconds':>8} {'peak MB':>8} {'memory vs baseline':>19}")
        for name in COMMANDS:
            memory = statistics.median(peak_mb[name])
            print(
                f"{name:<28} {statistics.median(seconds[name]):>8.2f} {memory:>8.0f} "
                f"{memory / baseline:>18.2f}x"
            )


if __name__ == "__main__":
    main()
