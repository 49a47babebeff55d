"""Reading JSON and JSON-lines files so that any bad content is a message, never a raw error.

`json.loads` alone lets a row nested too deeply raise `RecursionError`, invalid UTF-8 raise
`UnicodeDecodeError` (from the file iterator, with no line known) and a 5000-digit number a
bare `ValueError`. Here each of them, and a file that cannot be read, becomes a `JSONReadError`
(a `ValueError`) whose message says what is wrong; callers put the file and line in front and
raise their own package's error (task loaders a `DatasetError`, the training metrics a
`TrainingError`, the leaderboard's importer its own). Also `write_text_atomic`, for files that
must never be seen half-written."""

from __future__ import annotations

import gzip
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rlvr.core.errors import RlvrError

MAX_DEPTH = 100
"""Deepest nesting of arrays and objects accepted: task rows, metrics and results are shallow;
far deeper input is either broken or meant to exhaust the stack of whoever reads it."""

_BOM = b"\xef\xbb\xbf"


class JSONReadError(RlvrError, ValueError):
    """A file that cannot be read, or text that is not the JSON it should be; the message says
    what is wrong and where within the text (the caller names the file and line)."""


def numbered_lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, bytes]]:
    """The non-blank lines of a file as bytes, numbered from 1 (a leading BOM is dropped).

    Lines are undecoded so that invalid UTF-8 is reported with its line (`parse_json`). A `.gz`
    file is read through gzip (HumanEval ships as `HumanEval.jsonl.gz`).
    """
    opener = gzip.open if str(path).lower().endswith(".gz") else open
    try:
        with opener(path, "rb") as handle:
            for number, line in enumerate(handle, start=1):
                if number == 1 and line.startswith(_BOM):
                    line = line[len(_BOM) :]
                if line.strip():
                    yield number, line
    except (OSError, EOFError) as exc:  # EOFError: a .gz cut short
        raise _unreadable(exc) from None


def parse_json(
    data: bytes | str, *, multiline: bool = False, unique_keys: bool = False, allow_nan: bool = True
) -> Any:
    """The JSON value of `data` (UTF-8 bytes or text), or `JSONReadError` saying what is wrong.

    `multiline`: `data` is a whole file, so positions are given as line and column; otherwise
    it is one line of a JSON-lines file, and positions are columns. `unique_keys`: an object
    naming a key twice is an error (`json.loads` keeps the last, other readers the first: a
    file meant to be checked must not say two things). `allow_nan=False` refuses Python's
    extensions NaN, Infinity and -Infinity (JSON itself has no such numbers; files this package
    writes may hold them, input a user gives should not).
    """
    if isinstance(data, bytes):
        data = decode_utf8(data, multiline)
    try:
        value = json.loads(
            data,
            object_pairs_hook=_unique_object if unique_keys else None,
            parse_constant=None if allow_nan else _refuse_constant,
        )
    except json.JSONDecodeError as exc:
        if multiline:
            message = f"invalid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        else:
            message = f"invalid JSON ({exc.msg} at column {exc.colno}); each line must be one value"
        raise JSONReadError(message) from None
    except RecursionError:
        raise JSONReadError(_too_deep()) from None
    except ValueError as exc:  # e.g. an integer of more digits than Python converts
        raise JSONReadError(f"invalid JSON ({exc})") from None
    if depth_exceeds(value, MAX_DEPTH):
        raise JSONReadError(_too_deep())
    return value


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number; give a finite number")


def read_json_file(path: str | os.PathLike[str], *, unique_keys: bool = False) -> Any:
    """The JSON value of a whole file (a leading BOM is no error); `JSONReadError` if bad
    (`unique_keys`: as `parse_json`'s)."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise _unreadable(exc) from None
    text = data[len(_BOM) :] if data.startswith(_BOM) else data
    return parse_json(text, multiline=True, unique_keys=unique_keys)


def write_text_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write `text` to `path` so that readers (and a run killed meanwhile) see the old content or
    the new, never a mix: written to a temporary file beside it, flushed to disk, renamed over."""
    path = Path(path)
    descriptor, temporary = tempfile.mkstemp(
        dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"
    )
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def decode_utf8(data: bytes, multiline: bool = True) -> str:
    """`data` as UTF-8 text, or `JSONReadError` naming the first bad byte and where it is (line
    and column when `multiline`, else the column)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        column = exc.start - line_start + 1
        where = f"column {column}"
        if multiline:
            line = data.count(b"\n", 0, exc.start) + 1
            where = f"line {line} {where}"
        raise JSONReadError(
            f"not UTF-8 text (byte 0x{data[exc.start]:02x} at {where}); save the file as UTF-8"
        ) from None


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"the key {key!r} appears twice in one object")
            seen.add(key)
    return value


def _unreadable(exc: OSError | EOFError) -> JSONReadError:
    reason = getattr(exc, "strerror", None) or exc or type(exc).__name__
    return JSONReadError(f"cannot read the file ({reason})")


def _too_deep() -> str:
    return f"JSON nested more than {MAX_DEPTH} levels deep"


def depth_exceeds(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether arrays/objects in `value` nest more than `limit` levels (without recursing)."""
    pending = [(value, 1)] if isinstance(value, (dict, list)) else []
    while pending:
        item, depth = pending.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        # only containers are queued: a list of 20,000 numbers costs one pass, not 20,000 pops
        pending.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False
