"""Unified diffs, read and applied in our process (never by a program of the agent's).

`apply_patch(files, text)` applies a unified diff (`diff -u`, `git diff`) to a mapping of paths to
bytes and returns the new mapping, or raises `PatchError` saying which hunk of which file does
not apply: nothing is changed unless every hunk applies. What models write is read leniently:
`a/` and `b/` prefixes, `diff --git` and `index` lines, wrong line counts in hunk headers (the
hunk's lines are taken as written), blank context lines that lost their leading space, and hunks
found away from their stated line. Creating (`--- /dev/null`) and deleting (`+++ /dev/null`)
files works. Linear in the patch and, per hunk, in the file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

DEV_NULL = "/dev/null"
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")
MAX_HUNKS = 200


class PatchError(ValueError):
    """A patch that cannot be read or applied (the message says where)."""


@dataclass
class Hunk:
    start: int  # 1-based line of the old file where the hunk says it begins (0 for a new file)
    lines: list[tuple[str, str]] = field(default_factory=list)  # (" " | "-" | "+", text)

    def old(self) -> list[str]:
        return [text for kind, text in self.lines if kind != "+"]

    def new(self) -> list[str]:
        return [text for kind, text in self.lines if kind != "-"]


@dataclass
class FilePatch:
    old_path: str
    new_path: str
    hunks: list[Hunk] = field(default_factory=list)


def parse_patch(text: str) -> list[FilePatch]:
    """The file patches of a unified diff; `PatchError` if there is none or a hunk has no
    file header."""
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line starts no line of its own
    patches: list[FilePatch] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if (
            line.startswith("--- ")
            and index + 1 < len(lines)
            and lines[index + 1].startswith("+++ ")
        ):
            patches.append(FilePatch(_path(line[4:]), _path(lines[index + 1][4:])))
            index += 2
            continue
        match = _HUNK.match(line)
        if match:
            if not patches:
                raise PatchError("a hunk (@@ ... @@) comes before any '--- a/path' / '+++ b/path'")
            hunk = Hunk(int(match.group(1)))
            index = _read_hunk(lines, index + 1, hunk)
            patches[-1].hunks.append(hunk)
            if sum(len(patch.hunks) for patch in patches) > MAX_HUNKS:
                raise PatchError(f"more than {MAX_HUNKS} hunks; split the change")
            continue
        index += 1  # diff --git, index, mode lines, and prose around the diff
    if not patches:
        raise PatchError(
            "no unified diff found: it needs '--- a/path' and '+++ b/path' lines, then hunks "
            "starting with '@@ -line,count +line,count @@'"
        )
    return patches


def _read_hunk(lines: list[str], index: int, hunk: Hunk) -> int:
    """Read a hunk's lines from `index`; returns the index after them."""
    while index < len(lines):
        line = lines[index]
        if _HUNK.match(line) or line.startswith("diff "):
            break
        if (
            line.startswith("--- ")
            and index + 1 < len(lines)
            and lines[index + 1].startswith("+++ ")
        ):
            break
        if line.startswith("\\"):  # "\ No newline at end of file"
            if hunk.lines:
                kind, text = hunk.lines[-1]
                hunk.lines[-1] = (kind, text.removesuffix("\n"))
        elif line == "":
            hunk.lines.append((" ", "\n"))  # a blank context line that lost its space
        elif line[0] in " -+":
            hunk.lines.append((line[0], line[1:] + "\n"))
        else:
            break
        index += 1
    return index


