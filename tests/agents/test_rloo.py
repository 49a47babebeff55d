"""RLOO: its math against values computed by hand, the direction of its update on a tiny model,
and `rlvr train --algo rloo` end to end."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from rlvr.agents.hf import HFPolicy  # noqa: E402
from rlvr.agents.learners.base import RunSettings  # noqa: E402
from rlvr.agents.learners.common import forward, make_batch  # noqa: E402
from rlvr.agents.learners.rloo import (  # noqa: E402
    RLOOConfig,
    RLOOLearner,
    leave_one_out_advantages,
    reinforce_loss,
    sequence_log_ratios,
)
from rlvr.agents.metrics import read_metrics  # noqa: E402
from rlvr.agents.rollouts import Episode  # noqa: E402
from rlvr.agents.train_config import TrainConfig  # noqa: E402
from rlvr.cli import main  # noqa: E402
from rlvr.config import read_config  # noqa: E402
from rlvr.rollout.records import EpisodeRecord  # noqa: E402
from tests.agents.support import train_config  # noqa: E402

RUN = RunSettings(
    temperature=1.0,
    max_new_tokens=4,
    completion_budget=4,
    seed=0,
    group_size=2,
    episodes_per_step=4,
)


def _episode(ids, mask, rewards, group=0, turn_ends=None, infra=False) -> Episode:
    record = EpisodeRecord(0, 0, 0, "t", [], list(rewards), None, infra, False)
    ends = turn_ends if turn_ends is not None else [len(ids) - 1]
    return Episode(record, "e", group, list(ids), list(mask), [0.0] * len(ids), ends, 2)


# --- the math -------------------------------------------------------------------------------------


def test_each_episode_is_judged_against_the_mean_of_the_others_of_its_group():
    rewards = torch.tensor([1.0, 0.0, 0.0, 1.0, 0.5, 0.0, 1.0, 0.3])
    groups = torch.tensor([0, 0, 0, 0, 1, 1, 1, 2])
    advantages = leave_one_out_advantages(rewards, groups)
    # group 0 (k=4): 1 - (0 + 0 + 1)/3 = 2/3, 0 - (1 + 0 + 1)/3 = -2/3
    # group 1 (k=3): 0.5 - (0 + 1)/2 = 0, 0 - 1.5/2 = -0.75, 1 - 0.5/2 = 0.75
    # group 2: one episode, no baseline
    expected = [2 / 3, -2 / 3, -2 / 3, 2 / 3, 0.0, -0.75, 0.75, 0.0]
    assert advantages.tolist() == pytest.approx(expected)
    # = k/(k-1) times the episode's distance to its group's mean
    assert advantages[:4].tolist() == pytest.approx([4 / 3 * (r - 0.5) for r in [1, 0, 0, 1]])


def test_group_numbers_need_not_be_contiguous_or_sorted():
    rewards = torch.tensor([1.0, 0.25, 0.0, 0.75])
    advantages = leave_one_out_advantages(rewards, torch.tensor([7, 3, 7, 3]))
    assert advantages.tolist() == pytest.approx([1.0, -0.5, -1.0, 0.5])


def test_a_group_of_one_has_no_baseline_and_gets_zero():
    assert leave_one_out_advantages(torch.tensor([1.0]), torch.tensor([0])).tolist() == [0.0]
    two_singles = leave_one_out_advantages(torch.tensor([1.0, 0.0]), torch.tensor([0, 1]))
    assert two_singles.tolist() == [0.0, 0.0]


@pytest.mark.parametrize("value", [0.1, 0.3, 0.7, 1 / 3])
@pytest.mark.parametrize("size", [3, 7, 8])
def test_a_group_of_equal_rewards_gets_exactly_zero(value, size):
    rewards = torch.tensor([value] * size + [0.0, 1.0])
    advantages = leave_one_out_advantages(rewards, torch.tensor([0] * size + [1, 1]))
    assert advantages[:size].tolist() == [0.0] * size
    assert advantages[size:].tolist() == [-1.0, 1.0]


def test_reinforce_loss_weighs_each_episodes_log_probability_by_its_advantage():
    logprobs = torch.tensor([[-1.0, -2.0, -3.0], [-0.5, -0.5, -9.0]], requires_grad=True)
    mask = torch.tensor([[0.0, 1.0, 1.0], [1.0, 1.0, 0.0]])
    advantages = torch.tensor([2.0, -1.0])
    loss = reinforce_loss(logprobs, advantages, mask, episodes=2)
    # -(2 * (-2 - 3) + (-1) * (-0.5 - 0.5)) / 2 = -(-10 + 1) / 2
    assert loss.item() == pytest.approx(4.5)
    loss.backward()
    # descending the loss raises a positive-advantage episode's generated log-probabilities
    assert logprobs.grad.tolist() == [[0.0, -1.0, -1.0], [0.5, 0.5, 0.0]]


def test_sequence_log_ratios_sum_over_the_generated_ids():
    logprobs = torch.tensor([[-1.0, -2.0], [-1.0, -1.0]])
    reference = torch.tensor([[-1.5, -1.0], [-4.0, -3.0]])
    mask = torch.tensor([[1.0, 1.0], [0.0, 1.0]])
    assert sequence_log_ratios(logprobs, reference, mask).tolist() == [-0.5, 2.0]


@pytest.mark.parametrize(
    ("kwargs", "fix"),
    [
        ({"lr": 0.0}, "lr must be > 0"),
        ({"kl_coef": -0.1}, "kl_coef must be >= 0"),
        ({"micro_batch_size": 0}, "or None for the whole batch"),
        ({"max_grad_norm": 0.0}, "or None to disable clipping"),
        ({"weight_decay": -1.0}, "weight_decay must be >= 0"),
        ({"lr": float("nan")}, "lr"),
    ],
)
def test_rloo_config_errors_name_the_fix(kwargs, fix):
    with pytest.raises(ValueError, match=fix):
        RLOOConfig(**kwargs)


@pytest.mark.parametrize(
    ("overrides", "fix"),
    [
        ({"group_size": 1}, "rloo compares episodes within a group: set group_size >= 2"),
        ({"async_rollouts": True}, "use algo='grpo', or async_rollouts=False with rloo"),
    ],
)
def test_a_run_rloo_cannot_train_is_refused_naming_the_fix(tiny_path, tmp_path, overrides, fix):
    with pytest.raises(ValueError, match=fix):
        train_config(tiny_path, tmp_path, algo="rloo", **overrides)


# --- the learner on a tiny model ------------------------------------------------------------------


def snapshot(parameters):
    return [p.detach().clone() for p in parameters]


def _sequence_logprobs(policy, episodes) -> list[float]:
    batch = make_batch(episodes, policy.tokenizer.pad_token_id, "cpu")
    with torch.no_grad():
        logprobs, _ = forward(policy.model, batch)
    return (logprobs * batch.loss_mask).sum(dim=1).tolist()


def test_an_update_makes_the_rewarded_reply_likelier_and_the_other_less_likely(tiny_path):
    policy = HFPolicy(tiny_path)
    policy.model.eval()
    # one task (same prompt 5 6), two replies: 7 8 earned 1, 9 10 earned 0
    episodes = [
        _episode([5, 6, 7, 8], [0, 0, 1, 1], [1.0]),
        _episode([5, 6, 9, 10], [0, 0, 1, 1], [0.0]),
    ]
    before = _sequence_logprobs(policy, episodes)
    metrics = RLOOLearner(policy, RLOOConfig(lr=1e-3), RUN).update(episodes)
    after = _sequence_logprobs(policy, episodes)
    assert after[0] > before[0] and after[1] < before[1]
    assert metrics["charts/advantage_abs"] == 1.0 and metrics["rollout/infra_errors"] == 0.0


@pytest.mark.parametrize("rewards", [(1.0, 1.0), (0.3, 0.3)], ids=["equal-ones", "equal-fractions"])
def test_a_group_without_signal_leaves_the_weights_as_they_were(tiny_path, rewards):
    policy = HFPolicy(tiny_path)
    episodes = [
        _episode([5, 6, 7, 8], [0, 0, 1, 1], [rewards[0]]),
        _episode([5, 6, 9, 10], [0, 0, 1, 1], [rewards[1]]),
        _episode([5, 11, 12], [0, 0, 1], [1.0], group=1),  # a group of one
        _episode([5, 11, 13], [0, 0, 1], [0.0], group=1, infra=True),  # dropped first
    ]
    learner = RLOOLearner(policy, RLOOConfig(lr=1e-2), RUN)
    before = snapshot(learner.parameters)
    metrics = learner.update(episodes)
    assert metrics["rollout/infra_errors"] == 1.0
    assert all(torch.equal(a, b) for a, b in zip(before, learner.parameters))


def test_every_turn_of_an_episode_gets_the_episodes_advantage(tiny_path):
    """Two turns (reply 7 8, env id 20, reply 9): both replies move with the episode's return."""
    policy = HFPolicy(tiny_path)
    policy.model.eval()
    two_turns = [0, 0, 1, 1, 0, 1]
    episodes = [
        _episode([5, 6, 7, 8, 20, 9], two_turns, [0.0, 1.0], turn_ends=[3, 5]),  # fixed at turn 2
        _episode([5, 6, 10, 11, 20, 12], two_turns, [0.0, 0.0], turn_ends=[3, 5]),
    ]
    batch = make_batch(episodes, policy.tokenizer.pad_token_id, "cpu")
    with torch.no_grad():
        before, _ = forward(policy.model, batch)
    RLOOLearner(policy, RLOOConfig(lr=1e-3), RUN).update(episodes)
    with torch.no_grad():
        after, _ = forward(policy.model, batch)
    first_reply, second_reply = [1, 2], [4]  # columns predicting ids 2-3 and id 5
    assert (after[0, first_reply] > before[0, first_reply]).all()  # the wrong first try too
    assert (after[0, second_reply] > before[0, second_reply]).all()
    assert (after[1, first_reply + second_reply] < before[1, first_reply + second_reply]).all()


