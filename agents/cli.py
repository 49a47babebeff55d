"""`rlvr eval ENV_ID --agent SPEC`: evaluate an agent on an environment."""

from __future__ import annotations

import argparse
import json
from typing import Any


def add_commands(subparsers: Any) -> None:
    evaluate = subparsers.add_parser("eval", help="evaluate an agent on an environment")
    evaluate.add_argument("env_id", help="e.g. rlvr/Math-v0")
    evaluate.add_argument("--agent", default="oracle", help=_agent_help())
    evaluate.add_argument("--episodes", type=int, default=20)
    evaluate.add_argument("--seed", type=int, default=0)
    evaluate.add_argument("--samples", type=int, default=1, help="samples per task (pass@k)")
    evaluate.add_argument("--kwargs", type=json.loads, default={}, help="env kwargs as JSON")
    evaluate.add_argument("--traces", help="write every episode as JSON lines to this file")
    evaluate.add_argument("--no-progress", action="store_true")
    evaluate.set_defaults(func=run_eval)


def _agent_help() -> str:
    from rlvr.agents.registry import AGENT_SPECS

    return "agent spec: " + ", ".join(AGENT_SPECS)


def run_eval(args: argparse.Namespace) -> int:
    import rlvr  # noqa: F401  (registers the environments)
    from rlvr.agents.evaluate import evaluate
    from rlvr.agents.registry import make_policy

    policy = make_policy(args.agent)
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
