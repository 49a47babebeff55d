"""GRPO (Shao et al., 2024) with the DAPO and Dr. GRPO variants, in one file.

For each task, G episodes are sampled (one group); an episode's advantage is its return minus
the group's mean, divided by the group's std unless `scale_rewards` is off. Every token the
policy generated in the episode gets that advantage (with `turn_credit`, each turn of a
multi-turn episode gets its own, from its rewards-to-go: `turn_advantages`), and the loss is
PPO's clipped surrogate

    loss_t = -min(ratio_t * A, clip(ratio_t, 1 - clip_low, 1 + clip_high) * A) + beta * KL_t

with ratio_t = pi(token_t) / pi_old(token_t). `clip_high > clip_low` is DAPO's clip-higher.
With `turn_beta` the KL weight depends on the turn of the reply the token is in (SCoRe's
stage I pins the first attempt with a large weight while the second is trained).
How the per-token losses are summed (`loss_type`):

- "grpo":    mean over each sequence's tokens, then mean over sequences (the paper's form; it
             favours short correct and long wrong answers);
- "dapo":    sum over all tokens of the batch / number of tokens (token-level, no length bias);
- "dr_grpo": sum over all tokens / (sequences * completion budget), a constant, with no std
             scaling of advantages (Liu et al., 2025, "Understanding R1-Zero-like training").

The normalisers are computed over the whole batch before it is split into micro-batches, so
gradient accumulation gives the same update as one big batch. Pass 0 of the `mu` passes uses the
current log-probabilities (detached) as pi_old, which is exact because no update happened yet;
later passes reuse them. Episodes with an infrastructure error are dropped before anything else.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

import torch

from rlvr.agents.errors import TrainingError
from rlvr.agents.learners.base import overlong_buffer_fits, sampled_temperature
from rlvr.agents.learners.common import (
    Batch,
    FrozenReference,
    approx_kl,
    check_turn_weights,
    clip_gradients,
    forward,
    id_weights,
    linear_warmup,
    make_batch,
    masked_mean,
    micro_batches,
    per_turn,
    token_turns,
)
from rlvr.agents.policy import TrainablePolicy
from rlvr.agents.rollouts import Episode
from rlvr.config import check_numbers, cli

LossType = Literal["grpo", "dapo", "dr_grpo"]
LOSS_TYPES: tuple[str, ...] = get_args(LossType)


@dataclass(frozen=True)
class GRPOConfig:
    """Hyperparameters of the GRPO learner. How the rollouts were sampled (temperature, the
    completion budget) belongs to the run (`TrainConfig`) and is passed to `GRPOLearner`."""

    lr: float = field(default=1e-6, metadata=cli("--lr"))
    """AdamW learning rate (1e-6 suits billion-parameter models; tiny models want ~2e-4)."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    adam_betas: tuple[float, float] = (0.9, 0.99)
    """AdamW betas."""
    loss_type: LossType = field(default="dapo", metadata=cli("--loss-type"))
    """How token losses are aggregated: "grpo", "dapo" or "dr_grpo" (see the module docstring)."""
    scale_rewards: bool | None = None
    """Divide advantages by the group's std. None: yes for "grpo"/"dapo", no for "dr_grpo"."""
    clip_low: float = field(default=0.2, metadata=cli("--clip-low"))
    """Lower clip range: the ratio is kept above 1 - clip_low."""
    clip_high: float = field(default=0.2, metadata=cli("--clip-high"))
    """Upper clip range: the ratio is kept below 1 + clip_high (DAPO uses 0.28)."""
    beta: float = field(default=0.0, metadata=cli("--beta"))
    """Weight of the KL penalty to the frozen starting policy (0 disables it and the reference)."""
    turn_beta: tuple[float, ...] | None = None
    """Per-turn KL weights of multi-turn episodes, replacing `beta`: the ids of reply k (from 1)
    pay `turn_beta[k-1]` times the KL to the frozen starting policy, the last weight repeating
    for later replies (None: `beta` on every id). SCoRe's stage I (Kumar et al., 2024) pins the
    first attempt near the starting policy while the second is trained: e.g. (1.0, 0.0)."""
    turn_pg_weight: tuple[float, ...] | None = None
    """Per-turn weights of the policy-gradient term of multi-turn episodes: the advantages of
    reply k's ids are multiplied by `turn_pg_weight[k-1]`, the last weight repeating (None: 1
    everywhere). (0.0, 1.0) trains the second attempt alone, the first moving only through the
    weights both share (and held by `turn_beta`)."""
    mu: int = field(default=1, metadata=cli("--mu"))
    """Optimisation passes over each batch (one optimizer step per pass)."""
    mask_truncated: bool = field(default=False, metadata=cli("--mask-truncated"))
    """Leave out of the loss the episodes whose reply hit max_new_tokens (DAPO's overlong mask)."""
    micro_batch_size: int | None = field(default=None, metadata=cli("--micro-batch"))
    """Sequences per forward/backward; gradients accumulate over the batch (None: all at once)."""
    max_grad_norm: float | None = 1.0
    """Clip the global gradient norm to this (None: no clipping)."""
    warmup_updates: int = 0
    """Raise the learning rate linearly over the first this many optimizer steps (0: off).
    Adam's first steps move every weight by about `lr` however small its gradient; a warm-up
    keeps one unlucky first batch from throwing a small model off its warm start."""
    overlong_buffer: int = 0
    """DAPO's soft overlong punishment: a reply longer than max_new_tokens - overlong_buffer ids
    loses up to `overlong_penalty` of reward, linearly over the buffer, the whole of it at
    max_new_tokens (0: off). In a multi-turn episode the longest reply counts."""
    overlong_penalty: float = 1.0
    """Reward taken from a reply that fills max_new_tokens (with `overlong_buffer` > 0)."""
    turn_credit: bool = False
    """Multi-turn episodes: credit each reply with the rewards from its turn on (reward-to-go),
    against the group's episodes that reached that turn (off: every reply of an episode gets
    the episode's advantage). See `turn_advantages`."""
    tis_cap: float = 2.0
    """Rollouts sampled by older weights (asynchronous training): each generated token's loss is
    weighted by min(pi_old / pi_sampler, tis_cap), pi_sampler its log-probability when sampled
    (truncated importance sampling). On-policy batches are not reweighted."""

    def __post_init__(self) -> None:
        check_numbers(self)
        if self.loss_type not in LOSS_TYPES:
            raise ValueError(f"loss_type must be one of {LOSS_TYPES}, got {self.loss_type!r}")
        if self.lr <= 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if self.weight_decay < 0 or not all(0 <= beta < 1 for beta in self.adam_betas):
            raise ValueError(
                f"need weight_decay >= 0 and adam_betas in [0, 1), got {self.weight_decay}, "
                f"{self.adam_betas} (e.g. adam_betas=(0.9, 0.99))"
            )
        if self.clip_low < 0 or self.clip_high < 0 or self.clip_low >= 1:
            raise ValueError(
                f"need 0 <= clip_low < 1 and clip_high >= 0, got {self.clip_low}, {self.clip_high}"
            )
        if self.clip_high < self.clip_low:
            raise ValueError(
                f"clip_high ({self.clip_high}) < clip_low ({self.clip_low}); clip-higher means "
                "clip_high >= clip_low (DAPO: clip_low=0.2, clip_high=0.28)"
            )
        if self.beta < 0:
            raise ValueError(f"beta must be >= 0 (0 disables the KL term), got {self.beta}")
        check_turn_weights(self.turn_beta, "turn_beta", "beta", self.beta)
        check_turn_weights(self.turn_pg_weight, "turn_pg_weight")
        if self.mu < 1:
            raise ValueError(f"mu (passes per batch) must be >= 1, got {self.mu}")
        if self.micro_batch_size is not None and self.micro_batch_size < 1:
            raise ValueError("micro_batch_size must be >= 1, or None for the whole batch")
        if self.max_grad_norm is not None and self.max_grad_norm <= 0:
            raise ValueError("max_grad_norm must be > 0, or None to disable clipping")
        if self.overlong_buffer < 0 or self.overlong_penalty < 0:
            raise ValueError(
                f"overlong_buffer and overlong_penalty must be >= 0 (buffer 0 turns the shaping "
                f"off), got {self.overlong_buffer}, {self.overlong_penalty}"
            )
        if self.tis_cap < 1:
            raise ValueError(f"tis_cap must be >= 1 (e.g. 2.0), got {self.tis_cap}")
        if self.warmup_updates < 0:
            raise ValueError(f"warmup_updates must be >= 0 (0: off), got {self.warmup_updates}")

    @property
    def uses_reference(self) -> bool:
        """Whether any id pays a KL term (then the learner keeps a frozen reference)."""
        return self.beta > 0 or any(weight > 0 for weight in self.turn_beta or ())

    @property
    def scales_rewards(self) -> bool:
        if self.scale_rewards is None:
            return self.loss_type != "dr_grpo"
        return self.scale_rewards


