"""Check rlvr's import contracts (the layers: [tool.importlinter] in pyproject.toml) with
import-linter.

    .venv/bin/python .ci/lint_imports.py [extra lint-imports arguments]

Run from the checkout, whose rlvr/ is the whole import tree (its subpackages are committed links
to the top-level folders), so import-linter reads the files as they are. Exit status 0 when every
contract is kept; a broken one is named with the import chain that breaks it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    lint_imports = Path(sys.executable).parent / "lint-imports"
    # the graph cache goes under build/ (git ignores it), not in the checkout's root
    cache = ROOT / "build" / "import-linter-cache"
    command = [lint_imports, ROOT / "pyproject.toml", "--no-logo", "--cache-dir", cache]
    return subprocess.run([*map(str, command), *sys.argv[1:]], cwd=ROOT).returncode


if __name__ == "__main__":
    sys.exit(main())
