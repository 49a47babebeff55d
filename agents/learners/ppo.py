"""PPO for language models (Schulman et al., 2017; Ouyang et al., 2022), in one file.

Every id the policy generated is a time step. A value function estimates, at each such step, the
return still to come; it is either a linear head on the policy's last hidden states
(`value_model="head"`, one forward for both) or a separate critic, a copy of the policy's network
with its own head and optimizer (`value_model="critic"`).

Rewards per token: each turn's reward sits on the last id of that turn's reply, and with
`kl_coef > 0` every generated id also pays -kl_coef * (log pi - log pi_ref) to the frozen starting
policy (with `turn_kl_coef`, a coefficient per turn: SCoRe's stage I pins the first attempt).
Advantages come from GAE over the generated ids only (environment ids in between are skipped,
so turn k's value bootstraps from turn k+1's first reply id):

    delta_t = r_t + gamma * V_next - V_t,    A_t = delta_t + gamma * lam * A_next

Returns are A + V. An episode's end is terminal (V_next = 0) also when a turn limit truncated it:
the conversation shows how many turns were played, so the limit is part of the state. The policy
loss is the clipped surrogate, the value loss is clipped around the old values, both averaged
over generated tokens; `epochs` passes over `minibatches` shuffled minibatches. Episodes with an
infrastructure error are dropped first. Every forward runs without dropout.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

import torch

from rlvr.agents.errors import TrainingError
from rlvr.agents.learners.base import sampled_temperature
from rlvr.agents.learners.common import (
    Batch,
    FrozenReference,
    check_turn_weights,
    clip_gradients,
    forward,
    id_weights,
    make_batch,
    masked_mean,
    masked_whiten,
    micro_batches,
    per_turn,
    token_turns,
)
from rlvr.agents.learners.grpo import clipped_surrogate
from rlvr.agents.policy import TrainablePolicy
from rlvr.agents.rollouts import Episode
from rlvr.config import check_numbers, cli

ValueModel = Literal["head", "critic"]
VALUE_MODELS: tuple[str, ...] = get_args(ValueModel)


@dataclass(frozen=True)
class PPOConfig:
    """Hyperparameters of the PPO learner. How the rollouts were sampled (temperature) and the
    run's seed belong to the run (`TrainConfig`) and are passed to `PPOLearner`."""

    lr: float = field(default=1e-6, metadata=cli("--lr"))
    """AdamW learning rate of the policy (and of the value head when `value_model="head"`)."""
    critic_lr: float | None = None
    """Learning rate of a separate critic (None: same as `lr`)."""
    value_model: ValueModel = field(default="head", metadata=cli("--value-model"))
    """"head": a linear value head on the policy's hidden states; "critic": a separate network."""
    gamma: float = 1.0
    """Discount per generated token."""
    lam: float = 0.95
    """GAE lambda."""
    clip: float = 0.2
    """Clip range of the policy ratio."""
    value_clip: float | None = 0.2
    """Clip range of new values around old ones (None: unclipped value loss)."""
    vf_coef: float = 0.5
    """Weight of the value loss (with a head it shares the policy's gradient step)."""
    kl_coef: float = field(default=0.0, metadata=cli("--kl-coef"))
    """Per-token KL penalty to the frozen starting policy, paid in the reward (0: none)."""
    turn_kl_coef: tuple[float, ...] | None = None
    """Per-turn KL penalties of multi-turn episodes, replacing `kl_coef`: the ids of reply k
    (from 1) pay `turn_kl_coef[k-1]` times their KL, the last value repeating for later replies
    (None: `kl_coef` on every id). SCoRe's stage I: e.g. (1.0, 0.0) pins the first attempt."""
    turn_pg_weight: tuple[float, ...] | None = None
    """Per-turn weights of the policy loss of multi-turn episodes: the advantages of reply k's
    ids are multiplied by `turn_pg_weight[k-1]`, the last weight repeating (None: 1 everywhere).
    (0.0, 1.0) trains the second attempt alone; the value loss is unchanged."""
    epochs: int = field(default=2, metadata=cli("--epochs"))
    """Passes over each batch."""
    minibatches: int = 1
    """Optimizer steps per pass (the batch is shuffled and split into this many)."""
    micro_batch_size: int | None = field(default=None, metadata=cli("--micro-batch"))
    """Sequences per forward/backward within a minibatch (None: the whole minibatch)."""
    whiten_advantages: bool = True
    """Normalise advantages over the batch's generated tokens."""
    max_grad_norm: float | None = 1.0
    """Clip the global gradient norm to this (None: no clipping)."""

    def __post_init__(self) -> None:
        check_numbers(self)
        if self.value_model not in VALUE_MODELS:
            raise ValueError(f"value_model must be one of {VALUE_MODELS}, got {self.value_model!r}")
        if self.lr <= 0 or (self.critic_lr is not None and self.critic_lr <= 0):
            raise ValueError("lr and critic_lr must be > 0")
        if self.critic_lr is not None and self.value_model != "critic":
            raise ValueError(
                "critic_lr is the learning rate of a separate critic: set value_model='critic', "
                "or drop critic_lr (a value head trains at lr)"
            )
        if not 0 <= self.gamma <= 1 or not 0 <= self.lam <= 1:
            raise ValueError(f"gamma and lam must be in [0, 1], got {self.gamma}, {self.lam}")
        if not 0 < self.clip < 1:
            raise ValueError(f"clip must be in (0, 1), got {self.clip}")
        if self.value_clip is not None and self.value_clip <= 0:
            raise ValueError("value_clip must be > 0, or None for an unclipped value loss")
        if self.vf_coef < 0 or self.kl_coef < 0:
            raise ValueError("vf_coef and kl_coef must be >= 0")
        check_turn_weights(self.turn_kl_coef, "turn_kl_coef", "kl_coef", self.kl_coef)
        check_turn_weights(self.turn_pg_weight, "turn_pg_weight")
        if self.epochs < 1 or self.minibatches < 1:
            raise ValueError("epochs and minibatches must be >= 1")
        if self.micro_batch_size is not None and self.micro_batch_size < 1:
            raise ValueError("micro_batch_size must be >= 1, or None for the whole minibatch")
        if self.max_grad_norm is not None and self.max_grad_norm <= 0:
            raise ValueError("max_grad_norm must be > 0, or None to disable clipping")

    @property
    def uses_reference(self) -> bool:
        """Whether any id pays a KL penalty (then the learner keeps a frozen reference)."""
        return self.kl_coef > 0 or any(coef > 0 for coef in self.turn_kl_coef or ())


