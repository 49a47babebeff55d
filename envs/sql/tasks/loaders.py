"""Text-to-SQL datasets from files: Spider, BIRD, and JSONL.

All three need a folder of SQLite databases laid out as `<folder>/<db_id>/<db_id>.sqlite`
(Spider's `database/`, BIRD's `dev_databases/`) or `<folder>/<db_id>.sqlite`. Each task's prompt is
the database's schema (CREATE statements, optionally sample rows) and the question; its answer is
the gold query; `metadata["db_id"]` names the database.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from rlvr.core.jsonfiles import JSONReadError, read_json_file
from rlvr.envs.errors import DatasetError
from rlvr.envs.sql.tasks.generate import SQLTasks
from rlvr.envs.tasks import ListSource, check_text, read_jsonl
from rlvr.verifiers.sql.catalog import FolderCatalog, lookup
from rlvr.verifiers.sql.errors import BackendError, UnknownDatabase, VerifierConfigError
from rlvr.verifiers.types import Task, content_id

PathLike = str | os.PathLike[str]


def load_spider(
    questions: PathLike, databases: PathLike, *, sample_rows: int = 3, limit: int | None = None
) -> SQLTasks:
    """Spider's layout: `questions` is e.g. `dev.json` (a JSON list of objects with `db_id`,
    `question`, `query`), `databases` its `database/` folder."""
    source = f"spider:{Path(questions).name}"
    fields = {"question": "question", "query": "query", "db_id": "db_id"}
    return _build(_items(questions, source), databases, fields, sample_rows, limit, source=source)


def load_bird(
    questions: PathLike,
    databases: PathLike,
    *,
    sample_rows: int = 3,
    use_evidence: bool = True,
    limit: int | None = None,
) -> SQLTasks:
    """BIRD's layout: `questions` is e.g. `dev.json` (objects with `db_id`, `question`, `SQL`,
    `evidence`, `difficulty`), `databases` its `dev_databases/` folder. With `use_evidence` the
    external-knowledge hint is added to the prompt, as BIRD's standard setting does."""
    fields = {"question": "question", "query": "SQL", "db_id": "db_id"}
    hint = "evidence" if use_evidence else None
    source = f"bird:{Path(questions).name}"
    return _build(_items(questions, source), databases, fields, sample_rows, limit, source=source,
                  hint_field=hint)  # fmt: skip


def load_sql_jsonl(
    path: PathLike,
    databases: PathLike,
    *,
    fields: Mapping[str, str] | None = None,
    sample_rows: int = 3,
    limit: int | None = None,
) -> SQLTasks:
    """One JSON object per line with a question, a gold query and a database id. `fields` maps
    `question`, `query`, `db_id` (and optionally `id`, `hint`) to your column names. A line
    without an id gets one derived from its question, query and database, so the same question
    on two databases makes two tasks."""
    names = {"question": "question", "query": "query", "db_id": "db_id", **(fields or {})}
    mapped = {key: names[key] for key in ("question", "query", "db_id")}
    return _build(read_jsonl(path), databases, mapped, sample_rows, limit, source=str(Path(path)),
                  hint_field=names.get("hint"), id_field=names.get("id", "id"),
                  content_ids=True)  # fmt: skip


def _items(questions: PathLike, source: str) -> list[tuple[str, Any]]:
    """(where, row) of each question in a JSON list file."""
    return [(f"{source} item {n}", row) for n, row in enumerate(_read_json_list(questions))]


def _read_json_list(path: PathLike) -> list[Any]:
    file = Path(path)
    if not file.is_file():
        raise DatasetError(
            f"{file}: no such file; pass the dataset's questions file (e.g. dev.json)"
        )
    try:
        rows = read_json_file(file)
    except JSONReadError as exc:
        raise DatasetError(f"{file}: {exc}") from None
    if not isinstance(rows, list):
        raise DatasetError(f"{file}: expected a JSON list of questions, got {type(rows).__name__}")
    return rows


def _build(
    items: Iterable[tuple[str, Any]],
    databases: PathLike,
    fields: Mapping[str, str],
    sample_rows: int,
    limit: int | None,
    *,
    source: str,
    hint_field: str | None = None,
    id_field: str = "id",
    content_ids: bool = False,
) -> SQLTasks:
    """Tasks from (where, row) items. A row's id is its `id_field`, else derived from its
    question, query and database (`content_ids`), else "<source>/<position>"."""
    try:
        catalog = FolderCatalog(databases)
    except VerifierConfigError as exc:
        raise DatasetError(str(exc)) from None

    @cache
    def schema(db_id: str) -> str:
        return lookup(catalog, db_id).describe(sample_rows)

    tasks: list[Task] = []
    for position, (where, row) in enumerate(items):
        if limit is not None and len(tasks) >= limit:
            break
        if not isinstance(row, Mapping):
            raise DatasetError(f"{where}: expected an object, got {type(row).__name__}")
        check_text(row, where)
        values = {}
        for ours, theirs in fields.items():
            value = row.get(theirs)
            if not isinstance(value, str) or not value.strip():
                raise DatasetError(f"{where}: field {theirs!r} ({ours}) must be non-empty text")
            values[ours] = value.strip()
        try:
            prompt = f"{schema(values['db_id'])}\n\nQuestion: {values['question']}"
        except (UnknownDatabase, BackendError) as exc:
            raise DatasetError(f"{where}: {exc}") from None
        hint = row.get(hint_field) if hint_field else None
        if isinstance(hint, str) and hint.strip():
            prompt += f"\nHint: {hint.strip()}"
        extra = {k: v for k, v in row.items() if k not in fields.values() and _plain(v)}
        metadata = {**extra, "family": "sql", "db_id": values["db_id"],
                    "question": values["question"], "source": source}  # fmt: skip
        derived = (
            content_id(values["question"], values["query"], values["db_id"])
            if content_ids
            else f"{source}/{position}"
        )
        task_id = str(row.get(id_field) or derived)
        tasks.append(Task(id=task_id, prompt=prompt, answer=values["query"], metadata=metadata))
    if not tasks:
        raise DatasetError(f"{source}: no questions")
    return SQLTasks(ListSource(tasks, name=source), catalog, name=source)


def _plain(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool)) or value is None
