"""Training on a leaderboard suite: the `SuiteEvaluator` (rlvr.agents.held_out) the trainer is
given when `TrainConfig.eval_suite` names a suite, so that each held-out figure is the score
`rlvr bench --suite` stores for the model at that step.

    from rlvr.agents.train import TrainConfig, train
    from rlvr.leaderboards.training import BenchSuiteEvaluator
    train(TrainConfig(..., eval_suite="demo"), suite_evaluator=BenchSuiteEvaluator())

The leaderboards sit above the agents: the trainer takes this evaluator rather than importing
the leaderboards, and `rlvr train` passes it (wired in by `rlvr.cli`). It fits the protocol by
its shape; it imports nothing of the agents' but the protocol layer, as every leaderboard module.
"""

from __future__ import annotations

import math

from rlvr.core.policy import Policy
from rlvr.leaderboards.results import BenchResult
from rlvr.leaderboards.runner import run_suite
from rlvr.leaderboards.suites import Suite, load_suite
from rlvr.rollout.hosts import EnvHost


class BenchSuiteEvaluator:
    """Loads a suite as `rlvr bench --suite` does and scores a policy on it as `rlvr bench` runs
    it (serially: the trainer's policy is one model in this process)."""

    def load(self, name: str) -> Suite:
        """The built-in suite `name` or the suite file at that path; its `SuiteError` (a
        ValueError) names the problem."""
        return load_suite(name)

    def figures(
        self, suite: Suite, policy: Policy, env_host: EnvHost | None = None
    ) -> dict[str, float]:
        """The held-out row of `policy` on `suite` (see `SuiteEvaluator.figures`)."""
        return suite_figures(run_suite(suite, policy, parallel="serial", env_host=env_host))


def suite_figures(result: BenchResult) -> dict[str, float]:
    """`result` as training logs a held-out evaluation: per env its score (mean return per task:
    the success rate when rewards are 0 or 1) and binomial standard error, episodes and
    infra-error rate, and under `eval/success_rate` the suite's score, their mean."""
    row: dict[str, float] = {}
    variance = 0.0
    for env in result.envs:
        error = math.sqrt(env.score * (1 - env.score) / env.judged) if env.judged else math.nan
        row[f"eval/{env.label}/success_rate"] = env.score
        row[f"eval/{env.label}/success_rate_se"] = error
        row[f"eval/{env.label}/episodes"] = float(env.episodes)
        row[f"eval/{env.label}/mean_reward"] = env.score
        row[f"eval/{env.label}/infra_error_rate"] = env.infra_errors / env.episodes
        variance += (error / len(result.envs)) ** 2
    row["eval/success_rate"] = result.score
    row["eval/success_rate_se"] = math.sqrt(variance)
    return row
