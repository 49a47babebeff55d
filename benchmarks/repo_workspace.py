"""rlvr/Repo-v0's workspaces: creation and teardown, a command's round trip, and a soak.

    python benchmarks/repo_workspace.py [--rounds 5] [--no-docker] [--baseline REF]
    python benchmarks/repo_workspace.py --soak 500

The repository is a generated level-3 task (about 20 files). Measured in one run, interleaved
round by round (the machine may be shared: medians over rounds of medians within a round):

- `workspace create + teardown`: a fresh copy-on-write workspace of the task's files, dropped;
  beside it the baseline of copying the files into a fresh temporary directory and removing it;
- `episode reset`: `env.reset()` of a pinned task (the task is generated once, then cached);
- `command round trip (local pool)`: the `run` tool with a trivial command (`true`) through
  `env.step`: the workspace written into a fresh sandbox run, the command run, the changes
  walked and brought back; beside it the same with the whole library of git ref `--baseline`
  (default `main`; its files from `git archive`, in a child process with its own pool, measured
  in turn with the rounds here), and a plain `subprocess.run(["bash", "-c", "true"])` in a
  directory holding the files (no isolation, no materialising: the floor);
- Docker, per episode: the episode's first command in the warm pool against a fresh
  `docker run` of a container with the repository bind-mounted (the cheapest fresh container
  per episode), and their ratio.

`--soak N` plays N scripted episodes (the oracle: run the tests, read, patch, run the tests,
submit) and samples this process's memory (RSS) and open descriptors, the processes of the
sandbox user and of this process's tree, and the disk used under /tmp and /dev/shm, every N/10
episodes: the report gives first, last and largest (`--backend docker` soaks the Docker warm
pool). Generated tasks are cached (256 per process), so memory grows until the cache is full.

Targets: workspace create + teardown <= 20 ms, command round trip <= 10 ms (medians, local
backend), Docker warm pool >= 10x a fresh `docker run` per episode, flat soak curves.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import gymnasium as gym
from sandbox_throughput import host_cpu_seconds, pool_cpu_seconds  # benchmarks/, beside us

import rlvr  # noqa: F401
from rlvr.envs.repo.task import RepoTask
from rlvr.envs.repo.workspace import Workspace
from rlvr.envs.tools.parsing import format_tool_call
from rlvr.sandboxes import Limits, get_executor

SANDBOX_UID = 61000
PINNED = {"task_index": 0}


def median_ms(action: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def copy_to_tempdir(files: dict[str, bytes]) -> str:
    root = tempfile.mkdtemp(prefix="rlvr-bench-repo-")
    for path, data in files.items():
        target = Path(root, path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return root


# The child process that measures the baseline's round trip: one median of 25 commands for
# each line it reads. It uses only what this benchmark uses of the library.
BASELINE_CHILD = """
import statistics, sys, time
import gymnasium as gym
import rlvr
from rlvr.envs.tools.parsing import format_tool_call
env = gym.make("rlvr/Repo-v0", difficulty=3)
step = format_tool_call("run", command="true")
env.reset(seed=0, options={"task_index": 0})
env.unwrapped.judge.repo_verifier.executor().warm_up()
print(rlvr.__file__, flush=True)
for line in sys.stdin:
    env.reset(seed=0, options={"task_index": 0})
    times = []
    for _ in range(25):
        started = time.perf_counter()
        _, _, _, _, info = env.step(step)
        times.append(time.perf_counter() - started)
        assert "[exit code 0]" in info["messages"][-1]["content"]
    print(statistics.median(times) * 1000, flush=True)
