"""The episode loop's multi-agent twin: a record per seat, rounds asked in one batch, outcomes."""

from __future__ import annotations

from rlvr.agents.policy import Completion
from rlvr.agents.scripted import FixedPolicy, LegalMovePolicy
from rlvr.envs.multiagent import make
from rlvr.rollout.games import game_policy_actor, play_games, play_match, seat_positions
from rlvr.rollout.records import Start

TASK = {"id": "q-1", "prompt": "What is 987000 + 654?", "answer": "987654"}


def scripted(games, replies_by_agent):
    """An actor replying from per-agent lists, logging what it was asked each round."""
    asked = []
    seats = seat_positions(games)

    def act(active, records):
        asked.append([(p, len(r.messages)) for p, r in zip(active, records)])
        return [replies_by_agent[seats[p][1]].pop(0) for p in active]

    return act, asked


def test_every_seat_gets_a_record_of_its_own_view_and_its_own_rewards():
    games = [make("rlvr/Connect4-v0")]
    act, asked = scripted(
        games,
        {
            "player_0": [Completion(f"<move>{c}</move>") for c in (1, 1, 1, 1)],
            "player_1": [Completion(f"<move>{c}</move>") for c in (2, 2, 2)],
        },
    )
    (game,) = play_games(games, [Start(0, 0, 0)], act)
    first, second = game.seats["player_0"], game.seats["player_1"]
    assert (first.turns, second.turns) == (4, 3)
    assert first.rewards == [0.0, 0.0, 0.0, 1.0] and second.rewards == [0.0, 0.0, -1.0]
    assert game.returns == {"player_0": 1.0, "player_1": -1.0}
    assert game.outcome == "four_in_a_row" and not first.truncated
    own = [m["content"] for m in first.messages if m["role"] == "assistant"]
    assert own == ["<move>1</move>"] * 4  # its own replies only: the other's are relayed as text
    assert "<move>2</move>" not in str(first.messages)
    assert [len(r) for r in asked] == [1] * 7  # turn-based: one seat per round


def test_a_simultaneous_round_is_asked_in_one_batch():
    games = [make("rlvr/Debate-v0", rounds=2) for _ in range(2)]
    act, asked = scripted(
        games,
        {
            "debater_0": [Completion("\\boxed{987654}")] * 4,
            "debater_1": [Completion("\\boxed{1}")] * 4,
        },
    )
    records = play_games(
        games, [Start(0, 0, 0), Start(1, 0, 1)], act, reset_options=lambda e: {"task": TASK}
    )
    assert [len(r) for r in asked] == [4, 4]  # both debaters of both games, each round
    for game in records:
        assert game.returns == {"debater_0": 1.0, "debater_1": -1.0}
        assert game.seats["debater_0"].rewards == [0.0, 1.0]
        assert game.seats["debater_0"].verdict["status"] == "correct"
        assert game.seats["debater_0"].task_id == "q-1"


def test_a_seat_rewarded_without_replying_keeps_its_return():
    report = play_match(
        "rlvr/Connect4-v0", FixedPolicy("no move"), LegalMovePolicy(0), games=2, seed=0
    )
    assert report.first_seats == ["player_0", "player_1"]
    assert report.scores() == [0.0, 0.0]  # a malformed move loses at once, in either seat
    first_game = report.games[0]
    assert first_game.seats["player_1"].turns == 0 and first_game.returns["player_1"] == 1.0


def test_no_reply_or_max_turns_stops_the_game_truncated():
    games = [make("rlvr/Connect4-v0")]
    act, _ = scripted(
        games,
        {
            "player_0": [Completion("<move>1</move>"), None],
            "player_1": [Completion("<move>2</move>")],
        },
    )
    (game,) = play_games(games, [Start(0, 0, 0)], act)
    assert game.truncated and game.outcome == "truncated"
    assert game.seats["player_0"].turns == 1 and game.seats["player_1"].turns == 1

    legal = game_policy_actor(LegalMovePolicy(1), games)
    (game,) = play_games(games, [Start(0, 0, 0)], legal, max_turns=2)
    assert all(seat.truncated for seat in game.seats.values())
    assert max(seat.turns for seat in game.seats.values()) == 2


def test_the_legal_mover_never_plays_an_illegal_move():
    report = play_match("rlvr/Connect4-v0", LegalMovePolicy(3), LegalMovePolicy(4), games=40)
    outcomes = {game.outcome for game in report.games}
    assert outcomes <= {"four_in_a_row", "draw"} and len(report.scores()) == 40
    assert 0 < report.wins < 40


def test_our_verifier_failing_flags_every_seat_whose_reward_depends_on_it():
    from rlvr.rollout.games import MatchReport
    from tests.envs.multiagent.test_proposer_solver import FailingOn

    env = make("rlvr/Debate-v0", rounds=1)
    env.unwrapped.questions.verifier = FailingOn("BREAK")
    act, _ = scripted(
        [env],
        {
            "debater_0": [Completion("BREAK \\boxed{987654}")],
            "debater_1": [Completion("\\boxed{1}")],
        },
    )
    (game,) = play_games([env], [Start(0, 0, 0)], act, reset_options=lambda e: {"task": TASK})
    assert game.infra_error and all(seat.infra_error for seat in game.seats.values())
    report = MatchReport("rlvr/Debate-v0", [game], ["debater_0"])
    assert report.scores() == [] and report.infra_errors == 1  # counted for nobody
