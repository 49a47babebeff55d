"""`rlvr export`: an env's tasks as a Hugging Face dataset folder (parquet and a card).

    rlvr export rlvr/Math-v0 --split train --n 10000 --out math-train

writes `math-train/data/train-00000-of-00001.parquet` (one row per task: the chat `prompt`, the
`env_id` and the task columns of `rlvr.integrations.columns`) and `math-train/README.md`, a
dataset card whose YAML header lists the split files, so `datasets.load_dataset("math-train")`
(or the folder pushed to the hub) loads every exported split. `load_tasks(folder)` reads the
tasks back exactly, as a task source of the same env:
`gym.make("rlvr/Math-v0", tasks=load_tasks("math-train"))`. Exporting another split into the
same folder adds its file and lists it in the card.

What the folder already holds is read as untrusted: `rlvr_export.json` (the splits written so
far) must be the manifest an export writes, and every split name, from it or `--split`, must be a
plain name (`train`, `test.hard`: letters, digits, `_`, dots between), so that none can write a
file outside `data/` or put lines of its own into the card's YAML header (a name like
`../../x` would have `load_dataset` read files outside the folder).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rlvr.config import flag_type
from rlvr.integrations.columns import TASK_COLUMNS, decode_task
from rlvr.integrations.errors import IntegrationConfigError
from rlvr.integrations.rows import prompt_rows

DATA_DIR = "data"
CARD = "README.md"
MANIFEST = "rlvr_export.json"
SPLIT_NAME = re.compile(r"\w+(\.\w+)*", re.ASCII)
"""A split name: Hugging Face's own rule for them, in ASCII (no path separator, no newline)."""


def export(
    env_id: str,
    out: str | Path,
    *,
    n: int | None = None,
    split: str = "train",
    env_kwargs: Mapping[str, Any] | None = None,
) -> Path:
    """Write the first `n` tasks of `env_id`'s `split` to `out` (see the module doc); returns
    the parquet file written."""
    _check_split(split, "--split")
    kwargs = _json_kwargs(env_kwargs)
    datasets = _datasets()
    import pyarrow.parquet as pq  # a dependency of datasets

    folder = Path(out)
    if folder.exists() and not folder.is_dir():
        raise IntegrationConfigError(f"--out {folder} is a file; give a folder")
    splits = _exported(folder)
    others = {entry["env_id"] for name, entry in splits.items() if name != split}
    if others - {env_id}:
        raise IntegrationConfigError(
            f"{folder} holds tasks of {sorted(others)}; export {env_id} to another folder"
        )
    rows = prompt_rows(env_id, n, split=split, env_kwargs=env_kwargs)
    target = folder / DATA_DIR / f"{split}-00000-of-00001.parquet"
    target.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(datasets.Dataset.from_list(rows).data.table, target)
    splits[split] = {"env_id": env_id, "env_kwargs": kwargs, "rows": len(rows)}
    (folder / MANIFEST).write_text(json.dumps(splits, indent=2) + "\n", encoding="utf-8")
    (folder / CARD).write_text(card(env_id, splits), encoding="utf-8")
    return target


def load_tasks(name_or_path: str | Path, *, split: str = "train") -> Any:
    """The tasks of an exported split (a folder, or its name on the hub), exactly as exported,
    as a task source (`ListSource`) for the env's `tasks=` argument."""
    from rlvr.core.jsonfiles import MAX_DEPTH, depth_exceeds
    from rlvr.envs.tasks import ListSource

    datasets = _datasets()
    where = f"{name_or_path}[{split}]"
    try:
        rows = datasets.load_dataset(str(name_or_path), split=split)
    except (FileNotFoundError, ValueError) as exc:
        raise IntegrationConfigError(f"cannot load {name_or_path} split {split!r}: {exc}") from None
    missing = [column for column in TASK_COLUMNS if column not in rows.column_names]
    if missing:  # decode_task would say so too, but only after the first row was read
        raise IntegrationConfigError(
            f"{where}: no column {', '.join(map(repr, missing))} (it has {rows.column_names}); "
            f"load_tasks reads what `rlvr export` writes, the task columns {list(TASK_COLUMNS)}"
        )
    tasks = []
    for index, row in enumerate(rows.select_columns(list(TASK_COLUMNS))):
        try:
            task = decode_task(row)
        except IntegrationConfigError as exc:
            raise IntegrationConfigError(f"{where} row {index}: {exc}") from None
        if depth_exceeds(task.answer) or depth_exceeds(task.metadata):  # within the stack, but
            raise IntegrationConfigError(  # deeper than any task: a reader later would overflow
                f"{where} row {index}: task {task.id!r:.80}: the answer or metadata is nested "
                f"more than {MAX_DEPTH} levels deep"
            )
        tasks.append(task)
    try:
        return ListSource(tasks, name=where)
    except ValueError as exc:  # a DatasetError: duplicate ids, no rows
        raise IntegrationConfigError(str(exc)) from None


