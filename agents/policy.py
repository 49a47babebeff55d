"""`TrainablePolicy`: what the rollout collector, the learners and the trainer call on a policy.

The `Policy` protocol itself (`generate`, `Completion`, `SamplingParams`, `EnvAware`) lives in the
ground layer, `rlvr.core.policy`, because the episode loop below the agents uses it; it is
re-exported here. Trainable policies also return the generated token ids and their
log-probabilities, and the learners need more of them: that is `TrainablePolicy`. Nothing here
imports torch (its types are named for type checkers only).
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from rlvr.core.policy import (
    Completion,
    Conversation,
    EnvAware,
    Message,
    Policy,
    SamplingParams,
)

if TYPE_CHECKING:
    import torch

    from rlvr.agents.hf import LoraSettings

__all__ = [
    "Completion",
    "Conversation",
    "EnvAware",
    "Message",
    "PadToken",
    "Policy",
    "Sample",
    "SamplingParams",
    "TrainablePolicy",
]


@dataclass
class Sample:
    """One sampled continuation of a token sequence: the new ids, their log-probabilities under
    the policy at the sampling temperature, and why it ended ("stop": an end-of-sequence id or a
    stop string; "length": the token budget or the context ran out)."""

    token_ids: list[int]
    logprobs: list[float]
    finish_reason: str


class PadToken(Protocol):
    """The part of a tokenizer the learners use: the id that pads a batch (masked out)."""

    @property
    def pad_token_id(self) -> int: ...


@runtime_checkable
class TrainablePolicy(Policy, Protocol):
    """What the rollout collector, the learners (GRPO, PPO) and the trainer call on a policy.

    `HFPolicy` is one; bring your own by providing these members (docs/agents.md). Rollouts work
    on token ids, never re-tokenised text: `encode_prompt` gives an episode's first ids, `sample`
    extends id sequences, `encode_followup` gives the ids of the environment's next messages to
    append after a reply. The learners compute log-probabilities themselves, by running `model`
    (a causal LM called as `model(input_ids=..., attention_mask=..., ...)` that returns `.logits`
    and, when asked, `.hidden_states` and its key/value cache: `.cache`, or `.past_key_values` in
    older transformers, see rlvr.agents.compat) on the episodes' ids.
    """

    @property
    def model(self) -> torch.nn.Module:
        """The network being trained, on `device` (PPO also reads `model.config.hidden_size`)."""
        ...

    @property
    def tokenizer(self) -> PadToken:
        """Its tokenizer; the learners read `pad_token_id` to pad batches."""
        ...

    @property
    def device(self) -> torch.device:
        """Where `model` lives; batches are moved there."""
        ...

    @property
    def lora(self) -> LoraSettings | None:
        """LoRA settings when only adapters train: the KL reference is then `model` with its
        adapters disabled (`model.disable_adapter()`), else a frozen copy of `model`."""
        ...

    @property
    def eos_ids(self) -> Collection[int]:
        """The ids that end a reply (a model may have several)."""
        ...

    def encode_prompt(self, messages: Conversation) -> list[int]:
        """Ids of a conversation followed by the assistant's generation prompt."""
        ...

    def encode_followup(
        self, history: Conversation, new_messages: Conversation, eos_id: int | None
    ) -> list[int]:
        """Ids to append after a generated reply (the last message of `history`): the end of the
        assistant turn (less `eos_id`, the end-of-sequence id the reply ended with, if any), the
        environment's `new_messages` and the next generation prompt."""
        ...

    def sample(
        self,
        prompts: Sequence[Sequence[int]],
        sampling: SamplingParams,
        generator: torch.Generator | None = None,
    ) -> list[Sample]:
        """Continue each id sequence once; `generator` (None: the policy's own) drives sampling."""
        ...

    def to_completion(self, sample: Sample) -> Completion:
        """A `Sample` as the `Completion` an env episode records (decoded text, ids, logprobs)."""
        ...

    def trainable_parameters(self) -> list[torch.nn.Parameter]:
        """The parameters the learner's optimizer updates."""
        ...

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the policy to the folder `path` (checkpoints, the final model); return it."""
        ...
