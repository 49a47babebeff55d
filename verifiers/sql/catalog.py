"""Catalogs: how a verifier finds the database a task names (`task.metadata["db_id"]`).

A catalog is anything with `catalog[db_id] -> Database | SQLiteFile` that raises `KeyError` for an
unknown id: a plain dict works, `FolderCatalog` serves a Spider/BIRD-style folder of SQLite files,
and procedural task sources bring their own (databases regenerated from their id).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol, runtime_checkable

from rlvr.verifiers.sql.database import DatabaseSource, SQLiteFile
from rlvr.verifiers.sql.errors import UnknownDatabase, VerifierConfigError


@runtime_checkable
class Catalog(Protocol):
    def __getitem__(self, db_id: str) -> DatabaseSource: ...


class FolderCatalog:
    """SQLite files in a folder, found as `<root>/<db_id>/<db_id>.sqlite` (Spider and BIRD's
    layout) or `<root>/<db_id>.sqlite` / `.db`."""

    SUFFIXES = (".sqlite", ".db", ".sqlite3")

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        if not self.root.is_dir():
            raise VerifierConfigError(f"{self.root}: no such folder of SQLite databases")
        self._files: dict[str, SQLiteFile] = {}

    def __getitem__(self, db_id: str) -> SQLiteFile:
        if db_id not in self._files:
            self._files[db_id] = SQLiteFile(db_id, self._find(db_id))
        return self._files[db_id]

    def _find(self, db_id: str) -> Path:
        if not db_id or "/" in db_id or "\\" in db_id or db_id.startswith("."):
            raise UnknownDatabase(f"{db_id!r} is not a valid database id")
        for suffix in self.SUFFIXES:
            for candidate in (
                self.root / db_id / f"{db_id}{suffix}",
                self.root / f"{db_id}{suffix}",
            ):
                if candidate.is_file():
                    return candidate
        raise UnknownDatabase(
            f"no database {db_id!r} under {self.root} (looked for {db_id}/{db_id}.sqlite and "
            f"{db_id}.sqlite)"
        )

    def __repr__(self) -> str:
        return f"FolderCatalog({str(self.root)!r})"


def lookup(catalog: Catalog | Mapping[str, DatabaseSource], db_id: str) -> DatabaseSource:
    """`catalog[db_id]`, with a missing id raised as `UnknownDatabase`."""
    try:
        return catalog[db_id]
    except UnknownDatabase:
        raise
    except KeyError:
        raise UnknownDatabase(f"the catalog has no database {db_id!r}") from None
