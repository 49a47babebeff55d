"""`shared_turns`: a group's first replies are sampled once and shared by its episodes."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from rlvr.agents import SamplingParams  # noqa: E402
from rlvr.agents.hf import HFPolicy  # noqa: E402
from rlvr.agents.rollouts import EnvSpec, RolloutCollector  # noqa: E402
from rlvr.agents.selfplay import SelfPlayConfig  # noqa: E402
from rlvr.agents.train import TrainConfig  # noqa: E402

GROUP = 6
TASKS = [(0, seed) for seed in range(1, 7)]


def collect(policy, shared_turns, shared_greedy=False):
    collector = RolloutCollector(
        policy,
        [EnvSpec("test/Retry-v0")],
        group_size=GROUP,
        sampling=SamplingParams(max_new_tokens=6),
        shared_turns=shared_turns,
        shared_greedy=shared_greedy,
    )
    return collector.collect(TASKS, torch.Generator().manual_seed(0))


def reply(episode, turn):
    """The ids of reply `turn` (from 0) of an episode."""
    start = episode.prompt_length if turn == 0 else episode.turn_ends[turn - 1] + 1
    ids = episode.token_ids[start : episode.turn_ends[turn] + 1]
    return tuple(i for i, flag in zip(ids, episode.loss_mask[start:]) if flag)


def groups(episodes):
    by_group: dict[int, list] = {}
    for episode in episodes:
        by_group.setdefault(episode.group, []).append(episode)
    return list(by_group.values())


def test_a_group_shares_its_first_reply_and_differs_after_it(tiny_path):
    policy = HFPolicy(tiny_path)
    episodes = collect(policy, shared_turns=1)
    assert len(episodes) == GROUP * len(TASKS)
    seconds = []
    for group in groups(episodes):
        firsts = {reply(e, 0) for e in group}
        assert len(firsts) == 1, "one first reply per group"
        assert len({tuple(e.record.messages[1].values()) for e in group}) == 1
        # the envs saw the same reply, so they are in the same state and say the same
        assert len({len(e.turn_ends) for e in group}) == 1
        seconds += [{reply(e, 1) for e in group}] if len(group[0].turn_ends) > 1 else []
    assert seconds, "some first replies were wrong (the tiny model is untrained)"
    assert any(len(s) > 1 for s in seconds), "second replies are sampled one by one"
    assert all(sum(e.loss_mask) > 0 for e in episodes), "shared replies are still trained on"


def test_shared_greedy_replies_are_the_greedy_ones(tiny_path):
    policy = HFPolicy(tiny_path)
    episodes = collect(policy, shared_turns=1, shared_greedy=True)
    greedy = SamplingParams(temperature=0.0, max_new_tokens=6)
    for group in groups(episodes):
        prompt = group[0].token_ids[: group[0].prompt_length]
        (expected,) = policy.sample([prompt], greedy)
        assert {reply(e, 0) for e in group} == {tuple(expected.token_ids)}
    seconds = [{reply(e, 1) for e in g} for g in groups(episodes) if len(g[0].turn_ends) > 1]
    assert any(len(s) > 1 for s in seconds), "later replies are still sampled"


def test_without_sharing_first_replies_differ_within_a_group(tiny_path):
    episodes = collect(HFPolicy(tiny_path), shared_turns=0)
    assert any(len({reply(e, 0) for e in group}) > 1 for group in groups(episodes))


def test_shared_turns_is_checked(tiny_path):
    with pytest.raises(ValueError, match="shared_turns must be >= 0"):
        collect(HFPolicy(tiny_path), shared_turns=-1)
    with pytest.raises(ValueError, match="shared_turns must be >= 0"):
        TrainConfig(envs=["test/Retry-v0"], model=str(tiny_path), shared_turns=-1)
    with pytest.raises(ValueError, match="set shared_turns >= 1 too"):
        TrainConfig(envs=["test/Retry-v0"], model=str(tiny_path), shared_greedy=True)
    with pytest.raises(ValueError, match="set it to 0 with self_play"):
        TrainConfig(
            envs=["rlvr/TicTacToe-v0"],
            model=str(tiny_path),
            shared_turns=1,
            self_play=SelfPlayConfig(),
        )
