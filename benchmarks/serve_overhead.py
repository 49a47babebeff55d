"""What serving an env costs: `env.step` through `rlvr serve` (OpenEnv, loopback) vs in-process.

For each env (rlvr/Math-v0, rlvr/Code-v0), one server is started with `--oracle` and, in the
same run:
- step latency, interleaved: for each seed both envs are reset (untimed) and given the same
  reply (the oracle's, so the verifier does its full work), the in-process step timed, then the
  served one; medians, and the median of the per-seed differences;
- throughput with 64 concurrent sessions: 64 client threads, each with its own `RemoteEnv`
  (its own session), playing oracle episodes for `--seconds`; the in-process baseline is one
  thread playing the same episodes on one env (the 2 cores are shared either way).

The load average is printed at the start and the end (other work on the machine inflates both
sides alike, since the runs are interleaved).

    python benchmarks/serve_overhead.py [--steps 200] [--seconds 20] [--env rlvr/Math-v0 ...]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

import gymnasium as gym

import rlvr  # noqa: F401  (registers the envs)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_server(env_id: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    command = [sys.executable, "-m", "rlvr.cli", "serve", env_id, "--port", str(port)]
    process = subprocess.Popen([*command, "--oracle"], stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/health", timeout=2):
                return process, url
        except OSError:
            time.sleep(0.3)
    process.kill()
    raise SystemExit(f"rlvr serve {env_id} did not start")


def latency(env_id: str, url: str, steps: int) -> dict[str, float]:
    local = gym.make(env_id)
    served = gym.make("remote/OpenEnv-v0", url=url)
    ours, theirs, differences = [], [], []
    try:
        for seed in range(steps + 5):
            local.reset(seed=seed)
            served.reset(seed=seed)
            reply = local.unwrapped.oracle_reply()
            start = time.perf_counter()
            local.step(reply)
            middle = time.perf_counter()
            served.step(reply)
            end = time.perf_counter()
            if seed >= 5:  # warm-up: the pools' first jobs
                ours.append(middle - start)
                theirs.append(end - middle)
                differences.append((end - middle) - (middle - start))
    finally:
        local.close()
        served.close()
    return {
        "in_process_ms": 1000 * statistics.median(ours),
        "served_ms": 1000 * statistics.median(theirs),
        "overhead_ms": 1000 * statistics.median(differences),
    }


def oracle_episode(env: gym.Env, seed: int) -> int:
    env.reset(seed=seed)
    steps = 0
    while True:
        *_, terminated, truncated, _ = env.step(env.unwrapped.oracle_reply())
        steps += 1
        if terminated or truncated:
            return steps


def throughput_in_process(env_id: str, seconds: float) -> float:
    env = gym.make(env_id)
    steps, seed, deadline = 0, 0, time.monotonic() + seconds
    try:
        begun = time.monotonic()
        while time.monotonic() < deadline:
            steps += oracle_episode(env, seed)
            seed += 1
        return steps / (time.monotonic() - begun)
    finally:
        env.close()


def throughput_served(url: str, sessions: int, seconds: float) -> float:
    envs = [gym.make("remote/OpenEnv-v0", url=url) for _ in range(sessions)]
    counts = [0] * sessions
    ready = threading.Barrier(sessions + 1)
    stop = threading.Event()

    def play(k: int) -> None:
        ready.wait()
        seed = 10_000 * k
        while not stop.is_set():
            counts[k] += oracle_episode(envs[k], seed)
            seed += 1

    threads = [threading.Thread(target=play, args=(k,)) for k in range(sessions)]
    for thread in threads:
        thread.start()
    ready.wait()
    begun = time.monotonic()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - begun
    for env in envs:
        env.close()
    return sum(counts) / elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--env", action="append", default=None, help="env ids to measure")
    parser.add_argument("--steps", type=int, default=200, help="timed steps per env")
    parser.add_argument("--seconds", type=float, default=20.0, help="throughput run length")
    parser.add_argument("--sessions", type=int, default=64)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()}; cores: {os.cpu_count()}", flush=True)
    rows = []
    for env_id in args.env or ["rlvr/Math-v0", "rlvr/Code-v0"]:
        process, url = start_server(env_id)
        try:
            row = {"env": env_id, **latency(env_id, url, args.steps)}
            row["overhead_pct"] = 100 * row["overhead_ms"] / row["in_process_ms"]
            row["in_process_steps_per_s"] = throughput_in_process(env_id, args.seconds)
            row["served_steps_per_s"] = throughput_served(url, args.sessions, args.seconds)
            rows.append(row)
            print(json.dumps(row), flush=True)
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=60)
    print(f"load average at end: {os.getloadavg()}")
    print(
        f"\n| env | in-process step (median) | served step (median) | overhead (median of "
        f"paired differences) | steps/s in-process, 1 env | steps/s served, {args.sessions} "
        "sessions |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for row in rows:
        print(
            f"| {row['env']} | {row['in_process_ms']:.2f} ms | {row['served_ms']:.2f} ms | "
            f"{row['overhead_ms']:+.2f} ms ({row['overhead_pct']:+.1f}%) | "
            f"{row['in_process_steps_per_s']:.1f} | {row['served_steps_per_s']:.1f} |"
        )


if __name__ == "__main__":
    main()
