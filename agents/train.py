"""The training loop, read top to bottom: `Trainer` draws tasks, plays rollouts from one or more
envs, hands them to a learner's update (GRPO, PPO, RLOO: the table
`rlvr.agents.learners.base.LEARNERS`), evaluates on the held-out split, logs metrics and writes
checkpoints. `train(TrainConfig(...))` is the Python API; `rlvr train` the command line.

Its parts live beside it, each in the module that changes with it: `rlvr.agents.train_config`
(`TrainConfig` and the checks that refuse a run), `rlvr.agents.checkpoints` (the checkpoint
folder, resume, state files read without running code), `rlvr.agents.held_out` (held-out
evaluation, and the `SuiteEvaluator` protocol a run on a leaderboard suite is given),
`rlvr.agents.rollout_metrics` (a step's `rollout/` metrics, the infra-error window),
`rlvr.agents.curriculum` (dynamic sampling, the curriculum). The names this module has always
given are re-exported here (`__all__`), with the types a `TrainConfig` is built from.

Each step draws `prompts_per_step` tasks (an env by weight, then a seed), plays `group_size`
episodes of each, and hands them to the learner. Every random choice comes from generators
owned by the trainer and saved in checkpoints, so on CPU a run resumed from a checkpoint
continues bit-for-bit like the run that was never stopped.

Output folder: `config.toml` (the resolved config: `rlvr train --config OUTDIR/config.toml`
reproduces the run), `metrics.jsonl`, `tb/` (TensorBoard), `learning_curve.png`,
`checkpoints/step-N/` (`model/`, an HF folder `HFPolicy` loads, and `trainer.pt`), `final/` (the
trained model). With a policy per seat (`SelfPlayConfig.policy_per_seat`) each seat's model is a
folder of its own instead of `model/` and `final/`: `checkpoints/step-N/player_0/` (the HF folder
and `learner.pt`, its optimizer) and `final/player_0/`.
"""

from __future__ import annotations

import copy
import math
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from rlvr.agents import checkpoints
from rlvr.agents.async_rollouts import AsyncRollouts, sampler_copy
from rlvr.agents.checkpoints import (
    CHECKPOINT_KEYS,
    MAY_CHANGE_ON_RESUME,
    SEAT_STATE,
    latest_checkpoint,
)
from rlvr.agents.curriculum import (
    CurriculumConfig,
    DifficultyCurriculum,
    flat_group_fraction,
    rollout_specs,
    sample_informative,
)
from rlvr.agents.errors import InfraErrorRateError, TrainingError
from rlvr.agents.held_out import EVAL_SEED, HeldOutEvaluator, SuiteEvaluator
from rlvr.agents.hf import HFPolicy, LoraSettings
from rlvr.agents.kinds import make_policy
from rlvr.agents.learners.base import LEARNERS, Learner
from rlvr.agents.metrics import MetricsLog, ProgressBar, plot_learning_curves
from rlvr.agents.policy import SamplingParams, TrainablePolicy
from rlvr.agents.rollout_metrics import (
    InfraErrorRate,
    InfraErrorWindow,
    infra_error_counts,
    rollout_metrics,
    seat_rollout_metrics,
)
from rlvr.agents.rollouts import EnvSpec, Episode, RolloutCollector, check_env_specs
from rlvr.agents.selfplay import (
    SELF,
    SNAPSHOT,
    GameCollector,
    SeatLearners,
    SelfPlayConfig,
    game_seats,
)
from rlvr.agents.train_config import OLD_SAMPLING_KEYS, TrainConfig, check_envs, make_policy_check
from rlvr.config import ConfigError, write_config

__all__ = [  # what `from rlvr.agents.train import ...` has always given, wherever it now lives
    "CHECKPOINT_KEYS",
    "EVAL_SEED",
    "MAY_CHANGE_ON_RESUME",
    "OLD_SAMPLING_KEYS",
    "SEAT_STATE",
    "CurriculumConfig",
    "EnvSpec",
    "InfraErrorRate",
    "InfraErrorWindow",
    "LoraSettings",
    "SamplingParams",
    "SelfPlayConfig",
    "TrainConfig",
    "TrainResult",
    "Trainer",
    "check_envs",
    "infra_error_counts",
    "latest_checkpoint",
    "make_policy_check",
    "prepare",
    "rollout_metrics",
    "rollout_specs",
    "train",
]