# --- the math (pure functions, unit-tested against hand-computed values) --------------------------


def gae(
    rewards: torch.Tensor, values: torch.Tensor, mask: torch.Tensor, gamma: float, lam: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Advantages and returns over the masked positions of each row, (N, T-1) each.

    Unmasked positions (prompt, environment ids, padding) are skipped: the step after a masked
    position is the next masked position of the row, and the last one is terminal.
    """
    advantages = torch.zeros_like(values)
    running = torch.zeros_like(values[:, 0])  # (N,)
    next_value = torch.zeros_like(values[:, 0])
    for t in reversed(range(values.shape[1])):
        live = mask[:, t] > 0
        delta = rewards[:, t] + gamma * next_value - values[:, t]
        step = delta + gamma * lam * running
        advantages[:, t] = torch.where(live, step, torch.zeros_like(step))
        running = torch.where(live, step, running)
        next_value = torch.where(live, values[:, t], next_value)
    return advantages, (advantages + values) * mask


def value_loss(
    values: torch.Tensor, old_values: torch.Tensor, returns: torch.Tensor, clip: float | None
) -> torch.Tensor:
    """Per-token 0.5 * max((V - R)^2, (V_clipped - R)^2), V_clipped within old +- clip."""
    unclipped = (values - returns) ** 2
    if clip is None:
        return 0.5 * unclipped
    clipped = old_values + (values - old_values).clamp(-clip, clip)
    return 0.5 * torch.maximum(unclipped, (clipped - returns) ** 2)


# --- the learner ----------------------------------------------------------------------------------


class PPOLearner:
    """Updates a `TrainablePolicy` (and its value function) from episodes.

    `temperature` is the rollouts' sampling temperature (log-probabilities are computed at it);
    `seed` seeds the minibatch shuffling. Both are the run's settings, given here rather than kept
    in `PPOConfig`, so that each has one owner.
    """

    def __init__(
        self, policy: TrainablePolicy, config: PPOConfig, *, temperature: float, seed: int
    ) -> None:
        sampled_temperature(temperature)
        self.policy = policy
        self.config = config
        self.temperature = temperature
        model_config: Any = policy.model.config  # a transformers config
        hidden = model_config.hidden_size
        self.value_head = torch.nn.Linear(hidden, 1).to(policy.device)
        torch.nn.init.zeros_(self.value_head.weight)
        torch.nn.init.zeros_(self.value_head.bias)
        self.policy_parameters = policy.trainable_parameters()
        if not self.policy_parameters:
            raise TrainingError("the policy has no trainable parameters")
        self.critic = None
        if config.value_model == "critic":
            self.critic = copy.deepcopy(policy.model)
            for parameter in self.critic.parameters():
                parameter.requires_grad_(True)
            critic_parameters = [*self.critic.parameters(), *self.value_head.parameters()]
            self.critic_optimizer = torch.optim.AdamW(
                critic_parameters, lr=config.critic_lr or config.lr
            )
            self.optimizer = torch.optim.AdamW(self.policy_parameters, lr=config.lr)
        else:
            self.optimizer = torch.optim.AdamW(
                [*self.policy_parameters, *self.value_head.parameters()], lr=config.lr
            )
        self.reference = FrozenReference(policy) if config.uses_reference else None
        self.generator = torch.Generator().manual_seed(seed)

    @property
    def value_parameters(self) -> list[torch.nn.Parameter]:
        critic = list(self.critic.parameters()) if self.critic is not None else []
        return [*critic, *self.value_head.parameters()]

    def _evaluate(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-probabilities and values of the batch's tokens, (N, T-1) each."""
        model = self.policy.model
        if self.critic is None:
            logprobs, states = forward(model, batch, self.temperature, hidden=True)
        else:
            logprobs, _ = forward(model, batch, self.temperature)
            _, states = forward(self.critic, batch, hidden=True)
        assert states is not None  # asked for with hidden=True
        return logprobs, self.value_head(states.float()).squeeze(-1)

    def update(self, episodes: Sequence[Episode]) -> dict[str, float]:
        """One PPO update from a step's episodes; returns metrics."""
        config = self.config
        kept = [episode for episode in episodes if not episode.infra_error]
        metrics = {"rollout/infra_errors": float(len(episodes) - len(kept))}
        if not kept:
            return {**metrics, "losses/skipped": 1.0}
        batch = make_batch(kept, self.policy.tokenizer.pad_token_id, self.policy.device)
        mask = batch.loss_mask
        # No dropout anywhere: the ratio compares two forwards of the same ids, and the old values
        # must be the values the clipped value loss compares against.
        for model in (self.policy.model, self.critic):
            if model is not None:
                model.eval()
        with torch.no_grad():
            old_logprobs, old_values = self._evaluate(batch)
            rewards = batch.token_rewards.clone()
            kl = torch.zeros_like(rewards)
            if self.reference is not None:
                kl = (old_logprobs - self.reference.logprobs(batch, self.temperature)) * mask
                rewards = rewards - self._kl_coefs(kept, batch) * kl
            advantages, returns = gae(rewards, old_values, mask, config.gamma, config.lam)
            if config.whiten_advantages:
                advantages = masked_whiten(advantages, mask) * mask
            if config.turn_pg_weight is not None:
                turns = token_turns(kept, mask.shape[1])
                advantages = advantages * per_turn(config.turn_pg_weight, turns).to(advantages)
        totals: dict[str, list[float]] = {"policy": [], "value": [], "clipped": []}
        for _ in range(config.epochs):
            order = torch.randperm(batch.size, generator=self.generator)
            for chosen in order.chunk(config.minibatches):
                self._minibatch_step(batch, chosen, old_logprobs, old_values, advantages, returns)
                for key, value in self._last.items():
                    totals[key].append(value)
        return {
            **metrics,
            "losses/policy": sum(totals["policy"]) / len(totals["policy"]),
            "losses/value": sum(totals["value"]) / len(totals["value"]),
            "charts/clip_fraction": sum(totals["clipped"]) / len(totals["clipped"]),
            "charts/value_mean": float(masked_mean(old_values, mask)),
            "charts/return_mean": float(masked_mean(returns, mask)),
            "charts/kl_to_reference": float(kl.sum() / mask.sum().clamp(min=1.0)),
            "charts/grad_norm": self._grad_norm,
        }

    def _kl_coefs(self, episodes: Sequence[Episode], batch: Batch) -> torch.Tensor:
        """The KL penalty of every id, (N, T-1): `kl_coef`, or its turn's `turn_kl_coef`."""
        config = self.config
        return id_weights(episodes, batch.loss_mask, config.kl_coef, config.turn_kl_coef)

    def _minibatch_step(
        self,
        batch: Batch,
        chosen: torch.Tensor,
        old_logprobs: torch.Tensor,
        old_values: torch.Tensor,
        advantages: torch.Tensor,
        returns: torch.Tensor,
    ) -> None:
        config = self.config
        self.optimizer.zero_grad(set_to_none=True)
        if self.critic is not None:
            self.critic_optimizer.zero_grad(set_to_none=True)
        tokens = batch.loss_mask[chosen].sum().clamp(min=1.0)
        sums = {"policy": 0.0, "value": 0.0, "clipped": 0.0}
        for part in micro_batches(len(chosen), config.micro_batch_size):
            rows = chosen[part]
            mask = batch.loss_mask[rows]
            logprobs, values = self._evaluate(batch.rows(rows))
            policy_loss, clipped = clipped_surrogate(
                logprobs, old_logprobs[rows], advantages[rows], config.clip, config.clip
            )
            values_loss = value_loss(values, old_values[rows], returns[rows], config.value_clip)
            policy_term = (policy_loss * mask).sum() / tokens
            value_term = (values_loss * mask).sum() / tokens
            (policy_term + config.vf_coef * value_term).backward()
            sums["policy"] += float(policy_term.detach())
            sums["value"] += float(value_term.detach())
            sums["clipped"] += float((clipped * mask).sum() / tokens)
        if self.critic is None:
            parameters = [*self.policy_parameters, *self.value_head.parameters()]
            self._grad_norm = clip_gradients(parameters, config.max_grad_norm)
        else:
            self._grad_norm = clip_gradients(self.policy_parameters, config.max_grad_norm)
            clip_gradients(self.value_parameters, config.max_grad_norm)
            self.critic_optimizer.step()
        self.optimizer.step()
        self._last = sums

    def state_dict(self) -> dict[str, Any]:
        state = {
            "optimizer": self.optimizer.state_dict(),
            "value_head": self.value_head.state_dict(),
            "generator": self.generator.get_state(),
        }
        if self.critic is not None:
            state["critic"] = self.critic.state_dict()
            state["critic_optimizer"] = self.critic_optimizer.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.value_head.load_state_dict(state["value_head"])
        self.generator.set_state(state["generator"])
        if self.critic is not None:
            self.critic.load_state_dict(state["critic"])
            self.critic_optimizer.load_state_dict(state["critic_optimizer"])
