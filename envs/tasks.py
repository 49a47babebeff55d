"""Task sources: where an environment's problems come from.

A task source is anything with `len(source)` and `source[i] -> Task`; item `i` must be the same
every time it is asked for. Three kinds ship here:

- `ProceduralSource`: problems generated from a seed, item `i` regenerable alone, with difficulty
  levels and train/test splits that are disjoint by construction (a problem's split is decided by
  a hash of its prompt, so the same problem can never land in both).
- `load_jsonl(path, fields=...)`: one JSON object per line, with a field mapping.
- `load_hf_dataset(name_or_path, split=..., revision=..., fields=...)`: HuggingFace `datasets`
  (hub name, a folder saved with `save_to_disk`, or a local data file).
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from rlvr.core.jsonfiles import JSONReadError, numbered_lines, parse_json
from rlvr.envs import options
from rlvr.envs.errors import DatasetError, EnvConfigError
from rlvr.verifiers.types import Task, TaskFormatError

SPLITS = ("train", "test")


@runtime_checkable
class TaskSource(Protocol):
    """A finite, indexable, reproducible collection of tasks."""

    def __len__(self) -> int: ...

    def __getitem__(self, index: int) -> Task: ...


class ListSource:
    """Tasks held in memory (from a list of `Task`s or of dicts with `prompt` and `answer`)."""

    def __init__(self, tasks: Iterable[Task | Mapping[str, Any]], name: str = "list"):
        self.name = name
        self.tasks: list[Task] = []
        for position, item in enumerate(tasks):
            try:
                task = item if isinstance(item, Task) else Task.from_dict(item)
            except TaskFormatError as exc:
                raise DatasetError(f"{name}: item {position}: {exc}") from None
            self.tasks.append(task)
        if not self.tasks:
            raise DatasetError(f"{name}: no tasks; a task source needs at least one task")
        _check_unique_ids(self.tasks, name)

    def __len__(self) -> int:
        return len(self.tasks)

    def __getitem__(self, index: int) -> Task:
        return self.tasks[_check_index(index, len(self.tasks))]

    def __repr__(self) -> str:
        return f"ListSource({self.name!r}, {len(self)} tasks)"


def as_source(tasks: TaskSource | Iterable[Task | Mapping[str, Any]]) -> TaskSource:
    """Accept a task source, or any iterable of tasks/dicts (wrapped in a `ListSource`)."""
    options.tasks_argument(tasks)
    if isinstance(tasks, TaskSource) and not isinstance(tasks, (list, tuple)):
        return tasks
    return ListSource(tasks)


def _check_index(index: int, size: int) -> int:
    if not isinstance(index, (int, np.integer)) or isinstance(index, bool):
        raise TypeError(f"task index must be an int, got {type(index).__name__}")
    if not 0 <= index < size:
        raise IndexError(f"task index {index} is out of range for {size} tasks")
    return int(index)


def _check_unique_ids(tasks: Sequence[Task], name: str) -> None:
    seen: dict[str, int] = {}
    for position, task in enumerate(tasks):
        if task.id in seen:
            raise DatasetError(
                f"{name}: task id {task.id!r} appears at items {seen[task.id]} and {position}; "
                "ids must be unique (drop the id field to derive ids from content)"
            )
        seen[task.id] = position


# --- files and datasets --------------------------------------------------------------------------

FieldMap = Mapping[str, str]
"""Maps our task fields (`prompt`, `answer`, optional `id`) to the dataset's column names."""


def _row_to_task(
    row: Mapping[str, Any],
    *,
    fields: FieldMap,
    answer_parser: Callable[[Any], Any] | None,
    metadata: Mapping[str, Any],
    where: str,
) -> Task:
    if not isinstance(row, Mapping):
        raise DatasetError(f"{where}: expected a JSON object, got {type(row).__name__}")
    check_text(row, where)
    values: dict[str, Any] = {}
    for ours in ("prompt", "answer", "id"):
        theirs = fields.get(ours, ours)
        if theirs in row and row[theirs] is not None:
            values[ours] = row[theirs]
        elif ours != "id":
            raise DatasetError(
                f"{where}: no field {theirs!r} for the task's {ours} (fields here: "
                f"{sorted(row)}); pass fields={{'{ours}': '<column name>'}}"
            )
    if not isinstance(values["prompt"], str):
        raise DatasetError(f"{where}: the prompt field must be text, got {values['prompt']!r:.80}")
    task_id = values.get("id")
    if task_id is not None and (not isinstance(task_id, (str, int)) or isinstance(task_id, bool)):
        raise DatasetError(
            f"{where}: the id field must be text or an integer, got {type(task_id).__name__}; "
            "drop it to derive ids from the content"
        )
    if answer_parser is not None:
        try:
            values["answer"] = answer_parser(values["answer"])
        except (ValueError, TypeError) as exc:
            raise DatasetError(f"{where}: cannot read the answer: {exc}") from None
    used = {fields.get(key, key) for key in ("prompt", "answer", "id")}
    extra = {key: value for key, value in row.items() if key not in used and _is_plain(value)}
    values["metadata"] = {**extra, **metadata}
    try:
        return Task.from_dict(values)
    except TaskFormatError as exc:
        raise DatasetError(f"{where}: {exc}") from None


