"""The learners' math against values computed by hand."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from rlvr.agents.learners.common import (  # noqa: E402
    approx_kl,
    linear_warmup,
    make_batch,
    masked_whiten,
)
from rlvr.agents.learners.grpo import (  # noqa: E402
    GRPOConfig,
    clipped_surrogate,
    group_advantages,
    rewards_to_go,
    token_weights,
    turn_advantages,
)
from rlvr.agents.learners.ppo import PPOConfig, gae, value_loss  # noqa: E402
from rlvr.agents.rollouts import Episode  # noqa: E402
from rlvr.rollout.records import EpisodeRecord  # noqa: E402


def test_group_advantages_normalise_within_each_group():
    rewards = torch.tensor([1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0])
    groups = torch.tensor([0, 0, 0, 0, 1, 1, 2])
    # group 0: mean 0.75, unbiased std sqrt((3 * 0.25**2 + 0.75**2) / 3) = 0.5
    scaled = group_advantages(rewards, groups, scale=True, eps=0.0)
    assert scaled.tolist() == pytest.approx([0.5, -1.5, 0.5, 0.5, 0.0, 0.0, 0.0])
    centred = group_advantages(rewards, groups, scale=False)
    assert centred.tolist() == pytest.approx([0.25, -0.75, 0.25, 0.25, 0.0, 0.0, 0.0])
    with_eps = group_advantages(rewards, groups, scale=True, eps=1e-4)
    assert with_eps[0].item() == pytest.approx(0.25 / 0.5001)


def test_turn_advantages_judge_each_turn_against_the_groups_turns_of_that_depth():
    # SelfCorrect, 2 attempts, shaped with bonus 0.5: right at once 1.0; wrong then right
    # 0 + 0.75; wrong twice 0 + 0. Group 0: right, fixed, wrong twice, wrong twice.
    returns = [
        rewards_to_go([1.0]),
        rewards_to_go([0.0, 0.75]),
        rewards_to_go([0.0, 0.0]),
        rewards_to_go([0.0, 0.0]),
        rewards_to_go([0.0, 0.0]),  # group 1: one episode, no baseline
    ]
    assert returns[1] == [0.75, 0.75]
    advantages = turn_advantages(returns, [0, 0, 0, 0, 1], scale=False)
    # turn 1: the returns 1, 0.75, 0, 0 against their mean 0.4375 (the episode's advantage)
    assert [a[0] for a in advantages] == pytest.approx([0.5625, 0.3125, -0.4375, -0.4375, 0.0])
    # turn 2: the fix 0.75 and the two misses against their own mean 0.25, not against the
    # episode solved at once
    assert [a[1] for a in advantages[1:4]] == pytest.approx([0.5, -0.25, -0.25])
    assert len(advantages[0]) == 1 and advantages[4] == [0.0, 0.0]
    # one turn each: exactly GRPO's episode advantages
    single = turn_advantages([[1.0], [0.0], [0.5]], [0, 0, 0], scale=True)
    episode = group_advantages(torch.tensor([1.0, 0.0, 0.5]), torch.tensor([0, 0, 0]), True)
    assert [a[0] for a in single] == pytest.approx(episode.tolist())


def test_rewards_to_go_add_an_episode_term_to_every_turn():
    assert rewards_to_go([0.25, 0.5, 1.0]) == [1.75, 1.5, 1.0]
    assert rewards_to_go([0.0, 1.0], bonus=-0.5) == [0.5, 0.5]
    assert rewards_to_go([]) == []


@pytest.mark.parametrize("value", [0.1, 0.3, 0.7, 1 / 3])
@pytest.mark.parametrize("size", [3, 7, 8])
def test_a_group_of_equal_rewards_gets_exactly_zero_advantage(value, size):
    rewards = torch.tensor([value] * size + [0.0, 1.0])
    groups = torch.tensor([0] * size + [1, 1])
    for scale in (True, False):
        advantages = group_advantages(rewards, groups, scale=scale)
        assert advantages[:size].tolist() == [0.0] * size
        assert advantages[size:].abs().min() > 0.1


def test_clipped_surrogate_takes_the_pessimistic_side_with_clip_higher():
    old = torch.zeros(4)
    logprobs = torch.log(torch.tensor([1.5, 0.5, 0.5, 1.5]))
    advantages = torch.tensor([1.0, 1.0, -1.0, -1.0])
    loss, clipped = clipped_surrogate(logprobs, old, advantages, clip_low=0.2, clip_high=0.28)
    # A>0, ratio 1.5: capped at 1.28.  A>0, ratio 0.5: unclipped 0.5 is the smaller objective.
    # A<0, ratio 0.5: clipped at 0.8 -> objective -0.8.  A<0, ratio 1.5: unclipped -1.5.
    assert loss.tolist() == pytest.approx([-1.28, -0.5, 0.8, 1.5])
    assert clipped.tolist() == [1.0, 0.0, 1.0, 0.0]


def test_token_weights_for_each_loss_aggregation():
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    grpo = token_weights(mask, "grpo", completion_budget=4)
    assert grpo.flatten().tolist() == pytest.approx([0.25, 0.25, 0.0, 1 / 6, 1 / 6, 1 / 6])
    dapo = token_weights(mask, "dapo", completion_budget=4)
    assert dapo.flatten().tolist() == pytest.approx([0.2, 0.2, 0.0, 0.2, 0.2, 0.2])
    dr = token_weights(mask, "dr_grpo", completion_budget=4)
    assert dr.flatten().tolist() == pytest.approx([0.125, 0.125, 0.0, 0.125, 0.125, 0.125])


def test_dr_grpo_does_not_scale_by_std_unless_asked():
    assert GRPOConfig(loss_type="dr_grpo").scales_rewards is False
    assert GRPOConfig(loss_type="grpo").scales_rewards is True
    assert GRPOConfig(loss_type="dr_grpo", scale_rewards=True).scales_rewards is True


def test_k3_kl_estimator():
    logprobs, reference = torch.log(torch.tensor([0.5, 0.3])), torch.log(torch.tensor([0.25, 0.3]))
    kl = approx_kl(logprobs, reference)
    assert kl[0].item() == pytest.approx(0.5 - math.log(0.5) - 1)
    assert kl[1].item() == 0.0


def test_gae_skips_environment_tokens_and_bootstraps_across_turns():
    mask = torch.tensor([[0.0, 1.0, 1.0, 0.0, 1.0]])
    rewards = torch.tensor([[0.0, 0.0, 0.5, 0.0, 1.0]])
    values = torch.tensor([[9.0, 0.2, 0.4, 9.0, 0.6]])  # 9s sit on unmasked tokens: ignored
    advantages, returns = gae(rewards, values, mask, gamma=1.0, lam=0.5)
    # t=4: 1 - 0.6 = 0.4;  t=2: 0.5 + 0.6 - 0.4 + 0.5 * 0.4 = 0.9;  t=1: 0.4 - 0.2 + 0.5 * 0.9
    assert advantages.tolist()[0] == pytest.approx([0.0, 0.65, 0.9, 0.0, 0.4])
    assert returns.tolist()[0] == pytest.approx([0.0, 0.85, 1.3, 0.0, 1.0])
    discounted, _ = gae(rewards, values, mask, gamma=0.5, lam=1.0)
    # t=4: 0.4; t=2: 0.5 + 0.5*0.6 - 0.4 + 0.5*0.4 = 0.6; t=1: 0.5*0.4 - 0.2 + 0.5*0.6 = 0.3
    assert discounted.tolist()[0] == pytest.approx([0.0, 0.3, 0.6, 0.0, 0.4])


def test_value_loss_is_clipped_around_old_values():
    values, old, returns = torch.tensor([0.5]), torch.tensor([0.2]), torch.tensor([1.0])
    assert value_loss(values, old, returns, clip=0.2).item() == pytest.approx(0.5 * 0.36)
    assert value_loss(values, old, returns, clip=None).item() == pytest.approx(0.5 * 0.25)


def test_masked_whiten_ignores_masked_entries():
    values = torch.tensor([1.0, 3.0, 100.0])
    mask = torch.tensor([1.0, 1.0, 0.0])
    out = masked_whiten(values, mask, eps=0.0)
    assert out[:2].tolist() == pytest.approx([-1.0, 1.0])


def _episode(ids, mask, turn_ends, turn_rewards, group=0, truncated=False) -> Episode:
    record = EpisodeRecord(0, 0, 0, "t", [], list(turn_rewards), None, False, False)
    return Episode(record, "e", group, ids, mask, [0.0] * len(ids), turn_ends, 2, truncated)


def test_make_batch_aligns_masks_and_turn_rewards_with_predicted_tokens():
    episodes = [
        _episode([5, 6, 7, 8, 9, 10], [0, 0, 1, 1, 0, 1], [3, 5], [0.25, 1.0]),
        _episode([5, 6, 7], [0, 0, 1], [2], [0.5], group=1, truncated=True),
    ]
    batch = make_batch(episodes, pad_id=0, device="cpu")
    assert batch.input_ids.tolist() == [[5, 6, 7, 8, 9, 10], [5, 6, 7, 0, 0, 0]]
    assert batch.attention_mask.tolist() == [[1] * 6, [1, 1, 1, 0, 0, 0]]
    # column t is about token t+1
    assert batch.loss_mask.tolist() == [[0, 1, 1, 0, 1], [0, 1, 0, 0, 0]]
    assert batch.token_rewards.tolist() == [[0, 0, 0.25, 0, 1.0], [0, 0.5, 0, 0, 0]]
    assert batch.rewards.tolist() == [1.25, 0.5]
    assert batch.groups.tolist() == [0, 1] and batch.truncated.tolist() == [False, True]


@pytest.mark.parametrize(
    ("kwargs", "fix"),
    [
        ({"loss_type": "ppo"}, "loss_type must be one of"),
        ({"clip_low": 0.3, "clip_high": 0.2}, "clip_high >= clip_low"),
        ({"mu": 0}, "mu (passes per batch) must be >= 1"),
        ({"beta": -1}, "beta must be >= 0"),
        ({"micro_batch_size": 0}, "micro_batch_size must be >= 1"),
        ({"adam_betas": (0.9, 1.0)}, "adam_betas in"),
        ({"weight_decay": -0.1}, "need weight_decay >= 0"),
        ({"warmup_updates": -1}, "warmup_updates must be >= 0"),
    ],
)
def test_grpo_config_errors_name_the_fix(kwargs, fix):
    with pytest.raises(ValueError, match=fix.replace("(", r"\(").replace(")", r"\)")):
        GRPOConfig(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "fix"),
    [
        ({"value_model": "mlp"}, "value_model must be one of"),
        ({"lam": 1.5}, "gamma and lam must be in"),
        ({"clip": 0}, "clip must be in"),
        ({"epochs": 0}, "epochs and minibatches must be >= 1"),
        ({"critic_lr": 1e-3}, "set value_model='critic'"),
    ],
)
def test_ppo_config_errors_name_the_fix(kwargs, fix):
    with pytest.raises(ValueError, match=fix):
        PPOConfig(**kwargs)


def _learning_rates(schedule, optimizer, steps: int) -> list[float]:
    rates = []
    for _ in range(steps):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        schedule.step()
    return rates


def test_linear_warmup_reaches_the_learning_rate_after_its_updates_and_resumes_mid_way():
    weight = torch.nn.Parameter(torch.zeros(2))
    optimizer = torch.optim.AdamW([weight], lr=0.4)
    schedule = linear_warmup(optimizer, 4)
    assert _learning_rates(schedule, optimizer, 2) == pytest.approx([0.1, 0.2])
    saved = (optimizer.state_dict(), schedule.state_dict())
    assert _learning_rates(schedule, optimizer, 4) == pytest.approx([0.3, 0.4, 0.4, 0.4])
    resumed = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(2))], lr=0.4)
    resumed_schedule = linear_warmup(resumed, 4)
    resumed.load_state_dict(saved[0])
    resumed_schedule.load_state_dict(saved[1])
    assert _learning_rates(resumed_schedule, resumed, 2) == pytest.approx([0.3, 0.4])
    constant = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(2))], lr=0.4)
    assert _learning_rates(linear_warmup(constant, 0), constant, 2) == pytest.approx([0.4, 0.4])
