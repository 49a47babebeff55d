"""What checking a proposal costs in rlvr/CodeProposerSolver, and what the code verifier's
runs cost, against another checkout (`--base`, e.g. main).

For each tree (this one, and `--base DIR` if given: a checkout made with `git worktree add` or
`git archive`), a fresh interpreter imports `rlvr` from that tree (PYTHONPATH overlays, see
`worker_spawn.overlay`), starts a private local sandbox pool and measures:

- `proposal step`: the median wall time of the proposer's step (reading the proposal, running
  the reference, and in this tree the reproducibility and vacuity checks) over the honest
  proposals of `tests/envs/multiagent/honest_code_proposals.py`, all posed, and its CPU time
  (the sandbox pool's processes and ours: what the machine pays, however loaded it is);
- `verify/s`: Code-v0's verifier judging the honest references against their tests, with as
  many in flight as the pool has workers (the hot path every code reply takes).

Trees alternate round by round; the table shows medians over rounds and the ratios. The machine
may be shared: compare the two trees of one run, not runs of different times.

    .venv/bin/python benchmarks/code_proposer_check.py --rounds 3 --base /tmp/base
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from worker_spawn import overlay

HERE = Path(__file__).resolve().parent
HONEST = HERE.parent / "tests" / "envs" / "multiagent" / "honest_code_proposals.py"

DRIVER = """
import json, os, resource, statistics, sys, time
from concurrent.futures import ThreadPoolExecutor
from rlvr.envs.multiagent import make, registry
from rlvr.sandboxes import get_executor
from rlvr.verifiers.code.verifier import UnitTestConfig, UnitTestVerifier

def cpu_seconds(executor):  # the pool's processes (sandbox_throughput.pool_cpu_seconds) and ours
    ticks, total = os.sysconf("SC_CLK_TCK"), 0.0
    for worker in list(executor._pool._workers):
        root = worker.transport.process.pid
        with open(f"/proc/{root}/task/{root}/children") as handle:
            pids = [root, *map(int, handle.read().split())]
        for pid in pids:
            with open(f"/proc/{pid}/stat") as handle:
                total += sum(map(int, handle.read().rpartition(")")[2].split()[11:15])) / ticks
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return total + usage.ru_utime + usage.ru_stime

proposals, workers = json.loads(sys.stdin.read()), int(sys.argv[1])
with get_executor("local", workers=workers, shared=False) as executor:
    executor.warm_up()
    env_id = next(name for name in registry if name.startswith("rlvr/CodeProposerSolver-"))
    env = make(env_id, executor=executor, timeout=20.0, test_timeout=5.0)
    steps, cpus, tasks = [], [], []
    for proposal in proposals:
        env.reset(seed=0)
        started, cpu = time.perf_counter(), cpu_seconds(executor)
        env.step(proposal)
        steps.append(time.perf_counter() - started)
        cpus.append(cpu_seconds(executor) - cpu)
        assert env.task is not None, env.infos["proposer_0"]
        tasks.append(env.task)
    verifier = UnitTestVerifier(UnitTestConfig(), executor=executor)
    jobs = [(f"```python\\n{task.answer['reference']}\\n```", task) for task in tasks] * 4
    started = time.perf_counter()
    with ThreadPoolExecutor(workers) as threads:
        verdicts = list(threads.map(lambda job: verifier.verify(*job), jobs))
    elapsed = time.perf_counter() - started
    assert all(verdict.is_correct for verdict in verdicts)
print(json.dumps({
    "step": statistics.median(steps), "cpu": statistics.median(cpus), "verify": len(jobs) / elapsed
}))
"""


def proposals() -> list[str]:
    honest = runpy.run_path(str(HONEST))["HONEST"]
    return [
        f"<spec>{spec}</spec>\n<reference>\n{reference}</reference>\n<tests>\n{tests}\n</tests>"
        for spec, reference, tests in honest
    ]


def measure(env: dict[str, str], cwd: str, workers: int, replies: list[str]) -> dict[str, float]:
    result = subprocess.run(
        [sys.executable, "-c", DRIVER, str(workers)],
        input=json.dumps(replies),
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise SystemExit(result.stderr[-3000:])
    return json.loads(result.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--base", type=Path, help="a checkout of the commit to compare with")
    args = parser.parse_args()
    replies = proposals()
    results: dict[str, list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        trees = {"this": overlay(HERE.parent, Path(scratch, "this"))}
        if args.base is not None:
            trees["base"] = overlay(args.base.resolve(), Path(scratch, "base"))
        for round_ in range(args.rounds):
            order = list(trees) if round_ % 2 == 0 else list(reversed(trees))
            for tree in order:
                results.setdefault(tree, []).append(
                    measure(trees[tree], scratch, args.workers, replies)
                )
    print(
        f"{len(replies)} honest proposals, {args.workers} sandbox workers, load average "
        f"{os.getloadavg()[0]:.1f}, medians of {args.rounds} rounds"
    )
    keys = {"step": "proposal step (s)", "cpu": "its CPU (s)", "verify": "verify/s"}
    print(f"{'':12}" + "".join(f"{label:>19}" for label in keys.values()))
    medians = {
        tree: {key: statistics.median(run[key] for run in runs) for key in keys}
        for tree, runs in results.items()
    }
    for tree, median in medians.items():
        print(f"{tree:12}" + "".join(f"{median[key]:19.3f}" for key in keys))
    if "base" in medians:
        ratios = [medians["this"][key] / medians["base"][key] for key in keys]
        print(f"{'this / base':12}" + "".join(f"{ratio:19.2f}" for ratio in ratios))


if __name__ == "__main__":
    main()