def _exported(folder: Path) -> dict[str, dict[str, Any]]:
    """What an earlier export wrote to `folder`: split -> env id, env kwargs, rows; a manifest
    an export did not write (another shape, an unsafe split name) is refused naming it."""
    from rlvr.core.jsonfiles import JSONReadError, read_json_file

    path = folder / MANIFEST
    if not path.is_file():
        return {}
    try:
        splits = read_json_file(path)
    except JSONReadError as exc:
        raise IntegrationConfigError(f"{path}: {exc}") from None
    if not isinstance(splits, dict) or not all(map(_is_entry, splits.values())):
        raise IntegrationConfigError(
            f"{path}: not the manifest `rlvr export` writes (an object of split -> env_id, "
            "env_kwargs, rows); export to another folder, or delete the file to start over"
        )
    for split in splits:
        _check_split(split, str(path))
    return splits


def _is_entry(entry: Any) -> bool:
    return (
        isinstance(entry, dict)
        and isinstance(entry.get("env_id"), str)
        and isinstance(entry.get("env_kwargs"), dict)
        and type(entry.get("rows")) is int
    )


def _check_split(split: Any, where: str) -> None:
    if not isinstance(split, str) or not SPLIT_NAME.fullmatch(split):
        raise IntegrationConfigError(
            f"{where}: split name {split!r:.80} is not a plain name; use letters, digits and "
            "_ (dots between parts), e.g. train or test"
        )


def _json_kwargs(env_kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
    """The env kwargs as the manifest keeps them (JSON), refusing what JSON cannot hold."""
    if env_kwargs is None:
        return {}
    if not isinstance(env_kwargs, Mapping):
        raise IntegrationConfigError(
            f"env kwargs must be a mapping of keyword arguments, got {type(env_kwargs).__name__}"
        )
    try:
        return json.loads(json.dumps(dict(env_kwargs), allow_nan=False))
    except (TypeError, ValueError, RecursionError) as exc:
        raise IntegrationConfigError(f"env kwargs must be plain JSON data: {exc}") from None


def card(env_id: str, splits: Mapping[str, Mapping[str, Any]]) -> str:
    """The dataset card: a YAML header naming the split files, then what the dataset holds."""
    from rlvr import __version__

    header = ["---", "configs:", "- config_name: default", "  data_files:"]
    for split in sorted(splits):
        header += [f"  - split: {split}", f"    path: {DATA_DIR}/{split}-*.parquet"]
    header += ["tags:", "- rlvr", "- rlvr-gym", "- reinforcement-learning", "---", ""]
    table = "\n".join(
        f"| {split} | {entry['rows']} | `{_cell(entry['env_kwargs'])}` |"
        for split, entry in sorted(splits.items())
    )
    body = f"""# {env_id} tasks

Tasks of the rlvr-gym environment `{env_id}`, exported with rlvr-gym {__version__}
(`rlvr export`): the prompt a model reads and the gold the env's verifier judges by.

| split | rows | env kwargs |
| --- | --- | --- |
{table}

| column | holds |
| --- | --- |
| `prompt` | the chat messages an episode opens with (system prompt, task prompt); never the gold |
| `env_id` | `{env_id}` |
| `task_id` | the task's id |
| `task_prompt` | the task's own text |
| `answer` | the gold answer (for code: the hidden tests), as JSON text |
| `metadata` | the task's metadata, as JSON text |

```python
from datasets import load_dataset
rows = load_dataset("PATH_OR_HUB_NAME", split="train")

# the same tasks, judged by the env that made them
import gymnasium as gym, rlvr
from rlvr.integrations.export import load_tasks
env = gym.make("{env_id}", tasks=load_tasks("PATH_OR_HUB_NAME"))

# or as a TRL GRPOTrainer dataset, with rlvr.integrations.trl.reward_funcs("{env_id}")
```
"""
    return "\n".join(header) + body


def _cell(kwargs: Mapping[str, Any]) -> str:
    """Env kwargs as JSON for a code span in a Markdown table cell: its pipes escaped, no
    backtick to end the span (JSON text has no newline)."""
    return json.dumps(kwargs, sort_keys=True).replace("|", "\\|").replace("`", "\\u0060")


def _datasets() -> Any:
    try:
        import datasets
    except ImportError:
        raise ImportError(
            "rlvr export needs Hugging Face datasets: pip install 'rlvr-gym[datasets]'"
        ) from None
    return datasets


# --- the command line ----------------------------------------------------------------------------


def add_commands(subparsers: Any) -> None:
    command = subparsers.add_parser(
        "export", help="write an env's tasks as a Hugging Face dataset (parquet and a card)"
    )
    command.add_argument("env_id", help="e.g. rlvr/Math-v0")
    command.add_argument("--out", required=True, help="folder to write the dataset to")
    command.add_argument("--split", default="train", help="the env's split (default: train)")
    command.add_argument(
        "--n", type=int, default=None, help="number of tasks (default: all, up to 100000)"
    )
    command.add_argument(
        "--kwargs",
        type=flag_type(Mapping[str, Any]),
        default={},
        help="env kwargs as a JSON object",
    )
    command.set_defaults(func=export_command)


def export_command(args: argparse.Namespace) -> int:
    try:
        target = export(args.env_id, args.out, n=args.n, split=args.split, env_kwargs=args.kwargs)
    except (ValueError, ImportError, OSError) as exc:  # a bad id, argument or folder: one line
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {target} and {Path(args.out) / CARD}")
    return 0
