"""What Ray env workers cost and gain: env throughput and GRPO step time, side by side.

1. Episodes/s on rlvr/Code-v0 (the local sandbox runs each reply's tests) and rlvr/WebShop-v0
   (multi-turn, a browser session per episode on a generated site): the oracle's episodes are
   recorded once in-process, then replayed (the same replies, so only the envs work) with the
   envs in this process (the baseline), and on Ray with 1 and 2 env workers. Envs are made once
   per mode and kept, as the training collector keeps them. The records must match the
   baseline's exactly.
2. GRPO seconds per step on rlvr/Code-v0 with a tiny model warm-started on the env's reference
   replies (so its replies run as code): synchronous vs asynchronous rollouts (step k+1's
   episodes played while step k learns), in-process and with 2 Ray env workers.

Ratios are against the in-process baseline measured in the same run. Targets (issue 14, this
2-core machine): Ray overhead <= 10% at one worker (episodes/s ratio >= 0.91), async GRPO step
<= 0.75x sync on Code-v0.

    .venv/bin/python benchmarks/ray_scaling.py [--episodes 64] [--steps 6] [--repeats 3]
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import ray

import rlvr  # noqa: F401  (registers the envs)
from rlvr.agents.scripted import OraclePolicy
from rlvr.distributed import OBJECT_STORE_BYTES, EnvWorkers
from rlvr.leaderboards.runner import ReplayActor
from rlvr.rollout.episodes import evaluate, run_episodes
from rlvr.rollout.hosts import LocalEnvs
from rlvr.rollout.records import Start
from rlvr.rollout.reports import EvalReport

ENVS = ("rlvr/Code-v0", "rlvr/WebShop-v0")
BATCH = 16
SEED = 9000


# --- 1. env throughput ----------------------------------------------------------------------------


def _kept_local_host(env_id: str) -> Callable[..., LocalEnvs]:
    envs = [gym.make(env_id) for _ in range(BATCH)]
    return lambda _id, _kwargs, size: LocalEnvs(envs[:size])


def _replay(env_id: str, reference: EvalReport, host: Any) -> tuple[float, EvalReport]:
    starts = [Start(r.episode, r.sample, r.seed) for r in reference.episodes]
    actor = ReplayActor(env_id, reference.episodes)
    started = time.perf_counter()
    report = run_episodes(env_id, starts, lambda _: actor, batch_size=BATCH, env_host=host)
    return time.perf_counter() - started, report


def env_throughput(env_id: str, episodes: int, repeats: int) -> dict[str, float]:
    """Episodes/s of each mode (median of `repeats`, after one warm-up run each)."""
    reference = evaluate(env_id, OraclePolicy(), episodes=episodes, seed=SEED, batch_size=BATCH)
    rates: dict[str, float] = {}
    hosts: dict[str, Callable[[], tuple[Any, Callable[[], None]]]] = {
        "in-process": lambda: (_kept_local_host(env_id), lambda: None),
        "ray, 1 worker": lambda: _ray_host(1),
        "ray, 2 workers": lambda: _ray_host(2),
    }
    for mode, make in hosts.items():
        host, close = make()
        try:
            _replay(env_id, reference, host)  # warm-up: envs made, pools and servers up
            seconds = []
            for _ in range(repeats):
                elapsed, report = _replay(env_id, reference, host)
                if report.episodes != reference.episodes:
                    raise SystemExit(f"{env_id} {mode}: records differ from the in-process run")
                seconds.append(elapsed)
        finally:
            close()
        rates[mode] = episodes / statistics.median(seconds)
    return rates


def _ray_host(count: int) -> tuple[Any, Callable[[], None]]:
    workers = EnvWorkers(count)
    return workers.host, workers.close


# --- 2. GRPO step time ----------------------------------------------------------------------------


def tiny_code_model(folder: Path) -> Path:
    from rlvr.agents.tiny import TinyModelConfig, WarmStartConfig, build_tiny

    shape = TinyModelConfig(hidden_size=64, intermediate_size=128, layers=2, corpus_episodes=200)
    warm = WarmStartConfig(steps=60, batch_size=16, pool_size=400)
    return build_tiny("rlvr/Code-v0", folder, model=shape, warm=warm)


def grpo_seconds_per_step(
    model: Path, out: Path, steps: int, **settings: Any
) -> tuple[float, float]:
    """Median wall seconds per step and of its rollout part (waiting for the batch, when
    asynchronous), the first step (warm-up, no overlap yet) left out."""
    from rlvr.agents.learners.grpo import GRPOConfig
    from rlvr.agents.policy import SamplingParams
    from rlvr.agents.rollouts import EnvSpec
    from rlvr.agents.train import TrainConfig, Trainer

    config = TrainConfig(
        envs=[EnvSpec("rlvr/Code-v0")],
        model=str(model),
        output_dir=str(out),
        steps=steps,
        prompts_per_step=4,
        group_size=4,
        sampling=SamplingParams(max_new_tokens=48),
        eval_every=0,
        eval_episodes=1,
        tensorboard=False,
        plot=False,
        progress=False,
        threads=1,
        grpo=GRPOConfig(lr=1e-4),
        **settings,
    )
    trainer = Trainer(config)
    seconds, rollouts = [], []
    try:
        for _ in range(steps):
            started = time.perf_counter()
            metrics = trainer.train_step()
            seconds.append(time.perf_counter() - started)
            rollouts.append(metrics["time/rollout_seconds"])
    finally:
        trainer.close()
    return statistics.median(seconds[1:]), statistics.median(rollouts[1:])


# --- the table ------------------------------------------------------------------------------------


def _row(label: str, values: Sequence[str]) -> str:
    return f"{label:<34}" + "".join(f"{value:>16}" for value in values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-envs", action="store_true", help="only the GRPO step times")
    parser.add_argument("--skip-grpo", action="store_true", help="only the env throughput")
    args = parser.parse_args()
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        object_store_memory=OBJECT_STORE_BYTES,
        logging_level=logging.WARNING,
    )
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    modes = ("in-process", "ray, 1 worker", "ray, 2 workers")
    if not args.skip_envs:
        print(f"\nepisodes/s (oracle replies replayed, batch {BATCH}, {args.episodes} episodes)")
        print(_row("env", [*modes, "1w / in-proc", "2w / in-proc"]))
    for env_id in () if args.skip_envs else ENVS:
        rates = env_throughput(env_id, args.episodes, args.repeats)
        base = rates["in-process"]
        cells = [f"{rates[m]:.1f}" for m in modes]
        cells += [f"{rates[m] / base:.2f}x" for m in modes[1:]]
        print(_row(env_id, cells), flush=True)
    if not args.skip_grpo:
        with tempfile.TemporaryDirectory() as tmp:
            model = tiny_code_model(Path(tmp) / "model")
            print(f"\nGRPO s/step on rlvr/Code-v0 (4 prompts x 4, median of {args.steps - 1})")
            print("(ideal: the longer of a sync step's rollout and update, over the sync step)")
            header = ["sync", "of it rollout", "async", "async / sync", "ideal"]
            print(_row("where the envs run", header))
            for label, place in (("in-process", {}), ("ray, 2 workers", {"ray": "local"})):
                sync, rollout = grpo_seconds_per_step(model, Path(tmp) / "s", args.steps, **place)
                lagged, _ = grpo_seconds_per_step(
                    model, Path(tmp) / "a", args.steps, async_rollouts=True, **place
                )
                ideal = max(rollout, sync - rollout) / sync
                cells = [f"{sync:.2f}", f"{rollout:.2f}", f"{lagged:.2f}"]
                print(_row(label, [*cells, f"{lagged / sync:.2f}x", f"{ideal:.2f}x"]))
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")
    ray.shutdown()


if __name__ == "__main__":
    main()
