"""RLOO: REINFORCE with a leave-one-out baseline (Ahmadian et al., 2024, "Back to Basics:
Revisiting REINFORCE Style Optimization for Learning from Human Feedback in LLMs"), in one file.

For each task, k episodes are sampled (one group, k = the run's `group_size`). An episode is one
action: its reward R_i is its return, less `kl_coef` times its log-ratio to the frozen starting
policy (the sum over its generated ids of log pi - log pi_ref, as the paper puts the KL penalty
in the reward). Its baseline is the mean reward of the *other* k - 1 episodes of its group:

    A_i = R_i - 1/(k-1) * sum_{j != i} R_j        (= k/(k-1) * (R_i - mean of the group))

The baseline does not depend on episode i, so the estimate stays unbiased, and no value network
is needed. The loss is REINFORCE with the episode's log-probability, the sum over the ids the
policy generated in it, averaged over the batch's N episodes:

    loss = -1/N * sum_i A_i * sum_t log pi(id_t of episode i)

One optimizer step per batch, on-policy: the gradient is taken at the weights that sampled (so
there is no ratio to clip). N is the whole batch's, so micro-batches accumulate the same update.

Multi-turn episodes are handled like GRPO's without `turn_credit`: the episode is the action, its
return (the sum of its turn rewards) is R_i, and every id it generated, in every turn, gets A_i.
Turn rewards count only through that sum; for per-turn credit use GRPO's `turn_credit` or PPO.

A group of one episode (its others hit infrastructure errors, which are dropped first) has no
baseline: its advantage is 0 and it does not move the policy. A group whose rewards are all
equal gets exactly 0 too. `TrainConfig` refuses `group_size < 2` for RLOO.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from rlvr.agents.errors import TrainingError
from rlvr.agents.learners.base import RunSettings
from rlvr.agents.learners.common import (
    Batch,
    FrozenReference,
    clip_gradients,
    forward,
    judged_episodes,
    make_batch,
    micro_batches,
)
from rlvr.agents.policy import TrainablePolicy
from rlvr.agents.rollouts import Episode
from rlvr.config import check_numbers, cli


@dataclass(frozen=True)
class RLOOConfig:
    """Hyperparameters of the RLOO learner. The run's settings (temperature, group size) belong to
    `TrainConfig`, which gives them to `RLOOLearner`."""

    lr: float = field(default=1e-6, metadata=cli("--lr"))
    """AdamW learning rate (1e-6 suits billion-parameter models; tiny models want ~2e-4)."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    kl_coef: float = field(default=0.0, metadata=cli("--kl-coef"))
    """Weight of the KL penalty to the frozen starting policy, taken off each episode's reward
    (0 disables it and the reference model)."""
    micro_batch_size: int | None = field(default=None, metadata=cli("--micro-batch"))
    """Episodes per forward/backward (gradient accumulation; None: the whole batch at once)."""
    max_grad_norm: float | None = 1.0
    """Clip the global gradient norm to this (None: no clipping)."""

    def __post_init__(self) -> None:
        check_numbers(self)
        if self.lr <= 0:
            raise ValueError(f"lr must be > 0 (e.g. 1e-6), got {self.lr}")
        if self.weight_decay < 0:
            raise ValueError(f"weight_decay must be >= 0, got {self.weight_decay}")
        if self.kl_coef < 0:
            raise ValueError(f"kl_coef must be >= 0 (0 disables the KL term), got {self.kl_coef}")
        if self.micro_batch_size is not None and self.micro_batch_size < 1:
            raise ValueError("micro_batch_size must be >= 1, or None for the whole batch")
        if self.max_grad_norm is not None and self.max_grad_norm <= 0:
            raise ValueError("max_grad_norm must be > 0, or None to disable clipping")


# --- the math (pure functions, unit-tested against hand-computed values) --------------------------


