"""The `Policy` protocol: what the episode loop, the agents and the leaderboards rely on.

A policy turns a batch of conversations into completions (`generate`); `SamplingParams` says how
to sample and `Completion` is one reply. It sits in the ground layer (`rlvr.core`) because the
episode loop (`rlvr.rollout`), below the agents, plays episodes with any policy. Trainable
policies need more (token ids, the model): that is `rlvr.agents.policy.TrainablePolicy`, which
re-exports everything here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Protocol, runtime_checkable

from rlvr.core.fields import Range, Seed, check_numbers, cli

if TYPE_CHECKING:
    import gymnasium as gym

Message = dict[str, Any]
Conversation = list[Message]


@dataclass(frozen=True)
class SamplingParams:
    """How to sample: the one sampling section of every command (`rlvr train`'s rollouts,
    `rlvr eval`, `rlvr bench`, the arena) and of the `[sampling]` table of their files and
    suites. Each field is checked here, once; its flag is the same in every command
    (`--temperature`, `--top-p`, `--top-k`, `--max-new-tokens`, `--stop`, `--sampling.seed`)."""

    temperature: Annotated[float, Range(0, why="0 is greedy: e.g. --temperature 0")] = field(
        default=1.0, metadata=cli("--temperature")
    )
    """Sampling temperature (0: greedy decoding)."""
    top_p: Annotated[float, Range(0, 1, why="1 keeps every token: e.g. --top-p 1", open=True)] = (
        field(default=1.0, metadata=cli("--top-p"))
    )
    """Nucleus sampling: sample among the most likely tokens holding this much probability."""
    top_k: Annotated[int, Range(0, why="0 keeps every token: e.g. --top-k 0")] = field(
        default=0, metadata=cli("--top-k")
    )
    """Sample among the k most likely tokens (0: all of them)."""
    max_new_tokens: Annotated[int, Range(1, why="e.g. --max-new-tokens 64")] = field(
        default=256, metadata=cli("--max-new-tokens")
    )
    """Longest reply per turn, in tokens."""
    stop: tuple[str, ...] = field(default=(), metadata=cli("--stop"))
    """Stop strings that end a reply."""
    seed: Seed | None = None
    """Seed of the policy's sampling generator (None: the policy's own)."""

    def __post_init__(self) -> None:
        check_numbers(self)
        if isinstance(self.stop, str) or not all(isinstance(s, str) and s for s in self.stop):
            raise ValueError("stop must be a tuple of non-empty strings, e.g. stop=('</answer>',)")
        object.__setattr__(self, "stop", tuple(self.stop))

    def check_samples(self, samples: int, fix: str = "set temperature > 0") -> None:
        """Refuse `samples` > 1 replies per task drawn greedily: they would all be the same."""
        if samples > 1 and self.temperature == 0:
            raise ValueError(
                f"samples={samples} with temperature=0 draws the same reply {samples} times; "
                f"{fix} (or samples = 1)"
            )


@dataclass
class Completion:
    """One sampled reply. `finish_reason` is "stop" (end of text or a stop string) or "length"."""

    text: str
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    finish_reason: str = "stop"
    metadata: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Policy(Protocol):
    """Generates `n` completions per conversation: result[i][j] is sample j of conversation i."""

    def generate(
        self,
        conversations: Sequence[Conversation],
        n: int = 1,
        sampling: SamplingParams | None = None,
    ) -> list[list[Completion]]: ...


@runtime_checkable
class EnvAware(Protocol):
    """A policy that must see the environments (the oracle baseline).

    Runners call `attach(envs)` before `generate`; conversation i then comes from `envs[i]`.
    """

    def attach(self, envs: Sequence[gym.Env]) -> None: ...
