"""The checkout the suite runs from, told apart from what running the project leaves in it.

The README's order is `bash .ci/demo.sh`, then `bash .ci/test.sh`, in one clone: the tests meet a
checkout holding the demo's outputs (and those of `rlvr train`, `rlvr bench`, the benchmarks),
all under ignored folders such as runs/. So:

- `read_repository(root)`: the project's files as git counts them (tracked, plus new files not
  ignored: what a commit would hold), never the working tree. A doc naming `runs/grpo/config.toml`
  names a file the reader makes, whether or not a demo has made one here.
- `snapshot(root)` and `changes(before, after)`: the files and folders of the checkout (the
  virtual environments, .git and the caches of Python and its tools aside), to tell what the suite
  wrote there. A test writes only under its `tmp_path`.
"""

from __future__ import annotations

import functools
import os
import posixpath
import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parents[1]

# Never the suite's doing to judge: git's own folder, the virtual environments (.venv,
# .venv-newest, ...), and caches that Python, pytest, mypy and ruff keep by design.
UNWATCHED_FOLDERS = frozenset(
    {".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}
)


class NotACheckout(RuntimeError):
    """The folder is not the top of a git work tree (an unpacked archive, say)."""


@dataclass(frozen=True)
class Repository:
    """The project's files under `root`, as posix paths relative to it."""

    root: Path
    files: frozenset[str]

    @functools.cached_property
    def folders(self) -> frozenset[str]:
        return frozenset(
            str(parent) for name in self.files for parent in PurePosixPath(name).parents
        ) - {"."}

    def holds(self, path: str) -> bool:
        """Whether `path` (relative to the root) is one of the project's files or folders."""
        normal = posixpath.normpath(path)
        return normal in self.files or normal in self.folders


def read_repository(root: Path = ROOT) -> Repository:
    """The repository's files: `git ls-files` (tracked and new-but-not-ignored), those present."""
    try:
        top = _git(root, "rev-parse", "--show-toplevel").strip()
    except (OSError, subprocess.CalledProcessError) as exc:
        raise NotACheckout(f"{root} is not a git checkout ({exc})") from exc
    if Path(top).resolve() != root.resolve():
        raise NotACheckout(f"{root} is not the top of its git work tree ({top} is)")
    listed = _git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    present = {name for name in listed.split("\0") if name and os.path.lexists(root / name)}
    return Repository(root, frozenset(present))


def _git(root: Path, *arguments: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *arguments],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout


Snapshot = dict[str, tuple[int, int] | None]
"""Path relative to the root -> (modification time in ns, size) of a file, None for a folder."""


def snapshot(root: Path = ROOT) -> Snapshot:
    found: Snapshot = {}
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = [
            name
            for name in subfolders
            if name not in UNWATCHED_FOLDERS and not name.startswith(".venv")
        ]
        relative = os.path.relpath(folder, root)
        if relative != ".":
            found[relative + "/"] = None  # a folder's own time changes with any cache inside it
        for name in names:
            try:
                stat = os.lstat(os.path.join(folder, name))
            except FileNotFoundError:  # removed while walking
                continue
            found[os.path.normpath(os.path.join(relative, name))] = (stat.st_mtime_ns, stat.st_size)
    return found


def changes(before: Snapshot, after: Snapshot) -> list[str]:
    """What differs between two snapshots, a line each: `written PATH` or `removed PATH`."""
    written = [f"written {path}" for path, stamp in after.items() if before.get(path, 0) != stamp]
    removed = [f"removed {path}" for path in before if path not in after]
    return sorted(written) + sorted(removed)
