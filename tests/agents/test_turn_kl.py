"""Per-turn KL weights (`GRPOConfig.turn_beta`, `PPOConfig.turn_kl_coef`): SCoRe's stage I pins
the first attempt near the starting policy while the second is trained."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from rlvr.agents.hf import HFPolicy  # noqa: E402
from rlvr.agents.learners.common import make_batch, per_turn, token_turns  # noqa: E402
from rlvr.agents.learners.grpo import GRPOConfig, GRPOLearner  # noqa: E402
from rlvr.agents.learners.ppo import PPOConfig, PPOLearner  # noqa: E402
from rlvr.agents.rollouts import Episode  # noqa: E402
from rlvr.rollout.records import EpisodeRecord  # noqa: E402

# reply 1 is ids 2-4, the env's feedback ids 5-6, reply 2 ids 7-8
TWO_TURNS = (0, 0, 1, 1, 1, 0, 0, 1, 1)
TWO_TURN_ENDS = [4, 8]


def _episode(group: int, rewards, mask=TWO_TURNS, turn_ends=TWO_TURN_ENDS, first_id=5) -> Episode:
    record = EpisodeRecord(0, 0, 0, "t", [], list(rewards), None, False, False)
    ids = [first_id + (i * 7) % 40 for i in range(len(mask))]
    logprobs = [-0.5 if flag else 0.0 for flag in mask]
    return Episode(record, "e", group, ids, list(mask), logprobs, list(turn_ends), 2)


def _flat_batch() -> list[Episode]:
    """Two-turn episodes whose rewards are all equal: zero advantage, only the KL term acts."""
    return [_episode(0, [0.0, 0.0], first_id=5 + k) for k in range(4)]


def test_token_turns_put_each_reply_id_in_its_own_turn():
    one_turn = _episode(0, [1.0], mask=(0, 0, 1, 1), turn_ends=[3])
    episodes = [_episode(0, [0.0, 0.0]), one_turn]
    turns = token_turns(episodes, len(TWO_TURNS) - 1)  # column t is about id t+1
    assert turns[0].tolist() == [0, 0, 0, 0, 1, 1, 1, 1]  # ids 1-4 turn 1, ids 5-8 turn 2
    assert turns[1].tolist() == [0] * 8  # one reply: everything is its turn
    # the last weight repeats for turns past the tuple
    assert per_turn((2.0, 0.5), torch.tensor([[0, 1, 2, 3]])).tolist() == [[2.0, 0.5, 0.5, 0.5]]


def test_turn_beta_weights_each_generated_id_by_its_turn(tiny_path):
    episodes = [_episode(0, [0.0, 0.0]), _episode(0, [1.0], mask=(0, 0, 1, 1), turn_ends=[3])]
    config = GRPOConfig(lr=1e-3, turn_beta=(3.0, 0.25))
    learner = GRPOLearner(HFPolicy(tiny_path), config, temperature=1.0, completion_budget=8)
    batch = make_batch(episodes, 0, "cpu")
    weights = learner._kl_weights(episodes, batch) * batch.loss_mask
    assert weights[0].tolist() == [0, 3.0, 3.0, 3.0, 0, 0, 0.25, 0.25]
    assert weights[1].tolist() == [0, 3.0, 3.0, 0, 0, 0, 0, 0]
    plain = GRPOLearner(HFPolicy(tiny_path), GRPOConfig(lr=1e-3, beta=0.5), temperature=1.0,
                        completion_budget=8)  # fmt: skip
    assert (plain._kl_weights(episodes, batch) * batch.loss_mask).tolist()[0][1:4] == [0.5] * 3


def _perturbed_learner(tiny_path, turn_beta) -> GRPOLearner:
    """A learner whose reference is the saved model and whose policy was then moved off it."""
    policy = HFPolicy(tiny_path)
    config = GRPOConfig(lr=3e-3, turn_beta=turn_beta, max_grad_norm=None)
    learner = GRPOLearner(policy, config, temperature=1.0, completion_budget=16)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for parameter in policy.trainable_parameters():
            parameter.add_(0.05 * torch.randn(parameter.shape, generator=generator))
    return learner


def _kl_drop(learner: GRPOLearner, updates: int = 5) -> dict[int, float]:
    """By how much, relatively, each turn's KL to the reference fell over `updates` updates."""
    episodes = _flat_batch()
    first = learner.update(episodes)
    for _ in range(updates - 1):
        learner.update(episodes)
    last = learner.update(episodes)
    assert first["charts/advantage_abs"] == 0.0  # only the KL term moves the weights
    return {
        turn: 1 - last[f"losses/kl_turn{turn}"] / first[f"losses/kl_turn{turn}"] for turn in (1, 2)
    }


