""".ci/share-torch.sh: the extra test venvs take .venv's torch as hard links, not a copy (a CI
machine's disk ran out with three copies), and pip then counts it as installed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAIN_VENV = ROOT / ".venv"


def purelib(venv: Path) -> Path:
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    return Path(subprocess.check_output([venv / "bin" / "python", "-c", code], text=True).strip())


@pytest.fixture
def main_venv() -> Path:
    if Path(sys.prefix).resolve() != MAIN_VENV.resolve():
        pytest.skip("run from .venv (.ci/setup-venv.sh): the script shares .venv's torch")
    return MAIN_VENV


def share(venv: Path) -> str:
    done = subprocess.run(
        ["bash", str(ROOT / ".ci" / "share-torch.sh"), str(venv)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_an_extra_venv_shares_torch_files_and_pip_sees_the_pinned_torch(main_venv, tmp_path):
    venv = tmp_path / "venv-extra"
    said = share(venv)
    theirs = purelib(main_venv) / "torch" / "__init__.py"
    ours = purelib(venv) / "torch" / "__init__.py"
    if os.stat(tmp_path).st_dev != os.stat(main_venv).st_dev:
        assert "another file system" in said and not ours.exists()
        return
    assert ours.stat().st_ino == theirs.stat().st_ino  # one file on disk, two names
    pin = next(
        line.strip()
        for line in (ROOT / ".ci" / "constraints.txt").read_text().splitlines()
        if line.startswith("torch==")
    )
    listed = subprocess.check_output(
        [venv / "bin" / "python", "-m", "pip", "list", "--format=freeze"], text=True
    )
    torch_line = next(line for line in listed.splitlines() if line.startswith("torch=="))
    assert torch_line == pin or torch_line.startswith(pin + "+")
    # a second run adds nothing and breaks nothing
    share(venv)
    assert ours.stat().st_ino == theirs.stat().st_ino
