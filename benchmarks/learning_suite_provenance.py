"""What a learning-suite result was made from (`learning_suite.py`): every setting of a run,
the fingerprints of its warm start and held-out set, the commit and the library versions. The
stored results in benchmarks/results/learning_suite carry these: a run is resumed, stored or
put in a table beside another only when they agree, so they must not change for unchanged
inputs (tests/benchmarks pins them)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from learning_suite_learners import our_settings, trl_settings
from learning_suite_tasks import EVAL_SEED, TASKS

HERE = Path(__file__).resolve().parent

# --- provenance: what a result was made from ----------------------------------------------------


UNSET_UNWRITTEN = ("micro_batch", "temperature", "prompts", "sampled_eval")
"""Task fields added after results were stored: written only when set, so a stored result of a
task that does not set one still matches its task."""


def run_settings(name: str, learner: str, budget: float, eval_every: float) -> dict[str, Any]:
    """Every setting of a run but its seed: the task's (the Task fields, env kwargs included, at
    the budget and evaluation period it ran with, and the evaluation's sampling) and the
    learner's (learning rate, batch geometry, algorithm fields)."""
    import dataclasses

    task = TASKS[name]
    fields = {
        key: value
        for key, value in dataclasses.asdict(task).items()
        if key != "title" and not (key in UNSET_UNWRITTEN and value is None)
    }
    fields |= {"budget": budget, "eval_every": eval_every}
    evaluation = {"seed": EVAL_SEED, "temperature": 0.0}
    if learner.partition("@")[0] == "trl":
        trainer: dict[str, Any] = trl_settings(learner, task)
    else:
        trainer = our_settings(task, learner)
    task_fields = {"name": name, **fields, "evaluation": evaluation}
    return jsonable({"task": task_fields, "learner": trainer})


def git_state() -> dict[str, Any]:
    """The commit the suite's code is at and whether tracked files differ from it (None: not a
    git checkout)."""

    def git(*arguments: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "-C", str(HERE.parent), *arguments],
                capture_output=True,
                text=True,
                timeout=60,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    changes = git("status", "--porcelain", "--untracked-files=no") if commit else None
    return {"commit": commit, "dirty": None if changes is None else bool(changes)}


def warm_start_fingerprint(folder: Path) -> str:
    """A hash of a warm start's files (weights, config, tokenizer; not the build log
    `warm_start.json`): runs share a warm start exactly when they share this."""
    import hashlib

    digest = hashlib.sha256()
    for path in sorted(folder.iterdir()):
        if path.is_file() and path.name != "warm_start.json":
            digest.update(path.name.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:16]


def heldout_fingerprint(heldout: Mapping[str, list[int]]) -> str:
    """A hash of the held-out task indexes (and the level-up ones)."""
    import hashlib

    text = json.dumps(dict(heldout), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def library_versions() -> dict[str, str | None]:
    """The versions of what a run's figures depend on (None: not installed)."""
    import platform
    from importlib import metadata

    versions: dict[str, str | None] = {"python": platform.python_version()}
    for package in ("rlvr-gym", "torch", "transformers", "trl", "numpy"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return versions


def jsonable(value: Any) -> Any:
    """Settings as plain JSON: dataclasses as dicts, tuples as lists, in a stable key order."""
    import dataclasses

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return jsonable(dataclasses.asdict(value))
    if isinstance(value, Mapping):
        return {str(key): jsonable(value[key]) for key in sorted(value, key=str)}
    if isinstance(value, (list, tuple)):
        return [jsonable(item) for item in value]
    return value