def test_micro_batches_accumulate_the_update_of_the_whole_batch(tiny_path):
    episodes = [
        _episode([5, 6, 7, 8], [0, 0, 1, 1], [1.0]),
        _episode([5, 6, 9], [0, 0, 1], [0.0]),
        _episode([5, 6, 10, 11, 12], [0, 0, 1, 1, 1], [0.5]),
        _episode([5, 14, 15], [0, 0, 1], [1.0], group=1),
        _episode([5, 14, 16, 17], [0, 0, 1, 1], [0.0], group=1),
    ]
    updated = []
    for micro in (None, 2):
        policy = HFPolicy(tiny_path)
        RLOOLearner(policy, RLOOConfig(lr=1e-3, micro_batch_size=micro), RUN).update(episodes)
        updated.append(snapshot(policy.trainable_parameters()))
    for whole, accumulated in zip(*updated):
        assert torch.allclose(whole, accumulated, atol=1e-6)


# --- end to end -----------------------------------------------------------------------------------


def test_rlvr_train_algo_rloo(tiny_path, tmp_path, capsys):
    code = main(
        [
            "train", "--env", "test/Digits-v0", "--model", str(tiny_path), "--algo", "rloo",
            "--steps", "2", "--prompts", "2", "--group-size", "3", "--max-new-tokens", "6",
            "--lr", "1e-3", "--rloo.kl-coef", "0.05", "--eval-episodes", "4", "--out",
            str(tmp_path), "--no-progress", "--threads", "1", "--no-plot", "--no-tensorboard",
        ]
    )  # fmt: skip
    assert code == 0, capsys.readouterr().err
    assert "final model" in capsys.readouterr().out
    saved = read_config(TrainConfig, tmp_path / "config.toml")
    assert (saved.algo, saved.rloo) == ("rloo", RLOOConfig(lr=1e-3, kl_coef=0.05))
    assert (tmp_path / "final" / "model.safetensors").exists()
    trained = [row for row in read_metrics(tmp_path / "metrics.jsonl") if "losses/policy" in row]
    assert len(trained) == 2 and all("charts/advantage_abs" in row for row in trained)
