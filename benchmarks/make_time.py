"""What `gym.make` (and `rlvr.envs.multiagent.make`) costs for every built-in env.

For each env, one fresh interpreter times its first make (module imports, generated sites and
task sets, the once-per-process checks of services) and then the median of `--repeats` more
makes (each env closed after it is made), the case of a test suite or a vector env making many.

With `--base DIR` (a checkout of another commit, e.g. `git worktree add /tmp/base main`) both
trees are measured in the same run, interleaved, from PYTHONPATH overlays (see
`worker_spawn.overlay`), and the table shows the ratios (this / base).

    .venv/bin/python benchmarks/make_time.py [--repeats 20] [--base /tmp/base] [--only Math]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from worker_spawn import overlay

from rlvr.builtin_envs import multiagent_env_ids, rlvr_env_ids

HERE = Path(__file__).resolve().parent

DRIVER = """
import json, statistics, sys, time, warnings
warnings.simplefilter("ignore")
import gymnasium as gym, rlvr
env_id, repeats = sys.argv[1], int(sys.argv[2])
if env_id in rlvr.builtin_envs.multiagent_env_ids():
    from rlvr.envs.multiagent import make
elif env_id in gym.registry:
    make = gym.make
else:  # an id this tree does not have (a new env, measured against an older base)
    print(json.dumps(None))
    sys.exit()
times = []
for _ in range(repeats + 1):
    started = time.perf_counter()
    env = make(env_id)
    times.append(time.perf_counter() - started)
    env.close()
print(json.dumps({"first": times[0], "warm": statistics.median(times[1:])}))
"""


def measure(env_id: str, repeats: int, env: dict[str, str], cwd: str) -> dict[str, float] | None:
    """First and warm make times of `env_id` in the tree `env` points at (None: no such id)."""
    result = subprocess.run(
        [sys.executable, "-c", DRIVER, env_id, str(repeats)],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--base", type=Path, help="a checkout of the commit to compare with")
    parser.add_argument("--only", default="", help="only ids containing this text")
    args = parser.parse_args()
    ids = [i for i in [*rlvr_env_ids(), *multiagent_env_ids()] if args.only in i]
    with tempfile.TemporaryDirectory() as scratch:
        trees = {"this": overlay(HERE.parent, Path(scratch, "this"))}
        if args.base is not None:
            trees["base"] = overlay(args.base.resolve(), Path(scratch, "base"))
        header = f"{'env':<28} {'first ms':>9} {'warm ms':>8}"
        if args.base is not None:
            header += f" {'base first':>10} {'base warm':>9} {'first x':>7} {'warm x':>6}"
        print(header)
        for env_id in ids:
            got = {tree: measure(env_id, args.repeats, env, scratch) for tree, env in trees.items()}
            this = got["this"]
            assert this is not None  # the ids are this tree's own
            line = f"{env_id:<28} {this['first'] * 1e3:9.1f} {this['warm'] * 1e3:8.2f}"
            if args.base is not None and got["base"] is None:
                line += f" {'(new id: not in base)':>45}"
            elif args.base is not None:
                base = got["base"]
                line += (
                    f" {base['first'] * 1e3:10.1f} {base['warm'] * 1e3:9.2f}"
                    f" {this['first'] / base['first']:7.2f} {this['warm'] / base['warm']:6.2f}"
                )
            print(line, flush=True)
    print(f"medians of {args.repeats} warm makes; load average {_load():.1f}")


def _load() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


if __name__ == "__main__":
    main()
