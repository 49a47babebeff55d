"""The training loop: rollouts from one or more envs, a learner's update (GRPO, PPO, RLOO: the
table `rlvr.agents.learners.base.LEARNERS`), evaluation on the
held-out split, metrics, checkpoints. `train(TrainConfig(...))` is the Python API; `rlvr train`
the command line.

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
import dataclasses
import math
import shutil
import time
import warnings
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

from rlvr.agents.async_rollouts import AsyncRollouts, sampler_copy
from rlvr.agents.checkpoints import load_state, save_state
from rlvr.agents.curriculum import (
    CurriculumConfig,
    DifficultyCurriculum,
    flat_group_fraction,
    informative_groups,
    renumber,
)
from rlvr.agents.errors import InfraErrorRateError, TrainingError
from rlvr.agents.hf import HFPolicy, LoraSettings, _quiet_transformers
from rlvr.agents.kinds import make_policy
from rlvr.agents.learners.base import (
    LEARNERS,
    Learner,
    RunSettings,
    learner_choices,
    with_learner_sections,
)
from rlvr.agents.metrics import MetricsLog, plot_learning_curves
from rlvr.agents.policy import SamplingParams, TrainablePolicy
from rlvr.agents.rollouts import EnvSpec, Episode, RolloutCollector, check_env_specs
from rlvr.agents.selfplay import (
    SELF,
    SNAPSHOT,
    GameCollector,
    SeatLearners,
    SelfPlayConfig,
    check_game_specs,
    game_eval_kwargs,
    game_seats,
    is_multiagent,
    merge_seat_metrics,
    seat_key,
)
from rlvr.config import (
    ConfigError,
    Seed,
    check_numbers,
    cli,
    differences,
    dump,
    read_text_file,
    write_config,
)
from rlvr.rollout import EvalReport, MatchReport, distinct_tasks, evaluate, play_match

EVAL_SEED = 1_000_003
"""First reset seed of the held-out episodes (far from the training seeds)."""
SEAT_STATE = "learner.pt"
"""With a policy per seat: the file of a seat's checkpoint folder holding its learner's state."""
CHECKPOINT_KEYS = (
    "step",
    "train_seconds",
    "evaluations",
    "learner",
    "task_rng",
    "sample_generator",
    "trainable",
)
"""What every `trainer.pt` holds (older ones may lack the later keys: config, curricula...)."""
MAY_CHANGE_ON_RESUME = (
    "output_dir",
    "steps",
    "time_budget",
    "eval_every",
    "save_every",
    "max_infra_error_rate",
    "infra_error_window",
    "threads",
    "ray",
    "env_workers",
    "tensorboard",
    "plot",
    "progress",
)
"""The `TrainConfig` fields a resumed run may set differently from the run it continues: how long
it runs, how often it evaluates and saves, and what it shows. Any other difference (envs, model,
learner, sampling, seed, ...) is refused, so that the run stays the one its config describes."""


OLD_SAMPLING_KEYS = ("max_new_tokens", "temperature", "top_p", "stop")
"""Top-level keys of a `config.toml` written before they moved into its `[sampling]` table."""


def _read_text(path: str) -> str:
    return read_text_file(path, "chat template")


@dataclass
@with_learner_sections
class TrainConfig:
    """A training run. Each learner of the table (`LEARNERS`) has a section named after it holding
    its hyperparameters (`grpo: GRPOConfig`, `ppo: PPOConfig`, `rloo: RLOOConfig`), added after
    the fields below; `algo` picks the one that trains. The settings of the rollouts (`sampling`,
    the completion budget, the seed) live here only and are given to the learner."""

    envs: Sequence[EnvSpec] = field(
        metadata=cli("--env", parse=EnvSpec.parse, metavar="ID[=WEIGHT]")
    )
    """Environments to train on, each with a weight (share of prompts) and kwargs. Command line:
    --env ID[=WEIGHT], repeated to mix envs; --kwargs/--heldout-kwargs (JSON) apply to each."""
    model: str
    """Hub id or local folder of the starting model."""
    algo: str = field(default="grpo", metadata=cli(help=learner_choices, metavar="NAME"))
    """The learner (a name of `LEARNERS`); its settings are the section of that name (`--rloo.lr`,
    `[rloo]`)."""
    output_dir: str = field(default="runs/train", metadata=cli("--out"))
    """Where the config, metrics, plots, checkpoints and the final model go."""
    steps: int = 100
    """Training steps (one rollout batch and one learner update each)."""
    prompts_per_step: int = field(default=8, metadata=cli("--prompts"))
    """Tasks per step."""
    group_size: int = 8
    """Episodes per task (GRPO's G; PPO works with 1 or more; RLOO's k)."""
    sampling: SamplingParams = field(default_factory=lambda: SamplingParams(max_new_tokens=64))
    """How the rollouts are sampled (`[sampling]` in a file; `--temperature`, `--top-p`,
    `--top-k`, `--max-new-tokens`, `--stop` on the command line, as in `rlvr eval` and
    `rlvr bench`). The temperature must be > 0; held-out evaluation decodes greedily with the
    rest of it. The run's `seed` drives sampling, so `sampling.seed` stays unset."""
    max_turns: int | None = None
    """Cut episodes after this many replies (None: the env decides)."""
    eval_every: int = 10
    """Evaluate on the held-out split every this many steps (0: only before and after)."""
    eval_episodes: int = 100
    """Held-out episodes per env per evaluation (greedy decoding), each a distinct task (fewer
    when the held-out split holds fewer)."""
    eval_suite: str | None = None
    """Evaluate on this leaderboard suite instead (a built-in name such as "demo", or a suite
    .toml file): its envs, tasks, sampling and batches, run as `rlvr bench` runs them, so each
    held-out figure is the score `rlvr bench --suite` stores for the model at that step
    (`eval_episodes` is then unused). Single-agent envs only."""
    save_every: int = 0
    """Write a checkpoint every this many steps (0: only at the end)."""
    time_budget: float | None = None
    """Stop after this many seconds of training (rollouts and updates; evaluation excluded)."""
    seed: Seed = 0
    """Seed of task choice, sampling and minibatch order."""
    device: str = "cpu"
    """Torch device of the policy."""
    dtype: Literal["float32", "bfloat16", "float16"] | None = None
    """"float32", "bfloat16" or "float16" (None: as saved); "float16" only with `lora`."""
    lora: LoraSettings | None = None
    """Train LoRA adapters instead of all weights (with dropout 0: RL forwards run without it)."""
    chat_template: str | None = field(default=None, metadata=cli(parse=_read_text, metavar="FILE"))
    """Jinja chat template for a model whose tokenizer has none (None: the tokenizer's own). On
    the command line, the file to read it from."""
    threads: int | None = None
    """torch.set_num_threads for the run (None: leave torch's default)."""
    tensorboard: bool = True
    """Also write metrics to `output_dir/tb` for TensorBoard."""
    plot: bool = True
    """Draw `learning_curve.png` at the end."""
    progress: bool = True
    """Show a progress bar."""
    max_infra_error_rate: float = 0.2
    """Stop the run (`InfraErrorRateError`, after a checkpoint) when more than this share of an
    env's episodes over the last `infra_error_window` steps hit an infrastructure error; 1.0
    never stops. The rate is logged every step either way (`rollout/<env id>/infra_error_rate`)."""
    infra_error_window: int = 10
    """Steps that rate is measured over. One step whose verifier was down (every episode failed)
    adds 1/window to it, so with the defaults it alone cannot stop a run."""
    dynamic_sampling: bool = False
    """DAPO's dynamic sampling: drop the groups whose rewards are all equal (zero advantage, no
    signal) and sample more tasks until the step has `prompts_per_step` groups whose rewards
    differ, or `max_sampling_rounds` rounds were played."""
    max_sampling_rounds: int = 4
    """With `dynamic_sampling`, the most sampling rounds per step; a step that still lacks
    groups trains on those it has."""
    curriculum: CurriculumConfig | None = None
    """Draw each env's training tasks at one difficulty level at a time, moving up as the
    training reward at it crosses a threshold (None: the env's kwargs as given)."""
    ray: str | None = field(default=None, metadata=cli(const="local", metavar="ADDRESS"))
    """Run the envs on Ray env workers: "local" starts Ray on this machine, else the address of
    a cluster to join ("auto", "ray://HOST:10001"). None: the envs run in this process."""
    env_workers: int = 2
    """Ray env workers (with `ray`): processes holding the envs and their sandboxes."""
    async_rollouts: bool = False
    """Generate step k+1's rollouts while step k learns (GRPO only), from a copy of the policy
    at most `max_policy_lag` updates old; the loss is corrected by truncated importance
    sampling (`grpo.tis_cap`). The lag is logged per step (`async/policy_lag`)."""
    max_policy_lag: int = 1
    """With `async_rollouts`: the most updates the sampling policy may be behind the learner."""
    self_play: SelfPlayConfig | None = None
    """Train on multi-agent envs (rlvr.envs.multiagent, e.g. rlvr/Connect4-v0) by self-play: the
    trained policy takes every seat (or plays `self_play.opponent`; with
    `self_play.policy_per_seat` each seat has a policy of its own) and each seat's episode trains
    it on that seat's own tokens; held-out evaluation is the win rate against
    `self_play.eval_opponent`. `--self-play` turns it on with the defaults."""

    @staticmethod
    def from_older(data: Mapping[str, Any]) -> dict[str, Any]:
        """File data of a run written before the `[sampling]` table, whose rollout settings were
        top-level keys, in today's layout (so that such a run still resumes)."""
        moved = {key: data[key] for key in OLD_SAMPLING_KEYS if key in data}
        if not moved or not isinstance(data.get("sampling", {}), Mapping):
            return dict(data)
        rest = {key: value for key, value in data.items() if key not in moved}
        return {**rest, "sampling": {**moved, **data.get("sampling", {})}}

    def __post_init__(self) -> None:
        check_numbers(self)
        self.envs = tuple(EnvSpec(spec) if isinstance(spec, str) else spec for spec in self.envs)
        if not self.envs:
            raise ValueError("envs is empty; give at least one EnvSpec('rlvr/Math-v0')")
        if self.algo not in LEARNERS:
            raise ValueError(f"algo must be one of {tuple(LEARNERS)}, got {self.algo!r}")
        for name in ("steps", "prompts_per_step", "group_size", "eval_episodes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.eval_every < 0 or self.save_every < 0:
            raise ValueError("eval_every and save_every must be >= 0 (0: only at the end)")
        if self.max_turns is not None and self.max_turns < 1:
            raise ValueError("max_turns must be >= 1, or None to let the env decide")
        if self.sampling.temperature <= 0:
            raise ValueError(
                "sampling.temperature must be > 0: RL trains on sampled replies (e.g. "
                "--temperature 1; held-out evaluation is greedy either way)"
            )
        if self.sampling.seed is not None:
            raise ValueError(
                "sampling.seed is unused in training (the run's seed drives sampling): remove it"
            )
        if self.time_budget is not None and self.time_budget <= 0:
            raise ValueError("time_budget must be > 0 seconds, or None")
        if self.dtype not in (None, "float32", "bfloat16", "float16"):
            raise ValueError(
                f"dtype must be 'float32', 'bfloat16', 'float16' or None, got {self.dtype!r}"
            )
        if self.dtype == "float16" and self.lora is None:
            raise ValueError(
                "dtype='float16' cannot train all the weights (Adam's eps rounds to 0 in float16 "
                "and the first step turns weights into NaN): use 'bfloat16' or 'float32', or LoRA "
                "(its adapters train in float32 on a float16 model)"
            )
        if not 0.0 <= self.max_infra_error_rate <= 1.0:
            raise ValueError(
                "max_infra_error_rate must be in [0, 1] (a share of episodes; 1.0 never stops), "
                f"got {self.max_infra_error_rate}"
            )
        if self.infra_error_window < 1:
            raise ValueError(f"infra_error_window must be >= 1 step, got {self.infra_error_window}")
        if self.max_sampling_rounds < 1:
            raise ValueError(f"max_sampling_rounds must be >= 1, got {self.max_sampling_rounds}")
        if self.dynamic_sampling and self.async_rollouts:
            raise ValueError(
                "dynamic_sampling refills a step synchronously: use it without async_rollouts"
            )
        if self.curriculum is not None and (self.self_play is not None or self.ray is not None):
            raise ValueError(
                "a curriculum draws single-agent tasks in this process: use it without self_play "
                "and ray"
            )
        if self.env_workers < 1:
            raise ValueError(f"env_workers must be >= 1, got {self.env_workers}")
        if self.max_policy_lag < 1:
            raise ValueError(
                f"max_policy_lag must be >= 1 (0 is synchronous: async_rollouts=False), got "
                f"{self.max_policy_lag}"
            )
        LEARNERS[self.algo].check_run(self.algo_config(), self.run_settings(), self.async_rollouts)
        if self.threads is not None and self.threads < 1:
            raise ValueError("threads must be >= 1, or None to leave torch's default")
        if self.eval_suite is not None:
            if self.self_play is not None:
                raise ValueError(
                    "eval_suite runs single-agent suites; self-play's evaluation is the win rate "
                    "against self_play.eval_opponent: remove eval_suite"
                )
            from rlvr.leaderboards import load_suite  # the one upward import: see _suite_figures

            load_suite(self.eval_suite)  # a SuiteError (a ValueError) names the problem
        if self.lora is not None and self.lora.dropout > 0:
            raise ValueError(
                "LoRA dropout has no effect in RL training (learners run without dropout so that "
                "pi, pi_old and pi_ref are the same function): set LoraSettings(dropout=0.0)"
            )

    @property
    def eval_sampling(self) -> SamplingParams:
        """How held-out evaluation samples: greedily, with the rollouts' other settings (what
        `rlvr eval --temperature 0` with the same `--max-new-tokens` and `--stop` reproduces)."""
        return dataclasses.replace(self.sampling, temperature=0.0)

    def algo_config(self) -> Any:
        """The config of the learner `algo` names: its section (`self.grpo` for "grpo")."""
        return getattr(self, self.algo)

    def run_settings(self) -> RunSettings:
        """The run's settings the learner is given."""
        return RunSettings(
            temperature=self.sampling.temperature,
            max_new_tokens=self.sampling.max_new_tokens,
            completion_budget=self.completion_budget,
            seed=self.seed,
            group_size=self.group_size,
            episodes_per_step=self.prompts_per_step * self.group_size,
        )

    @property
    def completion_budget(self) -> int:
        """The most ids an episode may generate: `max_new_tokens` per reply times `max_turns`
        (one reply when the env decides the turns)."""
        return self.sampling.max_new_tokens * (self.max_turns or 1)

    def to_dict(self) -> dict[str, Any]:
        """The config as `config.toml` holds it (objects a file cannot hold as their repr)."""
        return dump(self, strict=False)


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

    def __init__(self, config: TrainConfig, policy: TrainablePolicy | None = None) -> None:
        self.config = config
        check_envs(config)  # before the model loads: a bad env id fails in a second
        if config.curriculum is not None:  # and a level the env refuses
            check_env_specs(rollout_specs(config.envs, config.curriculum)[0])
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
        weights = np.array([spec.weight for spec in config.envs], dtype=float)
        self.env_weights = weights / weights.sum()
        self.infra_errors = InfraErrorWindow(config.infra_error_window)
        self.step = 0
        self.train_seconds = 0.0
        self.evaluations: list[dict[str, float]] = []
        self._eval_seeds: dict[int, list[int]] = {}  # per env: its held-out episodes' seeds
        self.eval_suite: Any = None
        if config.eval_suite is not None:
            from rlvr.leaderboards import load_suite

            self.eval_suite = load_suite(config.eval_suite)
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

    def _models(self) -> dict[str, TrainablePolicy]:
        """The trained models by the folder they are saved in: `model`, or one per seat."""
        return self.seat_policies or {"model": self.policy}

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
        sampled, kept, rounds = list(episodes), informative_groups(episodes), 1
        while len(kept) < config.prompts_per_step and rounds < config.max_sampling_rounds:
            missing = config.prompts_per_step - len(kept)
            # draw as many tasks as the informative share so far says are needed (a full batch
            # at most), not one round per missing group
            share = max(len(kept), 1) / (rounds * config.prompts_per_step)
            count = min(config.prompts_per_step, math.ceil(missing / share))
            more = self.collector.collect(self.draw_tasks(count), self.sample_generator)
            # sampled groups keep distinct numbers across rounds (for the flat-group share)
            offset = max(episode.group for episode in sampled) + 1
            for episode in more:
                episode.group += offset
            sampled += more
            kept += informative_groups(more)
            rounds += 1
        if not kept:  # nothing to learn from: hand over the first batch (the update is zero)
            return episodes, sampled, rounds, lag
        return renumber(kept[: config.prompts_per_step]), sampled, rounds, lag

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
            metrics.update(_seat_rollout_metrics(sampled, self.config.envs))
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
        """Greedy success rate on each env's held-out split, with its standard error (binomial,
        over the distinct tasks asked), and their weighted mean. With a policy per seat, each
        seat's model plays from its own seat, its figures logged under the seat
        (`eval/player_0/success_rate`) and their mean over the seats under the usual keys."""
        sampling = self.config.eval_sampling
        if self.eval_suite is not None:
            row = self._suite_figures(self.eval_suite, self.policy)
        elif self.seat_policies:
            per_seat = {
                seat: self._evaluate_policy(policy, sampling, seat)
                for seat, policy in self.seat_policies.items()
            }
            counts = [key for key in next(iter(per_seat.values())) if key.endswith("/episodes")]
            row = merge_seat_metrics(per_seat, summed=counts)
        else:
            row = self._evaluate_policy(self.policy, sampling)
        row["time/train_seconds"] = self.train_seconds
        self.evaluations.append({"step": self.step, **row})
        self.metrics.log(self.step, row)
        return row

    def _evaluate_policy(
        self, policy: TrainablePolicy, sampling: SamplingParams, seat: str | None = None
    ) -> dict[str, float]:
        """`evaluate`'s figures of one policy (in a game, from `seat` only when given)."""
        row: dict[str, float] = {}
        total = variance = 0.0
        for index, (spec, weight) in enumerate(zip(self.config.envs, self.env_weights)):
            report = self._held_out(index, spec, sampling, policy, seat)
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

    def _suite_figures(self, suite: Any, policy: TrainablePolicy) -> dict[str, float]:
        """`evaluate`'s figures from `suite`, run as `rlvr bench` runs it: per env its score
        (mean return per task: the success rate when rewards are 0 or 1) and standard error, and
        under `eval/success_rate` the suite's score, their mean. The leaderboards sit above the
        agents: they are imported here, on use, only when `eval_suite` asks for a suite."""
        from rlvr.leaderboards import run_suite

        host = self.env_workers.host if self.env_workers is not None else None
        result = run_suite(suite, policy, parallel="serial", env_host=host)
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

    def _held_out(
        self,
        index: int,
        spec: EnvSpec,
        sampling: SamplingParams,
        policy: TrainablePolicy,
        seat: str | None = None,
    ) -> EvalReport | MatchReport:
        config = self.config
        if config.self_play is None:
            seeds = self._heldout_seeds(index, spec)
            return evaluate(
                spec.id,
                policy,
                episodes=len(seeds),
                seeds=seeds,
                batch_size=len(seeds),
                sampling=sampling,
                env_kwargs=spec.eval_kwargs,
                env_host=self.env_workers.host if self.env_workers is not None else None,
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

    def _heldout_seeds(self, index: int, spec: EnvSpec) -> list[int]:
        """Reset seeds of env `index`'s held-out episodes, each posing a task none of the others
        does (a small test split re-asks problems when drawn by seed), found at the first
        evaluation; every evaluation asks the same ones."""
        if index not in self._eval_seeds:
            self._eval_seeds[index] = distinct_tasks(
                spec.id, self.config.eval_episodes, env_kwargs=spec.eval_kwargs, seed=EVAL_SEED
            )
        return self._eval_seeds[index]

    # --- the run ----------------------------------------------------------------------------------

    def run(self) -> TrainResult:
        config = self.config
        self._write_config()
        if self.step == 0:  # a fresh run does not append to an earlier run's metrics
            self.metrics.truncate_after(-1)
        if not self.evaluations:
            self.evaluate()
        bar = self._progress_bar() if config.progress else None
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
                    self._advance(bar, metrics)
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

    def _progress_bar(self) -> Any:
        from tqdm.auto import tqdm

        budget = self.config.time_budget
        if budget is not None:  # the budget is what ends such a run: count its seconds
            done = min(self.train_seconds, budget)
            seconds = "{l_bar}{bar}| {n:.0f}/{total:.0f} s [{elapsed}<{remaining}{postfix}]"
            return tqdm(
                total=budget, initial=done, desc="train", bar_format=seconds, dynamic_ncols=True
            )
        return tqdm(
            total=self.config.steps,
            initial=self.step,
            desc="train",
            unit="step",
            dynamic_ncols=True,
        )

    def _advance(self, bar: Any, metrics: dict[str, float]) -> None:
        if self.config.time_budget is not None:
            bar.update(min(self.train_seconds, self.config.time_budget) - bar.n)
        else:
            bar.update(1)
        held_out = self.evaluations[-1]["eval/success_rate"]
        postfix = _postfix({**metrics, "eval/success_rate": held_out})
        bar.set_postfix({"step": self.step, **postfix} if self.config.time_budget else postfix)

    def _out_of_time(self) -> bool:
        budget = self.config.time_budget
        return budget is not None and self.train_seconds >= budget

    # --- checkpoints ------------------------------------------------------------------------------

    def save_checkpoint(self) -> Path:
        folder = self.out / "checkpoints" / f"step-{self.step}"
        # Written aside and renamed into place: a run killed while saving leaves the previous
        # checkpoints as they were, and resume=True picks the latest complete one.
        partial = folder.with_name(f"{folder.name}.partial")
        shutil.rmtree(partial, ignore_errors=True)
        for name, policy in self._models().items():
            policy.save(partial / name)
        if isinstance(self.learner, SeatLearners):  # each seat's optimizer beside its model
            for seat, policy in self.seat_policies.items():
                seat_state = {
                    "learner": self.learner.learners[seat].state_dict(),
                    "trainable": _trainable_state(policy) if policy.lora else None,
                }
                save_state(seat_state, partial / seat / SEAT_STATE)
        per_seat = bool(self.seat_policies)
        state = {
            "step": self.step,
            "train_seconds": self.train_seconds,
            "evaluations": self.evaluations,
            "learner": None if per_seat else self.learner.state_dict(),
            "task_rng": self.task_rng.bit_generator.state,
            "sample_generator": self.sample_generator.get_state(),
            "trainable": (
                _trainable_state(self.policy) if self.policy.lora and not per_seat else None
            ),
            "curricula": [curriculum.state_dict() for curriculum in self.curricula],
            "snapshot": self.snapshot.model.state_dict() if self.snapshot is not None else None,
            "config": self.config.to_dict(),
        }
        save_state(state, partial / "trainer.pt")
        shutil.rmtree(folder, ignore_errors=True)
        partial.rename(folder)
        return folder

    def load_checkpoint(self, folder: str | Path) -> None:
        """Continue from a checkpoint of a run with the same config. Its state files are read
        without unpickling code (`rlvr.agents.checkpoints`): a tampered one is refused."""
        folder = Path(folder)
        if not (folder / "trainer.pt").is_file():
            raise TrainingError(f"{folder} is not a checkpoint (no trainer.pt)")
        state = load_state(folder / "trainer.pt")
        missing = sorted(set(CHECKPOINT_KEYS) - set(state))
        if missing:
            raise TrainingError(f"{folder}/trainer.pt is not a checkpoint: it has no {missing}")
        self._check_same_run(folder, state.get("config", {}))
        if isinstance(self.learner, SeatLearners):
            for seat, policy in self.seat_policies.items():
                seat_state = load_state(folder / seat / SEAT_STATE)
                _load_weights(policy, folder / seat, seat_state["trainable"])
                self.learner.learners[seat].load_state_dict(seat_state["learner"])
        else:
            _load_weights(self.policy, folder / "model", state["trainable"])
            self.learner.load_state_dict(state["learner"])
        if self.snapshot is not None:
            self.snapshot.model.load_state_dict(state["snapshot"])
        self.task_rng.bit_generator.state = state["task_rng"]
        self.sample_generator.set_state(state["sample_generator"])
        for curriculum, saved in zip(self.curricula, state.get("curricula", [])):
            curriculum.load_state_dict(saved)
        self.step = state["step"]
        self.train_seconds = state["train_seconds"]
        self.evaluations = state["evaluations"]
        self.metrics.truncate_after(self.step)

    def save_models(self, folder: Path) -> Path:
        """The trained model in `folder` (HF files), or with a policy per seat each seat's in
        `folder/<seat>`; returns `folder`."""
        if not self.seat_policies:
            return self.policy.save(folder)
        for seat, policy in self.seat_policies.items():
            policy.save(folder / seat)
        return folder

    def _check_same_run(self, folder: Path, saved: dict[str, Any]) -> None:
        """Refuse a checkpoint written with settings other than this run's, but for those in
        `MAY_CHANGE_ON_RESUME`: another algo, model or LoRA shape would load garbage or fail deep
        in torch, and another env, learner or sampling setting would make a run that no config
        describes."""
        changed = [
            f"{key} {before!r} (now {after!r})"
            for key, before, after in differences(
                TrainConfig, TrainConfig.from_older(saved), self.config.to_dict()
            )
            if key.split(".")[0] not in MAY_CHANGE_ON_RESUME
        ]
        if changed:
            raise TrainingError(
                f"{folder} was written by a run with other settings: {'; '.join(changed)}. "
                f"Only {', '.join(MAY_CHANGE_ON_RESUME)} may change on resume: resume with the "
                "run's settings (rlvr train --resume --out OUTDIR reads OUTDIR/config.toml), or "
                "start a fresh output_dir"
            )


def _start_env_workers(config: TrainConfig) -> Any:
    """The run's Ray env workers (an `rlvr.distributed.EnvWorkers`), or None without `ray`."""
    if config.ray is None:
        return None
    from rlvr.distributed import EnvWorkers

    return EnvWorkers(config.env_workers, address=config.ray)


def check_envs(config: TrainConfig) -> None:
    """Refuse envs the run cannot train on, naming the fix: a multi-agent env without
    `self_play`, a single-agent one with it, an unknown id or bad kwargs."""
    games = [spec.id for spec in config.envs if is_multiagent(spec.id)]
    if config.self_play is None:
        if games:
            raise ValueError(
                f"{games[0]} is a multi-agent env: train on it by self-play (--self-play, or "
                "TrainConfig(self_play=SelfPlayConfig()))"
            )
        check_env_specs(config.envs)
        return
    if config.ray is not None or config.async_rollouts:
        raise ValueError(
            "self-play runs its games in this process and on-policy: drop --ray and "
            "--async-rollouts (or train without --self-play)"
        )
    single = [spec.id for spec in config.envs if spec.id not in games]
    if single:
        raise ValueError(
            f"--self-play trains on multi-agent envs (rlvr envs marks them [multi-agent]); "
            f"{single[0]} is single-agent: drop it or train without --self-play"
        )
    check_game_specs(config.envs)
    make_policy_check(config.self_play)
    if config.self_play.policy_per_seat:
        game_seats(config.envs)  # the same seats in every env


def make_policy_check(self_play: SelfPlayConfig) -> None:
    """Build the fixed opponents once, so that a bad spec fails before the model loads."""
    for spec in (self_play.opponent, self_play.eval_opponent):
        if spec not in (SELF, SNAPSHOT):
            make_policy(spec)


def latest_checkpoint(output_dir: str | Path) -> Path | None:
    complete = {
        int(folder.name[len("step-") :]): folder
        for folder in (Path(output_dir) / "checkpoints").glob("step-*")
        if folder.name[len("step-") :].isdigit() and (folder / "trainer.pt").is_file()
    }
    return complete[max(complete)] if complete else None


def train(
    config: TrainConfig, *, resume: bool | str | Path = False, policy: TrainablePolicy | None = None
) -> TrainResult:
    """Run `config`; `resume=True` continues from the latest checkpoint in its output_dir (or
    pass a checkpoint folder)."""
    return prepare(config, resume=resume, policy=policy).run()


def prepare(
    config: TrainConfig, *, resume: bool | str | Path = False, policy: TrainablePolicy | None = None
) -> Trainer:
    """The `Trainer` of `config`, loaded from a checkpoint when `resume` says so (see `train`)."""
    trainer = Trainer(config, policy)
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


def rollout_specs(
    envs: Sequence[EnvSpec], curriculum: CurriculumConfig | None
) -> tuple[list[EnvSpec], list[tuple[int, int | None]]]:
    """The specs the rollouts play, and for each its (env index, curriculum level): the envs as
    given, or with a curriculum one spec per env and level (the level set in its kwargs)."""
    if curriculum is None:
        return list(envs), [(env, None) for env in range(len(envs))]
    specs: list[EnvSpec] = []
    levels: list[tuple[int, int | None]] = []
    for env, spec in enumerate(envs):
        for level in curriculum.levels:
            kwargs = {**spec.kwargs, curriculum.argument: level}
            specs.append(dataclasses.replace(spec, kwargs=kwargs))
            levels.append((env, level))
    return specs, levels


def rollout_metrics(episodes: Sequence[Episode], specs: Sequence[EnvSpec]) -> dict[str, float]:
    metrics = {"rollout/episodes": float(len(episodes))}
    metrics["rollout/infra_error_rate"] = _rate(sum(e.infra_error for e in episodes), len(episodes))
    for env_id, (errors, total) in infra_error_counts(episodes).items():
        metrics[f"rollout/{env_id}/infra_error_rate"] = _rate(errors, total)
    judged = [e for e in episodes if not e.infra_error]
    if not judged:  # no reward was measured: reporting the failed episodes' 0 would invent one
        return metrics
    rewards = np.array([e.reward for e in judged])
    metrics |= {
        "rollout/reward_mean": float(rewards.mean()),
        "rollout/reward_std": float(rewards.std()),
        "rollout/success_rate": float(np.mean(rewards >= 1.0)),
        "rollout/completion_tokens": float(np.mean([e.generated_tokens for e in judged])),
        "rollout/entropy": float(np.mean([e.entropy_estimate for e in judged])),
        "rollout/truncated_fraction": float(np.mean([e.completion_truncated for e in judged])),
        "rollout/turns": float(np.mean([e.record.turns for e in judged])),
    }
    if len(specs) > 1:
        for spec in specs:
            mine = [e.reward for e in judged if e.env_id == spec.id]
            if mine:
                metrics[f"rollout/{spec.id}/reward_mean"] = float(np.mean(mine))
    return metrics


# --- infrastructure errors ------------------------------------------------------------------------


def infra_error_counts(episodes: Sequence[Episode]) -> dict[str, tuple[int, int]]:
    """`{env id: (episodes with an infrastructure error, episodes)}` of one step."""
    counts: dict[str, tuple[int, int]] = {}
    for episode in episodes:
        errors, total = counts.get(episode.env_id, (0, 0))
        counts[episode.env_id] = (errors + episode.infra_error, total + 1)
    return counts


def _rate(errors: int, total: int) -> float:
    return errors / total if total else 0.0


@dataclass(frozen=True)
class InfraErrorRate:
    """An env's infra-error rate over the last `steps` steps."""

    env_id: str
    errors: int
    episodes: int
    steps: int

    @property
    def rate(self) -> float:
        return _rate(self.errors, self.episodes)

    def explain(self, limit: float, checkpoint: Path) -> str:
        return (
            f"{self.env_id}: {self.rate:.0%} of its episodes in the last {self.steps} steps "
            f"({self.errors} of {self.episodes}) hit an infrastructure error (our verifier, "
            f"sandbox or database failed, not the policy), above max_infra_error_rate={limit:g}: "
            "training on the rest would silently skew the tasks learned from. Fix the machinery "
            f"(`rlvr sandbox doctor` checks the sandboxes; `rlvr eval {self.env_id} --agent "
            "oracle` counts the errors), then continue from the checkpoint just saved "
            f"({checkpoint}) with --resume; or raise --max-infra-error-rate"
        )


class InfraErrorWindow:
    """Per-env infrastructure-error counts of the last `size` steps."""

    def __init__(self, size: int) -> None:
        self.steps: deque[dict[str, tuple[int, int]]] = deque(maxlen=size)

    def add(self, episodes: Sequence[Episode]) -> None:
        self.steps.append(infra_error_counts(episodes))

    def worst(self, needed: int) -> InfraErrorRate | None:
        """The env with the highest rate over the window, once it holds `needed` steps."""
        if len(self.steps) < needed:
            return None
        totals: dict[str, tuple[int, int]] = {}
        for counts in self.steps:
            for env_id, (errors, total) in counts.items():
                before = totals.get(env_id, (0, 0))
                totals[env_id] = (before[0] + errors, before[1] + total)
        rates = [InfraErrorRate(env, *counts, len(self.steps)) for env, counts in totals.items()]
        return max(rates, key=lambda entry: entry.rate, default=None)


def _seat_rollout_metrics(
    episodes: Sequence[Episode], specs: Sequence[EnvSpec]
) -> dict[str, float]:
    """`rollout_metrics` of each seat's episodes, under the seat (`rollout/player_0/...`)."""
    metrics: dict[str, float] = {}
    for seat in sorted({str(episode.seat) for episode in episodes}):
        mine = [episode for episode in episodes if episode.seat == seat]
        metrics |= {seat_key(k, seat): v for k, v in rollout_metrics(mine, specs).items()}
    return metrics


def _load_weights(
    policy: TrainablePolicy, folder: Path, trainable: dict[str, torch.Tensor] | None
) -> None:
    """Give `policy` the weights of a checkpoint: its LoRA adapters' trained state, or the
    weights of the HF folder `folder`."""
    if policy.lora is not None:
        assert trainable is not None  # saved with every LoRA checkpoint
        policy.model.load_state_dict(trainable, strict=False)
        return
    from transformers import AutoModelForCausalLM

    with _quiet_transformers():
        saved = AutoModelForCausalLM.from_pretrained(folder)
    policy.model.load_state_dict(saved.state_dict())


def _trainable_state(policy: TrainablePolicy) -> dict[str, torch.Tensor]:
    trainable = {name for name, p in policy.model.named_parameters() if p.requires_grad}
    return {k: v.detach().clone() for k, v in policy.model.state_dict().items() if k in trainable}


def _postfix(metrics: dict[str, float]) -> dict[str, str]:
    shown = {"reward": metrics.get("rollout/reward_mean")}
    if "eval/success_rate" in metrics:
        shown["held_out"] = metrics["eval/success_rate"]
    return {key: f"{value:.3f}" for key, value in shown.items() if value is not None}
