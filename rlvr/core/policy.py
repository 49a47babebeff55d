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
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import gymnasium as gym

Message = dict[str, Any]
Conversation = list[Message]


@dataclass(frozen=True)
class SamplingParams:
    """How to sample. `temperature=0` means greedy decoding."""

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    max_new_tokens: int = 256
    stop: tuple[str, ...] = ()
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0 (0 is greedy), got {self.temperature}")
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.top_k < 0:
            raise ValueError(f"top_k must be >= 0 (0 disables it), got {self.top_k}")
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if isinstance(self.stop, str) or not all(isinstance(s, str) and s for s in self.stop):
            raise ValueError("stop must be a tuple of non-empty strings, e.g. stop=('</answer>',)")


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