def keep_ends(text: str) -> list[str]:
    """The lines of `text`, each with its "\\n" (split on "\\n" alone: a form feed or a
    line separator inside a line stays part of it, as in `diff`)."""
    parts = text.split("\n")
    return [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _path(header: str) -> str:
    path = header.split("\t")[0].strip()
    if path == DEV_NULL:
        return path
    if path.startswith(("a/", "b/")):
        path = path[2:]
    return path


def apply_patch(files: Mapping[str, bytes], text: str) -> tuple[dict[str, bytes], list[str]]:
    """`files` with the patch applied, and one line per file changed; `PatchError` if any part
    does not apply (then nothing changes)."""
    result = dict(files)
    notes = []
    for patch in parse_patch(text):
        if patch.old_path == DEV_NULL:
            path = patch.new_path
            if path in result:
                raise PatchError(f"{path}: the patch creates it, but it already exists")
            result[path] = "".join(line for hunk in patch.hunks for line in hunk.new()).encode()
            notes.append(f"created {path}")
            continue
        path = patch.old_path
        if path not in result:
            raise PatchError(f"{path}: no such file in the repository")
        try:
            old = result[path].decode("utf-8")
        except UnicodeDecodeError:
            raise PatchError(f"{path}: not a UTF-8 text file") from None
        new = _apply_hunks(path, keep_ends(old), patch.hunks)
        if patch.new_path == DEV_NULL:
            if new:
                raise PatchError(f"{path}: the patch deletes it but does not remove all its lines")
            del result[path]
            notes.append(f"deleted {path}")
        else:
            result.pop(path)
            result[patch.new_path] = "".join(new).encode("utf-8")
            moved = f" (now {patch.new_path})" if patch.new_path != path else ""
            notes.append(f"modified {path}{moved}: {len(patch.hunks)} hunk(s)")
    return result, notes


def _apply_hunks(path: str, lines: list[str], hunks: list[Hunk]) -> list[str]:
    offset = 0  # how far earlier hunks moved the file's lines
    searched_from = 0
    for number, hunk in enumerate(hunks, 1):
        old = hunk.old()
        at = _find(lines, old, max(hunk.start - 1 + offset, 0), searched_from)
        if at is None:
            raise PatchError(
                f"{path}: hunk {number} (at line {hunk.start}) does not apply: its context and "
                "removed lines are not in the file as written; read the file again and use "
                "its exact lines"
            )
        lines[at : at + len(old)] = hunk.new()
        searched_from = at + len(hunk.new())
        # Where later hunks are expected: shifted by this hunk's size and by how far from its
        # stated line it was found (an earlier edit the patch did not know about).
        offset = at - (hunk.start - 1) + len(hunk.new()) - len(old)
    return lines


def _find(lines: list[str], block: list[str], hint: int, start: int) -> int | None:
    """Where `block` occurs in `lines` at or after `start`, nearest to `hint` (the end of a line
    may differ in its newline only at the end of the file)."""
    if not block:
        return min(max(hint, start), len(lines))
    candidates = range(start, len(lines) - len(block) + 1)
    best = None
    for at in candidates:
        if _matches(lines, block, at) and (best is None or abs(at - hint) < abs(best - hint)):
            best = at
    return best


def _matches(lines: list[str], block: list[str], at: int) -> bool:
    for index, wanted in enumerate(block):
        have = lines[at + index]
        if have != wanted and have.rstrip("\n") != wanted.rstrip("\n"):
            return False
    return True


def unified_diff(old: Mapping[str, bytes], new: Mapping[str, bytes]) -> str:
    """A unified diff (git style, a/ and b/ prefixes) from `old` to `new` (text files)."""
    import difflib

    chunks = []
    for path in sorted(set(old) | set(new)):
        before, after = old.get(path), new.get(path)
        if before == after:
            continue
        a = keep_ends(before.decode("utf-8")) if before is not None else []
        b = keep_ends(after.decode("utf-8")) if after is not None else []
        for line in difflib.unified_diff(
            a,
            b,
            f"a/{path}" if before is not None else DEV_NULL,
            f"b/{path}" if after is not None else DEV_NULL,
        ):
            ends = line.endswith("\n")
            chunks.append(line if ends else line + "\n\\ No newline at end of file\n")
    return "".join(chunks)
