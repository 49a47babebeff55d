"""Held-out evaluation during training: the greedy success rate of the trained policy on each
env's held-out split (or its win rate against a fixed opponent in a game), or, with
`TrainConfig.eval_suite`, the score a leaderboard suite gives it as `rlvr bench` does (through
the `SuiteEvaluator` the trainer is given: the leaderboards sit above the agents).

Every evaluation of a run asks the same tasks: each env's first `eval_episodes` distinct tasks
from the reset seed `EVAL_SEED`, found at the first evaluation (`rlvr eval --distinct --seed
1000003` asks them too). The trainer calls `HeldOutEvaluator.figures` before training, every
`eval_every` steps and at the end, and logs the row it returns.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from rlvr.agents.kinds import make_policy
from rlvr.agents.policy import Policy, SamplingParams, TrainablePolicy
from rlvr.agents.rollouts import EnvSpec
from rlvr.agents.selfplay import game_eval_kwargs, merge_seat_metrics
from rlvr.rollout.episodes import evaluate
from rlvr.rollout.games import MatchReport, play_match
from rlvr.rollout.reports import EvalReport
from rlvr.rollout.tasks import distinct_tasks

if TYPE_CHECKING:
    from rlvr.agents.train_config import TrainConfig

EVAL_SEED = 1_000_003
"""First reset seed of the held-out episodes (far from the training seeds)."""


class SuiteEvaluator(Protocol):
    """Scores a policy on a leaderboard suite as `rlvr bench` scores it, for
    `TrainConfig.eval_suite`. The leaderboards sit above the agents, so the trainer takes one
    (`train(config, suite_evaluator=...)`) rather than importing them: the leaderboards provide
    it (`rlvr.leaderboards.training.BenchSuiteEvaluator`), and `rlvr train` passes it."""

    def load(self, name: str) -> Any:
        """The suite `name` (a built-in name or a suite .toml file), checked; a ValueError naming
        the problem when it is not one."""
        ...

    def figures(self, suite: Any, policy: Policy, env_host: Any = None) -> dict[str, float]:
        """`suite` (as `load` gave it) run with `policy` as `rlvr bench` runs it (the envs on
        `env_host`, Ray env workers, when given): per env (`eval/<label>/...`) its score (mean
        return per task) as `success_rate` and `mean_reward`, with `success_rate_se`, `episodes`
        and `infra_error_rate`; under `eval/success_rate` the suite's score, their mean, and
        `eval/success_rate_se`."""
        ...


def load_eval_suite(config: TrainConfig, suite_evaluator: SuiteEvaluator | None) -> Any:
    """The suite `config.eval_suite` names, loaded (so checked) by `suite_evaluator`; None when
    the run evaluates on the held-out splits. A ValueError naming the fix when a suite is named
    and no evaluator given, or the suite is not one."""
    if config.eval_suite is None:
        return None
    if suite_evaluator is None:
        raise ValueError(
            f"eval_suite={config.eval_suite!r} needs a suite evaluator: pass "
            "suite_evaluator=rlvr.leaderboards.training.BenchSuiteEvaluator() to train(), "
            "prepare() or Trainer() (`rlvr train` passes it), or set eval_suite=None"
        )
    return suite_evaluator.load(config.eval_suite)


class HeldOutEvaluator:
    """A run's held-out figures: per env its success rate, standard error, episodes, mean reward
    and infra-error rate (`eval/<env id>/...`), and under `eval/success_rate` their weighted
    mean."""

    def __init__(
        self,
        config: TrainConfig,
        env_weights: np.ndarray,
        suite_evaluator: SuiteEvaluator | None = None,
    ) -> None:
        self.config = config
        self.env_weights = env_weights
        self.suite_evaluator = suite_evaluator
        self.suite = load_eval_suite(config, suite_evaluator)
        self._seeds: dict[int, list[int]] = {}  # per env: its held-out episodes' seeds

    def figures(
        self,
        policy: TrainablePolicy,
        seat_policies: Mapping[str, TrainablePolicy],
        env_host: Any = None,
    ) -> dict[str, float]:
        """Greedy success rate on each env's held-out split, with its standard error (binomial,
        over the distinct tasks asked), and their weighted mean; the envs are played on
        `env_host` (Ray env workers) when given. With a policy per seat, each seat's model plays
        from its own seat, its figures under the seat (`eval/player_0/success_rate`) and their
        mean over the seats under the usual keys."""
        sampling = self.config.eval_sampling
        if self.suite_evaluator is not None and self.suite is not None:
            return self.suite_evaluator.figures(self.suite, policy, env_host)
        if not seat_policies:
            return self._policy_figures(policy, sampling, env_host)
        per_seat = {
            seat: self._policy_figures(policy, sampling, env_host, seat)
            for seat, policy in seat_policies.items()
        }
        counts = [key for key in next(iter(per_seat.values())) if key.endswith("/episodes")]
        return merge_seat_metrics(per_seat, summed=counts)

    def _policy_figures(
        self,
        policy: TrainablePolicy,
        sampling: SamplingParams,
        env_host: Any,
        seat: str | None = None,
    ) -> dict[str, float]:
        """`figures` of one policy (in a game, from `seat` only when given)."""
        row: dict[str, float] = {}
        total = variance = 0.0
        for index, (spec, weight) in enumerate(zip(self.config.envs, self.env_weights)):
            report = self._held_out(index, spec, sampling, policy, env_host, seat)
            if isinstance(report, MatchReport):  # a game: the win rate against a fixed opponent
                success, reward, played = report.win_rate, report.mean_return, len(report.games)
                judged = played
            else:
                success, reward = report.success_rate, report.mean_reward
                played, judged = len(report.episodes), len(report.judged)
            error = math.sqrt(success * (1 - success) / judged) if judged else math.nan
            row[f"eval/{spec.id}/success_rate"] = success
            row[f"eval/{spec.id}/success_rate_se"] = error
            row[f"eval/{spec.id}/episodes"] = float(played)
            row[f"eval/{spec.id}/mean_reward"] = reward
            row[f"eval/{spec.id}/infra_error_rate"] = report.infra_errors / played
            total += weight * success
            variance += (weight * error) ** 2
        row["eval/success_rate"] = total
        row["eval/success_rate_se"] = math.sqrt(variance)
        return row

    def _held_out(
        self,
        index: int,
        spec: EnvSpec,
        sampling: SamplingParams,
        policy: TrainablePolicy,
        env_host: Any,
        seat: str | None = None,
    ) -> EvalReport | MatchReport:
        config = self.config
        if config.self_play is None:
            seeds = self._held_out_seeds(index, spec)
            return evaluate(
                spec.id,
                policy,
                episodes=len(seeds),
                seeds=seeds,
                batch_size=len(seeds),
                sampling=sampling,
                env_kwargs=spec.eval_kwargs,
                env_host=env_host,
            )
        return play_match(
            spec.id,
            policy,
            make_policy(config.self_play.eval_opponent),  # fresh: every evaluation the same
            games=config.eval_episodes,
            seed=EVAL_SEED,
            sampling=sampling,
            env_kwargs=game_eval_kwargs(spec),
            batch_size=config.eval_episodes,
            max_turns=config.max_turns,
            seat=seat,
        )

    def _held_out_seeds(self, index: int, spec: EnvSpec) -> list[int]:
        """Reset seeds of env `index`'s held-out episodes, each posing a task none of the others
        does (a small test split re-asks problems when drawn by seed), found at the first
        evaluation; every evaluation asks the same ones."""
        if index not in self._seeds:
            self._seeds[index] = distinct_tasks(
                spec.id, self.config.eval_episodes, env_kwargs=spec.eval_kwargs, seed=EVAL_SEED
            )
        return self._seeds[index]
