"""The learner seam: the `Learner` protocol the trainer calls, and `LEARNERS`, the one table of
learners by `--algo` name.

A learner is one file (a config dataclass and a class with `update`, `state_dict` and
`load_state_dict`) plus one `LearnerKind` entry below. The table gives `TrainConfig` everything
it knows about learners: the `algo` choices, a section per learner named after it (`grpo`,
`ppo`, `rloo`: the `[grpo]` table of a config file, the `--grpo.lr` flags), what each learner
needs of the run (episodes per task, stale rollouts) and how to build it. CONTRIBUTING.md walks
through adding one.

Like `rlvr.agents.kinds`, this module imports neither torch nor the learners it lists: an entry
names its config and builder by import string, loaded when a run needs them.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    from rlvr.agents.policy import TrainablePolicy
    from rlvr.agents.rollouts import Episode

T = TypeVar("T")


@runtime_checkable
class Learner(Protocol):
    """What the trainer calls on a learner."""

    def update(self, episodes: Sequence[Episode]) -> dict[str, float]:
        """One update from a step's episodes (infra errors included: the learner drops them);
        returns metrics (`losses/...`, `charts/...`, `rollout/infra_errors`)."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """Everything a checkpoint needs to continue bit for bit (optimizer, schedules,
        generators), as plain data: tensors, numbers, strings, lists and dicts."""
        ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


@dataclass(frozen=True)
class RunSettings:
    """The run's settings a learner may depend on. `TrainConfig` owns them (each setting has one
    owner) and gives them to the learner it builds."""

    temperature: float
    """Sampling temperature of the rollouts (log-probabilities are computed at it)."""
    max_new_tokens: int
    """Longest reply per turn, in ids."""
    completion_budget: int
    """The most ids an episode may generate (`max_new_tokens` times the turn limit)."""
    seed: int
    """The run's seed (for a learner's own random choices, e.g. minibatch order)."""
    group_size: int
    """Episodes per task in a step."""
    episodes_per_step: int
    """Episodes a step hands to `update` (tasks x `group_size`)."""

    def __post_init__(self) -> None:
        sampled_temperature(self.temperature, "sampling.temperature")


def sampled_temperature(temperature: float, name: str = "temperature") -> float:
    """`temperature` if a learner can train at it, else ValueError naming the fix. The one owner
    of this rule: `SamplingParams` checks a temperature's range (0 is greedy) and `RunSettings`
    (what `TrainConfig` gives its learner) or a learner made directly calls this."""
    if not temperature > 0:
        raise ValueError(
            f"{name} must be > 0: RL trains on sampled replies (e.g. --temperature 1; held-out "
            "evaluation is greedy either way)"
        )
    return temperature


Builder = Callable[[Any, Any, RunSettings], Learner]
"""`build(policy, config, run) -> Learner`: a learner class whose `__init__` takes those three, or
a function adapting them to its constructor."""
Check = Callable[[Any, RunSettings], None]
"""`check(config, run)` raises ValueError naming the fix when the learner's config contradicts the
run's settings; it runs when `TrainConfig` is made, before any model loads."""


@dataclass(frozen=True)
class LearnerKind:
    """One learner, as `--algo` names it."""

    name: str
    """`--algo NAME`; also the `TrainConfig` section holding its config (`--NAME.lr`, `[NAME]`)."""
    config: type | str
    """Its config dataclass (each field with a default), or the import string `"module:Class"`."""
    build: Builder | str
    """`build(policy, config, run) -> Learner`, or the import string `"module:function"` of one."""
    help: str
    """One line for `--algo`'s help."""
    min_group_size: int = 1
    """The fewest episodes per task it can learn from (2 when it compares a task's episodes)."""
    stale_rollouts: bool = False
    """It corrects episodes sampled by older weights, so it can train with `async_rollouts`."""
    check: Check | None = None
    """`check(config, run)`: refuse a config that contradicts the run (None: nothing to check)."""

    def __post_init__(self) -> None:
        if not (self.name.isidentifier() and self.name.islower()):
            raise ValueError(
                "a learner's name is a TrainConfig section and a flag prefix: use a lower-case "
                f"identifier such as 'rloo', got {self.name!r}"
            )
        for what, value in (("config", self.config), ("build", self.build)):
            if isinstance(value, str) and ":" not in value:
                raise ValueError(
                    f"learner {self.name!r}: {what}={value!r} must be a class or function, or an "
                    "import string 'module:attribute'"
                )
        if self.min_group_size < 1:
            raise ValueError(f"learner {self.name!r}: min_group_size must be >= 1")

    @property
    def config_class(self) -> type:
        return _load(self.config) if isinstance(self.config, str) else self.config

    def make(self, policy: TrainablePolicy, config: Any, run: RunSettings) -> Learner:
        """The learner for `policy` with its `config` and the run's settings."""
        build: Builder = _load(self.build) if isinstance(self.build, str) else self.build
        return build(policy, config, run)

    def check_run(self, config: Any, run: RunSettings, async_rollouts: bool) -> None:
        """Refuse, naming the fix, a run this learner cannot train."""
        if run.group_size < self.min_group_size:
            raise ValueError(
                f"{self.name} compares episodes within a group: set group_size >= "
                f"{self.min_group_size} (e.g. 8)"
            )
        if async_rollouts and not self.stale_rollouts:
            correcting = [kind.name for kind in LEARNERS.values() if kind.stale_rollouts]
            raise ValueError(
                f"async_rollouts trains on rollouts of older weights, which only "
                f"{', '.join(correcting)} corrects for: use algo={correcting[0]!r}, or "
                f"async_rollouts=False with {self.name}"
            )
        if self.check is not None:
            self.check(config, run)


