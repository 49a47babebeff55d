"""Self-play: multi-agent games as per-seat episodes, each seat trained on its own tokens only."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from rlvr.agents.hf import HFPolicy  # noqa: E402
from rlvr.agents.metrics import read_metrics  # noqa: E402
from rlvr.agents.policy import SamplingParams  # noqa: E402
from rlvr.agents.rollouts import EnvSpec  # noqa: E402
from rlvr.agents.selfplay import GameCollector, SelfPlayConfig  # noqa: E402
from rlvr.agents.train import TrainConfig, Trainer  # noqa: E402
from rlvr.cli import main  # noqa: E402
from rlvr.config import read_config  # noqa: E402
from tests.agents.support import train_config  # noqa: E402

SAMPLING = SamplingParams(temperature=1.0, max_new_tokens=12)


def runs(mask: list[int]) -> list[tuple[int, int]]:
    """The [start, end) spans of consecutive 1s."""
    spans, start = [], None
    for i, bit in enumerate([*mask, 0]):
        if bit and start is None:
            start = i
        elif not bit and start is not None:
            spans.append((start, i))
            start = None
    return spans


def negotiation_episodes(tiny_path, **collector_kwargs):
    policy = HFPolicy(tiny_path, seed=3)
    spec = EnvSpec("rlvr/Negotiation-v0", kwargs={"max_turns": 4})
    collector = GameCollector(policy, [spec], group_size=2, sampling=SAMPLING, **collector_kwargs)
    generator = torch.Generator().manual_seed(0)
    return policy, collector.collect([(0, 5)], generator)


def test_each_seat_is_trained_on_its_own_generated_ids_only(tiny_path):
    policy, episodes = negotiation_episodes(tiny_path)
    assert sorted(e.seat for e in episodes) == ["player_0", "player_0", "player_1", "player_1"]
    by_game = {}
    for episode in episodes:
        by_game.setdefault(episode.record.sample, {})[episode.seat] = episode
    for seats in by_game.values():
        for seat, episode in seats.items():
            own = [m["content"] for m in episode.record.messages if m["role"] == "assistant"]
            spans = runs(episode.loss_mask)
            # one trained span per reply of this seat, holding exactly the ids it generated
            assert len(spans) == len(own) == episode.record.turns >= 2
            assert [policy.decode(episode.token_ids[a:b]) for a, b in spans] == own
            assert [b - 1 for _, b in spans] == episode.turn_ends
            assert episode.loss_mask[: episode.prompt_length] == [0] * episode.prompt_length
            # the other seat's replies reach this seat as the env relays them, never trained on
            other = seats["player_1" if seat == "player_0" else "player_0"]
            relayed = policy.decode(
                [t for t, m in zip(episode.token_ids, episode.loss_mask) if m == 0]
            )
            theirs = [m["content"] for m in other.record.messages if m["role"] == "assistant"]
            assert any(text.strip() and text.strip()[:20] in relayed for text in theirs)


def test_against_an_opponent_only_the_trained_seat_comes_back_and_seats_alternate(tiny_path):
    from rlvr.agents.scripted import FixedPolicy

    _, episodes = negotiation_episodes(tiny_path, opponent=FixedPolicy("No deal."))
    assert [e.seat for e in episodes] == ["player_0", "player_1"]
    for episode in episodes:
        assert "No deal." not in [
            m["content"] for m in episode.record.messages if m["role"] == "assistant"
        ]
        # groups are (task, seat): a seat is compared with the same seat on the same task
        assert episode.group == ["player_0", "player_1"].index(episode.seat)


def test_each_seat_may_have_its_own_policy(tiny_path):
    first, second = HFPolicy(tiny_path, seed=1), HFPolicy(tiny_path, seed=2)
    spec = EnvSpec("rlvr/Negotiation-v0", kwargs={"max_turns": 2})
    collector = GameCollector(
        {"player_0": first, "player_1": second}, [spec], group_size=2, sampling=SAMPLING
    )
    episodes = collector.collect([(0, 1)], torch.Generator().manual_seed(0))
    assert sorted(e.seat for e in episodes) == ["player_0", "player_0", "player_1", "player_1"]
    with pytest.raises(ValueError, match="no policy for the seats"):
        GameCollector({"player_0": first}, [spec], group_size=1, sampling=SAMPLING).collect(
            [(0, 1)]
        )


def selfplay_config(tiny_path, out, **overrides) -> TrainConfig:
    settings = dict(
        envs=[EnvSpec("rlvr/Connect4-v0")],
        group_size=2,
        prompts_per_step=2,
        max_new_tokens=6,
        max_turns=3,
        eval_episodes=4,
        self_play=SelfPlayConfig(),
    )
    return train_config(tiny_path, out, **{**settings, **overrides})


def test_a_snapshot_opponent_is_the_trained_policy_of_an_earlier_step(tiny_path, tmp_path):
    config = selfplay_config(
        tiny_path, tmp_path, self_play=SelfPlayConfig(opponent="snapshot", snapshot_every=2)
    )
    trainer = Trainer(config)

    def same() -> bool:
        mine, theirs = trainer.policy.model.state_dict(), trainer.snapshot.model.state_dict()
        return all(torch.equal(mine[k], theirs[k]) for k in mine)

    assert same() and trainer.collector.opponent is trainer.snapshot
    trainer.train_step()
    with torch.no_grad():  # the policy moves (whether or not this step's games taught it)
        next(trainer.policy.model.parameters()).add_(0.5)
    assert not same()
    trainer.train_step()
    assert same()  # refreshed at step 2


@pytest.mark.parametrize("algo", ["grpo", "ppo"])
def test_rlvr_train_self_play_on_connect4(tiny_path, tmp_path, capsys, algo):
    code = main(
        [
            "train", "--env", "rlvr/Connect4-v0", "--self-play", "--self-play.opponent", "legal",
            "--model", str(tiny_path), "--steps", "2", "--prompts", "1", "--group-size", "2",
            "--max-new-tokens", "6", "--max-turns", "3", "--eval-episodes", "4", "--out",
            str(tmp_path), "--no-progress", "--threads", "1", "--algo", algo,
        ]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "(win rate against legal in 4 games, greedy)" in out  # what its held-out line measured
    saved = read_config(TrainConfig, tmp_path / "config.toml")
    assert saved.self_play == SelfPlayConfig(opponent="legal") and saved.algo == algo
    rows = read_metrics(tmp_path / "metrics.jsonl")
    evaluations = [r for r in rows if "eval/rlvr/Connect4-v0/success_rate" in r]
    assert len(evaluations) == 2 and "rollout/reward_mean" in rows[1]
    assert (tmp_path / "final" / "model.safetensors").exists()


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"self_play": None}, "rlvr/Connect4-v0 is a multi-agent env: train on it by self-play"),
        ({"envs": [EnvSpec("test/Digits-v0")]}, "test/Digits-v0 is single-agent"),
        ({"self_play": SelfPlayConfig(opponent="gpt")}, "unknown agent 'gpt'"),
        ({"envs": [EnvSpec("rlvr/Connect4-v0", kwargs={"size": 3})]}, "unknown argument.*size=3"),
    ],
)
def test_bad_self_play_settings_name_the_fix(tiny_path, tmp_path, overrides, message):
    with pytest.raises(ValueError, match=message):
        Trainer(selfplay_config(tiny_path, tmp_path, **overrides))


def test_a_moving_evaluation_opponent_is_refused():
    with pytest.raises(ValueError, match="eval_opponent must be a fixed agent"):
        SelfPlayConfig(eval_opponent="snapshot")
