"""Check rlvr's import contracts (the layers: [tool.importlinter] in pyproject.toml) with
import-linter.

    .venv/bin/python .ci/lint_imports.py [extra lint-imports arguments]

import-linter finds a package by its import name and reads the folder it lives in, so like
.ci/typecheck.py this lays out the package-dir folders as the `rlvr` import tree (links under
build/typecheck) and puts that tree first on the path. Exit status 0 when every contract is kept;
a broken one is named with the import chain that breaks it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from typecheck import ROOT, TREE, build_tree


def main() -> int:
    build_tree()
    lint_imports = Path(sys.executable).parent / "lint-imports"
    # the graph cache sits with the tree (git ignores build/), not in the checkout's root
    cache = TREE.parent / "import-linter-cache"
    command = [lint_imports, ROOT / "pyproject.toml", "--no-logo", "--cache-dir", cache]
    # run from the tree: lint-imports puts its working folder first on the path, where the
    # checkout's own rlvr/ folder (the root package without its subpackages) would shadow it
    path = os.pathsep.join([str(TREE), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path}
    return subprocess.run([*map(str, command), *sys.argv[1:]], cwd=TREE, env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