def _load(target: str) -> Any:
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


# --- the built-in learners ------------------------------------------------------------------------


def _grpo(policy: TrainablePolicy, config: Any, run: RunSettings) -> Learner:
    from rlvr.agents.learners.grpo import GRPOLearner

    return GRPOLearner(
        policy,
        config,
        temperature=run.temperature,
        completion_budget=run.completion_budget,
        max_new_tokens=run.max_new_tokens,
    )


def _check_grpo(config: Any, run: RunSettings) -> None:
    overlong_buffer_fits(config.overlong_buffer, run.max_new_tokens)


def overlong_buffer_fits(overlong_buffer: int, max_new_tokens: int) -> None:
    """Refuse a GRPO overlong buffer that leaves no reply unpenalised (at config time, through
    `_check_grpo`, and when a `GRPOLearner` is made directly)."""
    if overlong_buffer >= max_new_tokens:
        raise ValueError(
            f"grpo.overlong_buffer ({overlong_buffer}) must be below max_new_tokens "
            f"({max_new_tokens}): the penalty ramps over the last ids of a reply's budget"
        )


def _ppo(policy: TrainablePolicy, config: Any, run: RunSettings) -> Learner:
    from rlvr.agents.learners.ppo import PPOLearner

    return PPOLearner(policy, config, temperature=run.temperature, seed=run.seed)


def _check_ppo(config: Any, run: RunSettings) -> None:
    if config.minibatches > run.episodes_per_step:
        raise ValueError(
            f"ppo.minibatches={config.minibatches} is more than the {run.episodes_per_step} "
            "episodes of a step (prompts_per_step x group_size): lower it or raise the batch"
        )


LEARNERS: dict[str, LearnerKind] = {
    kind.name: kind
    for kind in (
        LearnerKind(
            "grpo",
            "rlvr.agents.learners.grpo:GRPOConfig",
            _grpo,
            "GRPO with the DAPO and Dr. GRPO variants: a task's episodes against their group",
            min_group_size=2,
            stale_rollouts=True,
            check=_check_grpo,
        ),
        LearnerKind(
            "ppo",
            "rlvr.agents.learners.ppo:PPOConfig",
            _ppo,
            "PPO with GAE and a value head or critic",
            check=_check_ppo,
        ),
        LearnerKind(
            "rloo",
            "rlvr.agents.learners.rloo:RLOOConfig",
            "rlvr.agents.learners.rloo:RLOOLearner",
            "REINFORCE with a leave-one-out baseline: each episode against the others of its task",
            min_group_size=2,
        ),
    )
}
"""Every learner by `--algo` name; `register_learner` adds one from outside the library."""

_SECTIONED: list[type] = []  # the config classes that were given a section per learner


def register_learner(kind: LearnerKind) -> LearnerKind:
    """Add `kind` to the table (replacing one of the same name). `TrainConfig` makes its sections
    from the table when `rlvr.agents.train_config` (which `rlvr.agents.train` imports) is first
    imported: register before that."""
    if _SECTIONED:
        raise RuntimeError(
            f"register learner {kind.name!r} before importing rlvr.agents.train (or "
            "rlvr.agents.train_config): TrainConfig has a section per learner, made from the "
            "table when its module loads"
        )
    LEARNERS[kind.name] = kind
    return kind


def learner_choices() -> str:
    """`--algo`'s help: each learner with its line."""
    return "; ".join(f"{kind.name}: {kind.help}" for kind in LEARNERS.values())


def with_learner_sections(cls: type[T]) -> type[T]:
    """Give `cls` (before `@dataclass` makes it a dataclass) a field per learner of the table,
    named after it and holding its config: `grpo: GRPOConfig = field(default_factory=...)`."""
    annotations = dict(inspect.get_annotations(cls))
    for kind in LEARNERS.values():
        if kind.name in annotations:
            raise ValueError(f"learner {kind.name!r} is also a {cls.__name__} setting: rename it")
        config_class = kind.config_class
        annotations[kind.name] = config_class
        setattr(cls, kind.name, dataclasses.field(default_factory=config_class))
    cls.__annotations__ = annotations
    _SECTIONED.append(cls)
    return cls
