"""Multi-agent leaderboards: Elo from head-to-head games, stored and shown like other results."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

import pytest

from rlvr.agents.scripted import FixedPolicy
from rlvr.cli import main
from rlvr.leaderboards import ResultStore
from rlvr.leaderboards.arena import (
    ArenaSuite,
    PairGames,
    fit_elo,
    load_arena,
    rate,
    run_arena,
)
from rlvr.leaderboards.errors import SuiteError
from rlvr.leaderboards.webpage import write_site

ARENA = """
name = "c4-test"
description = "a few Connect4 games"
env = "rlvr/Connect4-v0"
games = 8
"""
AGENTS = {"legal": "legal:1", "column-4": "fixed:<move>4</move>", "babbler": "random:2"}


@pytest.fixture(scope="module")
def result():
    return run_arena(ArenaSuite.from_toml(ARENA), AGENTS)


def test_a_known_win_ratio_gives_its_elo_gap():
    pairs = [PairGames("a", "b", [1.0] * 300 + [0.0] * 100)]  # 3:1 odds
    elo = fit_elo(["a", "b"], pairs)
    assert elo["a"] - elo["b"] == pytest.approx(400 * math.log10(3), abs=5)
    assert (elo["a"] + elo["b"]) / 2 == pytest.approx(1500)
    even = fit_elo(["a", "b"], [PairGames("a", "b", [1.0, 0.0, 0.5, 0.5])])
    assert even["a"] == pytest.approx(even["b"])


def test_every_pair_plays_and_the_ratings_order_the_agents(result):
    assert [(p.first, p.second) for p in result.pairs] == [
        ("legal", "column-4"),
        ("legal", "babbler"),
        ("column-4", "babbler"),
    ]
    assert all(len(p.scores) == 8 for p in result.pairs)
    ratings = {r.agent: r for r in result.ratings}
    # the babbler never writes a move: it loses every game, at once
    assert ratings["babbler"].points == 0 and ratings["babbler"].games == 16
    assert result.ratings[-1].agent == "babbler"
    assert sum(r.points for r in result.ratings) == 24  # every game's point went somewhere
    for rating in result.ratings:
        assert rating.low <= rating.elo <= rating.high


def test_the_interval_is_reproducible_and_narrows_with_more_games():
    suite = ArenaSuite(name="t", env="rlvr/Connect4-v0", games=10)
    pairs = [PairGames("a", "b", [1.0, 0.0] * 5)]
    first, again = rate(["a", "b"], pairs, suite), rate(["a", "b"], pairs, suite)
    assert first == again  # the bootstrap is seeded by the suite
    wide = first[0].high - first[0].low
    narrow = rate(["a", "b"], [PairGames("a", "b", [1.0, 0.0] * 50)], suite)
    assert narrow[0].high - narrow[0].low < wide


def test_a_perfect_record_still_has_an_interval():
    """Resampling 10 wins out of 10 gives 10 wins every time: the interval must come from the
    fitted odds, or the least certain rating would look exact."""
    suite = ArenaSuite(name="t", env="rlvr/Connect4-v0", games=10)
    ratings = {r.agent: r for r in rate(["a", "b"], [PairGames("a", "b", [1.0] * 10)], suite)}
    assert ratings["a"].high - ratings["a"].low > 50
    assert ratings["a"].low <= ratings["a"].elo <= ratings["a"].high


def test_results_are_stored_and_an_older_store_has_none(result, tmp_path: Path):
    path = tmp_path / "board.sqlite"
    with ResultStore(path) as store:
        store.add_arena(result)
        assert result.id == 1
    with ResultStore(path, readonly=True) as store:
        (stored,) = store.arena_results(suite="c4-test")
        assert stored.to_record() == result.to_record()
        assert store.arena_results(suite="other") == []
    with sqlite3.connect(path) as db:  # a store written before arenas existed
        db.execute("DROP TABLE arena_results")
    with ResultStore(path, readonly=True) as store:
        assert store.arena_results() == []


def test_the_page_shows_the_arena_with_untrusted_names_escaped(tmp_path: Path):
    named = run_arena(
        ArenaSuite.from_toml(ARENA.replace("games = 8", "games = 2")),
        {"<script>x</script>": FixedPolicy("<move>1</move>"), "legal": "legal"},
    )
    named.id = 7
    page = write_site(tmp_path / "site", [], lambda *_: [], [named])
    html = page.read_text()
    assert "c4-test (head to head)" in html and "Result #7" in html
    assert "<script>x</script>" not in html and "&lt;script&gt;x&lt;/script&gt;" in html


def test_rlvr_bench_arena_stores_and_the_leaderboard_shows_it(tmp_path: Path, capsys):
    suite = tmp_path / "arena.toml"
    suite.write_text(ARENA.replace("games = 8", "games = 4"))
    db = str(tmp_path / "board.sqlite")
    code = main(
        ["bench", "arena", "--db", db, "--suite", str(suite), "--agent", "legal",
         "--agent", "col=fixed:<move>4</move>"]
    )  # fmt: skip
    assert code == 0
    assert "arena c4-test" in capsys.readouterr().out
    assert main(["leaderboard", "show", "--db", db]) == 0
    out = capsys.readouterr().out
    assert "col" in out and "legal" in out and "Elo" in out
    assert main(["leaderboard", "html", "--db", db, str(tmp_path / "site")]) == 0
    assert "(head to head)" in (tmp_path / "site" / "index.html").read_text()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--agent", "legal"], "at least two agents"),
        (["--agent", "legal", "--agent", "gpt"], "unknown agent 'gpt'"),
        (["--agent", "legal", "--agent", "oracle"], "legal vs oracle failed: PolicyError"),
    ],
)
def test_bad_arena_input_is_one_line(tmp_path: Path, capsys, arguments, message):
    db = str(tmp_path / "b.sqlite")
    code = main(["bench", "arena", "--db", db, "--suite", "connect4", *arguments])
    assert code == 1
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('name = "x"\nenv = "rlvr/Math-v0"', "is not a multi-agent env"),
        (
            'name = "x"\nenv = "rlvr/Connect4-v0"\nrounds = 3',
            "unknown key 'rounds' in the top level; ArenaSuite accepts: name,",
        ),
        ('name = "x"\nenv = "rlvr/Connect4-v0"\ngames = 0', "games must be between 1 and"),
        (
            'name = "x"\nenv = "rlvr/Connect4-v0"\ngames = true',
            "games: expected an integer, got True",
        ),
        (
            'name = "x"\nenv = "rlvr/Connect4-v0"\nconfidence = nan',
            "confidence must be a finite number, got nan",
        ),
        ('name = "x"\nenv = "rlvr/Connect4-v0"\n[bootstrap]\nresamples = 9', "not a bootstrap"),
        (
            'name = "x"\nenv = "rlvr/Connect4-v0"\n[sampling]\ntemperature = inf',
            "sampling.temperature must be a finite number",
        ),
    ],
)
def test_bad_arena_suites_name_the_problem(text, message):
    with pytest.raises(SuiteError, match=message.replace("[", r"\[")):
        ArenaSuite.from_toml(text)


def test_the_built_in_arena_loads():
    assert load_arena("connect4").env == "rlvr/Connect4-v0"
    # read through rlvr.config's build, it is the arena the hand-written key check read
    assert load_arena("connect4").fingerprint == "72b7ba2921e66619"
    with pytest.raises(SuiteError, match="no arena suite 'chess'"):
        load_arena("chess")