def test_the_first_turns_weight_pulls_the_first_attempt_back_and_the_seconds_the_second(
    tiny_path,
):
    pin_first = _kl_drop(_perturbed_learner(tiny_path, (1.0, 0.0)))
    pin_second = _kl_drop(_perturbed_learner(tiny_path, (0.0, 1.0)))
    assert pin_first[1] > 0.05 and pin_second[2] > 0.05  # the weighted turn moved back
    # each turn comes back further when it is the one weighted (the weights are shared, so
    # the other turn moves too, either way)
    assert pin_first[1] > pin_second[1] + 0.1 and pin_second[2] > pin_first[2] + 0.1


def _changes_weights(tiny_path, episodes, turn_pg_weight) -> bool:
    policy = HFPolicy(tiny_path)
    config = GRPOConfig(lr=1e-2, turn_credit=True, turn_pg_weight=turn_pg_weight)
    learner = GRPOLearner(policy, config, temperature=1.0, completion_budget=16)
    before = [parameter.detach().clone() for parameter in policy.trainable_parameters()]
    learner.update(episodes)
    after = policy.trainable_parameters()
    return any(not torch.equal(old, new) for old, new in zip(before, after))


def test_turn_pg_weight_zero_leaves_that_turns_signal_out(tiny_path):
    one_reply = dict(mask=(0, 0, 1, 1, 1), turn_ends=[4])
    first_turn_signal = [_episode(0, [1.0], **one_reply), _episode(0, [0.0], **one_reply)]
    second_turn_signal = [_episode(0, [0.0, 1.0]), _episode(0, [0.0, 0.0], first_id=9)]
    assert _changes_weights(tiny_path, first_turn_signal, None)
    assert not _changes_weights(tiny_path, first_turn_signal, (0.0, 1.0))  # nothing to learn
    assert _changes_weights(tiny_path, first_turn_signal, (1.0, 0.0))  # turn 1 alone counts
    assert _changes_weights(tiny_path, second_turn_signal, (0.0, 1.0))  # turn 2 still learns


