"""Rollouts for training: episodes as token ids with loss masks, from any registered env.

`RolloutCollector.collect(tasks)` plays `group_size` episodes of each task (the same env and
seed, so the same problem: the group baseline GRPO needs), single- or multi-turn, all batched. It
uses the episode loop of evaluation and leaderboard replay (`rlvr.rollout.play_episodes`) with a
token-level actor:

- the first prompt is the chat template applied to the env's opening messages;
- every reply is sampled from the episode's running ids, and its ids go in with loss mask 1;
- the env's next messages are appended as ids (`TrainablePolicy.encode_followup`) with loss
  mask 0, so the ids trained on are exactly the ids generated, never a re-tokenized history;
- each turn's reward is attached to the last id of that turn's reply;
- episodes flagged `infra_error` are kept (for the metrics) but carry `infra_error=True`; the
  learners drop them from the loss.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import gymnasium as gym

from rlvr.agents.policy import Completion, Sample, SamplingParams, TrainablePolicy
from rlvr.config import check_numbers, cli
from rlvr.rollout.episodes import play_episodes
from rlvr.rollout.hosts import EnvBatch, LocalEnvs
from rlvr.rollout.records import EpisodeRecord, Start


@dataclass(frozen=True)
class EnvSpec:
    """One environment of a training run, with its share of the prompts."""

    id: str
    """Registered env id, e.g. "rlvr/Math-v0"."""
    weight: float = 1.0
    """Relative share of this env's tasks among the prompts of a step."""
    kwargs: Mapping[str, Any] = field(default_factory=dict, metadata=cli("--kwargs"))
    """`gym.make` keyword arguments for training episodes."""
    heldout_kwargs: Mapping[str, Any] | None = field(default=None, metadata=cli("--heldout-kwargs"))
    """Keyword arguments for held-out evaluation (default: `kwargs` plus `split="test"`; a wrapper
    env such as rlvr/MathSelfCorrect-v0 gives the split to the env it wraps)."""

    def __post_init__(self) -> None:
        check_numbers(self)
        if not self.weight > 0:
            raise ValueError(f"{self.id}: weight must be > 0, got {self.weight}")

    @property
    def eval_kwargs(self) -> dict[str, Any]:
        if self.heldout_kwargs is not None:
            return dict(self.heldout_kwargs)
        return {**self.kwargs, "split": "test"}

    @classmethod
    def parse(cls, text: str, kwargs: Mapping[str, Any] | None = None) -> EnvSpec:
        """`ID` or `ID=WEIGHT` (the command line's `--env` syntax)."""
        env_id, _, weight = text.partition("=")
        try:
            share = float(weight) if weight else 1.0
        except ValueError:
            raise ValueError(f"--env {text!r}: use ID or ID=WEIGHT, e.g. rlvr/Math-v0=2") from None
        return cls(env_id, share, dict(kwargs or {}))  # its ValueError names the weight's problem


def check_env_specs(specs: Sequence[EnvSpec]) -> None:
    """Make (and close) each env with its training and its held-out kwargs, so that an unknown id
    or an argument the env does not take fails at once, naming the fix, not after a model loaded
    or at the first evaluation."""
    for spec in specs:
        made = [("kwargs", dict(spec.kwargs)), ("held-out kwargs", spec.eval_kwargs)]
        if made[1][1] == made[0][1]:  # evaluation on the training distribution: make it once
            made.pop()
        for what, kwargs in made:
            try:
                gym.make(spec.id, **kwargs).close()
            except gym.error.Error as exc:  # unknown namespace, name or version
                raise ValueError(
                    f"{spec.id}: {exc} (`rlvr envs` lists the registered ids; an env of your own "
                    "must be registered before training)"
                ) from None
            except TypeError as exc:
                if what == "held-out kwargs" and spec.heldout_kwargs is None:
                    raise ValueError(
                        f"{spec.id} does not take split='test' for its held-out tasks ({exc}); "
                        "give its held-out kwargs: EnvSpec(heldout_kwargs=...) or --heldout-kwargs"
                    ) from None
                raise ValueError(f"{spec.id}: bad {what} {kwargs}: {exc}") from None


