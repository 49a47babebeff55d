"""Dynamic sampling, the difficulty curriculum, overlong reward shaping and per-turn credit:
their mechanics."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from rlvr.agents.curriculum import (  # noqa: E402
    CurriculumConfig,
    DifficultyCurriculum,
    flat_group_fraction,
    informative_groups,
    renumber,
)
from rlvr.agents.hf import HFPolicy  # noqa: E402
from rlvr.agents.learners.common import make_batch  # noqa: E402
from rlvr.agents.learners.grpo import GRPOConfig, GRPOLearner, overlong_penalties  # noqa: E402
from rlvr.agents.rollouts import EnvSpec, Episode  # noqa: E402
from rlvr.agents.train import TrainConfig, Trainer  # noqa: E402
from rlvr.rollout.records import EpisodeRecord  # noqa: E402
from tests.agents.support import train_config  # noqa: E402


def _episode(group: int, reward: float, mask=(0, 0, 1, 1), infra: bool = False) -> Episode:
    record = EpisodeRecord(0, 0, 0, "t", [], [reward], None, infra, False)
    ids = list(range(5, 5 + len(mask)))
    logprobs = [-0.5 if flag else 0.0 for flag in mask]
    return Episode(record, "e", group, ids, list(mask), logprobs, [len(mask) - 1], 2)


# --- per-turn credit -----------------------------------------------------------------------------


def test_turn_credit_gives_each_reply_the_advantage_of_its_own_turn(tiny_path):
    def episode(rewards, mask, turn_ends):
        record = EpisodeRecord(0, 0, 0, "t", [], list(rewards), None, False, False)
        ids = list(range(5, 5 + len(mask)))
        return Episode(record, "e", 0, ids, list(mask), [-0.5] * len(mask), list(turn_ends), 2)

    two_turns = (0, 0, 1, 1, 0, 1)  # reply 1 is ids 2-3, the env's feedback id 4, reply 2 id 5
    episodes = [
        episode([0.0, 0.75], two_turns, [3, 5]),  # wrong, then fixed
        episode([0.0, 0.0], two_turns, [3, 5]),  # wrong twice
        episode([1.0], (0, 0, 1), [2]),  # right at once
    ]
    config = GRPOConfig(lr=1e-3, turn_credit=True, scale_rewards=False)
    learner = GRPOLearner(HFPolicy(tiny_path), config, temperature=1.0, completion_budget=8)
    batch = make_batch(episodes, 0, "cpu")
    table = learner._turn_advantages(episodes, batch, torch.zeros(3)) * batch.loss_mask
    # turn 1: returns 0.75, 0, 1 against their mean 7/12; turn 2: 0.75, 0 against 0.375
    first, second = 0.75 - 7 / 12, 0.375
    assert table[0].tolist() == pytest.approx([0, first, first, 0, second])
    assert table[1].tolist() == pytest.approx([0, -7 / 12, -7 / 12, 0, -second])
    assert table[2].tolist() == pytest.approx([0, 1 - 7 / 12, 0, 0, 0])
    assert learner.update(episodes)["charts/advantage_abs"] > 0


# --- overlong shaping ----------------------------------------------------------------------------


def test_overlong_penalty_ramps_over_the_buffer_to_the_full_penalty_at_the_budget():
    lengths = [4, 12, 13, 14, 16, 20]
    # budget 16, buffer 4: free up to 12 ids, then -1/4 per id, -1 at 16
    assert overlong_penalties(lengths, 16, 4) == [0.0, 0.0, -0.25, -0.5, -1.0, -1.0]
    assert overlong_penalties(lengths, 16, 4, penalty=0.5)[3] == -0.25
    assert overlong_penalties(lengths, 16, 0) == [0.0] * 6


def test_reply_lengths_and_entropy_estimate_read_the_generated_runs():
    episode = _episode(0, 1.0, mask=(0, 0, 1, 1, 1, 0, 0, 1, 1))
    assert episode.reply_lengths == [3, 2]
    assert episode.entropy_estimate == pytest.approx(0.5)


def test_overlong_shaping_separates_equal_rewards_by_length(tiny_path):
    short, long = (0, 0, 1, 1), (0, 0, 1, 1, 1, 1, 1, 1)  # 2 and 6 generated ids
    episodes = [_episode(0, 1.0, short), _episode(0, 1.0, long)]
    policy = HFPolicy(tiny_path)
    plain = GRPOLearner(policy, GRPOConfig(lr=1e-3), temperature=1.0, completion_budget=6)
    assert plain._overlong_shaping(episodes).tolist() == [0.0, 0.0]
    assert plain.update(episodes)["charts/advantage_abs"] == 0.0
    shaped_config = GRPOConfig(lr=1e-3, overlong_buffer=4)
    shaped = GRPOLearner(policy, shaped_config, temperature=1.0, completion_budget=6)
    assert shaped._overlong_shaping(episodes).tolist() == [0.0, -1.0]
    assert shaped.update(episodes)["charts/advantage_abs"] > 0.5


def test_an_overlong_buffer_as_long_as_the_reply_budget_is_refused(tiny_path, tmp_path):
    with pytest.raises(ValueError, match="overlong_buffer"):
        train_config(tiny_path, tmp_path, max_new_tokens=8, grpo=GRPOConfig(overlong_buffer=8))
    with pytest.raises(ValueError, match="overlong_buffer"):
        GRPOConfig(overlong_buffer=-1)


# --- dynamic sampling ----------------------------------------------------------------------------


def test_informative_groups_keep_groups_whose_judged_rewards_differ():
    episodes = [
        _episode(0, 1.0),
        _episode(0, 1.0),  # flat
        _episode(1, 0.0),
        _episode(1, 1.0),  # differs
        _episode(2, 0.0),
        _episode(2, 1.0, infra=True),  # one judged episode only: flat
        _episode(3, 0.5),
        _episode(3, 0.0),
        _episode(3, 0.0, infra=True),  # differs; the infra episode stays with its group
    ]
    kept = informative_groups(episodes)
    assert [[e.group for e in group] for group in kept] == [[1, 1], [3, 3, 3]]
    assert flat_group_fraction(episodes) == 0.5
    assert [e.group for e in renumber(kept)] == [0, 0, 1, 1, 1]
    assert [e.group for e in kept[1]] == [3, 3, 3]  # the originals keep their numbers


def _flat_groups(episodes):
    return len({e.group for e in episodes}) - len(informative_groups(episodes))


def test_dynamic_sampling_refills_the_batch_with_groups_whose_rewards_differ(tiny_path, tmp_path):
    settings = dict(envs=[EnvSpec("test/HalfFlat-v0")], prompts_per_step=6, group_size=4)
    plain = Trainer(train_config(tiny_path, tmp_path / "plain", **settings))
    trained, sampled, rounds, _ = plain.collect()
    assert trained is sampled and rounds == 1
    assert _flat_groups(trained) >= 2  # odd answers: every reply right, no signal

    config = train_config(
        tiny_path, tmp_path / "dynamic", dynamic_sampling=True, max_sampling_rounds=8, **settings
    )
    trainer = Trainer(config)
    trained, sampled, rounds, _ = trainer.collect()
    assert rounds > 1 and len(sampled) > len(trained)
    assert flat_group_fraction(sampled) > 0.0  # the groups dropped are still counted
    groups = sorted({e.group for e in trained})
    assert groups == list(range(6))  # a full batch, renumbered
    assert _flat_groups(trained) == 0
    for group in groups:
        members = [e for e in trained if e.group == group]
        assert len(members) == 4 and len({e.record.task_id for e in members}) == 1
    metrics = trainer.train_step()
    assert metrics["rollout/zero_std_groups"] == 0.0
    assert 0.0 <= metrics["rollout/flat_groups_sampled"] < 1.0
    assert metrics["rollout/groups_trained"] == 6.0


def test_dynamic_sampling_trains_on_what_it_has_after_max_rounds(tiny_path, tmp_path):
    config = train_config(
        tiny_path,
        tmp_path,
        envs=[EnvSpec("test/HalfFlat-v0")],
        prompts_per_step=6,
        group_size=4,
        dynamic_sampling=True,
        max_sampling_rounds=1,
    )
    trained, sampled, rounds, _ = Trainer(config).collect()
    assert rounds == 1 and len(trained) < len(sampled) and _flat_groups(trained) == 0


# --- curriculum ----------------------------------------------------------------------------------


def test_curriculum_moves_up_and_down_as_the_window_mean_crosses_its_thresholds():
    curriculum = DifficultyCurriculum(
        CurriculumConfig(levels=(1, 2, 3), promote_at=0.75, demote_at=0.25, window=4)
    )
    assert curriculum.record([(1, 1.0), (1, 1.0), (1, 1.0)]) == 1  # window not full yet
    assert curriculum.record([(2, 0.0)]) == 1  # another level's episode does not count
    assert curriculum.record([(1, 0.0), (1, 1.0)]) == 2  # last 4 at level 1: 1, 1, 0, 1 -> 0.75
    assert list(curriculum.rewards) == []  # a new level starts a new window
    assert curriculum.record([(2, 0.5)] * 4) == 2  # between the thresholds: stays
    assert curriculum.record([(2, 0.0)] * 3) == 1  # 0.5, 0, 0, 0 -> 0.125: back down
    top = DifficultyCurriculum(CurriculumConfig(levels=(1, 2), start=2, window=1))
    assert top.record([(2, 1.0)]) == 2  # no level above the last
    restored = DifficultyCurriculum(CurriculumConfig(levels=(1, 2, 3), window=4))
    restored.load_state_dict(curriculum.state_dict())
    assert restored.level == 1 and list(restored.rewards) == list(curriculum.rewards)


def test_features_that_sample_in_this_process_refuse_async_ray_and_self_play(tiny_path, tmp_path):
    with pytest.raises(ValueError, match="dynamic_sampling"):
        train_config(tiny_path, tmp_path, dynamic_sampling=True, async_rollouts=True)
    with pytest.raises(ValueError, match="curriculum"):
        train_config(tiny_path, tmp_path, curriculum=CurriculumConfig(levels=(1, 2)), ray="local")


@pytest.mark.parametrize(
    "kwargs",
    [{"levels": ()}, {"levels": (1, 1)}, {"start": 4}, {"promote_at": 0.2, "demote_at": 0.3}],
)
def test_bad_curriculum_settings_are_refused(kwargs):
    with pytest.raises(ValueError, match="curriculum|demote_at"):
        CurriculumConfig(**{"levels": (1, 2, 3), **kwargs})


def test_trainer_draws_tasks_at_the_curriculum_level_and_saves_it(tiny_path, tmp_path):
    curriculum = CurriculumConfig(levels=(1, 2), promote_at=0.9, window=6)
    config = train_config(
        tiny_path,
        tmp_path,
        envs=[EnvSpec("test/Leveled-v0")],
        prompts_per_step=3,
        group_size=2,
        curriculum=curriculum,
    )
    trainer = Trainer(config)
    first = trainer.train_step()  # level 1: every reply right, 6 episodes fill the window
    assert first["rollout/reward_mean"] == 1.0
    assert first["curriculum/test/Leveled-v0/level"] == 2.0
    second = trainer.train_step()
    assert second["rollout/reward_mean"] == 0.0  # played at level 2
    folder = trainer.save_checkpoint()
    resumed = Trainer(config)
    resumed.load_checkpoint(folder)
    assert resumed.curricula[0].level == 2


def test_a_curriculum_level_the_env_refuses_fails_before_the_model_loads(tmp_path):
    config = TrainConfig(
        envs=[EnvSpec("rlvr/Math-v0")],
        model="no/such-model",
        output_dir=str(tmp_path),
        curriculum=CurriculumConfig(levels=(1, 9)),
    )
    with pytest.raises(ValueError, match="difficulty"):
        Trainer(config)
