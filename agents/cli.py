"""`rlvr eval ENV_ID --agent SPEC` (evaluate an agent), `rlvr train` (GRPO/PPO on envs) and
`rlvr tiny` (build a tiny warm-started model offline).

Each command's flags are generated from its config dataclass (`EvalConfig` below,
`rlvr.agents.train_config.TrainConfig`, `rlvr.agents.tiny.TinyConfig`) by `rlvr.config`, which is
the one place their defaults and help live. Each also starts from a TOML file (`--config
run.toml`, flags win) and prints its resolved config without running (`--print-config`).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlvr.agents.kinds import agent_help
from rlvr.agents.learners.base import LEARNERS
from rlvr.agents.policy import SamplingParams
from rlvr.config import Positive, Seed, add_command, check_numbers, cli

if TYPE_CHECKING:
    from rlvr.agents.held_out import SuiteEvaluator


@dataclass(frozen=True)
class EvalConfig:
    """`rlvr eval`: an agent on an environment."""

    env_id: str = field(metadata=cli(positional=True))
    """Registered env id, e.g. rlvr/Math-v0."""
    agent: str = field(default="oracle", metadata=cli(help=agent_help))
    """The agent, as a spec."""
    episodes: Positive = 20
    """Tasks to play."""
    seed: Seed = 0
    """Seed of the first task (task i uses seed + i)."""
    samples: Positive = 1
    """Samples per task (pass@k; more than 1 needs --temperature > 0)."""
    distinct: bool = False
    """Play `episodes` distinct tasks: skip a seed whose task an earlier episode posed, as
    training's held-out evaluation picks its tasks (it starts at --seed 1000003 on the test
    split: --kwargs '{"split": "test"}')."""
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    """`gym.make` keyword arguments of the env (JSON on the command line)."""
    sampling: SamplingParams = field(default_factory=lambda: SamplingParams(temperature=0.0))
    """How the agent's replies are sampled (`[sampling]` in a file; the flags of `rlvr train`).
    Greedy by default, as training's held-out evaluation; a model agent (hf:, openai:) reads
    it, a scripted one ignores it."""
    batch_size: Positive = 16
    """Episodes per generate call."""
    traces: str | None = None
    """Write every episode as JSON lines to this file."""
    progress: bool = True
    """Show a progress bar."""
    ray: str | None = field(default=None, metadata=cli(const="local", metavar="ADDRESS"))
    """Run the envs on Ray env workers: "local" starts Ray on this machine, else the address of
    a cluster to join ("auto", "ray://HOST:10001"). The records are the same as without Ray."""
    env_workers: Positive = 2
    """Ray env workers (with --ray)."""

    def __post_init__(self) -> None:
        check_numbers(self)
        self.sampling.check_samples(self.samples, "give --temperature > 0, e.g. --temperature 1")


def add_commands(
    subparsers: Any, *, suite_evaluator: Callable[[], SuiteEvaluator] | None = None
) -> None:
    """`rlvr eval`, `rlvr train` and `rlvr tiny`. `suite_evaluator` makes the evaluator that
    `rlvr train --eval-suite` scores the suite with: the leaderboards' (they sit above the agents,
    so `rlvr.cli`, the top layer, passes it); without it, `--eval-suite` is refused in a line."""
    add_command(
        subparsers, "eval", lambda: EvalConfig, run_eval, help="evaluate an agent on an environment"
    )
    train = add_command(
        subparsers,
        "train",
        _train_config_class,
        functools.partial(run_train, suite_evaluator=suite_evaluator),
        config_file=_train_config_file,
        help=f"train a model with a learner ({', '.join(LEARNERS)}) on one or more environments",
        description=f"Train a transformers model with {', '.join(LEARNERS)} (--algo; needs the "
        "agents extra). --lr, --micro-batch and --kl-coef set the field of every learner that has "
        "it: the one --algo picks uses it.",
    )
    train.add_argument(
        "--resume",
        action="store_true",
        help="continue from the latest checkpoint in --out; without --config, start from its "
        "config.toml (only steps, budgets, evaluation/saving periods and display may change)",
    )
    add_command(
        subparsers,
        "tiny",
        _tiny_config_class,
        run_tiny,
        help="build a tiny model offline, warm-started on an env's reference replies",
    )


def _fail(exc: Exception) -> int:
    print(f"error: {exc}", file=sys.stderr)
    return 1


# --- eval -----------------------------------------------------------------------------------------


def run_eval(config: EvalConfig, args: argparse.Namespace) -> int:
    import rlvr  # noqa: F401  (registers the environments)
    from rlvr.agents.errors import AgentError
    from rlvr.agents.kinds import make_policy
    from rlvr.agents.rollouts import EnvSpec, check_env_specs

    try:  # bad input is reported in one line
        check_env_specs(
            [EnvSpec(config.env_id, kwargs=config.kwargs, heldout_kwargs=config.kwargs)]
        )
        policy = make_policy(config.agent)
    except (AgentError, ValueError, OSError) as exc:
        return _fail(exc)
    from rlvr.rollout.hosts import EnvWorkersError

    try:
        report = _evaluate(config, policy)
    except (ImportError, EnvWorkersError) as exc:  # --ray: no ray extra, workers lost
        return _fail(exc)
    if config.traces:
        with open(config.traces, "w", encoding="utf-8") as handle:
            for record in report.episodes:
                handle.write(json.dumps(record.to_dict()) + "\n")
    summary = report.summary()
    print(f"env            {summary['env_id']}")
    print(f"agent          {config.agent}")
    print(f"episodes       {summary['episodes']}  (infra errors: {summary['infra_errors']})")
    print(f"mean reward    {summary['mean_reward']:.4f}")
    print(f"success rate   {summary['success_rate']:.4f}")
    print(f"mean turns     {summary['mean_turns']:.2f}")
    if config.samples > 1:
        print(f"pass@{config.samples}        {report.pass_at_k(config.samples):.4f}")
    return 0


def _evaluate(config: EvalConfig, policy: Any) -> Any:
    from rlvr.rollout.episodes import evaluate
    from rlvr.rollout.tasks import distinct_tasks
    from rlvr.workers import env_workers

    seeds = None
    if config.distinct:
        seeds = distinct_tasks(
            config.env_id, config.episodes, env_kwargs=config.kwargs, seed=config.seed
        )
    with env_workers(config.ray, config.env_workers) as workers:
        return evaluate(
            config.env_id,
            policy,
            episodes=len(seeds) if seeds is not None else config.episodes,
            seed=config.seed,
            seeds=seeds,
            samples_per_task=config.samples,
            batch_size=config.batch_size,
            sampling=config.sampling,
            env_kwargs=config.kwargs,
            progress=config.progress,
            env_host=workers.host if workers is not None else None,
        )


# --- train ----------------------------------------------------------------------------------------


def _train_config_class() -> type:
    from rlvr.agents.errors import require_agents_extra

    require_agents_extra("rlvr train")
    from rlvr.agents.train_config import TrainConfig

    return TrainConfig


def _train_config_file(args: argparse.Namespace) -> str | Path | None:
    """`--config`, or when resuming without one, the run's own OUTDIR/config.toml."""
    from rlvr.config import field_default, flag_values

    if args.config is not None or not args.resume:
        return args.config
    config_class = _train_config_class()
    given = dict(flag_values(config_class, args))
    out = given.get(("output_dir",), field_default(config_class, "output_dir"))
    saved = Path(out) / "config.toml"
    return saved if saved.is_file() else None