@dataclass
class Episode:
    """One episode as a learner consumes it."""

    record: EpisodeRecord
    """Messages, per-turn rewards, verdict and flags (as evaluation records them)."""
    env_id: str
    group: int
    """Index of the task in the step; episodes with the same group share the task."""
    token_ids: list[int]
    """The whole episode's ids: prompt, replies and environment messages."""
    loss_mask: list[int]
    """1 for ids the policy generated, 0 for prompt and environment ids."""
    sampler_logprobs: list[float]
    """Log-probability of each generated id when it was sampled (0.0 elsewhere)."""
    turn_ends: list[int]
    """Index in `token_ids` of the last id of each reply; turn k's reward attaches there."""
    prompt_length: int
    """Ids before the first generated id."""
    completion_truncated: bool = False
    """A reply hit `max_new_tokens` before ending (DAPO masks these)."""
    spec_index: int = 0
    """Index of the episode's `EnvSpec` among the collector's specs."""
    policy_lag: int = 0
    """Learner updates made since the weights that sampled it (asynchronous rollouts; 0 when
    on-policy)."""
    seat: str | None = None
    """The agent this episode played in a multi-agent game (`rlvr.agents.selfplay`), else None."""

    @property
    def reward(self) -> float:
        return self.record.total_reward

    @property
    def turn_rewards(self) -> list[float]:
        return self.record.rewards

    @property
    def infra_error(self) -> bool:
        return self.record.infra_error

    @property
    def generated_tokens(self) -> int:
        return sum(self.loss_mask)

    @property
    def reply_lengths(self) -> list[int]:
        """Ids generated in each reply (the runs of 1 in `loss_mask`), in turn order."""
        lengths: list[int] = []
        previous = 0
        for flag in self.loss_mask:
            if flag and not previous:
                lengths.append(0)
            if flag:
                lengths[-1] += 1
            previous = flag
        return lengths

    @property
    def entropy_estimate(self) -> float:
        """Mean negative log-probability of the generated ids as sampled: an unbiased estimate
        of the policy's per-token entropy along this episode (0.0 when nothing was generated)."""
        sampled = [-lp for lp, flag in zip(self.sampler_logprobs, self.loss_mask) if flag]
        return sum(sampled) / len(sampled) if sampled else 0.0


@dataclass
class _Trace:
    token_ids: list[int] = field(default_factory=list)
    loss_mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    turn_ends: list[int] = field(default_factory=list)
    messages_seen: int = 0
    eos_id: int | None = None  # the end-of-sequence id the last reply ended with
    prompt_length: int = 0
    truncated: bool = False

    def extend(self, ids: Sequence[int], generated: bool, logprobs: Sequence[float] = ()) -> None:
        self.token_ids.extend(ids)
        self.loss_mask.extend([int(generated)] * len(ids))
        self.logprobs.extend(logprobs if generated else [0.0] * len(ids))


