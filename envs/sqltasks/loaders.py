"""Text-to-SQL datasets from files: Spider, BIRD, and JSONL.

All three need a folder of SQLite databases laid out as `<folder>/<db_id>/<db_id>.sqlite`
(Spider's `database/`, BIRD's `dev_databases/`) or `<folder>/<db_id>.sqlite`. Each task's prompt is
the database's schema (CREATE statements, optionally sample rows) and the question; its answer is
the gold query; `metadata["db_id"]` names the database.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from rlvr.envs.errors import DatasetError
from rlvr.envs.jsonfiles import JSONReadError, read_json_file
from rlvr.envs.sqltasks.generate import SQLTasks
from rlvr.envs.tasks import ListSource, load_jsonl
from rlvr.verifiers.sql.catalog import FolderCatalog, lookup
from rlvr.verifiers.sql.errors import BackendError, UnknownDatabase, VerifierConfigError
from rlvr.verifiers.types import Task

PathLike = str | os.PathLike[str]


def load_spider(
    questions: PathLike, databases: PathLike, *, sample_rows: int = 3, limit: int | None = None
) -> SQLTasks:
    """Spider's layout: `questions` is e.g. `dev.json` (a JSON list of objects with `db_id`,
    `question`, `query`), `databases` its `database/` folder."""
    rows = _read_json_list(questions)
    fields = {"question": "question", "query": "query", "db_id": "db_id"}
    return _build(
        rows, databases, fields, sample_rows, limit, source=f"spider:{Path(questions).name}"
    )


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
    rows = _read_json_list(questions)
    fields = {"question": "question", "query": "SQL", "db_id": "db_id"}
    hint = "evidence" if use_evidence else None
    source = f"bird:{Path(questions).name}"
    return _build(rows, databases, fields, sample_rows, limit, source=source, hint_field=hint)


def load_sql_jsonl(
    path: PathLike,
    databases: PathLike,
    *,
    fields: Mapping[str, str] | None = None,
    sample_rows: int = 3,
    limit: int | None = None,
) -> SQLTasks:
    """One JSON object per line with a question, a gold query and a database id. `fields` maps
    `question`, `query`, `db_id` (and optionally `id`, `hint`) to your column names."""
    names = {"question": "question", "query": "query", "db_id": "db_id", **(fields or {})}
    plain = load_jsonl(path, fields={"prompt": names["question"], "answer": names["query"],
                                     **({"id": names["id"]} if "id" in names else {})},
                       limit=limit, convert=_text_fields_check(names))  # fmt: skip
    rows = []
    for task in plain.tasks:
        rows.append({**task.metadata, "question": task.prompt, "query": task.answer, "id": task.id})
    mapped = {"question": "question", "query": "query", "db_id": names["db_id"]}
    return _build(rows, databases, mapped, sample_rows, None, source=str(path),
                  hint_field=names.get("hint"))  # fmt: skip


def _text_fields_check(names: Mapping[str, str]) -> Callable[[Task], Task]:
    """A `load_jsonl` convert step refusing a row whose question, query or database id is not
    non-empty text (reported with its line)."""

    def check(task: Task) -> Task:
        values = {"question": task.prompt, "query": task.answer,
                  "db_id": task.metadata.get(names["db_id"])}  # fmt: skip
        for ours, value in values.items():
            if not isinstance(value, str) or not value.strip():
                raise DatasetError(f"field {names[ours]!r} ({ours}) must be non-empty text")
        return task

    return check


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
    rows: Iterable[Any],
    databases: PathLike,
    fields: Mapping[str, str],
    sample_rows: int,
    limit: int | None,
    *,
    source: str,
    hint_field: str | None = None,
) -> SQLTasks:
    try:
        catalog = FolderCatalog(databases)
    except VerifierConfigError as exc:
        raise DatasetError(str(exc)) from None

    @cache
    def schema(db_id: str) -> str:
        return lookup(catalog, db_id).describe(sample_rows)

    tasks = []
    for position, row in enumerate(rows):
        if limit is not None and len(tasks) >= limit:
            break
        where = f"{source} item {position}"
        if not isinstance(row, Mapping):
            raise DatasetError(f"{where}: expected an object, got {type(row).__name__}")
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
        task_id = str(row.get("id") or f"{source}/{position}")
        tasks.append(Task(id=task_id, prompt=prompt, answer=values["query"], metadata=metadata))
    if not tasks:
        raise DatasetError(f"{source}: no questions")
    return SQLTasks(ListSource(tasks, name=source), catalog, name=source)


def _plain(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool)) or value is None