def test_without_any_positive_weight_no_reference_is_kept(tiny_path):
    config = GRPOConfig(lr=1e-3, turn_beta=(0.0, 0.0))
    learner = GRPOLearner(HFPolicy(tiny_path), config, temperature=1.0, completion_budget=8)
    assert learner.reference is None
    metrics = learner.update([_episode(0, [0.0, 1.0]), _episode(0, [0.0, 0.0])])
    assert metrics["losses/kl"] == 0.0 and "losses/kl_turn1" not in metrics
    pinned = GRPOConfig(lr=1e-3, turn_beta=(1.0, 0.0))
    assert GRPOLearner(HFPolicy(tiny_path), pinned, temperature=1.0, completion_budget=8).reference


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"turn_beta": ()}, "turn_beta must be one finite weight >= 0 per turn"),
        ({"turn_beta": (1.0, -0.1)}, "turn_beta must be one finite weight >= 0 per turn"),
        # every config's number check (rlvr.config.check_numbers) names the entry first
        ({"turn_beta": (float("nan"),)}, r"turn_beta\[0\] must be a finite number, got nan"),
        ({"turn_beta": (1.0, 0.0), "beta": 0.1}, "turn_beta replaces beta"),
        ({"turn_pg_weight": (-1.0, 1.0)}, "turn_pg_weight must be one finite weight >= 0"),
    ],
)
def test_grpo_refuses_bad_turn_weights_naming_the_fix(kwargs, match):
    with pytest.raises(ValueError, match=match):
        GRPOConfig(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"turn_kl_coef": (-1.0,)}, "turn_kl_coef must be one finite weight >= 0 per turn"),
        ({"turn_kl_coef": (1.0,), "kl_coef": 0.1}, "turn_kl_coef replaces kl_coef"),
    ],
)
def test_ppo_refuses_bad_turn_weights_naming_the_fix(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PPOConfig(**kwargs)


def test_ppo_pays_each_turns_kl_penalty_at_its_own_coefficient(tiny_path):
    episodes = [_episode(0, [0.0, 1.0]), _episode(0, [0.0, 0.0])]
    config = PPOConfig(lr=1e-3, turn_kl_coef=(2.0, 0.0))
    learner = PPOLearner(HFPolicy(tiny_path), config, temperature=1.0, seed=0)
    assert learner.reference is not None
    batch = make_batch(episodes, 0, "cpu")
    coefs = learner._kl_coefs(episodes, batch) * batch.loss_mask
    assert coefs[0].tolist() == [0, 2.0, 2.0, 2.0, 0, 0, 0, 0]
    assert PPOLearner(HFPolicy(tiny_path), PPOConfig(lr=1e-3), temperature=1.0, seed=0).reference \
        is None  # fmt: skip


def test_ppo_pays_the_penalty_only_on_the_turns_it_is_set_for(tiny_path):
    """Zero env rewards: the returns are the KL penalties still to come. On one-reply episodes a
    penalty set for the second turn only is never paid; one set for the first is."""
    one_turn = [_episode(0, [0.0], mask=(0, 0, 1, 1, 1), turn_ends=[4], first_id=5 + k)
                for k in range(4)]  # fmt: skip

    def update(turn_kl_coef) -> dict[str, float]:
        policy = HFPolicy(tiny_path)
        config = PPOConfig(lr=1e-3, turn_kl_coef=turn_kl_coef, whiten_advantages=False)
        learner = PPOLearner(policy, config, temperature=1.0, seed=0)
        generator = torch.Generator().manual_seed(0)
        with torch.no_grad():  # off the reference, so that the KL is not 0
            for parameter in policy.trainable_parameters():
                parameter.add_(0.05 * torch.randn(parameter.shape, generator=generator))
        return learner.update(one_turn)

    second_only, first_only = update((0.0, 1.0)), update((1.0, 0.0))
    assert second_only["charts/kl_to_reference"] != 0  # measured, but not paid on turn 1
    assert second_only["charts/return_mean"] == 0.0
    assert abs(first_only["charts/return_mean"]) > 0.01


def test_turn_weights_from_the_command_line():
    from rlvr.agents.train_config import TrainConfig
    from rlvr.cli import build_parser
    from rlvr.config import resolve

    flags = ["--grpo.turn-beta", "1.0", "0.0", "--ppo.turn-kl-coef", "0.5"]
    args = build_parser().parse_args(["train", "--env", "e", "--model", "m", *flags])
    config = resolve(TrainConfig, args, args.config)
    assert config.grpo.turn_beta == (1.0, 0.0) and config.ppo.turn_kl_coef == (0.5,)


def test_ppo_turn_pg_weight_zero_leaves_the_policy_alone_on_that_turn(tiny_path):
    """One-reply episodes, the first turn's weight 0: the policy updates as on episodes with no
    signal at all (AdamW's weight decay still acts); weight 1 learns from them."""
    one_reply = dict(mask=(0, 0, 1, 1, 1), turn_ends=[4])
    signal = [_episode(0, [1.0], **one_reply), _episode(0, [0.0], **one_reply, first_id=9)]
    flat = [_episode(0, [0.0], **one_reply), _episode(0, [0.0], **one_reply, first_id=9)]

    def weights_after(episodes, turn_pg_weight) -> list:
        policy = HFPolicy(tiny_path)
        config = PPOConfig(lr=1e-2, turn_pg_weight=turn_pg_weight, vf_coef=0.0)
        PPOLearner(policy, config, temperature=1.0, seed=0).update(episodes)
        return [parameter.detach().clone() for parameter in policy.trainable_parameters()]

    def same(first, second) -> bool:
        return all(torch.equal(a, b) for a, b in zip(first, second))

    unmoved = weights_after(flat, None)
    assert same(weights_after(signal, (0.0, 1.0)), unmoved)
    assert not same(weights_after(signal, (1.0, 0.0)), unmoved)