def run_train(
    config: Any,
    args: argparse.Namespace,
    *,
    suite_evaluator: Callable[[], SuiteEvaluator] | None = None,
) -> int:
    from rlvr.agents.errors import AgentError, InfraErrorRateError
    from rlvr.agents.train import prepare

    try:  # bad input is reported in one line; a failure during training keeps its traceback
        evaluator = suite_evaluator() if suite_evaluator and config.eval_suite else None
        trainer = prepare(config, resume=args.resume, suite_evaluator=evaluator)
    except (AgentError, ValueError, OSError, ImportError) as exc:
        return _fail(exc)
    try:
        result = trainer.run()
    except InfraErrorRateError as exc:  # our machinery, not a bug: say what to check, in a line
        return _fail(exc)
    print(f"steps          {result.steps}  ({result.train_seconds:.0f} s of training)")
    print(
        f"held-out       {result.initial_success:.3f} -> {result.final_success:.3f}  "
        f"({_held_out_label(config)})"
    )
    print(f"output         {result.output_dir}")
    print(f"final model    {result.final_model}")
    return 0


def _held_out_label(config: Any) -> str:
    """What the held-out figures measured, so that they are not taken for another measurement."""
    if config.eval_suite is not None:
        return (
            f"suite {config.eval_suite}: the score `rlvr bench --suite {config.eval_suite}` gives"
        )
    if config.self_play is not None:
        opponent = config.self_play.eval_opponent
        return f"win rate against {opponent} in {config.eval_episodes} games, greedy"
    return f"greedy, on up to {config.eval_episodes} distinct held-out tasks per env"


# --- tiny -----------------------------------------------------------------------------------------


def _tiny_config_class() -> type:
    from rlvr.agents.tiny import TinyConfig

    return TinyConfig


def run_tiny(config: Any, args: argparse.Namespace) -> int:
    from rlvr.agents.tiny import build_tiny

    folder = build_tiny(
        config.env_id,
        config.output_dir,
        env_kwargs=config.kwargs,
        heldout_kwargs=config.eval_kwargs,
        model=config.model,
        warm=config.warm_start,
        seed=config.seed,
        log=print,
    )
    print(f"wrote {folder}")
    return 0
