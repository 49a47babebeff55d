"""What a result must record to be reproduced and compared: versions, hashes, the code's commit.

Verifier versions follow one convention (docs/leaderboards.md): a verifier class (or the function
behind a `FunctionVerifier`) declares `VERSION = "2"` (or `version`), bumped whenever a fix can
change a verdict, and the env's judge reports it (`env.unwrapped.judge.describe()`). A `TextEnv`
without a judge declares `verifier_version` itself. Where nothing is declared, the rlvr-gym
package version stands in, so results from different releases are then treated as judged
differently.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import platform
import subprocess
import sys
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import gymnasium as gym

from rlvr.envs.judge import fallback_version, qualname, verifier_info  # noqa: F401 (re-exported)
from rlvr.rollout.records import EpisodeRecord


def package_version() -> str:
    from rlvr import __version__

    return __version__


def probe_env(env: gym.Env) -> dict[str, Any]:
    """What `evaluate(env_probe=...)` records about an env (see `EvalReport.env_info`)."""
    spec = env.spec
    return {
        "entry_point": str(spec.entry_point) if spec is not None else qualname(type(env)),
        "max_episode_steps": spec.max_episode_steps if spec is not None else None,
        "verifier": verifier_info(env),
    }


def dataset_hash(records: Iterable[EpisodeRecord | dict[str, Any]]) -> str:
    """sha256 over the tasks posed, in episode order: id, prompt messages and gold fingerprint.

    Two runs with equal hashes faced exactly the same tasks (and, where the env exposes its task,
    the same gold answers).
    """
    seen: dict[int, tuple[Any, ...]] = {}
    for record in records:
        data = record if isinstance(record, dict) else vars(record)  # no copy: only read here
        if data["episode"] in seen:
            continue
        seen[data["episode"]] = (
            data["task_id"],
            prompt_messages(data["messages"]),
            data.get("task_hash"),
        )
    digest = hashlib.sha256()
    for episode in sorted(seen):
        digest.update(json.dumps([episode, *seen[episode]], sort_keys=True).encode("utf-8"))
    return digest.hexdigest()


def traces_digest(records: Iterable[EpisodeRecord]) -> str:
    """sha256 over every episode as stored (canonical JSON, in episode and sample order)."""
    digest = hashlib.sha256()
    for record in sorted(records, key=lambda r: (r.episode, r.sample)):
        digest.update(json.dumps(episode_data(record), sort_keys=True).encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


_EPISODE_FIELDS = tuple(field.name for field in dataclasses.fields(EpisodeRecord))


def episode_data(record: EpisodeRecord) -> dict[str, Any]:
    """What `record.to_dict()` gives, without its deep copy (`dataclasses.asdict` copies every
    message: most of the time of storing or hashing 100k episodes); to serialise or hash, never
    to change."""
    data = {name: getattr(record, name) for name in _EPISODE_FIELDS}
    data["total_reward"] = record.total_reward
    return data


def prompt_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages before the agent's first reply (system prompt and task)."""
    prompt = []
    for message in messages:
        if message.get("role") == "assistant":
            break
        prompt.append(message)
    return prompt


def replies(messages: list[dict[str, Any]]) -> list[str]:
    """The agent's replies in a conversation, in order."""
    return [message["content"] for message in messages if message.get("role") == "assistant"]


def code_info() -> dict[str, Any]:
    """Versions of rlvr-gym and its main dependencies, and the git commit of its source tree."""
    import numpy

    return {
        "rlvr_gym": package_version(),
        "git": git_state(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "gymnasium": gym.__version__,
        "numpy": numpy.__version__,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "argv": list(sys.argv),
    }


def git_state() -> dict[str, Any] | None:
    """Commit and dirtiness of the checkout rlvr runs from, or None when installed from a wheel."""
    import rlvr

    folder = Path(rlvr.__file__).resolve().parent

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=10
        )

    try:
        # A wheel installed in a venv inside some repository is not that repository's code.
        if git("ls-files", "--error-unmatch", "__init__.py").returncode != 0:
            return None
        commit = git("rev-parse", "HEAD").stdout.strip()
        dirty = bool(git("status", "--porcelain", "--untracked-files=no").stdout.strip())
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "dirty": dirty}
