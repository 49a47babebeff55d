"""Speed of our GRPO against TRL's GRPOTrainer at equal settings, on this CPU.

Both train the same tiny model folder on the same prompts (the same task seeds, in order), with
the same reward (the env), batch geometry (prompts x generations), completion length, learning
rate, loss ("dapo", no KL, one pass per batch) and steps, with one torch thread. Each run is a
fresh worker process (so peak memory is its own); runs alternate ours/TRL, `--rounds` times, and
the table reports medians of seconds per step (the first `--warmup` steps of a run excluded),
generated tokens per second, and peak resident memory. The load average is printed: other
processes on the machine slow both sides alike only when runs are interleaved.

    .venv/bin/python benchmarks/grpo_vs_trl.py [--model runs/bench/tiny] [--rounds 3]

Needs the `bench` extra (TRL): pip install -e '.[agents,bench]' -c .ci/constraints.txt
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_ENV = "rlvr/Math-v0"
DEFAULT_KWARGS = {"families": ["arithmetic"], "difficulty": 1}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", choices=("ours", "trl"), help=argparse.SUPPRESS)
    parser.add_argument("--model", default="runs/bench/tiny", help="tiny model folder")
    parser.add_argument("--env", default=DEFAULT_ENV)
    parser.add_argument("--kwargs", type=json.loads, default=DEFAULT_KWARGS)
    parser.add_argument("--prompts", type=int, default=16, help="prompts per step")
    parser.add_argument("--generations", type=int, default=8, help="completions per prompt")
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--steps", type=int, default=12, help="steps per run")
    parser.add_argument("--warmup", type=int, default=2, help="first steps of a run not timed")
    parser.add_argument("--rounds", type=int, default=3, help="ours/TRL run pairs")
    parser.add_argument("--lr", type=float, default=2e-4)
    parser.add_argument("--json", help="write the results here too")
    parser.add_argument("--setup", help="MODULE:FUNCTION to call first (registers custom envs)")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(run_worker(args)))
        return
    ensure_model(args)
    results: dict[str, list[dict]] = {"ours": [], "trl": []}
    loads = [os.getloadavg()[0]]
    for round_ in range(args.rounds):
        order = ("ours", "trl") if round_ % 2 == 0 else ("trl", "ours")
        for worker in order:
            results[worker].append(spawn(worker, args))
            loads.append(os.getloadavg()[0])
            last = results[worker][-1]
            print(
                f"round {round_ + 1} {worker:4s}: {last['seconds_per_step']:.3f} s/step, "
                f"{last['tokens_per_second']:.0f} tok/s, peak RSS {last['peak_rss_mb']:.0f} MB",
                flush=True,
            )
    report(args, results, loads)


def run_setup(setup: str | None) -> None:
    import importlib

    import rlvr  # noqa: F401  (registers the environments)

    if setup:
        sys.path.insert(0, os.getcwd())
        module, _, function = setup.partition(":")
        getattr(importlib.import_module(module), function)()


def ensure_model(args: argparse.Namespace) -> None:
    if Path(args.model, "config.json").exists():
        return
    sys.path.insert(0, str(HERE))
    from learning import build_model

    build_model(args)


def spawn(worker: str, args: argparse.Namespace) -> dict:
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", worker]
    for name in ("model", "env", "prompts", "generations", "max_new_tokens", "steps", "warmup"):
        command += [f"--{name.replace('_', '-')}", str(getattr(args, name))]
    command += ["--kwargs", json.dumps(args.kwargs), "--lr", str(args.lr)]
    if args.setup:
        command += ["--setup", args.setup]
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_worker(args: argparse.Namespace) -> dict:
    import torch

    torch.set_num_threads(1)
    run_setup(args.setup)

    if args.worker == "ours":
        step_seconds, tokens = run_ours(args)
    else:
        step_seconds, tokens = run_trl(args)
    timed = step_seconds[args.warmup :]
    timed_tokens = tokens[args.warmup :]
    return {
        "seconds_per_step": statistics.median(timed),
        "tokens_per_second": sum(timed_tokens) / sum(timed),
        "mean_completion_tokens": sum(timed_tokens)
        / len(timed_tokens)
        / args.prompts
        / args.generations,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "cpu_seconds": time.process_time(),
    }


def run_ours(args: argparse.Namespace) -> tuple[list[float], list[float]]:
    from rlvr.agents.learners.grpo import GRPOConfig
    from rlvr.agents.policy import SamplingParams
    from rlvr.agents.rollouts import EnvSpec
    from rlvr.agents.train import TrainConfig, Trainer

    config = TrainConfig(
        envs=[EnvSpec(args.env, kwargs=args.kwargs)],
        model=args.model,
        output_dir=f"runs/bench/speed-ours-{os.getpid()}",
        steps=args.steps,
        prompts_per_step=args.prompts,
        group_size=args.generations,
        sampling=SamplingParams(max_new_tokens=args.max_new_tokens),
        tensorboard=False,
        plot=False,
        progress=False,
        grpo=GRPOConfig(lr=args.lr, loss_type="dapo"),
    )
    trainer = Trainer(config)
    seconds, tokens = [], []
    for _ in range(args.steps):
        metrics = trainer.train_step()
        seconds.append(metrics["time/step_seconds"])
        tokens.append(metrics["rollout/completion_tokens"] * metrics["rollout/episodes"])
    return seconds, tokens


def run_trl(args: argparse.Namespace) -> tuple[list[float], list[float]]:
    sys.path.insert(0, str(HERE))
    import trl_baseline

    clock = trl_baseline.StepClock(budget=None)
    trainer = trl_baseline.make_trainer(
        model_path=args.model,
        env_id=args.env,
        env_kwargs=args.kwargs,
        seeds=trl_baseline.task_seeds(0, args.steps * args.prompts),
        prompts_per_step=args.prompts,
        group_size=args.generations,
        max_new_tokens=args.max_new_tokens,
        lr=args.lr,
        steps=args.steps,
        output_dir=f"runs/bench/speed-trl-{os.getpid()}",
        callbacks=[clock.callback],
    )
    trainer.train()
    tokens = [length * args.prompts * args.generations for length in clock.lengths]
    return clock.step_seconds, tokens


def report(args: argparse.Namespace, results: dict[str, list[dict]], loads: list[float]) -> None:
    def median(worker: str, key: str) -> float:
        return statistics.median(run[key] for run in results[worker])

    rows = [
        ("seconds per step", "seconds_per_step", "lower is better"),
        ("generated tokens/s", "tokens_per_second", "higher is better"),
        ("mean completion tokens", "mean_completion_tokens", ""),
        ("peak RSS (MB)", "peak_rss_mb", "lower is better"),
    ]
    print()
    print(
        f"GRPO step, {args.prompts} prompts x {args.generations} generations, "
        f"<= {args.max_new_tokens} new tokens, {args.steps} steps/run ({args.warmup} warm-up), "
        f"{args.rounds} interleaved rounds, 1 torch thread, env {args.env}"
    )
    print(f"load average during the runs: min {min(loads):.2f}, max {max(loads):.2f}")
    print(f"{'metric':26s} {'ours':>10s} {'TRL':>10s} {'ours/TRL':>10s}")
    summary = {}
    for label, key, note in rows:
        ours, theirs = median("ours", key), median("trl", key)
        summary[key] = {"ours": ours, "trl": theirs, "ratio": ours / theirs}
        print(f"{label:26s} {ours:10.3f} {theirs:10.3f} {ours / theirs:10.3f}  {note}")
    speedup = summary["seconds_per_step"]["trl"] / summary["seconds_per_step"]["ours"]
    print(f"\nour step takes {1 / speedup:.2f}x TRL's time ({speedup:.2f}x faster)")
    if args.json:
        Path(args.json).write_text(
            json.dumps({"settings": vars(args), "runs": results, "summary": summary}, indent=2)
        )


if __name__ == "__main__":
    main()
