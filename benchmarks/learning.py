"""Does RL raise held-out accuracy? Our GRPO and PPO against TRL's GRPOTrainer, on this CPU.

1. A tiny Qwen2 model is built offline (`rlvr.agents.tiny`) and warm-started on the env's
   reference replies until its greedy held-out accuracy reaches `--warm-target` (once; reused).
2. From that checkpoint, each run trains for the same budget of training seconds (rollouts and
   updates; evaluation excluded), one torch thread, in its own process: our GRPO, our PPO, and
   TRL's GRPOTrainer on the same prompts (the same task seeds in the same order), the same
   reward (the env), batch geometry, completion length and learning rate as our GRPO.
3. Every `--eval-interval` training seconds and at the end, greedy accuracy on the same
   `--eval-episodes` held-out tasks (`split="test"`), the same way for every run.

Prints held-out accuracy before/after, gain, steps and time per run, and draws every run's
curves on one plot (`learning.png`); `results.json` keeps the figures.

    .venv/bin/python benchmarks/learning.py [--budget 600] [--runs grpo,ppo,trl]

Needs the `bench` extra for TRL: pip install -e '.[agents,bench]' -c .ci/constraints.txt
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_ENV = "rlvr/Math-v0"
DEFAULT_KWARGS = {"families": ["arithmetic"], "difficulty": 1}
EVAL_SEED = 1_000_003


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", choices=("grpo", "ppo", "trl"), help=argparse.SUPPRESS)
    parser.add_argument("--env", default=DEFAULT_ENV)
    parser.add_argument("--kwargs", type=json.loads, default=DEFAULT_KWARGS)
    parser.add_argument("--setup", help="MODULE:FUNCTION to call first (registers custom envs)")
    parser.add_argument("--model", default="runs/bench/tiny", help="built here if missing")
    parser.add_argument("--warm-target", type=float, default=0.37)
    parser.add_argument("--out", default="runs/bench/learning")
    parser.add_argument("--runs", default="grpo,ppo,trl")
    parser.add_argument("--budget", type=float, default=600.0, help="training seconds per run")
    parser.add_argument("--eval-interval", type=float, default=60.0, help="training seconds")
    parser.add_argument("--eval-episodes", type=int, default=400)
    parser.add_argument("--prompts", type=int, default=16, help="GRPO prompts per step")
    parser.add_argument("--generations", type=int, default=8, help="GRPO completions per prompt")
    parser.add_argument("--ppo-prompts", type=int, default=32)
    parser.add_argument("--ppo-samples", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--lr", type=float, default=2e-4, help="GRPO (ours and TRL)")
    parser.add_argument("--ppo-lr", type=float, default=2e-4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--report-only", action="store_true", help="redo the table and plot")
    args = parser.parse_args()
    if args.report_only:
        saved = json.loads((Path(args.out) / "results.json").read_text())
        report(args, saved["results"])
        return
    if args.worker:
        print(json.dumps(run_worker(args)))
        return
    run_setup(args.setup)
    build_model(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = {}
    for name in args.runs.split(","):
        load_before = os.getloadavg()[0]
        results[name] = spawn(name, args)
        results[name]["load_before"] = load_before
        results[name]["load_after"] = os.getloadavg()[0]
        summary = results[name]
        print(
            f"{name:4s}: {summary['before']:.3f} -> {summary['after']:.3f} held-out "
            f"({summary['steps']} steps, {summary['train_seconds']:.0f} s)",
            flush=True,
        )
    report(args, results)


def run_setup(setup: str | None) -> None:
    import importlib

    import rlvr  # noqa: F401  (registers the environments)

    if setup:
        sys.path.insert(0, os.getcwd())
        module, _, function = setup.partition(":")
        getattr(importlib.import_module(module), function)()


def heldout_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    return {**args.kwargs, "split": "test"}


def build_model(args: argparse.Namespace) -> None:
    """The warm-started tiny model, built once into `args.model`."""
    if Path(args.model, "config.json").exists():
        return
    import torch

    from rlvr.agents.tiny import WarmStartConfig, build_tiny

    torch.set_num_threads(1)
    run_setup(getattr(args, "setup", None))
    started = time.perf_counter()
    build_tiny(
        args.env,
        args.model,
        env_kwargs=args.kwargs,
        heldout_kwargs=heldout_kwargs(args),
        warm=WarmStartConfig(
            target_accuracy=getattr(args, "warm_target", 0.37), eval_episodes=200, eval_every=25
        ),
        seed=0,
        log=print,
    )
    print(f"built {args.model} in {time.perf_counter() - started:.0f} s")


def spawn(name: str, args: argparse.Namespace) -> dict:
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", name]
    for key, value in vars(args).items():
        if key in ("worker", "report_only") or value is None:
            continue
        command += [
            f"--{key.replace('_', '-')}",
            json.dumps(value) if key == "kwargs" else str(value),
        ]
    done = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- workers -------------------------------------------------------------------------------------


def run_worker(args: argparse.Namespace) -> dict:
    import torch

    torch.set_num_threads(1)
    run_setup(args.setup)
    folder = Path(args.out) / args.worker
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "metrics.jsonl").unlink(missing_ok=True)
    cpu_started = time.process_time()
    summary = run_trl(args, folder) if args.worker == "trl" else run_ours(args, folder)
    summary["cpu_seconds"] = time.process_time() - cpu_started
    return summary


def heldout_success(args: argparse.Namespace, policy: Any) -> float:
    from rlvr.agents.policy import SamplingParams
    from rlvr.rollout.episodes import evaluate

    report = evaluate(
        args.env,
        policy,
        episodes=args.eval_episodes,
        seed=EVAL_SEED,
        batch_size=args.eval_episodes,
        sampling=SamplingParams(temperature=0.0, max_new_tokens=args.max_new_tokens),
        env_kwargs=heldout_kwargs(args),
    )
    return report.success_rate


def run_ours(args: argparse.Namespace, folder: Path) -> dict:
    from rlvr.agents.learners.grpo import GRPOConfig
    from rlvr.agents.learners.ppo import PPOConfig
    from rlvr.agents.policy import SamplingParams
    from rlvr.agents.rollouts import EnvSpec
    from rlvr.agents.train import TrainConfig, Trainer

    grpo = args.worker == "grpo"
    config = TrainConfig(
        envs=[EnvSpec(args.env, kwargs=args.kwargs)],
        model=args.model,
        algo=args.worker,
        output_dir=str(folder),
        steps=1_000_000,
        prompts_per_step=args.prompts if grpo else args.ppo_prompts,
        group_size=args.generations if grpo else args.ppo_samples,
        sampling=SamplingParams(max_new_tokens=args.max_new_tokens),
        eval_episodes=args.eval_episodes,
        seed=args.seed,
        tensorboard=False,
        plot=False,
        progress=False,
        grpo=GRPOConfig(lr=args.lr),
        ppo=PPOConfig(lr=args.ppo_lr),
    )
    trainer = Trainer(config)
    before = trainer.evaluate()["eval/success_rate"]
    next_eval = args.eval_interval
    while trainer.train_seconds < args.budget:
        trainer.train_step()
        if trainer.train_seconds >= next_eval and trainer.train_seconds < args.budget:
            trainer.evaluate()
            next_eval += args.eval_interval
    after = trainer.evaluate()["eval/success_rate"]
    trainer.metrics.close()
    return {
        "before": before,
        "after": after,
        "steps": trainer.step,
        "train_seconds": trainer.train_seconds,
    }


def run_trl(args: argparse.Namespace, folder: Path) -> dict:
    sys.path.insert(0, str(HERE))
    import trl_baseline
    from transformers import AutoTokenizer

    from rlvr.agents.hf import HFPolicy
    from rlvr.agents.metrics import MetricsLog

    log = MetricsLog(folder / "metrics.jsonl")
    tokenizer = AutoTokenizer.from_pretrained(args.model)  # its own copy: HFPolicy sets padding
    evaluations: list[float] = []
    next_eval = [args.eval_interval]

    def evaluate_now(model: Any) -> dict[str, float]:
        success = heldout_success(args, HFPolicy(model, tokenizer))
        evaluations.append(success)
        return {"eval/success_rate": success}

    def on_row(row: dict[str, Any], model: Any) -> None:
        seconds = row["time/train_seconds"]
        if seconds >= next_eval[0] and seconds < args.budget:
            row.update(evaluate_now(model))
            next_eval[0] += args.eval_interval
        log.log(row["step"], {k: v for k, v in row.items() if k != "step"})

    clock = trl_baseline.StepClock(budget=args.budget, on_row=on_row)
    steps = int(args.budget * 20) + 10  # more than it can do in the budget
    trainer = trl_baseline.make_trainer(
        model_path=args.model,
        env_id=args.env,
        env_kwargs=args.kwargs,
        seeds=trl_baseline.task_seeds(args.seed, steps * args.prompts),
        prompts_per_step=args.prompts,
        group_size=args.generations,
        max_new_tokens=args.max_new_tokens,
        lr=args.lr,
        steps=steps,
        output_dir=str(folder / "trl"),
        seed=args.seed,
        callbacks=[clock.callback],
    )
    before = evaluate_now(trainer.model)["eval/success_rate"]
    log.log(0, {"eval/success_rate": before, "time/train_seconds": 0.0})
    trainer.train()
    after = evaluate_now(trainer.model)["eval/success_rate"]
    step = trainer.state.global_step
    log.log(step, {"eval/success_rate": after, "time/train_seconds": clock.train_seconds})
    log.close()
    return {
        "before": before,
        "after": after,
        "steps": step,
        "train_seconds": clock.train_seconds,
    }


# --- report --------------------------------------------------------------------------------------


def report(args: argparse.Namespace, results: dict[str, dict]) -> None:
    from rlvr.agents.metrics import plot_learning_curves

    out = Path(args.out)
    print()
    print(
        f"{args.env} {json.dumps(args.kwargs)}: held-out greedy accuracy on {args.eval_episodes} "
        f"test tasks, {args.budget:.0f} s of training per run, 1 torch thread"
    )
    header = f"{'run':6s} {'before':>7s} {'after':>7s} {'gain':>7s} {'steps':>6s} {'s/step':>7s}"
    print(header + f" {'train s':>8s} {'CPU s':>7s} {'load':>10s}")
    labels = {"grpo": "rlvr GRPO", "ppo": "rlvr PPO", "trl": "TRL GRPOTrainer"}
    for name, r in results.items():
        gain = r["after"] - r["before"]
        r["gain"] = gain
        print(
            f"{name:6s} {r['before']:7.3f} {r['after']:7.3f} {gain:+7.3f} {r['steps']:6d} "
            f"{r['train_seconds'] / max(r['steps'], 1):7.3f} {r['train_seconds']:8.0f} "
            f"{r['cpu_seconds']:7.0f} {r['load_before']:4.1f}-{r['load_after']:<4.1f}"
        )
    print(f"\nheld-out accuracy by training time (every {args.eval_interval:.0f} s)")
    curves = {name: held_out_curve(out / name / "metrics.jsonl") for name in results}
    for name, curve in curves.items():
        points = "  ".join(f"{seconds:4.0f}s {success:.3f}" for seconds, success in curve)
        print(f"{name:6s} {points}")
    for threshold in (0.8, 0.9):
        reached = {name: first_time(curve, threshold) for name, curve in curves.items()}
        shown = ", ".join(f"{name} {_seconds(t)}" for name, t in reached.items())
        print(f"first evaluation at >= {threshold:.0%}: {shown}")
        for name, seconds in reached.items():
            results[name][f"seconds_to_{int(threshold * 100)}"] = seconds
    if "grpo" in results and "trl" in results:
        ours, theirs = results["grpo"]["gain"], results["trl"]["gain"]
        print(f"\nGRPO gain: ours {ours:+.3f} vs TRL {theirs:+.3f} in the same training time")
    plot = plot_learning_curves(
        {labels[name]: out / name / "metrics.jsonl" for name in results},
        out / "learning.png",
        title=f"{args.env} {json.dumps(args.kwargs)}, tiny Qwen2, CPU, 1 thread",
    )
    (out / "results.json").write_text(
        json.dumps({"settings": vars(args), "results": results}, indent=2) + "\n"
    )
    print(f"plot: {plot}\nfigures: {out / 'results.json'}")


def held_out_curve(path: Path) -> list[tuple[float, float]]:
    from rlvr.agents.metrics import read_metrics, series

    return list(zip(*series(read_metrics(path), "eval/success_rate", "time/train_seconds")))


def _seconds(value: float | None) -> str:
    return "never" if value is None else f"{value:.0f} s"


def first_time(curve: list[tuple[float, float]], threshold: float) -> float | None:
    return next((seconds for seconds, success in curve if success >= threshold), None)


if __name__ == "__main__":
    main()