# --- the math (pure functions, unit-tested against hand-computed values) --------------------------


def group_advantages(
    rewards: torch.Tensor, groups: torch.Tensor, scale: bool, eps: float = 1e-4
) -> torch.Tensor:
    """(r - mean of the group) / (std of the group + eps), std unbiased; a group of one, or of
    equal rewards, gets exactly 0."""
    advantages = torch.zeros_like(rewards)
    for group in groups.unique():
        members = groups == group
        values = rewards[members]
        # equal rewards carry no signal; their float mean is not exact (7 x 0.1 / 7 != 0.1), and
        # the rounding error over a tiny std would become advantages of about 1e-4
        if int(members.sum()) < 2 or bool(values.max() == values.min()):
            continue
        centred = values - values.mean()
        advantages[members] = centred / (values.std() + eps) if scale else centred
    return advantages


def turn_advantages(
    returns_to_go: Sequence[Sequence[float]], groups: Sequence[int], scale: bool
) -> list[list[float]]:
    """GRPO's advantages per turn: turn k of an episode gets its rewards-to-go (the rewards of
    turns k, k+1, ...) minus their mean over the episodes of its group that played a turn k
    (divided by their std with `scale`), as `group_advantages` computes. Turn 1 is the episode's
    return against the whole group, as without per-turn credit. A later turn is judged only
    against the group's other later turns: after a wrong first attempt, a second attempt that
    fixes it is credited for the fix, not measured against episodes solved at once."""
    advantages = [[0.0] * len(turns) for turns in returns_to_go]
    for k in range(max((len(turns) for turns in returns_to_go), default=0)):
        rows = [i for i, turns in enumerate(returns_to_go) if len(turns) > k]
        values = torch.tensor([float(returns_to_go[i][k]) for i in rows])
        credited = group_advantages(values, torch.tensor([groups[i] for i in rows]), scale)
        for i, advantage in zip(rows, credited.tolist()):
            advantages[i][k] = advantage
    return advantages


