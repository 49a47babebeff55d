"""One learning-suite run in its own process (`learning_suite.py --worker`): build a warm
start, measure its baseline, or train one learner for its budget of CPU seconds with held-out
evaluations on the way, and write the run's result.json with its provenance."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from learning_suite_heldout import heldout_tasks, measure
from learning_suite_learners import ONE_STAGE, STAGE_SEED, Stage, our_settings, trl_settings
from learning_suite_provenance import (
    git_state,
    heldout_fingerprint,
    library_versions,
    run_settings,
    warm_start_fingerprint,
)
from learning_suite_tasks import TASKS, Task
from learning_suite_warm import build_model, model_folder

HERE = Path(__file__).resolve().parent

# --- the runs ------------------------------------------------------------------------------------


def provenance(
    out: Path, name: str, learner: str, seed: int, budget: float, eval_every: float
) -> dict[str, Any]:
    """What a run's figures were made from, recorded in its result.json: the code (commit, and
    whether the tree had uncommitted changes), the warm start's and the held-out set's
    fingerprints, every setting of the task and the learner, the library versions and the seed.
    The report puts in one table only runs that agree on these (`learning_suite_report`)."""
    return {
        **git_state(),
        "title": TASKS[name].title,
        "warm_start": warm_start_fingerprint(model_folder(out, name)),
        "heldout": heldout_fingerprint(heldout_tasks(out, name)),
        "settings": run_settings(name, learner, budget, eval_every),
        "versions": library_versions(),
        "seed": seed,
    }


def run_folder(out: Path, experiment: str, task: str, learner: str, seed: int) -> Path:
    """Where a run of an experiment (`EXPERIMENTS`, or `custom`) keeps its result and model."""
    return out / "runs" / experiment / task / f"{learner}-s{seed}"


def run_worker(args: argparse.Namespace) -> None:
    """One run (or the baseline evaluation) in this process; writes its result.json."""
    import torch

    torch.set_num_threads(1)
    import rlvr  # noqa: F401  (registers the environments)

    out = Path(args.out)
    if args.worker == "build":
        build_model(out, args.task)
        return
    if args.worker == "baseline":
        write_baseline(out, args.task)
        return
    folder = run_folder(out, args.experiment, args.task, args.worker, args.seed)
    folder.mkdir(parents=True, exist_ok=True)
    task = TASKS[args.task]
    args.budget = task.budget if args.budget is None else args.budget
    args.eval_every = task.eval_every if args.eval_every is None else args.eval_every
    baseline = load_baseline(out, args.task)
    # before the run: the code and the warm start it starts from
    origin = provenance(out, args.task, args.worker, args.seed, args.budget, args.eval_every)
    run = run_trl if args.worker.partition("@")[0] == "trl" else run_ours
    result = run(args, task, folder)
    result |= {
        "experiment": args.experiment,
        "task": args.task,
        "learner": args.worker,
        "seed": args.seed,
    }
    result["before"] = baseline["figures"]
    result["curve"].insert(0, {"cpu": 0.0, "wall": 0.0, "step": 0, **baseline["figures"]})
    result["load"] = os.getloadavg()[0]
    result["provenance"] = origin | {"baseline_repeat_identical": baseline["repeat_identical"]}
    (folder / "result.json").write_text(json.dumps(result, indent=1) + "\n")


def write_baseline(out: Path, name: str) -> None:
    """The warm start's held-out figures, measured twice: the two must agree exactly. The record
    names the warm start and the held-out set it was measured on (`load_baseline` checks)."""
    from rlvr.agents.hf import HFPolicy

    task = TASKS[name]
    policy = HFPolicy(model_folder(out, name))
    heldout = heldout_tasks(out, name)
    first = measure(task, policy, heldout, generalisation=True)
    second = measure(task, policy, heldout)
    folder = out / "baseline"
    folder.mkdir(parents=True, exist_ok=True)
    same = first["fingerprint"] == second["fingerprint"]
    record = {
        "figures": first,
        "repeat_identical": same,
        "repeat_accuracy": second["accuracy"],
        "warm_start": warm_start_fingerprint(model_folder(out, name)),
        "heldout": heldout_fingerprint(heldout),
    }
    (folder / f"{name}.json").write_text(json.dumps(record, indent=1) + "\n")
    if not same:
        raise SystemExit(f"{name}: two evaluations of the same weights differ")


def load_baseline(out: Path, name: str) -> dict[str, Any]:
    """The warm start's measured figures, refused when the model or the held-out set changed
    since they were measured (a rebuilt warm start must be measured again)."""
    path = out / "baseline" / f"{name}.json"
    record = json.loads(path.read_text())
    now = {
        "warm_start": warm_start_fingerprint(model_folder(out, name)),
        "heldout": heldout_fingerprint(heldout_tasks(out, name)),
    }
    for key, value in now.items():
        if record.get(key) != value:
            raise SystemExit(
                f"{path} was measured on another {key.replace('_', ' ')} than {name}'s now: "
                f"delete it to measure it again"
            )
    if TASKS[name].sampled_eval is not None and "sampled_accuracy" not in record["figures"]:
        raise SystemExit(
            f"{path} has no sampled accuracy, which {name} measures now (`Task.sampled_eval`): "
            "delete it to measure it again"
        )
    return record


class Budget:
    """Training time of this process: CPU seconds (what the budget counts) and wall seconds."""

    def __init__(self) -> None:
        self.cpu = 0.0
        self.wall = 0.0

    def timed(self, work: Callable[[], Any]) -> Any:
        cpu, wall = time.process_time(), time.perf_counter()
        try:
            return work()
        finally:
            self.cpu += time.process_time() - cpu
            self.wall += time.perf_counter() - wall


def run_ours(args: argparse.Namespace, task: Task, folder: Path) -> dict[str, Any]:
    settings = our_settings(task, args.worker)
    stages = settings.pop("stages", ONE_STAGE)
    heldout = heldout_tasks(Path(args.out), args.task)
    budget, curve = Budget(), []
    next_eval = args.eval_every
    trainer, stage_end = None, 0.0
    for number, stage in enumerate(stages):
        trainer = _stage_trainer(args, task, folder, settings, stage, number, trainer)
        last = number == len(stages) - 1
        stage_end = args.budget if last else stage_end + stage.share * args.budget
        while budget.cpu < stage_end:
            budget.timed(trainer.train_step)
            if budget.cpu >= next_eval and budget.cpu < args.budget:
                curve.append(_point(task, trainer.policy, heldout, budget, trainer.step))
                next_eval += args.eval_every
    assert trainer is not None  # a recipe has at least one stage
    final = measure(task, trainer.policy, heldout, generalisation=True)
    curve.append({"cpu": budget.cpu, "wall": budget.wall, "step": trainer.step, **final})
    trainer.metrics.close()
    trainer.policy.save(folder / "final")
    return {"after": final, "curve": curve, "steps": trainer.step, **_times(budget)}


def _stage_trainer(
    args: argparse.Namespace,
    task: Task,
    folder: Path,
    settings: Mapping[str, Any],
    stage: Stage,
    number: int,
    previous: Any,
) -> Any:
    """The trainer of stage `number` of a run: the task's env and the learner's settings as the
    stage changes them, on the previous stage's policy (the warm start for the first)."""
    import dataclasses

    from rlvr.agents.policy import SamplingParams
    from rlvr.agents.rollouts import EnvSpec
    from rlvr.agents.train import TrainConfig, Trainer

    settings = dict(settings)
    algo = settings["algo"]
    temperature = settings.pop("temperature", 1.0)  # `NAME@temp=`: the rollouts' sampling
    env = EnvSpec(
        task.env_id, kwargs={**task.kwargs, **stage.env}, heldout_kwargs=dict(task.heldout)
    )
    config = TrainConfig(
        envs=[env],
        model=str(model_folder(Path(args.out), args.task)),
        output_dir=str(folder),
        steps=10**9,
        sampling=SamplingParams(temperature=temperature, max_new_tokens=task.max_new_tokens),
        max_turns=task.max_turns,
        seed=args.seed + number * STAGE_SEED,
        eval_episodes=8,
        tensorboard=False,
        plot=False,
        progress=False,
        **{**settings, algo: dataclasses.replace(settings[algo], **stage.learner)},
    )
    if previous is None:
        trainer = Trainer(config)
        trainer.metrics.truncate_after(-1)
        return trainer
    previous.metrics.close()
    previous.close()
    trainer = Trainer(config, policy=previous.policy)
    trainer.step = previous.step  # one metrics file, its steps counting on
    return trainer