class _TokenActor:
    """The `act` of `play_episodes` that keeps each episode's ids (token-in/token-out)."""

    def __init__(
        self,
        policy: TrainablePolicy,
        size: int,
        sampling: SamplingParams,
        generator: Any,
        shared: tuple[int, int, SamplingParams] | None = None,
    ) -> None:
        self.policy = policy
        self.sampling = sampling
        self.generator = generator
        self.traces = [_Trace() for _ in range(size)]
        # (turns, group size, how they are decoded) of the replies a group shares
        self.shared_turns, self.group_size, self.shared_sampling = shared or (0, 1, sampling)

    def __call__(self, active: list[int], records: list[EpisodeRecord]) -> list[Completion | None]:
        opening: dict[str, list[int]] = {}  # the G episodes of a group share their prompt
        for i, record in zip(active, records):
            trace, conversation = self.traces[i], record.messages
            if not trace.token_ids:
                key = repr(conversation)
                if key not in opening:
                    opening[key] = self.policy.encode_prompt(conversation)
                trace.extend(opening[key], generated=False)
                trace.prompt_length = len(trace.token_ids)
            else:  # the reply is message `messages_seen`; the env's new messages follow it
                reply_end = trace.messages_seen + 1
                followup = self.policy.encode_followup(
                    conversation[:reply_end], conversation[reply_end:], trace.eos_id
                )
                trace.extend(followup, generated=False)
            trace.messages_seen = len(conversation)
        samples = self._sample(active)
        replies: list[Completion | None] = []
        for i, sample in zip(active, samples):
            trace = self.traces[i]
            trace.extend(sample.token_ids, generated=True, logprobs=sample.logprobs)
            trace.turn_ends.append(len(trace.token_ids) - 1)
            last = sample.token_ids[-1]
            trace.eos_id = last if last in self.policy.eos_ids else None
            trace.truncated = trace.truncated or sample.finish_reason == "length"
            replies.append(self.policy.to_completion(sample))
        return replies

    def _sample(self, active: list[int]) -> list[Sample]:
        """One reply per active episode; within its first `shared_turns` replies a group samples
        once and every episode of it gets that reply (its envs are then in the same state)."""
        leaders: dict[int, int] = {}  # episode -> the episode whose sample it takes
        for i in active:
            if len(self.traces[i].turn_ends) < self.shared_turns:
                leaders[i] = leaders.setdefault(-1 - i // self.group_size, i)
        samples: dict[int, Sample] = {}
        for drawn, sampling in (
            ([i for i in active if leaders.get(i) == i], self.shared_sampling),
            ([i for i in active if i not in leaders], self.sampling),
        ):
            prompts = [self.traces[i].token_ids for i in drawn]
            if prompts:
                samples.update(zip(drawn, self.policy.sample(prompts, sampling, self.generator)))
        return [samples[leaders.get(i, i)] for i in active]


def check_collector_args(group_size: int, envs: Sequence[EnvSpec], what: str) -> None:
    """The checks every collector makes of its arguments; `what` names the env kind expected."""
    if group_size < 1:
        raise ValueError(f"group_size must be >= 1, got {group_size}")
    if not envs:
        raise ValueError(f"give at least one {what}")


class RolloutCollector:
    """Plays groups of episodes with a `TrainablePolicy` (an `HFPolicy`, or your own).

    `shared_turns` k > 0: the first k replies of a group are sampled once (decoded greedily with
    `shared_greedy`) and shared by its episodes, so the group differs only in what follows them
    (see `TrainConfig.shared_turns`).
    """

    def __init__(
        self,
        policy: TrainablePolicy,
        envs: Sequence[EnvSpec],
        *,
        group_size: int,
        sampling: SamplingParams,
        max_turns: int | None = None,
        shared_turns: int = 0,
        shared_greedy: bool = False,
    ) -> None:
        check_collector_args(group_size, envs, "EnvSpec")
        if shared_turns < 0:
            raise ValueError(f"shared_turns must be >= 0 (0: nothing shared), got {shared_turns}")
        self.policy = policy
        self.specs = list(envs)
        self.group_size = group_size
        self.sampling = sampling
        self.max_turns = max_turns
        self.shared_turns = shared_turns
        self.shared_sampling = replace(sampling, temperature=0.0) if shared_greedy else sampling
        self._pools: dict[int, list[gym.Env]] = {}

    def collect(self, tasks: Sequence[tuple[int, int]], generator: Any = None) -> list[Episode]:
        """Play `group_size` episodes of each task `(env index, seed)`; group g is `tasks[g]`.

        `generator` (a torch.Generator) drives sampling; None uses the policy's own.
        """
        slots = [(group, spec, seed) for group, (spec, seed) in enumerate(tasks)]
        slots = [slot for slot in slots for _ in range(self.group_size)]
        envs = self._batch([spec for _, spec, _ in slots])
        starts = [
            Start(group, i % self.group_size, seed) for i, (group, _, seed) in enumerate(slots)
        ]
        shared = (self.shared_turns, self.group_size, self.shared_sampling)
        actor = _TokenActor(self.policy, len(slots), self.sampling, generator, shared)
        try:
            records = play_episodes(envs, starts, actor, max_turns=self.max_turns)
        finally:
            envs.close()  # the collector's own pools stay open; leased remote envs go back
        return [
            Episode(
                record=record,
                env_id=self.specs[spec].id,
                group=group,
                token_ids=trace.token_ids,
                loss_mask=trace.loss_mask,
                sampler_logprobs=trace.logprobs,
                turn_ends=trace.turn_ends,
                prompt_length=trace.prompt_length,
                completion_truncated=trace.truncated,
                spec_index=spec,
            )
            for record, trace, (group, spec, _) in zip(records, actor.traces, slots)
        ]

    def close(self) -> None:
        for pool in self._pools.values():
            for env in pool:
                env.close()
        self._pools.clear()

    def _batch(self, specs: Sequence[int]) -> EnvBatch:
        """The envs of a step: position i plays an episode of `self.specs[specs[i]]`. Here, from
        pools kept between steps; `RayRolloutCollector` makes them on Ray env workers."""
        envs: list[gym.Env] = []
        used: dict[int, int] = {}
        for spec in specs:
            envs.append(self._env(spec, used.get(spec, 0)))
            used[spec] = used.get(spec, 0) + 1
        return LocalEnvs(envs)

    def _env(self, spec: int, position: int) -> gym.Env:
        pool = self._pools.setdefault(spec, [])
        while len(pool) <= position:
            pool.append(gym.make(self.specs[spec].id, **dict(self.specs[spec].kwargs)))
        return pool[position]
