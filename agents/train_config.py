"""`TrainConfig`, the settings of a training run, and the checks that refuse a run it cannot
make before any model loads.

The config holds every setting of `rlvr train` (a field each; `rlvr.config` turns it into the
command's flags and a config file's keys) and a section per learner of the table
`rlvr.agents.learners.base.LEARNERS`, added when this module is first imported. Its
`__post_init__` refuses a bad value naming the fix; `check_envs` refuses envs the run cannot train
on (it makes them, so the trainer calls it, not the config).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from rlvr.agents.curriculum import CurriculumConfig
from rlvr.agents.hf import LoraSettings
from rlvr.agents.kinds import make_policy
from rlvr.agents.learners.base import (
    LEARNERS,
    RunSettings,
    learner_choices,
    with_learner_sections,
)
from rlvr.agents.policy import SamplingParams
from rlvr.agents.rollouts import EnvSpec, check_env_specs
from rlvr.agents.selfplay import (
    SELF,
    SNAPSHOT,
    SelfPlayConfig,
    check_game_specs,
    game_seats,
    is_multiagent,
)
from rlvr.config import Seed, check_numbers, cli, dump, read_text_file

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
    shared_turns: int = 0
    """Multi-turn envs: the first this many replies of each group are sampled once and shared
    by its `group_size` episodes, which then differ only in later replies, so the group's
    advantages compare only those (0: nothing shared). With 1 on a self-correction env, each
    group is G second attempts after the same first one: SCoRe's stage I trains the second
    attempt this way (pair it with the learner's per-turn weights, e.g. GRPO's
    `turn_pg_weight=(0.0, 1.0)` and `turn_beta=(1.0, 0.0)`). The env must be deterministic
    given its seed and the replies (every built-in env is); not with `self_play`."""
    shared_greedy: bool = False
    """Decode the shared replies (`shared_turns`) greedily, as held-out evaluation does, so the
    later replies train on the states evaluation reaches: on a self-correction env, a second
    attempt after the first answer the model is surest of was wrong."""
    eval_every: int = 10
    """Evaluate on the held-out split every this many steps (0: only before and after)."""
    eval_episodes: int = 100
    """Held-out episodes per env per evaluation (greedy decoding), each a distinct task (fewer
    when the held-out split holds fewer)."""
    eval_suite: str | None = None
    """Evaluate on this leaderboard suite instead (a built-in name such as "demo", or a suite
    .toml file): its envs, tasks, sampling and batches, run as `rlvr bench` runs them, so each
    held-out figure is the score `rlvr bench --suite` stores for the model at that step
    (`eval_episodes` is then unused). Single-agent envs only. The trainer loads it, before the
    model, through the `SuiteEvaluator` it is given (`rlvr train` gives the leaderboards' one;
    from Python pass `suite_evaluator=rlvr.leaderboards.training.BenchSuiteEvaluator()`)."""
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
        if self.shared_turns < 0:
            raise ValueError(
                f"shared_turns must be >= 0 (0: nothing shared), got {self.shared_turns}"
            )
        if self.shared_greedy and not self.shared_turns:
            raise ValueError("shared_greedy decodes the shared replies: set shared_turns >= 1 too")
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
        if self.shared_turns and self.self_play is not None:
            raise ValueError("shared_turns works on single-agent envs: set it to 0 with self_play")
        if self.eval_suite is not None and self.self_play is not None:
            raise ValueError(
                "eval_suite runs single-agent suites; self-play's evaluation is the win rate "
                "against self_play.eval_opponent: remove eval_suite"
            )
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
