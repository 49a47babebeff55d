"""Type-check the public packages with mypy (settings: [tool.mypy] in pyproject.toml).

    .venv/bin/python .ci/typecheck.py [extra mypy arguments]

The checkout is the import tree: rlvr/envs, rlvr/agents, ... are committed links to the
top-level folders (docs/design.md), so mypy checks the package `rlvr` as it is, with no
install and no mapping. Reports name files by their import path (rlvr/envs/core.py is envs/core.py).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    command = [sys.executable, "-m", "mypy", "-p", "rlvr", *sys.argv[1:]]
    return subprocess.run(command, cwd=ROOT).returncode


if __name__ == "__main__":
    sys.exit(main())
