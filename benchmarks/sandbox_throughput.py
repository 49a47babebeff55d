"""Isolated executions per second of a small test program, for each way of running it.

    python benchmarks/sandbox_throughput.py [--rounds 5] [--workers N] [--no-docker]

Modes, measured in the same run and interleaved round by round (the machine may be shared, so
the table reports medians over rounds):

- `subprocess`: plain `subprocess.run([python3, "-c", program])`, no isolation (the baseline);
- `local pool`: `rlvr.sandboxes` local backend, program sent as code to the warm workers;
- `local pool (exec)`: the same pool, but running `python3 -c program` as a command;
- `docker warm pool`: the docker backend, warm containers with a worker inside;
- `docker run`: a fresh container per execution (`containers.run(..., remove=True)`).

Every mode keeps `--workers` executions in flight (default: one per core). Targets on a 2-core
machine: local pool >= 200 executions/s, docker warm pool >= 20x `docker run`.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import resource
import statistics
import subprocess
import time
from collections.abc import Callable

from rlvr.sandboxes import ExecRequest, Limits, get_executor
from rlvr.sandboxes.image import DEFAULT_IMAGE, build_image, docker_client

PYTHON = "/usr/bin/python3"
PROGRAM = """\
def add(a, b):
    return a + b

assert add(2, 3) == 5
assert add(-1, 1) == 0
assert add(10**20, 1) == 10**20 + 1
print("ok")
"""
EXPECTED = "ok\n"


def throughput(run_one: Callable[[], str], count: int, workers: int) -> float:
    """Executions per second with `workers` in flight; every output must be right."""
    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        outputs = list(pool.map(lambda _: run_one(), range(count)))
    elapsed = time.perf_counter() - started
    wrong = [out for out in outputs if out != EXPECTED]
    if wrong:
        raise RuntimeError(f"{len(wrong)} wrong outputs, e.g. {wrong[0]!r}")
    return count / elapsed


def submit_all(executor, request: ExecRequest, count: int) -> float:
    """The pool's own queue keeps every worker busy: submit everything, then wait."""
    started = time.perf_counter()
    jobs = [executor.submit(request) for _ in range(count)]
    results = [job.future.result() for job in jobs]
    elapsed = time.perf_counter() - started
    wrong = [r for r in results if r.stdout_text != EXPECTED]
    if wrong:
        raise RuntimeError(f"{len(wrong)} failed runs, e.g. {wrong[0].describe()}")
    return count / elapsed


def pool_cpu_seconds(executor) -> float:
    """CPU seconds used so far by the pool's worker processes (bubblewrap, zygote, and every
    reaped run). Reads private attributes: a measurement aid, not an API."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for worker in list(executor._pool._workers):
        root = worker.transport.process.pid
        with open(f"/proc/{root}/task/{root}/children") as handle:
            pids = [root, *map(int, handle.read().split())]
        for pid in pids:
            with open(f"/proc/{pid}/stat") as handle:
                fields = handle.read().rpartition(")")[2].split()
            total += sum(int(value) for value in fields[11:15]) / ticks  # utime..cstime
    return total


def host_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--no-docker", action="store_true")
    args = parser.parse_args()
    workers = args.workers
    limits = Limits(wall_time=10)

    def plain() -> str:
        return subprocess.run([PYTHON, "-c", PROGRAM], capture_output=True, text=True).stdout

    modes: dict[str, Callable[[], float]] = {
        "subprocess": lambda: throughput(plain, 60, workers),
    }
    local = get_executor("local", workers=workers, shared=False)
    local.warm_up()
    inline = ExecRequest(code=PROGRAM, limits=limits)
    command = ExecRequest(command=[PYTHON, "-c", PROGRAM], limits=limits)
    cpu_per_run: list[float] = []

    def local_pool() -> float:
        before = pool_cpu_seconds(local) + host_cpu_seconds()
        rate = submit_all(local, inline, 600)
        cpu_per_run.append((pool_cpu_seconds(local) + host_cpu_seconds() - before) / 600)
        return rate

    modes["local pool"] = local_pool
    modes["local pool (exec)"] = lambda: submit_all(local, command, 100)
    docker = client = None
    if not args.no_docker:
        client = docker_client()
        if not any(DEFAULT_IMAGE in image.tags for image in client.images.list()):
            build_image("host", log=lambda _: None)
        docker = get_executor("docker", workers=workers, shared=False)
        docker.warm_up()
        modes["docker warm pool"] = lambda: submit_all(docker, inline, 200)

        def fresh() -> str:
            output = client.containers.run(
                DEFAULT_IMAGE,
                [PYTHON, "-c", PROGRAM],
                remove=True,
                network_mode="none",
                user="61000:61000",
                read_only=True,
                cap_drop=["ALL"],
                volumes={"/usr": {"bind": "/usr", "mode": "ro"}},
            )
            return output.decode()

        modes["docker run"] = lambda: throughput(fresh, 4 * workers, workers)

    rates: dict[str, list[float]] = {name: [] for name in modes}
    try:
        for round_number in range(args.rounds):
            for name, measure in modes.items():
                rates[name].append(measure())
            print(
                f"round {round_number + 1}/{args.rounds}: "
                + ", ".join(f"{name} {values[-1]:.1f}/s" for name, values in rates.items()),
                flush=True,
            )
    finally:
        local.close()
        if docker is not None:
            docker.close()
        if client is not None:
            client.close()

    median = {name: statistics.median(values) for name, values in rates.items()}
    base = median["subprocess"]
    print(
        f"\n{workers} executions in flight, medians over {args.rounds} rounds "
        f"(load average {os.getloadavg()[0]:.1f})"
    )
    print(f"{'mode':<20}{'exec/s':>10}{'min':>9}{'max':>9}{'x subprocess':>14}")
    for name, values in rates.items():
        print(
            f"{name:<20}{median[name]:>10.1f}{min(values):>9.1f}{max(values):>9.1f}"
            f"{median[name] / base:>14.2f}"
        )
    print(f"\nlocal pool: {median['local pool']:.0f} exec/s (target >= 200)")
    cpu = statistics.median(cpu_per_run)
    print(
        f"local pool CPU per execution (workers + this process): {cpu * 1000:.2f} ms, so at most "
        f"{workers / cpu:.0f} exec/s on {workers} idle cores"
    )
    if "docker run" in median:
        ratio = median["docker warm pool"] / median["docker run"]
        print(f"docker warm pool / docker run: {ratio:.1f}x (target >= 20x)")


if __name__ == "__main__":
    main()
