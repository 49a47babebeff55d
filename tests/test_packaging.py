"""Packaging: light imports, and a wheel that works outside the editable checkout."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "module",
    [
        "rlvr",
        "rlvr.envs",
        "rlvr.verifiers",
        "rlvr.sandboxes",
        "rlvr.agents",
        "rlvr.leaderboards",
        # the trainer adapters import their trainer (and torch) only when used
        "rlvr.integrations",
        "rlvr.integrations.trl, rlvr.integrations.verl, rlvr.integrations.export",
    ],
)
def test_import_does_not_pull_heavy_dependencies(module):
    code = (
        f"import sys, {module}\n"
        "heavy = [m for m in ('torch', 'transformers', 'docker', 'psycopg', 'datasets', 'sympy',"
        " 'math_verify', 'sqlglot', 'pettingzoo', 'trl', 'verl', 'ray', 'pyarrow')"
        " if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "", f"import {module} imported {result.stdout.strip()}"


def test_rlvr_registers_every_builtin_env_three_ways():
    code = (
        "import gymnasium as gym, rlvr, rlvr.envs\n"
        "gym.register_envs(rlvr)\n"
        "ids = rlvr.envs.rlvr_env_ids()\n"
        "assert 'rlvr/Math-v0' in ids, ids\n"
        "assert all(i in gym.registry for i in ids)\n"
        "env = gym.make('rlvr:rlvr/Math-v0')\n"
        "print(env.reset(seed=0)[0][:40])\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()


def test_wheel_builds_without_warnings(built_wheel):
    """setuptools' messages about our configuration (a deprecated `license` table, data folders
    it "would ignore") reach every user's install; none may be left."""
    warnings = [  # Python's warnings: "FILE:LINE: SomeWarning: message"
        line.strip()
        for line in built_wheel.log.splitlines()
        if re.search(r"[A-Z]\w*Warning\b", line)
    ]
    assert not warnings, "\n".join(warnings)


@pytest.mark.slow
def test_wheel_installs_and_runs_in_a_fresh_venv(built_wheel, tmp_path):
    """The wheel alone, in a venv of its own (no editable install, no checkout on the path), with
    its dependencies from the index: the package imports, `rlvr envs` lists every env, and
    `rlvr bench` runs a built-in suite and stores its result."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", str(built_wheel.path)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert install.returncode == 0, install.stderr[-2000:]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}

    def run(*command: str) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            command, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300
        )
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
        return result

    code = (
        "import gymnasium as gym, rlvr, rlvr.envs\n"
        "assert 'site-packages' in rlvr.envs.__file__, rlvr.envs.__file__\n"
        "env = gym.make('rlvr/Math-v0')\n"
        "obs, info = env.reset(seed=0)\n"
        "obs, reward, terminated, truncated, info = env.step(env.unwrapped.oracle_reply())\n"
        "assert reward == 1.0 and terminated, info\n"
        "from rlvr.envs.code.tasks import builtin_tasks\n"  # read from the packaged TOML files
        "assert len(builtin_tasks()) >= 60\n"
        "import rlvr.envs.code_tasks, rlvr.envs.sqltasks.domains, rlvr.envs.sql.tasks.domains\n"
        "assert rlvr.envs.sqltasks.domains is rlvr.envs.sql.tasks.domains\n"  # old paths ship
        "for env_id in rlvr.envs.rlvr_env_ids():\n"
        "    gym.spec(env_id)\n"
        "from rlvr.envs.multiagent import make\n"  # the subpackage and PettingZoo are installed
        "game = make('rlvr/Connect4-v0')\n"
        "game.reset(seed=0)\n"
        "game.step('<move>4</move>')\n"
        "assert game.agent_selection == 'player_1'\n"
        "print('ok')\n"
    )
    assert run(str(python), "-c", code).stdout.strip().endswith("ok")
    rlvr = str(venv / "bin" / "rlvr")
    listed = run(rlvr, "envs").stdout
    assert "rlvr/Math-v0" in listed
    assert re.search(r"^rlvr/Connect4-v0 +\[multi-agent\] ", listed, re.MULTILINE)
    db = tmp_path / "board.sqlite"
    bench = run(rlvr, "bench", "--suite", "demo", "--agent", "oracle", "--episodes", "20",
                "--db", str(db), "--no-progress")  # fmt: skip
    assert "stored in" in bench.stdout and db.is_file()
    shown = run(rlvr, "leaderboard", "show", "--db", str(db)).stdout
    assert re.search(r"\boracle\b.*\b1\.000\b", shown), shown
