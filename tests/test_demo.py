"""`rlvr demo`, the README's main job: its commands parse, and the whole job runs end to end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rlvr.cli import build_parser
from rlvr.demo import demo_commands
from rlvr.leaderboards import ResultStore
from tests.conftest import IN_CI


def test_every_demo_command_is_a_valid_rlvr_command(tmp_path):
    parser = build_parser()
    commands = demo_commands(tmp_path, train_seconds=30.0, seed=0)
    assert [argv[0] for argv in commands][:1] == ["tiny"]
    for argv in commands:
        args = parser.parse_args(argv)  # exits (fails the test) on a bad flag
        assert callable(args.func)


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
        names = {result.name for result in store.results(suite="demo")}
    assert names == {"tiny, warm start", "tiny, warm start + GRPO", "oracle", "random"}
    page = (out / "site" / "index.html").read_text()
    assert page.count("tiny, warm start") >= 2
    with ResultStore(out / "leaderboard.sqlite") as store:  # the Connect Four arena
        arenas = store.arena_results(suite="connect4")
    assert [r.agent for r in arenas[-1].ratings] == ["legal", "random"]
    assert "(head to head)" in page
    assert (out / "grpo" / "learning_curve.png").stat().st_size > 10_000
    assert Path(out / "grpo" / "final" / "config.json").exists()
    assert "Done in" in result.stdout
    if IN_CI:  # CI has the local sandbox, so the code smoke test must have run
        assert "skipped: the local sandbox" not in result.stdout
