"""Re-judging replays stored episodes through `rlvr.rollout`'s loop, with an actor that gives
back the stored replies: replaying an evaluated run must reproduce it record for record."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pytest

from rlvr.leaderboards import ReverifyError
from rlvr.leaderboards import runner as runner_module
from rlvr.leaderboards.provenance import probe_env
from rlvr.leaderboards.suites import SuiteEnv
from rlvr.rollout.episodes import evaluate
from rlvr.rollout.records import EpisodeRecord
from rlvr.rollout.reports import EvalReport
from tests.leaderboards.leaderboard_support import (
    ADD_ENV,
    GUESS_ENV,
    YES_ENV,
    CountingPolicy,
    YesVerifier,
)

SEED = 5


def guesser(seed: int) -> CountingPolicy:
    """Guesses a number from 1 to 20 (its own seeded generator), counting tokens like a model."""
    rng = np.random.default_rng(seed)
    return CountingPolicy(lambda: str(rng.integers(1, 21)))


def evaluated(env_id: str, index_tasks: bool) -> tuple[SuiteEnv, EvalReport]:
    entry = SuiteEnv(env_id, env_id, {}, SEED, 12, index_tasks)
    report = evaluate(
        env_id,
        guesser(seed=3),
        episodes=entry.episodes,
        seed=SEED,
        samples_per_task=2,
        batch_size=5,
        env_probe=probe_env,
        reset_options=(lambda i: {"task_index": i}) if index_tasks else None,
    )
    return entry, report


def replay(entry: SuiteEnv, records: list[EpisodeRecord]) -> tuple[list[EpisodeRecord], dict]:
    shard = runner_module.Shard(entry, 0, entry.episodes, records=records)
    return runner_module._replay(shard, None)


def as_dicts(records: Sequence[EpisodeRecord]) -> list[dict]:
    return [record.to_dict() for record in records]


@pytest.mark.parametrize("batch", [1, 4])
@pytest.mark.parametrize(
    ("env_id", "index_tasks"), [(GUESS_ENV, False), (GUESS_ENV, True), (ADD_ENV, False)]
)
def test_replaying_an_evaluated_run_reproduces_its_records_exactly(
    env_id, index_tasks, batch, monkeypatch
):
    monkeypatch.setattr(runner_module, "REPLAY_BATCH", batch)  # the actor needs no fixed batch
    entry, report = evaluated(env_id, index_tasks)
    replayed, env_info = replay(entry, report.episodes)
    assert as_dicts(replayed) == as_dicts(report.episodes)
    assert env_info == report.env_info
    records = report.episodes
    assert all(
        r.completion_tokens == 3 * r.turns and r.prompt_tokens == 10 * r.turns for r in records
    )
    if env_id == GUESS_ENV:  # the run holds every ending: solved, and cut at the env's 6 turns
        assert {r.truncated for r in records} == {True, False}
        assert max(r.turns for r in records) == 6 and min(r.turns for r in records) < 6


def test_an_env_that_now_ends_earlier_drops_the_later_replies():
    entry, report = evaluated(GUESS_ENV, False)
    solved = [r for r in report.episodes if r.verdict["status"] == "correct"]
    assert solved
    extra = [{"role": "assistant", "content": "3"}, {"role": "user", "content": "Lower."}]
    longer = [replace(r, messages=[*r.messages, *extra]) for r in solved]
    replayed, _ = replay(entry, longer)
    assert as_dicts(replayed) == as_dicts(solved)


def test_an_env_that_wants_more_replies_than_stored_ends_truncated():
    entry, report = evaluated(GUESS_ENV, False)
    long = [r for r in report.episodes if r.turns >= 3]
    assert long
    cut = []
    for record in long:  # keep the first two replies (and the env's answers to the first)
        second = [i for i, m in enumerate(record.messages) if m["role"] == "assistant"][1]
        cut.append(replace(record, messages=record.messages[: second + 1]))
    replayed, _ = replay(entry, cut)
    for record, old in zip(replayed, long):
        assert record.turns == 2 and record.truncated and record.rewards == old.rewards[:2]
        assert record.messages == old.messages[: len(record.messages)]
    none_left = [replace(r, messages=r.messages[:2]) for r in long]  # system prompt and task
    replayed, _ = replay(entry, none_left)
    for record, old in zip(replayed, long):
        assert record.turns == 0 and record.truncated and record.messages == old.messages[:2]


def test_a_changed_task_is_refused_before_any_reply_is_judged(monkeypatch):
    entry, report = evaluated(YES_ENV, False)
    judged: list[str] = []
    monkeypatch.setattr(YesVerifier, "verify", lambda self, reply, task: judged.append(reply))
    # As if the env now drew other tasks: each stored seed poses its neighbour's task.
    moved = [replace(r, seed=r.seed + 1) for r in report.episodes]
    with pytest.raises(ReverifyError, match="episode 0 .*now poses task"):
        replay(entry, moved)
    assert judged == []