def rewards_to_go(rewards: Sequence[float], bonus: float = 0.0) -> list[float]:
    """Each turn's reward-to-go: the sum of its reward and the later ones, plus `bonus` (an
    episode-level term, such as the overlong penalty, that every turn shares)."""
    total, out = bonus, []
    for reward in reversed(rewards):
        total += reward
        out.append(total)
    return out[::-1]


def overlong_penalties(
    lengths: Sequence[int], max_new_tokens: int, buffer: int, penalty: float = 1.0
) -> list[float]:
    """DAPO's soft overlong punishment (Yu et al., 2025, eq. 13) of replies of `lengths` ids:
    0 up to `max_new_tokens - buffer` ids, then falling linearly to `-penalty` at
    `max_new_tokens` (a reply the budget cut). `buffer` 0 gives all zeros."""
    if buffer <= 0:
        return [0.0] * len(lengths)
    start = max_new_tokens - buffer
    return [-penalty * min(max(length - start, 0), buffer) / buffer for length in lengths]


def clipped_surrogate(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    clip_low: float,
    clip_high: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token loss -min(ratio * A, clip(ratio) * A), and where the clip was active.

    `advantages` broadcasts against the (N, T-1) log-probabilities ((N, 1) for per-sequence).
    """
    ratio = torch.exp(logprobs - old_logprobs)
    clipped_ratio = ratio.clamp(1.0 - clip_low, 1.0 + clip_high)
    unclipped, clipped = ratio * advantages, clipped_ratio * advantages
    return -torch.minimum(unclipped, clipped), (clipped < unclipped).float()


def truncated_importance_weights(
    old_logprobs: torch.Tensor, sampler_logprobs: torch.Tensor, cap: float
) -> torch.Tensor:
    """min(pi_old / pi_sampler, cap) per token: the off-policy correction of a batch sampled by
    older weights than pi_old (truncated importance sampling, as in IMPALA's V-trace and the
    "TIS" of asynchronous RL trainers: the cap bounds the variance a rare token could add)."""
    return torch.exp(old_logprobs - sampler_logprobs).clamp(max=cap)


def token_weights(mask: torch.Tensor, loss_type: str, completion_budget: int) -> torch.Tensor:
    """Weights that turn per-token losses into the batch loss by a plain sum, (N, T-1)."""
    if loss_type == "grpo":
        per_sequence = mask.sum(dim=1, keepdim=True)  # (N, 1)
        sequences = (per_sequence > 0).sum().clamp(min=1)
        return mask / per_sequence.clamp(min=1.0) / sequences
    if loss_type == "dapo":
        return mask / mask.sum().clamp(min=1.0)
    if loss_type == "dr_grpo":
        return mask / (mask.shape[0] * completion_budget)
    raise ValueError(f"loss_type must be one of {LOSS_TYPES}, got {loss_type!r}")


# --- the learner ----------------------------------------------------------------------------------


class GRPOLearner:
    """Updates a `TrainablePolicy` (an `HFPolicy`, or your own) from groups of episodes.

    `temperature` is the rollouts' sampling temperature (log-probabilities are computed at it);
    `completion_budget` the most ids an episode may generate (max_new_tokens * turns), Dr. GRPO's
    constant. Both are the run's settings, given here rather than kept in `GRPOConfig`, so that
    each has one owner.
    """

    def __init__(
        self,
        policy: TrainablePolicy,
        config: GRPOConfig,
        *,
        temperature: float,
        completion_budget: int,
        max_new_tokens: int | None = None,
    ) -> None:
        sampled_temperature(temperature)
        if completion_budget < 1:
            raise ValueError("completion_budget must be >= 1 (max_new_tokens * max turns)")
        self.max_new_tokens = completion_budget if max_new_tokens is None else max_new_tokens
        overlong_buffer_fits(config.overlong_buffer, self.max_new_tokens)
        self.policy = policy
        self.config = config
        self.temperature = temperature
        self.completion_budget = completion_budget
        self.parameters = policy.trainable_parameters()
        if not self.parameters:
            raise TrainingError("the policy has no trainable parameters")
        self.optimizer = torch.optim.AdamW(
            self.parameters, lr=config.lr, betas=config.adam_betas, weight_decay=config.weight_decay
        )
        self.schedule = linear_warmup(self.optimizer, config.warmup_updates)
        self.reference = FrozenReference(policy) if config.uses_reference else None

    def update(self, episodes: Sequence[Episode]) -> dict[str, float]:
        """One GRPO update (mu optimizer steps) from a step's episodes; returns metrics."""
        config = self.config
        kept = [episode for episode in episodes if not episode.infra_error]
        metrics = {"rollout/infra_errors": float(len(episodes) - len(kept))}
        if not kept:
            return {**metrics, "losses/skipped": 1.0}
        model = self.policy.model
        model.eval()  # no dropout: pi, pi_old and pi_ref must be the same function of the weights
        batch = make_batch(kept, self.policy.tokenizer.pad_token_id, self.policy.device)
        shaping = self._overlong_shaping(kept).to(batch.rewards.device)
        if config.turn_credit:
            advantages = self._turn_advantages(kept, batch, shaping)
        else:
            advantages = group_advantages(
                batch.rewards + shaping, batch.groups, config.scales_rewards
            )[:, None].expand_as(batch.loss_mask)
        if config.turn_pg_weight is not None:
            turns = token_turns(kept, batch.loss_mask.shape[1])
            advantages = advantages * per_turn(config.turn_pg_weight, turns).to(advantages)
        mask = batch.loss_mask
        if config.mask_truncated:
            mask = mask * (~batch.truncated).float()[:, None]
        weights = token_weights(mask, config.loss_type, self.completion_budget)
        kl_weights = self._kl_weights(kept, batch)  # (N, T-1): beta, or each turn's turn_beta
        slices = micro_batches(batch.size, config.micro_batch_size)
        references = [self._reference(batch.rows(rows)) for rows in slices]
        sampler = _sampler_logprobs(kept, batch)
        stale = any(episode.policy_lag > 0 for episode in kept)
        olds: list[torch.Tensor] = []
        importance: list[torch.Tensor] = []
        kls: list[torch.Tensor] = []
        for step in range(config.mu):
            self.optimizer.zero_grad(set_to_none=True)
            totals = {"policy": 0.0, "clipped": 0.0}
            for index, rows in enumerate(slices):
                logprobs, _ = forward(model, batch.rows(rows), self.temperature)  # (n, T-1)
                if step == 0:
                    olds.append(logprobs.detach())
                    if stale:
                        importance.append(
                            truncated_importance_weights(olds[index], sampler[rows], config.tis_cap)
                        )
                token_loss, clipped = clipped_surrogate(
                    logprobs, olds[index], advantages[rows], config.clip_low, config.clip_high
                )
                if stale:
                    token_loss = token_loss * importance[index]
                reference = references[index]
                if reference is not None:
                    kl = approx_kl(logprobs, reference)
                    token_loss = token_loss + kl_weights[rows] * kl
                    if step == 0:  # the KL of the sampled policy, per turn when weighted so
                        kls.append(kl.detach())
                loss = (token_loss * weights[rows]).sum()
                loss.backward()
                totals["policy"] += float(loss.detach())
                totals["clipped"] += float((clipped * mask[rows]).sum())
            grad_norm = clip_gradients(self.parameters, config.max_grad_norm)
            self.optimizer.step()
            self.schedule.step()
        tokens = float(mask.sum().clamp(min=1.0))
        if stale:
            weights_all = torch.cat(importance)
            metrics["charts/importance_weight"] = float(masked_mean(weights_all, batch.loss_mask))
            metrics["charts/importance_capped"] = float(
                masked_mean((weights_all >= config.tis_cap).float(), batch.loss_mask)
            )
        metrics["losses/kl"] = 0.0
        if kls:
            metrics |= self._kl_metrics(kept, torch.cat(kls), mask)
        return {
            **metrics,
            "losses/policy": totals["policy"],
            "charts/clip_fraction": totals["clipped"] / tokens,
            "charts/grad_norm": grad_norm,
            "charts/advantage_abs": float(masked_mean(advantages.abs(), batch.loss_mask)),
            "charts/sampler_logprob_gap": float(
                masked_mean((torch.cat(olds) - sampler).abs(), batch.loss_mask)
            ),
            "rollout/zero_std_groups": _zero_std_groups(batch),
            "rollout/overlong_penalty": float(shaping.mean()),
        }

    def _turn_advantages(
        self, episodes: Sequence[Episode], batch: Batch, shaping: torch.Tensor
    ) -> torch.Tensor:
        """Per-turn credit (`turn_credit`) laid out per token, (N, T-1): each generated id gets
        the advantage of the turn whose reply it belongs to."""
        returns = [
            rewards_to_go(episode.turn_rewards, float(bonus))
            for episode, bonus in zip(episodes, shaping.tolist())
        ]
        credits = turn_advantages(returns, batch.groups.tolist(), self.config.scales_rewards)
        table = torch.zeros_like(batch.loss_mask)
        turns = token_turns(episodes, table.shape[1])
        for row, credit in enumerate(credits):
            if credit:
                table[row] = per_turn(credit, turns[row]).to(table)
        return table

    def _kl_weights(self, episodes: Sequence[Episode], batch: Batch) -> torch.Tensor:
        """The KL weight of every id, (N, T-1): `beta`, or with `turn_beta` its turn's weight."""
        return id_weights(episodes, batch.loss_mask, self.config.beta, self.config.turn_beta)

    def _kl_metrics(
        self, episodes: Sequence[Episode], kl: torch.Tensor, mask: torch.Tensor
    ) -> dict[str, float]:
        """Mean KL to the reference over the generated ids, and with `turn_beta` per turn
        (`losses/kl_turn1`, ...: the pinned first attempt should stay near 0)."""
        metrics = {"losses/kl": float(masked_mean(kl, mask))}
        if self.config.turn_beta is not None:
            turns = token_turns(episodes, mask.shape[1]).to(mask.device)
            for turn in range(max(len(episode.turn_ends) for episode in episodes)):
                in_turn = mask * (turns == turn).float()
                metrics[f"losses/kl_turn{turn + 1}"] = float(masked_mean(kl, in_turn))
        return metrics

    def _overlong_shaping(self, episodes: Sequence[Episode]) -> torch.Tensor:
        """Each episode's overlong penalty (its longest reply's), added to its reward."""
        longest = [max(episode.reply_lengths, default=0) for episode in episodes]
        buffer, penalty = self.config.overlong_buffer, self.config.overlong_penalty
        return torch.tensor(overlong_penalties(longest, self.max_new_tokens, buffer, penalty))

    def _reference(self, batch: Batch) -> torch.Tensor | None:
        if self.reference is None:
            return None
        return self.reference.logprobs(batch, self.temperature)

    def state_dict(self) -> dict[str, Any]:
        return {"optimizer": self.optimizer.state_dict(), "schedule": self.schedule.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        if "schedule" in state:  # checkpoints written before the warm-up existed have none
            self.schedule.load_state_dict(state["schedule"])


def _sampler_logprobs(episodes: Sequence[Episode], batch: Batch) -> torch.Tensor:
    """The rollout's log-probabilities laid out like `forward`'s output, (N, T-1)."""
    table = torch.zeros_like(batch.loss_mask)
    for row, episode in enumerate(episodes):
        values = torch.tensor(episode.sampler_logprobs[1:], dtype=table.dtype)
        table[row, : len(values)] = values.to(table.device)
    return table


def _zero_std_groups(batch: Batch) -> float:
    """Share of groups whose rewards are all equal (they carry no learning signal)."""
    groups = batch.groups.unique()
    flat = sum(int(batch.rewards[batch.groups == g].unique().numel() == 1) for g in groups)
    return flat / max(len(groups), 1)