def _point(
    task: Task, policy: Any, heldout: Mapping[str, list[int]], budget: Budget, step: int
) -> dict[str, Any]:
    figures = measure(task, policy, heldout)
    return {"cpu": budget.cpu, "wall": budget.wall, "step": step, **figures}


def _times(budget: Budget) -> dict[str, float]:
    return {"cpu_seconds": budget.cpu, "wall_seconds": budget.wall}


def run_trl(args: argparse.Namespace, task: Task, folder: Path) -> dict[str, Any]:
    sys.path.insert(0, str(HERE))
    import trl_baseline
    from transformers import AutoTokenizer

    from rlvr.agents.hf import HFPolicy

    model = model_folder(Path(args.out), args.task)
    tokenizer = AutoTokenizer.from_pretrained(model)  # its own copy: HFPolicy sets padding
    heldout = heldout_tasks(Path(args.out), args.task)
    curve: list[dict[str, Any]] = []
    next_eval = [args.eval_every]
    clock = trl_baseline.StepClock(budget=args.budget, cpu=True)
    budget = Budget()

    def on_row(row: dict[str, Any], trained: Any) -> None:
        budget.cpu, budget.wall = clock.cpu_seconds, clock.train_seconds
        if clock.cpu_seconds >= next_eval[0] and clock.cpu_seconds < args.budget:
            policy = HFPolicy(trained, tokenizer)
            curve.append(_point(task, policy, heldout, budget, row["step"]))
            next_eval[0] += args.eval_every

    clock.on_row = on_row
    settings = trl_settings(args.worker, task)
    prompts, generations = settings["prompts"], settings["group"]
    steps = int(args.budget * 5) + 10  # more than it can do in the budget
    trainer = trl_baseline.make_trainer(
        model_path=str(model),
        env_id=task.env_id,
        env_kwargs=task.kwargs,
        seeds=trl_baseline.task_seeds(args.seed, steps * prompts),
        prompts_per_step=prompts,
        group_size=generations,
        max_new_tokens=task.max_new_tokens,
        lr=settings["lr"],
        steps=steps,
        output_dir=str(folder / "trl"),
        seed=args.seed,
        callbacks=[clock.callback],
        multi_turn=task.max_turns is not None,
        max_turns=task.max_turns,
        micro_batch=settings.get("micro_batch"),
        temperature=settings.get("temperature", 1.0),
    )
    trainer.train()
    budget.cpu, budget.wall = clock.cpu_seconds, clock.train_seconds
    final_policy = HFPolicy(trainer.model, tokenizer)
    final = measure(task, final_policy, heldout, generalisation=True)
    final_policy.save(folder / "final")  # as our learners' runs keep theirs
    step = trainer.state.global_step
    curve.append({"cpu": budget.cpu, "wall": budget.wall, "step": step, **final})
    (folder / "rewards.json").write_text(json.dumps(clock.rewards))
    return {"after": final, "curve": curve, "steps": step, **_times(budget)}
