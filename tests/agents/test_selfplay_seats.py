"""Self-play with a policy per seat (`SelfPlayConfig.policy_per_seat`): each seat's model is
trained by its own learner on that seat's episodes only, saved, resumed and evaluated per seat."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from rlvr.agents.hf import HFPolicy  # noqa: E402
from rlvr.agents.kinds import make_policy  # noqa: E402
from rlvr.agents.metrics import read_metrics  # noqa: E402
from rlvr.agents.rollouts import EnvSpec  # noqa: E402
from rlvr.agents.scripted import FixedPolicy  # noqa: E402
from rlvr.agents.selfplay import SeatLearners, SelfPlayConfig  # noqa: E402
from rlvr.agents.train import TrainConfig, Trainer, train  # noqa: E402
from rlvr.cli import main  # noqa: E402
from rlvr.config import read_config  # noqa: E402
from rlvr.rollout.games import play_match  # noqa: E402
from tests.agents.support import LENGTH_DUEL, train_config  # noqa: E402

SEATS = ("player_0", "player_1")
PER_SEAT = SelfPlayConfig(policy_per_seat=True, eval_opponent="random:1")


def duel_config(tiny_path, out, **overrides) -> TrainConfig:
    """test/LengthDuel-v0: both seats reply in every game (a Connect Four game may end at the
    first seat's illegal move, leaving the second seat without an episode) and an untrained
    model's rewards differ within each seat's groups (its replies' lengths)."""
    settings = dict(
        envs=[EnvSpec(LENGTH_DUEL)],
        group_size=2,
        prompts_per_step=2,
        max_new_tokens=6,
        eval_episodes=4,
        self_play=PER_SEAT,
    )
    return train_config(tiny_path, out, **{**settings, **overrides})


def weights(policy) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in policy.model.state_dict().items()}


def moved(before: dict[str, torch.Tensor], policy) -> bool:
    after = policy.model.state_dict()
    return any(not torch.equal(before[k], after[k]) for k in before)


def test_each_seat_starts_from_its_own_copy_of_the_model(tiny_path, tmp_path):
    trainer = Trainer(duel_config(tiny_path, tmp_path))
    first, second = (trainer.seat_policies[seat] for seat in SEATS)
    assert trainer.policy is first and first.model is not second.model
    assert not moved(weights(first), second)  # the same starting weights
    assert isinstance(trainer.learner, SeatLearners)
    assert trainer.collector.policy == trainer.seat_policies


@pytest.mark.parametrize("learning", SEATS)
def test_a_seats_learner_learns_from_that_seats_episodes_only(tiny_path, tmp_path, learning):
    """Only `learning`'s groups get rewards that differ; the other seat's are all equal, so its
    advantages, gradient and Adam step are exactly 0. Were episodes handed to the wrong learner
    (or to both), the other seat's model would move, or this one would not."""
    trainer = Trainer(duel_config(tiny_path, tmp_path))
    episodes = trainer.collector.collect(trainer.draw_tasks(), trainer.sample_generator)
    assert sorted({e.seat for e in episodes}) == list(SEATS)
    count = {seat: 0 for seat in SEATS}
    for episode in episodes:  # a group is a task's two games, consecutive: rewards 0 and 1
        value = float(count[episode.seat] % 2) if episode.seat == learning else 0.0
        count[episode.seat] += 1
        rewards = episode.record.rewards
        episode.record.rewards = [0.0] * (len(rewards) - 1) + [value]
    before = {seat: weights(policy) for seat, policy in trainer.seat_policies.items()}
    metrics = trainer.learner.update(episodes)
    changed = {seat: moved(before[seat], trainer.seat_policies[seat]) for seat in SEATS}
    assert changed == {seat: seat == learning for seat in SEATS}
    other = next(seat for seat in SEATS if seat != learning)
    assert metrics[f"charts/{learning}/advantage_abs"] > 0
    assert metrics[f"charts/{other}/advantage_abs"] == 0
    assert metrics["charts/advantage_abs"] == pytest.approx(
        metrics[f"charts/{learning}/advantage_abs"] / 2
    )


def test_seat_checkpoints_resume_every_seat_bit_for_bit(tiny_path, tmp_path):
    train(duel_config(tiny_path, tmp_path / "a", steps=2, save_every=1))
    resumed = duel_config(tiny_path, tmp_path / "b", steps=2)
    train(resumed, resume=tmp_path / "a" / "checkpoints" / "step-1")
    checkpoint = tmp_path / "a" / "checkpoints" / "step-1"
    assert sorted(p.name for p in checkpoint.iterdir()) == [*SEATS, "trainer.pt"]
    start = weights(HFPolicy(tiny_path))
    for seat in SEATS:
        assert (checkpoint / seat / "learner.pt").is_file()
        a = HFPolicy(tmp_path / "a" / "final" / seat)
        b = HFPolicy(tmp_path / "b" / "final" / seat)
        assert moved(start, a)  # trained, so the comparison below can fail
        assert not moved(weights(a), b)
        assert isinstance(make_policy(f"hf:{tmp_path / 'a' / 'final' / seat}"), HFPolicy)
    first, second = (HFPolicy(tmp_path / "a" / "final" / seat) for seat in SEATS)
    assert moved(weights(first), second)  # two models, each trained on its own seat's games


def test_metrics_and_evaluation_are_logged_per_seat_and_averaged(tiny_path, tmp_path):
    train(duel_config(tiny_path, tmp_path, steps=1))
    rows = read_metrics(tmp_path / "metrics.jsonl")
    step = next(row for row in rows if "losses/policy" in row)
    for seat in SEATS:
        assert f"losses/{seat}/policy" in step and f"rollout/{seat}/reward_mean" in step
    evaluations = [row for row in rows if "eval/success_rate" in row]
    assert len(evaluations) == 2
    for row in evaluations:
        rates = [row[f"eval/{seat}/success_rate"] for seat in SEATS]
        assert row["eval/success_rate"] == pytest.approx(sum(rates) / 2)
        env = LENGTH_DUEL
        assert row[f"eval/{env}/episodes"] == sum(row[f"eval/{s}/{env}/episodes"] for s in SEATS)


def test_a_match_may_seat_the_first_player_in_one_seat(tiny_path):
    report = play_match(
        "rlvr/Nim-v0", FixedPolicy("<move>1</move>"), make_policy("legal"), games=5,
        seat="player_1", batch_size=2,
    )  # fmt: skip
    assert report.first_seats == ["player_1"] * 5
    with pytest.raises(ValueError, match="no seat 'player_2'"):
        play_match("rlvr/Nim-v0", FixedPolicy("1"), FixedPolicy("1"), games=1, seat="player_2")


def test_rlvr_train_self_play_policy_per_seat(tiny_path, tmp_path, capsys):
    code = main(
        [
            "train", "--env", "rlvr/Connect4-v0", "--self-play", "--self-play.policy-per-seat",
            "--model", str(tiny_path), "--steps", "1", "--prompts", "1", "--group-size", "2",
            "--max-new-tokens", "6", "--max-turns", "3", "--eval-episodes", "2", "--out",
            str(tmp_path), "--no-progress", "--threads", "1",
        ]
    )  # fmt: skip
    assert code == 0, capsys.readouterr().err
    saved = read_config(TrainConfig, tmp_path / "config.toml")
    assert saved.self_play == SelfPlayConfig(policy_per_seat=True)
    for seat in SEATS:
        assert (tmp_path / "final" / seat / "model.safetensors").exists()


def test_a_policy_per_seat_needs_self_play_against_itself(tiny_path, tmp_path, capsys):
    with pytest.raises(ValueError, match="set opponent='self' or drop policy_per_seat"):
        SelfPlayConfig(opponent="legal", policy_per_seat=True)
    code = main(
        [
            "train", "--env", "rlvr/Connect4-v0", "--self-play", "--self-play.policy-per-seat",
            "--self-play.opponent", "snapshot", "--model", str(tiny_path), "--out", str(tmp_path),
        ]
    )  # fmt: skip
    assert code != 0 and "set opponent='self'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="drop --ray"):
        Trainer(duel_config(tiny_path, tmp_path, ray="local"))
    debate = EnvSpec("rlvr/Debate-v0")
    with pytest.raises(ValueError, match="every env needs the same seats.*separate runs"):
        Trainer(duel_config(tiny_path, tmp_path, envs=[EnvSpec(LENGTH_DUEL), debate]))
