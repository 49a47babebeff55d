"""How much each parallel mode of `rlvr bench` helps a scripted agent, and of re-judging.

A scripted agent costs nothing, so the time goes into the verifier: here a sympy check of an
algebraic identity per reply (CPU-bound Python, like the math and SQL verifiers). The same suite
runs serially (the baseline), in threads and in processes, and its result is re-judged
(`reverify`: the stored replies replayed) serially and in processes, interleaved, `--repeats`
times; the table gives median wall seconds, CPU seconds (this process and its workers), episodes
per second and the speed-up over serial. Wall-clock gains need idle cores: the load average is
printed. It uses the public API only, so it can time another checkout (run it with that
checkout's `rlvr` first on PYTHONPATH).

    .venv/bin/python benchmarks/leaderboard_parallel.py [--episodes 200] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import time

# sympy's cache would turn repeated tasks into lookups; a verifier meets new replies every time.
os.environ.setdefault("SYMPY_USE_CACHE", "no")

import sympy

from rlvr.envs import register_task_env
from rlvr.leaderboards import parse_suite, reverify, run_suite
from rlvr.verifiers.types import Task, Verdict

ENV_ID = "bench/Identity-v0"


def _identity_verifier(reply: str, task: Task) -> Verdict:
    x = sympy.Symbol("x")
    difference = sympy.sympify(reply, locals={"x": x}) - sympy.sympify(task.answer, locals={"x": x})
    return (
        Verdict.correct() if sympy.simplify(sympy.expand(difference)) == 0 else Verdict.incorrect()
    )


def _register() -> None:
    tasks = [
        {
            "prompt": f"Expand (x + {a})**{n}.",
            "answer": str(sympy.expand((sympy.Symbol("x") + a) ** n)),
        }
        for a in range(1, 26)
        for n in range(3, 11)
    ]
    register_task_env(ENV_ID, tasks, _identity_verifier, override=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    _register()
    suite = parse_suite(
        f'name = "parallel-bench"\nsplit = false\nepisodes = {args.episodes}\n'
        f'[[envs]]\nid = "{ENV_ID}"\n[[envs]]\nid = "{ENV_ID}"\nlabel = "second"\nseed = 1\n'
    )
    episodes = sum(env.episodes for env in suite.envs)
    modes = (
        ("bench", "serial", 1),
        ("bench", "threads", 2),
        ("bench", "processes", 2),
        ("reverify", "serial", 1),
        ("reverify", "processes", 2),
    )
    seconds: dict[tuple[str, str, int], list[float]] = {mode: [] for mode in modes}
    cpu: dict[tuple[str, str, int], list[float]] = {mode: [] for mode in modes}
    scores = set()
    for _ in range(args.repeats):
        result = None
        for mode in modes:  # interleaved, so load from other work hits every mode alike
            command, parallel, workers = mode
            started, cpu_started = time.perf_counter(), _cpu_seconds()
            if command == "bench":
                done = result = run_suite(suite, "oracle", parallel=parallel, workers=workers)
            else:
                done = reverify(result, parallel=parallel, workers=workers)
            seconds[mode].append(time.perf_counter() - started)
            cpu[mode].append(_cpu_seconds() - cpu_started)
            scores.add(done.score)
    assert scores == {1.0}, f"the oracle must score 1.0, got {scores}"
    print(f"{episodes} episodes (oracle, sympy verifier), median of {args.repeats} runs")
    print(f"load average before the last run: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    print(f"{'mode':<23} {'seconds':>8} {'cpu s':>7} {'episodes/s':>11} {'vs serial':>10}")
    for mode in modes:
        median = statistics.median(seconds[mode])
        baseline = statistics.median(seconds[(mode[0], "serial", 1)])
        name = f"{mode[0]} {mode[1]} x{mode[2]}"
        print(
            f"{name:<23} {median:>8.2f} {statistics.median(cpu[mode]):>7.2f} "
            f"{episodes / median:>11.1f} {baseline / median:>9.2f}x"
        )


def _cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    workers = resource.getrusage(resource.RUSAGE_CHILDREN)  # counted once they have exited
    return own.ru_utime + own.ru_stime + workers.ru_utime + workers.ru_stime


if __name__ == "__main__":
    main()
