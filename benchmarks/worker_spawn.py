"""Worker spawn time: what a fresh process pays to import rlvr's lower layers and start a worker.

Every row is a fresh interpreter, timed from the parent (median of `--repeats`):

- `import rlvr.sandboxes`, `import rlvr.verifiers`: what a process that runs sandboxes or
  verifiers (and no env) pays for rlvr's imports;
- `math worker: first answer`: a math verifier pool starting its worker process
  (`python -m rlvr.verifiers.math.worker`, which imports sympy and math-verify and warms them up)
  until the first check's answer, timed inside a driver process that imported the pool first.
- `python -c pass`: the interpreter alone, for scale.

With `--base DIR` (a checkout of another commit, e.g. `git worktree add /tmp/base main`) each row
is measured for both trees in the same run, interleaved, and the table shows the ratio
(this / base). Each tree runs from a PYTHONPATH overlay that maps its folders to the `rlvr`
import names, so the installed (editable) checkout does not matter.

    .venv/bin/python benchmarks/worker_spawn.py [--repeats 20] [--base /tmp/base]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SUBPACKAGES = ("agents", "envs", "leaderboards", "sandboxes", "verifiers")
FIRST_ANSWER = (
    "import time\n"
    "from rlvr.verifiers.math.pool import WorkerPool\n"
    "started = time.perf_counter()\n"
    "pool = WorkerPool(1)\n"
    "assert pool.check('\\\\frac{1}{2}', ['0.5'], 60.0)[0][0] == 'equal'\n"
    "print(time.perf_counter() - started)\n"
    "pool.close()\n"
)
ROWS = {
    "python -c pass": "pass",
    "import rlvr.sandboxes": "import rlvr.sandboxes",
    "import rlvr.verifiers": "import rlvr.verifiers",
    "math worker: first answer": FIRST_ANSWER,
}


def overlay(checkout: Path, into: Path) -> dict[str, str]:
    """An environment whose PYTHONPATH imports `rlvr` from `checkout`: its rlvr/ folder, with the
    top-level folders linked under it where the checkout does not link them itself (checkouts
    older than the committed links mapped them with pyproject's package-dir)."""
    package = into / "rlvr"
    package.mkdir(parents=True)
    for entry in (checkout / "rlvr").iterdir():
        (package / entry.name).symlink_to(entry)
    for name in SUBPACKAGES:
        if not (package / name).exists():
            (package / name).symlink_to(checkout / name)
    return {**os.environ, "PYTHONPATH": str(into)}


def seconds(code: str, env: dict[str, str], cwd: str) -> float:
    """Wall time of a fresh interpreter running `code` (or the time it prints, if any), in a
    folder with no `rlvr` of its own (`-c` puts the working folder first on sys.path)."""
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True, check=True
    )
    elapsed = time.perf_counter() - started
    return float(result.stdout) if result.stdout.strip() else elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--base", type=Path, help="a checkout of the commit to compare with")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        trees = {"this": overlay(HERE.parent, Path(scratch, "this"))}
        if args.base is not None:
            trees["base"] = overlay(args.base.resolve(), Path(scratch, "base"))
        times: dict[tuple[str, str], list[float]] = {}
        for repeat in range(args.repeats):
            order = list(trees) if repeat % 2 == 0 else list(reversed(trees))
            for row, code in ROWS.items():
                for tree in order:
                    times.setdefault((row, tree), []).append(seconds(code, trees[tree], scratch))
    print(f"load average {os.getloadavg()[0]:.2f}, median of {args.repeats}, milliseconds")
    header = f"{'':28} {'this':>8}"
    if args.base is not None:
        header += f" {'base':>8} {'this/base':>10}"
    print(header)
    for row in ROWS:
        this = statistics.median(times[(row, "this")]) * 1000
        line = f"{row:28} {this:8.1f}"
        if args.base is not None:
            base = statistics.median(times[(row, "base")]) * 1000
            line += f" {base:8.1f} {this / base:10.2f}"
        print(line)


if __name__ == "__main__":
    main()
