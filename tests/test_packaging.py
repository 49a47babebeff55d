"""Packaging: light imports, and a wheel that works outside the editable checkout."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


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


@pytest.mark.slow
def test_wheel_installs_and_runs_in_a_fresh_venv(tmp_path):
    wheel_dir = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheel_dir), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = wheel_dir.glob("rlvr_gym-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", str(wheel)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert install.returncode == 0, install.stderr[-2000:]
    code = (
        "import gymnasium as gym, rlvr, rlvr.envs\n"
        "assert 'site-packages' in rlvr.envs.__file__, rlvr.envs.__file__\n"
        "env = gym.make('rlvr/Math-v0')\n"
        "obs, info = env.reset(seed=0)\n"
        "obs, reward, terminated, truncated, info = env.step(env.unwrapped.oracle_reply())\n"
        "assert reward == 1.0 and terminated, info\n"
        "for env_id in rlvr.envs.rlvr_env_ids():\n"
        "    gym.spec(env_id)\n"
        "from rlvr.envs.multiagent import make\n"  # the subpackage and PettingZoo are installed
        "game = make('rlvr/Connect4-v0')\n"
        "game.reset(seed=0)\n"
        "game.step('<move>4</move>')\n"
        "assert game.agent_selection == 'player_1'\n"
        "print('ok')\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    result = subprocess.run(
        [str(python), "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().endswith("ok")
    cli = subprocess.run([str(venv / "bin" / "rlvr"), "envs"], capture_output=True, text=True)
    assert "rlvr/Math-v0" in cli.stdout
    assert re.search(r"^rlvr/Connect4-v0 +\[multi-agent\] ", cli.stdout, re.MULTILINE)
