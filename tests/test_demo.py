"""`rlvr demo`, the README's main job: its commands parse, and the whole job runs end to end."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from rlvr.cli import build_parser
from rlvr.demo import Stage, demo_commands, stage_name, timing_table
from rlvr.leaderboards import ResultStore
from tests.conftest import IN_CI


def test_every_demo_command_is_a_valid_rlvr_command(tmp_path):
    parser = build_parser()
    commands = demo_commands(tmp_path, train_seconds=30.0, seed=0)
    assert [argv[0] for argv in commands][:1] == ["tiny"]
    for argv in commands:
        args = parser.parse_args(argv)  # exits (fails the test) on a bad flag
        assert callable(args.func)


def test_the_timing_table_names_every_stage_with_wall_and_cpu_seconds(tmp_path):
    names = [stage_name(argv) for argv in demo_commands(tmp_path, train_seconds=30.0, seed=0)]
    tiny = f"bench hf:{tmp_path}/tiny"
    assert names[:4] == ["tiny", "eval rlvr/Code-v0 oracle", "eval rlvr/SQL-v0 oracle", tiny]
    assert "bench oracle" in names and "bench arena legal random" in names
    assert len(set(names)) == len(names)  # each row says which command it timed
    table = timing_table([Stage("tiny", 95.25, 180.0), Stage("eval rlvr/Code-v0", skipped=True),
                          Stage("train", 301.0, 598.5)])  # fmt: skip
    assert table.splitlines() == [
        "stage                  wall       CPU",
        "tiny                  95.2s    180.0s",
        "eval rlvr/Code-v0   skipped",
        "train                301.0s    598.5s",
        "total                396.2s    778.5s",
    ]


@pytest.mark.slow
def test_demo_runs_end_to_end(tmp_path):
    out = tmp_path / "demo"
    result = subprocess.run(
        [sys.executable, "-m", "rlvr.cli", "demo", "--out", str(out), "--train-seconds", "15"],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    with ResultStore(out / "leaderboard.sqlite") as store:
        scores = {result.name: result.score for result in store.results(suite="demo")}
    assert set(scores) == {"tiny, warm start", "tiny, warm start + GRPO", "oracle", "random"}
    # one measurement: training's held-out figures are the board's rows of the same two models
    held_out = re.search(r"^held-out +([\d.]+) -> ([\d.]+) +\(suite demo", result.stdout, re.M)
    assert held_out is not None, result.stdout[-3000:]
    board = (scores["tiny, warm start"], scores["tiny, warm start + GRPO"])
    assert held_out.group(1, 2) == tuple(f"{score:.3f}" for score in board)
    page = (out / "site" / "index.html").read_text()
    assert page.count("tiny, warm start") >= 2
    with ResultStore(out / "leaderboard.sqlite") as store:  # the Connect Four arena
        arenas = store.arena_results(suite="connect4")
    assert [r.agent for r in arenas[-1].ratings] == ["legal", "random"]
    assert "(head to head)" in page
    assert (out / "grpo" / "learning_curve.png").stat().st_size > 10_000
    assert Path(out / "grpo" / "final" / "config.json").exists()
    assert "Done in" in result.stdout
    table = result.stdout.split("Time per stage")[1]
    for argv in demo_commands(out, train_seconds=15.0, seed=0):
        assert stage_name(argv) in table
    if IN_CI:  # CI has the local sandbox, so the code smoke test must have run
        assert "skipped: the local sandbox" not in result.stdout