def leave_one_out_advantages(rewards: torch.Tensor, groups: torch.Tensor) -> torch.Tensor:
    """R_i - mean of the other rewards of i's group, (N,); a group of one, or of equal rewards,
    gets exactly 0."""
    _, index = groups.unique(return_inverse=True)  # (N,) group of each episode, from 0
    count = torch.zeros(int(index.max()) + 1, dtype=rewards.dtype, device=rewards.device)
    count = count.index_add(0, index, torch.ones_like(rewards))
    total = torch.zeros_like(count).index_add(0, index, rewards)
    k = count[index]  # (N,)
    others = (total[index] - rewards) / (k - 1).clamp(min=1.0)
    low = count.new_full(count.shape, float("inf")).scatter_reduce(0, index, rewards, "amin")
    high = count.new_full(count.shape, float("-inf")).scatter_reduce(0, index, rewards, "amax")
    # equal rewards carry no signal; their float sums are not exact (0.1 * 3 - 0.1 != 0.1 * 2),
    # and the rounding error would become a small advantage
    flat = (low == high)[index]
    return torch.where((k > 1) & ~flat, rewards - others, torch.zeros_like(rewards))


def sequence_log_ratios(
    logprobs: torch.Tensor, reference: torch.Tensor, mask: torch.Tensor
) -> torch.Tensor:
    """Each episode's log pi(y) - log pi_ref(y), summed over its generated ids, (N,)."""
    return ((logprobs - reference) * mask).sum(dim=1)


def reinforce_loss(
    logprobs: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor, episodes: int
) -> torch.Tensor:
    """-1/episodes * sum_i A_i * (sum of episode i's generated log-probabilities): logprobs and
    mask (n, T-1), advantages (n,), `episodes` the whole batch's count (for accumulation)."""
    return -(advantages[:, None] * logprobs * mask).sum() / episodes


# --- the learner ----------------------------------------------------------------------------------


class RLOOLearner:
    """Updates a `TrainablePolicy` from groups of episodes with the RLOO estimator."""

    def __init__(self, policy: TrainablePolicy, config: RLOOConfig, run: RunSettings) -> None:
        # run.temperature is > 0: RunSettings checks it (learners.base.sampled_temperature)
        self.policy = policy
        self.config = config
        self.temperature = run.temperature
        self.parameters = policy.trainable_parameters()
        if not self.parameters:
            raise TrainingError("the policy has no trainable parameters")
        self.optimizer = torch.optim.AdamW(
            self.parameters, lr=config.lr, weight_decay=config.weight_decay
        )
        self.reference = FrozenReference(policy) if config.kl_coef > 0 else None

    def update(self, episodes: Sequence[Episode]) -> dict[str, float]:
        """One RLOO update (one optimizer step) from a step's episodes; returns metrics."""
        config = self.config
        kept, metrics = judged_episodes(episodes)
        if not kept:
            return {**metrics, "losses/skipped": 1.0}
        model = self.policy.model
        model.eval()  # no dropout: the KL term compares two forwards of the same ids
        batch = make_batch(kept, self.policy.tokenizer.pad_token_id, self.policy.device)
        log_ratios = self._log_ratios(batch)  # (N,)
        advantages = leave_one_out_advantages(
            batch.rewards - config.kl_coef * log_ratios, batch.groups
        )
        self.optimizer.zero_grad(set_to_none=True)
        loss_total = 0.0
        for rows in micro_batches(batch.size, config.micro_batch_size):
            part = batch.rows(rows)
            logprobs, _ = forward(model, part, self.temperature)  # (n, T-1)
            loss = reinforce_loss(logprobs, advantages[rows], part.loss_mask, batch.size)
            loss.backward()
            loss_total += float(loss.detach())
        grad_norm = clip_gradients(self.parameters, config.max_grad_norm)
        self.optimizer.step()
        return {
            **metrics,
            "losses/policy": loss_total,
            "losses/kl": float(log_ratios.mean()),
            "charts/grad_norm": grad_norm,
            "charts/advantage_abs": float(advantages.abs().mean()),
        }

    @torch.no_grad()
    def _log_ratios(self, batch: Batch) -> torch.Tensor:
        """Each episode's log-ratio to the reference (zeros without a KL term), (N,)."""
        if self.reference is None:
            return torch.zeros_like(batch.rewards)
        ratios = []
        for rows in micro_batches(batch.size, self.config.micro_batch_size):
            part = batch.rows(rows)
            logprobs, _ = forward(self.policy.model, part, self.temperature)
            reference = self.reference.logprobs(part, self.temperature)
            ratios.append(sequence_log_ratios(logprobs, reference, part.loss_mask))
        return torch.cat(ratios)

    def state_dict(self) -> dict[str, Any]:
        return {"optimizer": self.optimizer.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
