"""Type-check the public packages with mypy (settings: [tool.mypy] in pyproject.toml).

    .venv/bin/python .ci/typecheck.py [extra mypy arguments]

The packages live in top-level folders (envs/, verifiers/, ...) that pyproject's package-dir maps
to `rlvr.*` import names, a mapping neither mypy nor the editable install's import hook lets
mypy follow. So this lays out the import tree as links under build/typecheck (rlvr/envs ->
envs/, ...) and checks it as the package `rlvr`; the report names the repository's files.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREE = ROOT / "build" / "typecheck"


def package_dirs() -> dict[str, str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return config["tool"]["setuptools"]["package-dir"]


def lay_out(mapping: dict[str, str]) -> dict[str, str]:
    """Link each mapped folder where its import name puts it; return tree prefix -> repo prefix
    (longest first) for rewriting the report."""
    prefixes = {}
    for name, folder in sorted(mapping.items()):
        where = TREE.joinpath(*name.split("."))
        parent, _, last = name.rpartition(".")
        if parent and Path(mapping.get(parent, "")) / last == Path(folder):
            continue  # a subfolder of its parent's folder: already in the tree
        if not parent:  # the root package: link its files one by one (its subpackages join it)
            where.mkdir(parents=True, exist_ok=True)
            for entry in (ROOT / folder).iterdir():
                _link(where / entry.name, entry)
        else:
            _link(where, ROOT / folder)
        prefixes[f"{where.relative_to(ROOT)}/"] = f"{folder}/"
    return dict(sorted(prefixes.items(), key=lambda item: -len(item[0])))


def _link(link: Path, target: Path) -> None:
    if link.is_symlink() and link.resolve() == target.resolve():
        return
    if link.is_symlink() or link.exists():
        link.unlink()
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(os.path.relpath(target, link.parent))


def build_tree() -> dict[str, str]:
    """Lay out the `rlvr` import tree under build/typecheck (also what .ci/lint_imports.py
    checks); return `lay_out`'s prefixes."""
    prefixes = lay_out(package_dirs())
    for stale in TREE.joinpath("rlvr").iterdir():  # a file removed from rlvr/ since last time
        if stale.is_symlink() and not stale.exists():
            stale.unlink()
    return prefixes


def main() -> int:
    prefixes = build_tree()
    command = [sys.executable, "-m", "mypy", "-p", "rlvr", *sys.argv[1:]]
    env = {**os.environ, "MYPYPATH": str(TREE.relative_to(ROOT))}
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    for line in (result.stdout + result.stderr).splitlines():
        for tree_prefix, repo_prefix in prefixes.items():
            if line.startswith(tree_prefix):
                line = repo_prefix + line[len(tree_prefix) :]
                break
        print(line)
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