def check_text(row: Mapping[str, Any], where: str) -> None:
    """Refuse a dataset row with a lone surrogate in any field (`DatasetError` naming it)."""
    for column, value in row.items():
        surrogate = lone_surrogate((column, value))
        if surrogate is not None:
            raise DatasetError(
                f"{where}: field {column!r} holds a lone surrogate {surrogate}, which is no text "
                "(a \\ud800-\\udfff escape without its pair): fix or drop it"
            )


def lone_surrogate(value: Any) -> str | None:
    """The first lone surrogate among the strings of `value` (nested lists and mappings, keys
    included), escaped, or None. JSON's `\\ud800` decodes to one, but no text holds it: it cannot
    be encoded, so a tokenizer, a sandbox's stdin or a parquet file would fail on it later."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                return repr(item[exc.start])
        elif isinstance(item, Mapping):
            pending += [*item.keys(), *item.values()]
        elif isinstance(item, (list, tuple)):
            pending += item
    return None


def _is_plain(value: Any) -> bool:
    if isinstance(value, list):  # e.g. sanitized MBPP's `test_imports`
        return all(isinstance(item, (str, int, float, bool)) for item in value)
    return isinstance(value, (str, int, float, bool)) or value is None


def _check_limit(limit: int | None) -> None:
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        raise EnvConfigError(f"limit must be a positive int (or None for all rows), got {limit!r}")


def load_jsonl(
    path: str | os.PathLike[str],
    *,
    fields: FieldMap | None = None,
    answer_parser: Callable[[Any], Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
    limit: int | None = None,
    convert: Callable[[Task], Task] | None = None,
) -> ListSource:
    """Load tasks from a JSON-lines file, one object per line (blank lines are ignored); a
    `.gz` file is read through gzip (HumanEval ships as `HumanEval.jsonl.gz`).

    `fields` maps our names to yours, e.g. `{"prompt": "question", "answer": "solution"}`;
    `answer_parser` turns the raw answer field into the gold (e.g. GSM8K's `#### 42`). Other plain
    columns go into each task's metadata. `convert` turns each task into the env's own kind (a
    `DatasetError` it raises is reported with the line). Any bad line (not UTF-8, not JSON,
    nested too deeply, a missing or mistyped field) raises `DatasetError` naming the file, the
    line and what is wrong.
    """
    _check_limit(limit)
    name = str(Path(path))
    meta = {"source": name, **(metadata or {})}
    tasks = []
    for where, row in read_jsonl(path):
        task = _row_to_task(
            row, fields=fields or {}, answer_parser=answer_parser, metadata=meta, where=where
        )
        if convert is not None:
            try:
                task = convert(task)
            except DatasetError as exc:
                raise DatasetError(f"{where}: {exc}") from None
        tasks.append(task)
        if limit is not None and len(tasks) >= limit:
            break
    return ListSource(tasks, name=name)


def read_jsonl(path: str | os.PathLike[str]) -> Iterator[tuple[str, Any]]:
    """`(file:line, value)` of each non-blank line of a JSON-lines file (plain or `.gz`); a
    missing file, or a line that is not UTF-8 JSON, is a `DatasetError` naming file and line."""
    file = Path(path)
    if not file.is_file():
        raise DatasetError(f"{file}: no such file; pass the path of a .jsonl file")
    try:
        for number, line in numbered_lines(file):
            where = f"{file}:{number}"
            try:
                yield where, parse_json(line)
            except JSONReadError as exc:
                raise DatasetError(f"{where}: {exc}") from None
    except JSONReadError as exc:
        raise DatasetError(f"{file}: {exc}") from None


def is_jsonl(path: str | os.PathLike[str]) -> bool:
    """Whether `path` names a JSON-lines file, plain or gzipped (`.jsonl`, `.jsonl.gz`)."""
    return Path(path).name.lower().endswith((".jsonl", ".jsonl.gz"))


def load_hf_dataset(
    name_or_path: str | os.PathLike[str],
    *,
    split: str = "train",
    subset: str | None = None,
    revision: str | None = None,
    fields: FieldMap | None = None,
    answer_parser: Callable[[Any], Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
    limit: int | None = None,
) -> ListSource:
    """Load tasks with HuggingFace `datasets` (needs the `datasets` extra).

    `name_or_path` is a hub dataset name (`"openai/gsm8k"`, with `subset="main"`), a folder
    written by `Dataset.save_to_disk`, or a local `.jsonl`/`.json`/`.csv`/`.parquet` file. Pin
    `revision` for reproducible hub loads.
    """
    _check_limit(limit)
    try:
        import datasets
    except ImportError:
        raise ImportError(
            "load_hf_dataset needs HuggingFace datasets: pip install 'rlvr-gym[datasets]'"
        ) from None
    dataset = _open_hf_dataset(datasets, str(name_or_path), split, subset, revision)
    label = f"{name_or_path}[{split}]"
    meta = {"source": str(name_or_path), "split": split, **(metadata or {})}
    if revision:
        meta["revision"] = revision
    tasks = []
    for position, row in enumerate(dataset):
        if limit is not None and position >= limit:
            break
        tasks.append(
            _row_to_task(
                row,
                fields=fields or {},
                answer_parser=answer_parser,
                metadata=meta,
                where=f"{label} row {position}",
            )
        )
    return ListSource(tasks, name=label)


_SAVED_DATASET_MARKERS = ("dataset_info.json", "dataset_dict.json", "state.json")
_DATA_FILE_BUILDERS = {".jsonl": "json", ".json": "json", ".csv": "csv", ".parquet": "parquet"}


def _open_hf_dataset(
    datasets: Any, name: str, split: str, subset: str | None, revision: str | None
):
    path = Path(name)
    if path.is_dir() and any((path / marker).exists() for marker in _SAVED_DATASET_MARKERS):
        loaded = datasets.load_from_disk(str(path))
        if isinstance(loaded, datasets.DatasetDict):
            if split not in loaded:
                raise DatasetError(f"{name}: no split {split!r}; it has {sorted(loaded)}")
            return loaded[split]
        return loaded
    if path.is_file():
        builder = _DATA_FILE_BUILDERS.get(path.suffix)
        if builder is None:
            raise DatasetError(
                f"{name}: unknown data file type; use one of {sorted(_DATA_FILE_BUILDERS)}"
            )
        return datasets.load_dataset(builder, data_files={split: str(path)}, split=split)
    try:
        return datasets.load_dataset(name, subset, split=split, revision=revision)
    except (FileNotFoundError, ValueError) as exc:
        raise DatasetError(f"cannot load dataset {name!r} split {split!r}: {exc}") from None


# --- procedural generation ------------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    """What a generator returns: a prompt, its exact gold answer, and facts for the metadata.

    `split_keys` decide the problem's split when the prompt alone does not say what must never
    be shared between splits (a repository and its bug): the problem is in a split only if
    every key hashes into it. Empty: the prompt decides."""

    prompt: str
    answer: Any
    metadata: Mapping[str, Any] = field(default_factory=dict)
    split_keys: tuple[str, ...] = ()


Generator = Callable[[np.random.Generator, int], Problem]
"""`generate(rng, difficulty) -> Problem`: all randomness must come from `rng`. A generator
whose problems are costly to finish (they are run to be checked) may draw its parts in the
requested split itself: with a true `draws_in_split` attribute it is called as
`generate(rng, difficulty, split=..., test_fraction=...)`."""


def split_of(prompt: str, test_fraction: float) -> str:
    """The split a problem belongs to, decided by a hash of its prompt (stable across runs)."""
    digest = hashlib.blake2b(prompt.encode("utf-8"), digest_size=8).digest()
    bucket = int.from_bytes(digest, "little") % 1_000_000
    return "test" if bucket < test_fraction * 1_000_000 else "train"


class ProceduralSource:
    """Tasks generated on demand: item `i` depends only on (seed, split, difficulty, i).

    Candidates are drawn from `np.random.default_rng([seed, difficulty, i, attempt])` until one
    whose prompt hashes into the requested split turns up, so train and test never share a
    problem. `difficulty` may be a list, then each item draws its level from the list.

    That rejection skews a split towards the kinds of problem with many distinct prompts: a kind
    with eight possible prompts has none in a 10% test split about half the time. With
    `stratify=True` each item first draws its level and a stratum (a kind of problem: the
    generator's `strata(level)` counts them and `generate(rng, level, stratum=k)` draws only
    from stratum k), then candidates of that stratum alone, so every stratum that has problems
    in the split holds an equal share of it. Strata without any (a kind with a single prompt
    that hashes into the other split) are found once, by `STRATUM_PROBES` fixed draws, and left
    out: item `i` still depends only on (seed, split, difficulty, i).
    """

    MAX_ATTEMPTS = 10_000
    STRATUM_PROBES = 256

    def __init__(
        self,
        generate: Generator,
        *,
        name: str,
        split: str = "train",
        difficulty: int | Sequence[int] = 1,
        seed: int = 0,
        size: int = 1_000_000,
        test_fraction: float = 0.1,
        stratify: bool = False,
    ) -> None:
        if stratify and not callable(getattr(generate, "strata", None)):
            raise EnvConfigError(
                f"{name}: stratify=True needs a generator with strata(level) and a stratum= "
                "argument; use stratify=False with this generator"
            )
        self.generate = generate
        self.stratify = stratify
        self.name = name
        self.split = options.choice(split, SPLITS, name="split")
        self.levels = options.levels(difficulty)
        self.seed = options.integer(seed, name="seed", minimum=0)
        self.size = options.integer(size, name="size")
        self.test_fraction = options.number(
            test_fraction, name="test_fraction", low=0.0, high=1.0, low_open=True, high_open=True
        )

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> Task:
        index = _check_index(index, self.size)
        if self.stratify:
            return self._stratified_item(index)
        in_split = {}
        if getattr(self.generate, "draws_in_split", False):
            in_split = {"split": self.split, "test_fraction": self.test_fraction}
        for attempt in range(self.MAX_ATTEMPTS):
            rng = np.random.default_rng([self.seed, _SPLIT_SALT, index, attempt])
            level = self.levels[int(rng.integers(len(self.levels)))]
            problem = self.generate(rng, level, **in_split)
            if self._in_split(problem):
                return self._task(problem, f"d{level}/{index}", level)
        raise DatasetError(
            f"{self.name}: no problem for split {self.split!r} in {self.MAX_ATTEMPTS} draws; the "
            "problem space at this difficulty is too small for a held-out split"
        )

    def _stratified_item(self, index: int) -> Task:
        choice = np.random.default_rng([self.seed, _SPLIT_SALT, _STRATUM_SALT, index])
        level = self.levels[int(choice.integers(len(self.levels)))]
        count = self.generate.strata(level)  # type: ignore[attr-defined]
        settings = (self.generate, self.seed, self.split, self.test_fraction, level)
        strata = [k for k in range(count) if _stratum_has_split(*settings, k)]
        if not strata:
            raise DatasetError(
                f"{self.name}: no stratum of difficulty {level} has a problem in split "
                f"{self.split!r}; use stratify=False or a larger problem space"
            )
        stratum = strata[int(choice.integers(len(strata)))]
        for attempt in range(self.MAX_ATTEMPTS):
            rng = np.random.default_rng([self.seed, _SPLIT_SALT, index, attempt, stratum])
            problem = self.generate(rng, level, stratum=stratum)  # type: ignore[call-arg]
            if self._in_split(problem):
                return self._task(problem, f"d{level}/k{stratum}/{index}", level, stratum=stratum)
        raise DatasetError(
            f"{self.name}: no problem of stratum {stratum} (difficulty {level}) for split "
            f"{self.split!r} in {self.MAX_ATTEMPTS} draws"
        )

    def _in_split(self, problem: Problem) -> bool:
        keys = problem.split_keys or (problem.prompt,)
        return all(split_of(key, self.test_fraction) == self.split for key in keys)

    def _task(self, problem: Problem, where: str, level: int, **extra: Any) -> Task:
        return Task(
            id=f"{self.name}/{self.split}/s{self.seed}/{where}",
            prompt=problem.prompt,
            answer=problem.answer,
            metadata={
                **problem.metadata,
                "difficulty": level,
                "split": self.split,
                "source": self.name,
                **extra,
            },
        )

    def __repr__(self) -> str:
        return (
            f"ProceduralSource({self.name!r}, split={self.split!r}, difficulty={self.levels}, "
            f"seed={self.seed}, size={self.size})"
        )


# Keeps the rng stream of procedural items distinct from other uses of the same small integers.
_SPLIT_SALT = 0x5EED
_STRATUM_SALT = 0x57A7


# Shared by every source of equal settings (a vector env makes one per copy), so a stratum is
# probed once per process; generators of equal settings compare equal (SQL's do).
@functools.lru_cache(maxsize=1024)
def _stratum_has_split(
    generate: Generator, seed: int, split: str, test_fraction: float, level: int, stratum: int
) -> bool:
    """Whether `stratum` has problems in `split`, by `ProceduralSource.STRATUM_PROBES` fixed
    draws (so the answer, and the items built on it, do not depend on which items were asked
    for first)."""
    for probe in range(ProceduralSource.STRATUM_PROBES):
        rng = np.random.default_rng([seed, _SPLIT_SALT, _STRATUM_SALT, level, stratum, probe])
        problem = generate(rng, level, stratum=stratum)  # type: ignore[call-arg]
        if split_of(problem.prompt, test_fraction) == split:
            return True
    return False