env.close()
"""


class Baseline:
    """The library of git ref `ref`, in a child process: `round_trip()` asks it for a median."""

    def __init__(self, ref: str, directory: str) -> None:
        checkout = Path(__file__).resolve().parent.parent
        archive = subprocess.run(
            ["git", "archive", ref], cwd=checkout, capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", directory], input=archive, check=True)
        self.child = subprocess.Popen(
            [sys.executable, "-c", BASELINE_CHILD],
            cwd=directory,
            env={**os.environ, "PYTHONPATH": directory},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.child.stdout is not None and self.child.stdin is not None
        where = self.child.stdout.readline().strip()
        if not where.startswith(directory):
            raise RuntimeError(f"the baseline imported rlvr from {where!r}, not {directory}")

    def round_trip(self) -> float:
        assert self.child.stdin is not None and self.child.stdout is not None
        self.child.stdin.write("round\n")
        self.child.stdin.flush()
        return float(self.child.stdout.readline())

    def close(self) -> None:
        if self.child.stdin is not None:
            self.child.stdin.close()
        self.child.wait(timeout=60)


@contextlib.contextmanager
def baseline(ref: str) -> Iterator[Baseline | None]:
    if not ref:
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="rlvr-bench-baseline-") as directory:
        try:
            child = Baseline(ref, directory)
        except (OSError, subprocess.CalledProcessError, RuntimeError, ValueError) as exc:
            print(f"no baseline of {ref!r}: {exc}")
            yield None
            return
        try:
            yield child
        finally:
            child.close()


def measure(args: argparse.Namespace) -> None:
    with baseline(args.baseline) as old:
        measure_with(args, old)


def measure_with(args: argparse.Namespace, old: Baseline | None) -> None:
    env = gym.make("rlvr/Repo-v0", difficulty=3)
    env.reset(seed=0, options=PINNED)  # generates and caches the task
    base = env.unwrapped
    files = dict(RepoTask.from_task(base.task).files)
    print(f"repository: {len(files)} files, {sum(map(len, files.values()))} bytes")
    step = format_tool_call("run", command="true")
    local = base.judge.repo_verifier.executor()
    local.warm_up()
    scratch = copy_to_tempdir(files)

    def create_and_drop() -> None:
        Workspace(files)

    def tempdir_copy() -> None:
        shutil.rmtree(copy_to_tempdir(files))

    def reset() -> None:
        env.reset(seed=0, options=PINNED)

    def command(on: gym.Env = env) -> None:
        _, _, terminated, _, info = on.step(step)
        assert not terminated and "[exit code 0]" in info["messages"][-1]["content"]

    def plain_command() -> None:
        subprocess.run(["bash", "-c", "true"], cwd=scratch, check=True)

    def command_cpu() -> float:
        """CPU ms per command of the pool's processes and ours together: what a command costs
        on idle cores, whatever else the machine runs."""
        reset()
        before = pool_cpu_seconds(local) + host_cpu_seconds()
        for _ in range(25):
            command()
        return (pool_cpu_seconds(local) + host_cpu_seconds() - before) / 25 * 1000

    modes: dict[str, Callable[[], float]] = {
        "workspace create + teardown": lambda: median_ms(create_and_drop, 200),
        "  baseline: copy to a tempdir + rm": lambda: median_ms(tempdir_copy, 50),
        "episode reset (pinned task)": lambda: median_ms(reset, 50),
        "command round trip (local pool)": lambda: (reset(), median_ms(command, 25))[1],
        "  its CPU time (pool + this process)": command_cpu,
        "  baseline: subprocess bash, no isolation": lambda: median_ms(plain_command, 25),
    }
    old_name = f"  same, the library of {args.baseline}"
    if old is not None:
        modes[old_name] = old.round_trip
    docker = client = None
    if not args.no_docker:
        from rlvr.sandboxes.image import DEFAULT_IMAGE, docker_client

        client = docker_client()
        docker = get_executor("docker", shared=False)
        docker.warm_up()
        workspace = Workspace(files)
        request = workspace.request(["bash", "-c", "true"], Limits(wall_time=10, output=8 << 20))

        def warm_episode() -> None:
            result = docker.run(request)
            assert result.ok, result.describe()

        def fresh_episode() -> None:
            root = copy_to_tempdir(files)
            try:
                client.containers.run(
                    DEFAULT_IMAGE,
                    ["bash", "-c", "true"],
                    remove=True,
                    network_mode="none",
                    cap_drop=["ALL"],
                    working_dir="/work",
                    volumes={"/usr": {"bind": "/usr", "mode": "ro"}, root: {"bind": "/work"}},
                )
            finally:
                shutil.rmtree(root)

        modes["docker: episode's first command, warm pool"] = lambda: median_ms(warm_episode, 25)
        modes["docker: fresh docker run per episode"] = lambda: median_ms(fresh_episode, 5)

    results: dict[str, list[float]] = {name: [] for name in modes}
    try:
        for number in range(args.rounds):
            for name, run in modes.items():
                results[name].append(run())
            print(f"round {number + 1}/{args.rounds} done", flush=True)
    finally:
        env.close()
        shutil.rmtree(scratch)
        if docker is not None:
            docker.close()
        if client is not None:
            client.close()
    print(
        f"\nmedians over {args.rounds} rounds (load average {os.getloadavg()[0]:.1f}, "
        f"{len(os.sched_getaffinity(0))} cores)"
    )
    print(f"{'':<46}{'median ms':>11}{'min':>9}{'max':>9}")
    medians = {}
    for name, values in results.items():
        medians[name] = statistics.median(values)
        print(f"{name:<46}{medians[name]:>11.3f}{min(values):>9.3f}{max(values):>9.3f}")
    print(
        f"\nworkspace create + teardown: {medians['workspace create + teardown']:.3f} ms "
        "(target <= 20 ms)"
    )
    round_trip = medians["command round trip (local pool)"]
    print(f"command round trip: {round_trip:.1f} ms (target <= 10 ms)")
    if old is not None:
        before = medians[old_name]
        print(
            f"  with the library of {args.baseline}: {before:.1f} ms, "
            f"{before / round_trip:.2f}x this one's time"
        )
    if docker is not None:
        ratio = (
            medians["docker: fresh docker run per episode"]
            / medians["docker: episode's first command, warm pool"]
        )
        print(f"docker warm pool vs fresh docker run per episode: {ratio:.1f}x (target >= 10x)")


# --- soak ------------------------------------------------------------------------------------


def sample() -> dict[str, float]:
    with open("/proc/self/status") as status:
        rss = next(int(line.split()[1]) for line in status if line.startswith("VmRSS")) / 1024
    return {
        "rss MiB": rss,
        "open fds": len(os.listdir("/proc/self/fd")),
        "sandbox-user processes": _processes(lambda stat: stat.st_uid == SANDBOX_UID),
        "our process tree": len(_descendants(os.getpid())),
        "disk used /tmp+/dev/shm MiB": sum(
            shutil.disk_usage(path).used for path in ("/tmp", "/dev/shm")
        )
        / 2**20,
        "rlvr entries in /tmp": len([n for n in os.listdir("/tmp") if n.startswith("rlvr")]),
    }


def _processes(keep: Callable[[os.stat_result], bool]) -> int:
    count = 0
    for name in os.listdir("/proc"):
        if name.isdigit():
            with contextlib.suppress(FileNotFoundError):
                count += keep(os.stat(f"/proc/{name}"))
    return count


def _descendants(pid: int) -> list[int]:
    found, pending = [], [pid]
    while pending:
        current = pending.pop()
        try:
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as handle:
                    children = [int(child) for child in handle.read().split()]
                found += children
                pending += children
        except (FileNotFoundError, ProcessLookupError):
            continue
    return found


def soak(episodes: int, backend: str) -> None:
    env = gym.make("rlvr/Repo-v0", difficulty=[1, 2], backend=backend)
    every = max(episodes // 10, 1)
    samples = []
    started = time.perf_counter()
    solved = 0
    try:
        for episode in range(episodes):
            env.reset(seed=episode)
            done = False
            while not done:
                _, reward, terminated, truncated, info = env.step(env.unwrapped.oracle_reply())
                done = terminated or truncated
            solved += reward == 1.0 and not info["infra_error"]
            if episode == 0 or (episode + 1) % every == 0:
                samples.append((episode + 1, sample()))
                print(f"episode {episode + 1}: {samples[-1][1]}", flush=True)
    finally:
        env.close()
    elapsed = time.perf_counter() - started
    print(
        f"\n{episodes} episodes in {elapsed:.0f} s, {solved} solved by the oracle "
        f"(load average {os.getloadavg()[0]:.1f})"
    )
    print(f"{'':<30}{'first':>10}{'last':>10}{'largest':>10}")
    for key in samples[0][1]:
        values = [values[key] for _, values in samples]
        print(f"{key:<30}{values[0]:>10.1f}{values[-1]:>10.1f}{max(values):>10.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-docker", action="store_true")
    parser.add_argument(
        "--baseline",
        default="main",
        help="git ref whose library runs the side-by-side command round trip ('' for none)",
    )
    parser.add_argument("--soak", type=int, default=0, help="play this many episodes instead")
    parser.add_argument("--backend", default="local", help="the soak's sandbox backend")
    args = parser.parse_args()
    if args.soak:
        soak(args.soak, args.backend)
    else:
        measure(args)


if __name__ == "__main__":
    main()
