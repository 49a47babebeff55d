"""`rlvr eval ENV_ID --agent SPEC` (evaluate an agent), `rlvr train` (GRPO/PPO on envs) and
`rlvr tiny` (build a tiny warm-started model offline)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def add_commands(subparsers: Any) -> None:
    evaluate = subparsers.add_parser("eval", help="evaluate an agent on an environment")
    evaluate.add_argument("env_id", help="e.g. rlvr/Math-v0")
    evaluate.add_argument("--agent", default="oracle", help=_agent_help())
    evaluate.add_argument("--episodes", type=int, default=20)
    evaluate.add_argument("--seed", type=int, default=0)
    evaluate.add_argument("--samples", type=int, default=1, help="samples per task (pass@k)")
    evaluate.add_argument("--kwargs", type=_json_object, default={}, help="env kwargs as JSON")
    evaluate.add_argument("--traces", help="write every episode as JSON lines to this file")
    evaluate.add_argument("--no-progress", action="store_true")
    evaluate.set_defaults(func=run_eval)
    _add_train(subparsers)
    _add_tiny(subparsers)


def _agent_help() -> str:
    from rlvr.agents.registry import AGENT_SPECS

    return "agent spec: " + ", ".join(AGENT_SPECS)


def run_eval(args: argparse.Namespace) -> int:
    import rlvr  # noqa: F401  (registers the environments)
    from rlvr.agents.errors import AgentError
    from rlvr.agents.evaluate import evaluate
    from rlvr.agents.registry import make_policy
    from rlvr.agents.rollouts import EnvSpec, check_env_specs

    try:  # bad input is reported in one line
        check_env_specs([EnvSpec(args.env_id, kwargs=args.kwargs, heldout_kwargs=args.kwargs)])
        policy = make_policy(args.agent)
    except (AgentError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    report = evaluate(
        args.env_id,
        policy,
        episodes=args.episodes,
        seed=args.seed,
        samples_per_task=args.samples,
        env_kwargs=args.kwargs,
        progress=not args.no_progress,
    )
    if args.traces:
        with open(args.traces, "w", encoding="utf-8") as handle:
            for record in report.episodes:
                handle.write(json.dumps(record.to_dict()) + "\n")
    summary = report.summary()
    print(f"env            {summary['env_id']}")
    print(f"agent          {args.agent}")
    print(f"episodes       {summary['episodes']}  (infra errors: {summary['infra_errors']})")
    print(f"mean reward    {summary['mean_reward']:.4f}")
    print(f"success rate   {summary['success_rate']:.4f}")
    print(f"mean turns     {summary['mean_turns']:.2f}")
    if args.samples > 1:
        print(f"pass@{args.samples}        {report.pass_at_k(args.samples):.4f}")
    return 0


def _add_train(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "train",
        help="train a model with GRPO or PPO on one or more environments",
        description="Train a transformers model with GRPO or PPO (needs the agents extra).",
    )
    add = parser.add_argument
    add("--env", action="append", required=True, metavar="ID[=WEIGHT]", help="repeat to mix envs")
    add("--kwargs", type=_json_object, default={}, help="env kwargs as JSON (every env)")
    add("--heldout-kwargs", type=_json_object, default=None, help="held-out env kwargs as JSON")
    add("--model", required=True, help="model folder or hub id")
    add("--chat-template", type=Path, help="Jinja chat template file, for a model without one")
    add("--algo", choices=("grpo", "ppo"), default="grpo")
    add("--out", default="runs/train", help="output folder")
    add("--steps", type=int, default=100)
    add("--prompts", type=int, default=8, help="tasks per step")
    add("--group-size", type=int, default=8, help="episodes per task")
    add("--max-new-tokens", type=int, default=64)
    add("--max-turns", type=int, default=None)
    add("--temperature", type=float, default=1.0)
    add("--lr", type=float, default=1e-6)
    add("--loss-type", choices=("grpo", "dapo", "dr_grpo"), default="dapo")
    add("--clip-low", type=float, default=0.2)
    add("--clip-high", type=float, default=0.2)
    add("--beta", type=float, default=0.0, help="GRPO KL weight")
    add("--mu", type=int, default=1, help="GRPO passes per batch")
    add("--mask-truncated", action="store_true")
    add("--micro-batch", type=int, default=None)
    add("--value-model", choices=("head", "critic"), default="head")
    add("--kl-coef", type=float, default=0.0, help="PPO per-token KL penalty")
    add("--epochs", type=int, default=2, help="PPO passes per batch")
    add("--eval-every", type=int, default=10)
    add("--eval-episodes", type=int, default=100)
    add("--save-every", type=int, default=0)
    add("--time-budget", type=float, default=None, help="seconds of training")
    add(
        "--max-infra-error-rate",
        type=float,
        default=0.2,
        help="stop when more than this share of an env's episodes over the window hit an "
        "infrastructure error (1 never stops)",
    )
    add("--infra-error-window", type=int, default=10, help="steps the infra-error rate spans")
    add("--seed", type=int, default=0)
    add("--threads", type=int, default=None, help="torch threads")
    add("--device", default="cpu")
    add("--dtype", default=None, choices=("float32", "bfloat16", "float16"))
    add("--lora-r", type=int, default=None, help="train LoRA adapters of this rank")
    add(
        "--lora-targets",
        type=_names,
        default=None,
        help="comma-separated layers for LoRA (default q_proj,k_proj,v_proj,o_proj; GPT-2: c_attn)",
    )
    add("--resume", action="store_true", help="continue from the latest checkpoint in --out")
    add("--no-tensorboard", action="store_true")
    add("--no-progress", action="store_true")
    parser.set_defaults(func=run_train)


def _names(text: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in text.split(",") if name.strip())


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(
            f"not valid JSON ({exc}): {text!r}; write an object, e.g. '{{\"difficulty\": 1}}'"
        ) from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(
            f"must be a JSON object of keyword arguments, e.g. '{{\"difficulty\": 1}}', "
            f"got {text!r}"
        )
    return value


def run_train(args: argparse.Namespace) -> int:
    from rlvr.agents.errors import AgentError, InfraErrorRateError
    from rlvr.agents.train import prepare

    try:  # bad input is reported in one line; a failure during training keeps its traceback
        trainer = prepare(_train_config(args), resume=args.resume)
    except (AgentError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    try:
        result = trainer.run()
    except InfraErrorRateError as exc:  # our machinery, not a bug: say what to check, in a line
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"steps          {result.steps}  ({result.train_seconds:.0f} s of training)")
    print(f"held-out       {result.initial_success:.3f} -> {result.final_success:.3f}")
    print(f"output         {result.output_dir}")
    print(f"final model    {result.final_model}")
    return 0


def _lora(args: argparse.Namespace) -> Any:
    from rlvr.agents.hf import LoraSettings

    if args.lora_targets is not None and not args.lora_r:
        raise ValueError("--lora-targets needs --lora-r (the adapters' rank), e.g. --lora-r 8")
    if not args.lora_r:
        return None
    targets = {"target_modules": args.lora_targets} if args.lora_targets is not None else {}
    return LoraSettings(r=args.lora_r, alpha=2 * args.lora_r, **targets)


def _train_config(args: argparse.Namespace) -> Any:
    import rlvr  # noqa: F401  (registers the environments)
    from rlvr.agents.learners.grpo import GRPOConfig
    from rlvr.agents.learners.ppo import PPOConfig
    from rlvr.agents.rollouts import EnvSpec
    from rlvr.agents.train import TrainConfig

    envs = []
    for text in args.env:
        spec = EnvSpec.parse(text, args.kwargs)
        if args.heldout_kwargs is not None:
            spec = EnvSpec(spec.id, spec.weight, spec.kwargs, args.heldout_kwargs)
        envs.append(spec)
    return TrainConfig(
        envs=envs,
        model=args.model,
        algo=args.algo,
        output_dir=args.out,
        steps=args.steps,
        prompts_per_step=args.prompts,
        group_size=args.group_size,
        max_new_tokens=args.max_new_tokens,
        max_turns=args.max_turns,
        temperature=args.temperature,
        eval_every=args.eval_every,
        eval_episodes=args.eval_episodes,
        save_every=args.save_every,
        time_budget=args.time_budget,
        max_infra_error_rate=args.max_infra_error_rate,
        infra_error_window=args.infra_error_window,
        seed=args.seed,
        device=args.device,
        dtype=args.dtype,
        lora=_lora(args),
        chat_template=args.chat_template.read_text(encoding="utf-8")
        if args.chat_template
        else None,
        threads=args.threads,
        tensorboard=not args.no_tensorboard,
        progress=not args.no_progress,
        grpo=GRPOConfig(
            lr=args.lr,
            loss_type=args.loss_type,
            clip_low=args.clip_low,
            clip_high=args.clip_high,
            beta=args.beta,
            mu=args.mu,
            mask_truncated=args.mask_truncated,
            micro_batch_size=args.micro_batch,
        ),
        ppo=PPOConfig(
            lr=args.lr,
            value_model=args.value_model,
            kl_coef=args.kl_coef,
            epochs=args.epochs,
            micro_batch_size=args.micro_batch,
        ),
    )


def _add_tiny(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "tiny", help="build a tiny model offline, warm-started on an env's reference replies"
    )
    parser.add_argument("--env", required=True, help="env id whose tasks the model learns")
    parser.add_argument("--kwargs", type=_json_object, default={}, help="env kwargs as JSON")
    parser.add_argument("--heldout-kwargs", type=_json_object, default=None)
    parser.add_argument("--out", required=True, help="folder to write the model to")
    parser.add_argument("--steps", type=int, default=1500, help="most warm-start steps")
    parser.add_argument("--target-accuracy", type=float, default=None)
    parser.add_argument("--no-warm-start", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.set_defaults(func=run_tiny)


def run_tiny(args: argparse.Namespace) -> int:
    import rlvr  # noqa: F401  (registers the environments)
    from rlvr.agents.tiny import WarmStartConfig, build_tiny

    warm = None
    if not args.no_warm_start:
        warm = WarmStartConfig(steps=args.steps, target_accuracy=args.target_accuracy)
    heldout = args.heldout_kwargs
    if heldout is None:
        heldout = {**args.kwargs, "split": "test"}
    folder = build_tiny(
        args.env,
        args.out,
        env_kwargs=args.kwargs,
        heldout_kwargs=heldout,
        warm=warm,
        seed=args.seed,
        log=print,
    )
    print(f"wrote {folder}")
    return 0
