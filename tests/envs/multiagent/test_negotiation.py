"""rlvr/Negotiation-v0: the deal parser, rewards by private values, and what each side sees."""

from __future__ import annotations

import pytest

from rlvr.envs.errors import EnvConfigError
from rlvr.envs.multiagent.negotiation import NegotiationEnv

PINNED = {"counts": [3, 1, 2], "values": {"player_0": [2, 4, 0], "player_1": [0, 2, 4]}}


def started(**kwargs) -> NegotiationEnv:
    env = NegotiationEnv(**kwargs)
    env.reset(seed=0, options=PINNED)
    return env


def test_an_accepted_proposal_pays_each_side_its_own_value():
    env = started()
    env.step("I like books. <propose>book=3, hat=1, ball=0</propose>")
    env.step("Deal. <accept>")
    # player_0 takes 3 books + 1 hat = 3*2 + 4 = 10; player_1 gets 2 balls = 8.
    assert env._cumulative_rewards == {"player_0": 1.0, "player_1": 0.8}
    assert env.infos["player_1"]["outcome"] == "deal"
    assert env.infos["player_0"]["deal"] == {
        "player_0": {"book": 3, "hat": 1, "ball": 0},
        "player_1": {"book": 0, "hat": 0, "ball": 2},
    }
    assert env.infos["player_0"]["rewards"] == {"value": 1.0}


@pytest.mark.parametrize(
    "proposal",
    [
        "<propose>books=1, hats=1, balls=1</propose>",
        "<PROPOSE> ball: 1; book: 1 hat=1. </PROPOSE>",
        "<propose>book=0, hat=0, ball=0</propose> no: <propose>book=1,hat=1,ball=1</propose>",
    ],
)
def test_the_parser_reads_plurals_any_order_and_the_last_proposal(proposal):
    env = started()
    env.step(proposal)
    assert env._on_table == ("player_0", (1, 1, 1))
    assert "you would get book=2, hat=0, ball=1" in env.observe("player_1")


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ("<accept>", "nothing to accept"),
        ("<propose>book=4, hat=0, ball=0</propose>", "the pool has 3"),
        ("<propose>book=1, hat=0</propose>", "how many of ball"),
        ("<propose>book=1, hat=0, ball=0, cat=1</propose>", "unknown item 'cat'"),
        ("<propose>book=1, book=1, hat=0, ball=0</propose>", "book named twice"),
        ("<propose>give me everything</propose>", "not a list of item=number"),
        ("<propose>book=-1, hat=0, ball=0</propose>", "not a list of item=number"),
        ("<propose>book=1, hat=0, ball=0", "not closed"),
    ],
)
def test_a_malformed_turn_ends_with_nothing_for_both(reply, why):
    env = started()
    env.step(reply)
    assert all(env.terminations.values())
    assert env._cumulative_rewards == {"player_0": 0.0, "player_1": 0.0}
    assert env.infos["player_1"]["outcome"] == "malformed"
    assert env.infos["player_1"]["malformed_by"] == "player_0"
    assert why in env.observe("player_1")


def test_accepting_and_proposing_at_once_is_malformed():
    env = started()
    env.step("<propose>book=3, hat=0, ball=0</propose>")
    env.step("<accept> <propose>book=3, hat=1, ball=2</propose>")
    assert env.infos["player_0"]["outcome"] == "malformed"
    assert env._cumulative_rewards == {"player_0": 0.0, "player_1": 0.0}


def test_a_proposal_lapses_unless_accepted_at_once():
    env = started()
    env.step("<propose>book=3, hat=0, ball=0</propose>")
    env.step("Hmm, let me think.")
    env.step("<accept>")  # player_0 accepting its own lapsed proposal: nothing to accept
    assert env.infos["player_0"]["outcome"] == "malformed"


def test_no_deal_within_max_turns_pays_nothing():
    env = started(max_turns=4)
    for turn in range(4):
        assert not any(env.terminations.values())
        env.step(f"turn {turn}: <propose>book={turn % 2}, hat=0, ball=0</propose>")
    assert env.infos["player_0"]["outcome"] == "no_deal"
    assert env._cumulative_rewards == {"player_0": 0.0, "player_1": 0.0}


def test_the_last_turn_is_announced():
    env = started(max_turns=2)
    env.step("hello")
    assert "This is the last turn." in env.observe("player_1")


def test_an_agent_never_sees_the_partners_values():
    # Same turns, different values for player_1: player_0's view must not change.
    other = {**PINNED, "values": {**PINNED["values"], "player_1": [1, 3, 2]}}
    views = []
    for options in (PINNED, other):
        env = NegotiationEnv()
        env.reset(seed=0, options=options)
        env.step("<propose>book=3, hat=0, ball=0</propose>")
        env.step("No thanks. <propose>book=0, hat=1, ball=2</propose>")
        views.append((env.view("player_0"), env.infos["player_0"], env.observe("player_0")))
    assert views[0] == views[1]
    assert "book=2, hat=4, ball=0" in views[0][0][0]["content"]  # its own values it does see


def test_counts_and_values_are_drawn_with_the_seed():
    env = NegotiationEnv()
    drawn = set()
    for seed in range(20):
        env.reset(seed=seed)
        for agent in env.possible_agents:
            assert sum(c * v for c, v in zip(env.counts, env.values[agent])) == 10
        drawn.add((env.counts, env.values["player_0"], env.values["player_1"]))
        env.reset(seed=seed)
        assert (env.counts, env.values["player_0"], env.values["player_1"]) in drawn
    assert len(drawn) > 10


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"counts": [4, 4, 4]}, "options\\['counts'\\]"),
        ({"counts": [3, 1]}, "options\\['counts'\\]"),
        ({"counts": [3, 1, 2], "values": {"player_0": [1, 1, 1]}}, "worth 10"),
        ({"counts": [3, 1, 2], "values": {"player_5": [2, 4, 0]}}, "maps agents"),
    ],
)
def test_bad_options_and_arguments_are_refused(options, match):
    with pytest.raises(EnvConfigError, match=match):
        NegotiationEnv().reset(options=options)
    with pytest.raises(EnvConfigError, match="max_turns"):
        NegotiationEnv(max_turns=1)
