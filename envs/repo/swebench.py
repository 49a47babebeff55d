"""SWE-bench-style tasks from JSON lines: a repository snapshot, an issue, a gold patch, a test
patch and the names of the tests it must make pass (`load_swebench_style`).

Each line holds SWE-bench's fields: `instance_id`, `problem_statement` (the issue), `patch` (the
gold fix: the oracle), `test_patch` (the tests that check it, hidden from the agent),
`FAIL_TO_PASS` and `PASS_TO_PASS` (test ids, as lists or as JSON text), optionally
`base_commit` and `repo` (kept in the metadata); and ours: `snapshot`, the folder holding the
repository at its base commit (relative to the file, or to `repos=`; default
`<repos>/<instance_id>`), and `runner` ("pytest", SWE-bench's, or "unittest").

The workspace holds the snapshot's text files (`.git` and files that are not UTF-8 text are left
out), within the env's workspace limits (`max_files`, `max_bytes`: raise them for larger
repositories). The tests run with the sandbox's Python: the Docker backend with an image whose
`python3` has the repository's dependencies and the runner (pytest), or the local backend for
repositories that need only the standard library (`runner="unittest"`). What grading does, and
the weaker guarantees of named tests, are in docs/repo.md.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rlvr.envs.errors import DatasetError
from rlvr.envs.repo.patches import PatchError, apply_patch, parse_patch
from rlvr.envs.tasks import ListSource, read_jsonl
from rlvr.verifiers.repo.commands import RUNNERS, is_protected
from rlvr.verifiers.types import Task

SKIPPED_DIRECTORIES = {".git", "__pycache__", ".tox", ".venv", "node_modules"}


def load_swebench_style(
    path: str | os.PathLike[str],
    *,
    repos: str | os.PathLike[str] | None = None,
    runner: str | None = None,
    limit: int | None = None,
) -> ListSource:
    """Repository tasks from a SWE-bench-style JSON-lines file (see the module docstring). Any
    bad line (a missing field, a snapshot that is not there, a patch that does not apply) is a
    `DatasetError` naming the line and the fix."""
    if runner is not None and runner not in RUNNERS:
        raise DatasetError(f"runner must be one of {RUNNERS}, got {runner!r}")
    base = Path(repos) if repos is not None else Path(path).parent
    tasks = []
    for where, row in read_jsonl(path):
        try:
            tasks.append(swebench_task(row, base, runner))
        except DatasetError as exc:
            raise DatasetError(f"{where}: {exc}") from None
        if limit is not None and len(tasks) >= limit:
            break
    return ListSource(tasks, name=str(path))


def swebench_task(row: Any, base: Path, runner: str | None = None) -> Task:
    """One line as a `Task` of rlvr/Repo-v0 (named tests; see `rlvr.envs.repo.task`)."""
    if not isinstance(row, Mapping):
        raise DatasetError(f"expected a JSON object, got {type(row).__name__}")
    for field in ("instance_id", "problem_statement", "patch", "test_patch"):
        if not isinstance(row.get(field), str):
            raise DatasetError(f"field {field!r} must be text (it is {row.get(field)!r:.40})")
    instance = row["instance_id"]
    folder = base / str(row.get("snapshot") or instance)
    files = read_snapshot(folder)
    try:
        tested, _ = apply_patch(files, row["test_patch"])
        apply_patch(files, row["patch"])
        touched = {p.new_path for p in parse_patch(row["test_patch"])} - {"/dev/null"}
    except PatchError as exc:
        raise DatasetError(f"{instance}: a patch does not apply to {folder}: {exc}") from None
    restore = {path: tested[path] for path in touched if path in tested}
    restore |= {path: data for path, data in files.items() if is_protected(path)}
    chosen = runner or row.get("runner") or "pytest"
    if chosen not in RUNNERS:
        raise DatasetError(f"{instance}: runner must be one of {RUNNERS}, got {chosen!r}")
    answer = {
        "files": {path: data.decode("utf-8") for path, data in files.items()},
        "runner": chosen,
        "fail_to_pass": _test_ids(row.get("FAIL_TO_PASS"), "FAIL_TO_PASS"),
        "pass_to_pass": _test_ids(row.get("PASS_TO_PASS", []), "PASS_TO_PASS"),
        "restore": {path: data.decode("utf-8") for path, data in restore.items()},
        "fix": row["patch"],
    }
    metadata = {"family": "repo", "source": "swebench-style"}
    metadata |= {key: row[key] for key in ("repo", "base_commit") if isinstance(row.get(key), str)}
    return Task(str(instance), row["problem_statement"], answer, metadata)


def read_snapshot(folder: Path) -> dict[str, bytes]:
    """The UTF-8 text files under `folder` (relative paths -> bytes); `DatasetError` if there
    is no such folder or no file."""
    if not folder.is_dir():
        raise DatasetError(
            f"no repository snapshot at {folder}: put the repository at its base commit there, "
            "or give the folder as 'snapshot' (relative to the file or to repos=)"
        )
    files = {}
    for root, directories, names in os.walk(folder):
        directories[:] = sorted(d for d in directories if d not in SKIPPED_DIRECTORIES)
        for name in sorted(names):
            full = Path(root, name)
            if full.is_symlink() or not full.is_file():
                continue
            data = full.read_bytes()
            try:
                data.decode("utf-8")
            except UnicodeDecodeError:
                continue  # binary files are left out of the workspace
            if b"\0" not in data:
                files[full.relative_to(folder).as_posix()] = data
    if not files:
        raise DatasetError(f"the snapshot {folder} holds no text file")
    return files


def _test_ids(value: Any, field: str) -> list[str]:
    if isinstance(value, str):  # SWE-bench stores the lists as JSON text
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise DatasetError(f"{field} must be a list of test ids (or its JSON)") from None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise DatasetError(f"{field} must be a list of test ids")
    return value
