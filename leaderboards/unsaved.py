"""Results the store could not take, kept in a file beside it until `rlvr leaderboard import`.

A benchmark run can take hours; if at the end the store stays locked past its wait (another
program in a long write), is read-only or full, the finished result is written here instead of
being thrown away: one JSON file with the result and all its traces, named
`<store file>.unsaved-<time>-<random>.json` next to the store (else in the current folder, else
the temporary folder), written aside and renamed so it is never seen half-written.
`read_unsaved` checks a file completely before anything is imported: its format; every field of
the result and of every episode (type and range); that the traces are the suite's episodes, each
once, seeded as the suite seeds them; that every figure (scores, intervals, pass@k, counts,
tokens, hashes, digests) is the one the traces give, recomputed here; and that each task is the
one the suite's env poses for that seed. It does not re-judge the replies: the rewards in the
traces are the file's word until `rlvr bench reverify` (docs/leaderboards.md, "What an imported
result proves").
"""

from __future__ import annotations

import json
import os
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from rlvr.core.jsonfiles import JSONReadError, read_json_file, write_text_atomic
from rlvr.leaderboards.errors import (
    InvalidResultError,
    LeaderboardError,
    ResultFileError,
    StoreError,
)
from rlvr.leaderboards.fields import array, table
from rlvr.leaderboards.provenance import episode_data
from rlvr.leaderboards.records import episode_from_dict
from rlvr.leaderboards.results import BenchResult, check_result
from rlvr.leaderboards.runner import pinned_tasks_mismatch
from rlvr.rollout.records import EpisodeRecord

FORMAT = "rlvr-bench-result"
VERSION = 1


def save_unsaved(
    result: BenchResult, store_path: str | os.PathLike[str], *, supersedes: int | None = None
) -> Path:
    """Write `result` with its traces to a new file named after the store; return its path."""
    store_path = Path(store_path)
    text = json.dumps(
        {
            "format": FORMAT,
            "version": VERSION,
            "store": str(store_path),
            "supersedes": supersedes,
            "result": result.to_record(),
            "traces": {
                label: [episode_data(record) for record in records]
                for label, records in result.traces.items()
            },
        }
    )
    stamp = time.strftime("%Y%m%dT%H%M%S")
    name = f"{store_path.name}.unsaved-{stamp}-{uuid.uuid4().hex}.json"  # never an existing one
    failures = []
    for folder in (store_path.parent, Path.cwd(), Path(tempfile.gettempdir())):
        try:
            return write_text_atomic(folder / name, text)
        except OSError as exc:
            failures.append(f"{folder}: {exc.strerror or exc}")
    raise StoreError(f"could not save the result in a file either ({'; '.join(failures)})")


def read_unsaved(
    path: str | os.PathLike[str], *, check_tasks: bool = True
) -> tuple[BenchResult, int | None]:
    """The result in a file written by `save_unsaved`, and the id it supersedes (if any).

    Raises `ResultFileError` naming the file when it is not such a file, is damaged, or claims
    what its traces do not support (see the module docstring); `check_tasks=False` skips making
    the envs to compare the tasks.
    """
    try:
        payload = read_json_file(path, unique_keys=True)
    except JSONReadError as exc:
        raise ResultFileError(f"{path}: {exc}; {_NOT_OURS}") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ResultFileError(f"{path}: {_NOT_OURS}")
    if payload.get("version") != VERSION:
        raise ResultFileError(
            f"{path}: saved in format version {payload.get('version')!r}, this rlvr-gym reads "
            f"{VERSION}: import it with the rlvr-gym that wrote it"
        )
    unknown = sorted(
        set(payload) - {"format", "version", "store", "supersedes", "result", "traces"}
    )
    if unknown:
        raise ResultFileError(f"{path}: unknown keys {unknown}; {_NOT_OURS}")
    try:
        result = _result(payload)
    except (LeaderboardError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ResultFileError(
            f"{path}: the saved result is damaged ({type(exc).__name__}: {exc}); it cannot be "
            "imported: run the benchmark again"
        ) from None
    try:
        check_result(result, payload["result"])
    except InvalidResultError as exc:
        raise ResultFileError(
            f"{path}: {exc} (the file was cut short or edited); it cannot be imported: run the "
            "benchmark again"
        ) from None
    try:
        problem = pinned_tasks_mismatch(result) if check_tasks else None
    except LeaderboardError as exc:
        raise ResultFileError(
            f"{path}: its tasks cannot be compared with the suite's, which needs its envs: {exc}"
        ) from None
    if problem is not None:
        raise ResultFileError(
            f"{path}: {problem}: its traces are not the suite's tasks; it cannot be imported"
        )
    supersedes = payload.get("supersedes")
    if supersedes is not None and (type(supersedes) is not int or supersedes < 1):
        raise ResultFileError(f"{path}: 'supersedes' must be a result id, got {supersedes!r}")
    return result, supersedes


_NOT_OURS = "not a result saved by `rlvr bench` (a .json file it names when the store is busy)"


def _result(payload: dict[str, Any]) -> BenchResult:
    result = BenchResult.from_record(payload["result"])
    traces = table(payload["traces"], "traces")
    result.traces = {label: _episodes(label, records) for label, records in traces.items()}
    return result


def _episodes(label: str, records: Any) -> list[EpisodeRecord]:
    try:
        return [episode_from_dict(record) for record in array(records, "its traces")]
    except ValueError as exc:
        raise ValueError(f"traces of {label}: {exc}") from None
