"""Results the store could not take, kept in a file beside it until `rlvr leaderboard import`.

A benchmark run can take hours; if at the end the store stays locked past its wait (another
program in a long write), is read-only or full, the finished result is written here instead of
being thrown away: one JSON file with the result and all its traces, named
`<store file>.unsaved-<time>-<random>.json` next to the store (else in the current folder, else
the temporary folder), written aside and renamed so it is never seen half-written.
`read_unsaved` checks a file completely (format, result, every episode, the traces' digests)
before anything is imported.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from rlvr.envs.jsonfiles import JSONReadError, read_json_file, write_text_atomic
from rlvr.leaderboards.errors import LeaderboardError, ResultFileError, StoreError
from rlvr.leaderboards.results import BenchResult, traces_mismatch
from rlvr.leaderboards.store import episode_from_dict

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
                label: [record.to_dict() for record in records]
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


def read_unsaved(path: str | os.PathLike[str]) -> tuple[BenchResult, int | None]:
    """The result in a file written by `save_unsaved`, and the id it supersedes (if any).

    Raises `ResultFileError` naming the file when it is not such a file or is damaged.
    """
    try:
        payload = read_json_file(path)
    except JSONReadError as exc:
        raise ResultFileError(f"{path}: {exc}; {_NOT_OURS}") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ResultFileError(f"{path}: {_NOT_OURS}")
    if payload.get("version") != VERSION:
        raise ResultFileError(
            f"{path}: saved in format version {payload.get('version')!r}, this rlvr-gym reads "
            f"{VERSION}: import it with the rlvr-gym that wrote it"
        )
    try:
        result = _result(payload)
        problem = traces_mismatch(result)
    except (LeaderboardError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ResultFileError(
            f"{path}: the saved result is damaged ({type(exc).__name__}: {exc}); it cannot be "
            "imported: run the benchmark again"
        ) from None
    if problem is not None:
        raise ResultFileError(
            f"{path}: {problem} (the file was cut short or edited); it cannot be imported: run "
            "the benchmark again"
        )
    supersedes = payload.get("supersedes")
    if supersedes is not None and (type(supersedes) is not int or supersedes < 1):
        raise ResultFileError(f"{path}: 'supersedes' must be a result id, got {supersedes!r}")
    return result, supersedes


_NOT_OURS = "not a result saved by `rlvr bench` (a .json file it names when the store is busy)"


def _result(payload: dict[str, Any]) -> BenchResult:
    result = BenchResult.from_record(payload["result"])
    result.traces = {
        label: [episode_from_dict(record) for record in records]
        for label, records in payload["traces"].items()
    }
    unknown = sorted(set(result.traces) - set(result.suite.labels))
    if unknown:
        raise ValueError(f"traces of envs the suite does not have: {unknown}")
    return result