@dataclass
class TrainResult:
    output_dir: Path
    steps: int
    train_seconds: float
    evaluations: list[dict[str, float]]
    final_model: Path | None

    @property
    def initial_success(self) -> float:
        return self.evaluations[0]["eval/success_rate"] if self.evaluations else math.nan

    @property
    def final_success(self) -> float:
        return self.evaluations[-1]["eval/success_rate"] if self.evaluations else math.nan


class Trainer:
    """Owns the policy, learner, rollout collector, random generators and output files."""

    def __init__(
        self,
        config: TrainConfig,
        policy: TrainablePolicy | None = None,
        *,
        suite_evaluator: SuiteEvaluator | None = None,
    ) -> None:
        """`suite_evaluator` scores the held-out evaluations when `config.eval_suite` names a
        leaderboard suite (`rlvr.leaderboards.training.BenchSuiteEvaluator()`), and is needed
        then."""
        self.config = config
        check_envs(config)  # before the model loads: a bad env id fails in a second
        if config.curriculum is not None:  # and a level the env refuses
            check_env_specs(rollout_specs(config.envs, config.curriculum)[0])
        weights = np.array([spec.weight for spec in config.envs], dtype=float)
        self.env_weights = weights / weights.sum()
        # and a suite that is not one, or no evaluator for it
        self.held_out = HeldOutEvaluator(config, self.env_weights, suite_evaluator)
        if config.threads is not None:
            torch.set_num_threads(config.threads)
        self.policy: TrainablePolicy = policy or HFPolicy(
            config.model,
            device=config.device,
            dtype=config.dtype,
            lora=config.lora,
            chat_template=config.chat_template,
            seed=config.seed,
        )
        self.seat_policies = self._seat_policies()
        """With `self_play.policy_per_seat`, seat -> its policy (`policy` is the first seat's);
        else empty."""
        self.learner: Learner = (
            SeatLearners({seat: self._make_learner(p) for seat, p in self.seat_policies.items()})
            if self.seat_policies
            else self._make_learner(self.policy)
        )
        self.sampling = config.sampling
        # With a curriculum, each env is played through one rollout spec per level.
        self.rollout_specs, self.spec_levels = rollout_specs(config.envs, config.curriculum)
        self.curricula = (
            [DifficultyCurriculum(config.curriculum) for _ in config.envs]
            if config.curriculum is not None
            else []
        )
        self.env_workers = _start_env_workers(config)
        self._load_sampler: Any = None  # async: how published weights reach the sampler
        self._stop_sampler: Any = None
        self.snapshot: TrainablePolicy | None = None
        self.collector: RolloutCollector | GameCollector = self._make_collector(self._sampler())
        self.task_rng = np.random.default_rng(config.seed)
        self.sample_generator = torch.Generator(device=self.policy.device).manual_seed(config.seed)
        self.rollouts: AsyncRollouts | None = None  # started with the first step
        self.infra_errors = InfraErrorWindow(config.infra_error_window)
        self.step = 0
        self.train_seconds = 0.0
        self.evaluations: list[dict[str, float]] = []
        self.out = Path(config.output_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        self.metrics = MetricsLog(
            self.out / "metrics.jsonl", str(self.out / "tb") if config.tensorboard else None
        )

    def _seat_policies(self) -> dict[str, TrainablePolicy]:
        """With a policy per seat, each seat's: the first seat takes `policy`, every other seat
        a copy of it (the same starting weights)."""
        self_play = self.config.self_play
        if self_play is None or not self_play.policy_per_seat:
            return {}
        seats = game_seats(self.config.envs)
        copies = [copy.deepcopy(self.policy) for _ in seats[1:]]
        return dict(zip(seats, [self.policy, *copies]))

    def _make_learner(self, policy: TrainablePolicy) -> Learner:
        """The learner of `algo` for `policy`, given the run settings it depends on."""
        config = self.config
        return LEARNERS[config.algo].make(policy, config.algo_config(), config.run_settings())

    def _sampler(self) -> TrainablePolicy:
        """The policy the rollouts sample from: the learner's own; with async rollouts a copy
        (here, or with Ray in a generator process of its own, so generation overlaps updates)."""
        if not self.config.async_rollouts:
            return self.policy
        if self.env_workers is None:
            return sampler_copy(self.policy)
        from rlvr.agents.ray_rollouts import remote_sampler

        sampler, self._load_sampler, self._stop_sampler = remote_sampler(
            self.policy, self.config.seed, self.config.threads
        )
        return sampler

    def _make_collector(self, policy: TrainablePolicy) -> RolloutCollector | GameCollector:
        """The rollout collector: envs in this process, or on the Ray env workers; games of
        multi-agent envs with `self_play`."""
        config = self.config
        settings: dict[str, Any] = dict(
            group_size=config.group_size, sampling=self.sampling, max_turns=config.max_turns
        )
        if config.self_play is not None:
            opponent = config.self_play.opponent
            if opponent == SNAPSHOT:
                self.snapshot = copy.deepcopy(self.policy)
            fixed = None if opponent == SELF else self.snapshot or make_policy(opponent)
            players = self.seat_policies or policy
            return GameCollector(players, config.envs, opponent=fixed, **settings)
        settings |= {"shared_turns": config.shared_turns, "shared_greedy": config.shared_greedy}
        if self.env_workers is None:
            return RolloutCollector(policy, self.rollout_specs, **settings)
        from rlvr.agents.ray_rollouts import RayRolloutCollector

        return RayRolloutCollector(policy, self.rollout_specs, self.env_workers, **settings)

    def close(self) -> None:
        """Stop the background rollouts and the Ray env workers (if any)."""
        if self.rollouts is not None:
            self.rollouts.close()
            self.rollouts = None
        self.collector.close()
        if self._stop_sampler is not None:
            self._stop_sampler()
            self._stop_sampler = None
        if self.env_workers is not None:
            self.env_workers.close()
            self.env_workers = None

    def _refresh_snapshot(self) -> None:
        """The "snapshot" opponent takes the trained weights every `snapshot_every` steps."""
        self_play = self.config.self_play
        if self.snapshot is None or self_play is None or self.step % self_play.snapshot_every:
            return
        self.snapshot.model.load_state_dict(self.policy.model.state_dict())

    # --- one step ---------------------------------------------------------------------------------

    def draw_tasks(self, count: int | None = None) -> list[tuple[int, int]]:
        """`count` (default `prompts_per_step`) tasks as (rollout spec index, seed): an env by
        weight, at its curriculum level when there is a curriculum, and a seed."""
        tasks = []
        single = len(self.env_weights) == 1
        for _ in range(self.config.prompts_per_step if count is None else count):
            choice = (
                0 if single else self.task_rng.choice(len(self.env_weights), p=self.env_weights)
            )
            env = int(choice)
            tasks.append((self._rollout_spec(env), int(self.task_rng.integers(2**31 - 1))))
        return tasks

    def _rollout_spec(self, env: int) -> int:
        if not self.curricula:
            return env
        return self.spec_levels.index((env, self.curricula[env].level))

    def collect(self) -> tuple[list[Episode], list[Episode], int, int]:
        """The step's episodes to train on, every episode sampled for them, the sampling rounds
        played and the sampler's lag. Without dynamic sampling the two lists are the same batch."""
        config = self.config
        episodes, lag = self._rollouts()
        if not config.dynamic_sampling:
            return episodes, episodes, 1, lag

        def sample(count: int) -> list[Episode]:
            return self.collector.collect(self.draw_tasks(count), self.sample_generator)

        wanted, most = config.prompts_per_step, config.max_sampling_rounds
        return (*sample_informative(episodes, sample, wanted, most), lag)

    def train_step(self) -> dict[str, float]:
        started = time.perf_counter()
        episodes, sampled, rounds, lag = self.collect()
        rollout_seconds = time.perf_counter() - started
        self.infra_errors.add(sampled)
        self._advance_curricula(sampled)
        metrics = self.learner.update(episodes)
        if self.rollouts is not None:
            self.rollouts.updated()
            metrics["async/policy_lag"] = float(lag)
        if self.env_workers is not None:
            metrics.update(self.env_workers.metrics())
        self.step += 1
        self._refresh_snapshot()
        elapsed = time.perf_counter() - started
        self.train_seconds += elapsed
        metrics.update(rollout_metrics(sampled, self.config.envs))
        if self.seat_policies:
            metrics.update(seat_rollout_metrics(sampled, self.config.envs))
        metrics["rollout/flat_groups_sampled"] = flat_group_fraction(sampled)
        if self.config.dynamic_sampling:
            metrics["rollout/sampling_rounds"] = float(rounds)
            metrics["rollout/groups_trained"] = float(len({e.group for e in episodes}))
        for env, curriculum in enumerate(self.curricula):
            metrics[f"curriculum/{self.config.envs[env].id}/level"] = float(curriculum.level)
        metrics.update(
            {
                "time/train_seconds": self.train_seconds,
                "time/rollout_seconds": rollout_seconds,
                "time/step_seconds": elapsed,
                "charts/tokens_per_second": sum(e.generated_tokens for e in sampled) / elapsed,
            }
        )
        self.metrics.log(self.step, metrics)
        return metrics

    def _advance_curricula(self, sampled: Sequence[Episode]) -> None:
        """Give each env's curriculum the judged rewards of this step, at the levels played."""
        for env, curriculum in enumerate(self.curricula):
            played = []
            for episode in sampled:
                owner, level = self.spec_levels[episode.spec_index]
                if owner == env and level is not None and not episode.infra_error:
                    played.append((level, episode.reward))
            curriculum.record(played)

    def _rollouts(self) -> tuple[list[Episode], int]:
        """This step's episodes and how many updates behind the learner their sampler was."""
        if not self.config.async_rollouts:
            return self.collector.collect(self.draw_tasks(), self.sample_generator), 0
        if self.rollouts is None:
            assert isinstance(self.collector, RolloutCollector)  # check_envs: no async self-play
            self.rollouts = AsyncRollouts(
                self.collector,
                self.policy,
                self.draw_tasks,
                max_policy_lag=self.config.max_policy_lag,
                generator=self.sample_generator,
                load_weights=self._load_sampler,
            )
        return self.rollouts.next()

    def evaluate(self) -> dict[str, float]:
        """The held-out figures of the policy now (`HeldOutEvaluator.figures`: per env and their
        weighted mean), logged and kept in `evaluations`."""
        host = self.env_workers.host if self.env_workers is not None else None
        row = self.held_out.figures(self.policy, self.seat_policies, host)
        row["time/train_seconds"] = self.train_seconds
        self.evaluations.append({"step": self.step, **row})
        self.metrics.log(self.step, row)
        return row

    # --- the run ----------------------------------------------------------------------------------

    def run(self) -> TrainResult:
        config = self.config
        self._write_config()
        if self.step == 0:  # a fresh run does not append to an earlier run's metrics
            self.metrics.truncate_after(-1)
        if not self.evaluations:
            self.evaluate()
        bar = (
            ProgressBar(config.steps, config.time_budget, self.step, self.train_seconds)
            if config.progress
            else None
        )
        # A run resumed near its end has fewer steps left than a window: judge what it has.
        window = min(config.infra_error_window, config.steps - self.step)
        try:
            while self.step < config.steps and not self._out_of_time():
                metrics = self.train_step()
                self._stop_on_infra_errors(window)
                if config.eval_every and self.step % config.eval_every == 0:
                    metrics.update(self.evaluate())
                if config.save_every and self.step % config.save_every == 0:
                    self.save_checkpoint()
                if bar is not None:
                    held_out = self.evaluations[-1]["eval/success_rate"]
                    bar.advance(self.step, self.train_seconds, metrics, held_out)
            if self.rollouts is not None:  # batches played ahead are not learned from
                self.rollouts.close()
                self.rollouts = None
            if self.evaluations[-1]["step"] != self.step:
                self.evaluate()
        finally:
            if bar is not None:
                bar.close()
            self.close()
        self.save_checkpoint()
        final = self.save_models(self.out / "final")
        self.metrics.close()
        if config.plot:
            plot_learning_curves(
                {config.algo: self.out / "metrics.jsonl"},
                self.out / "learning_curve.png",
                title=", ".join(spec.id for spec in config.envs),
            )
        return TrainResult(self.out, self.step, self.train_seconds, self.evaluations, final)

    def _write_config(self) -> None:
        path = self.out / "config.toml"
        try:
            write_config(self.config, path, f"rlvr train --config {path} reproduces this run")
        except ConfigError as exc:  # env kwargs holding Python objects: the run goes on
            warnings.warn(f"{path} not written: {exc}", stacklevel=3)

    def _stop_on_infra_errors(self, window: int) -> None:
        """Raise `InfraErrorRateError` (after saving a checkpoint to resume from once the
        machinery is fixed) when an env's infra-error rate over the window is above the limit."""
        worst = self.infra_errors.worst(window)
        if worst is None or worst.rate <= self.config.max_infra_error_rate:
            return
        folder = self.save_checkpoint()
        self.metrics.close()
        raise InfraErrorRateError(worst.explain(self.config.max_infra_error_rate, folder))

    def _out_of_time(self) -> bool:
        budget = self.config.time_budget
        return budget is not None and self.train_seconds >= budget

    # --- checkpoints (rlvr.agents.checkpoints) ---------------------------------------------------

    def save_checkpoint(self) -> Path:
        """Write the run's state and models to `checkpoints/step-N/`; returns the folder."""
        return checkpoints.save_checkpoint(self)

    def load_checkpoint(self, folder: str | Path) -> None:
        """Continue from a checkpoint of a run with the same config. Its state files are read
        without unpickling code (`rlvr.agents.checkpoints`): a tampered one is refused."""
        checkpoints.load_checkpoint(self, folder)

    def save_models(self, folder: Path) -> Path:
        """The trained model in `folder` (HF files), or with a policy per seat each seat's in
        `folder/<seat>`; returns `folder`."""
        return checkpoints.save_models(self, folder)


def _start_env_workers(config: TrainConfig) -> Any:
    """The run's Ray env workers (an `rlvr.distributed.EnvWorkers`), or None without `ray`."""
    if config.ray is None:
        return None
    from rlvr.distributed import EnvWorkers

    return EnvWorkers(config.env_workers, address=config.ray)


def train(
    config: TrainConfig,
    *,
    resume: bool | str | Path = False,
    policy: TrainablePolicy | None = None,
    suite_evaluator: SuiteEvaluator | None = None,
) -> TrainResult:
    """Run `config`; `resume=True` continues from the latest checkpoint in its output_dir (or
    pass a checkpoint folder). With `config.eval_suite`, pass the `suite_evaluator` that scores
    the suite (`rlvr.leaderboards.training.BenchSuiteEvaluator()`)."""
    return prepare(config, resume=resume, policy=policy, suite_evaluator=suite_evaluator).run()


def prepare(
    config: TrainConfig,
    *,
    resume: bool | str | Path = False,
    policy: TrainablePolicy | None = None,
    suite_evaluator: SuiteEvaluator | None = None,
) -> Trainer:
    """The `Trainer` of `config`, loaded from a checkpoint when `resume` says so (see `train`)."""
    trainer = Trainer(config, policy, suite_evaluator=suite_evaluator)
    if resume:
        folder = latest_checkpoint(config.output_dir) if resume is True else Path(resume)
        try:
            if folder is None:
                raise TrainingError(
                    f"no checkpoint to resume from in {config.output_dir}/checkpoints"
                )
            trainer.load_checkpoint(folder)
        except BaseException:
            trainer.close()  # its env workers, if any
            raise
    return trainer
