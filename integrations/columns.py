"""Tasks as dataset columns, and the opening messages of an env for a task.

A task travels through a trainer's dataset as four columns, which every adapter shares (TRL's
reward functions get them as keyword arguments, verl's reward function in `extra_info`, and
`rlvr export` writes them):

| column | holds |
| --- | --- |
| `task_id` | `Task.id` |
| `task_prompt` | `Task.prompt`, the task's own text (the env wraps it in its template) |
| `answer` | `Task.answer` (the gold: a number, a formula, hidden tests), as JSON text |
| `metadata` | `Task.metadata`, as JSON text |

JSON text keeps answers of any shape in one string column (a code task's hidden tests are a
nested dict, a math gold is a string) and rebuilds them exactly: `encode_task` refuses a task
that JSON would change (a tuple, a non-string key), so a reward function judges the very task
the env would. The gold is in `answer` only: the `prompt` column the model reads is built from
the task's prompt by the env's judge, never from the answer.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rlvr.integrations.errors import IntegrationConfigError
from rlvr.verifiers.types import Task, TaskFormatError

if TYPE_CHECKING:
    from rlvr.envs.core import TextEnv

TASK_COLUMNS = ("task_id", "task_prompt", "answer", "metadata")

HF_FIELDS = {"prompt": "task_prompt", "answer": "answer", "id": "task_id"}
"""`fields=` for `rlvr.envs.load_hf_dataset` on these columns (with `answer_parser=json.loads`)."""

Message = dict[str, Any]


def encode_task(task: Task) -> dict[str, str]:
    """The task's four columns; raises `IntegrationConfigError` for a task JSON would change."""
    return {
        "task_id": task.id,
        "task_prompt": task.prompt,
        "answer": _exact_json(task.answer, f"task {task.id!r}: answer"),
        "metadata": _exact_json(dict(task.metadata), f"task {task.id!r}: metadata"),
    }


def decode_task(row: Mapping[str, Any]) -> Task:
    """The task of a row holding the four columns (other columns are ignored)."""
    missing = [column for column in TASK_COLUMNS if column not in row]
    if missing:
        raise IntegrationConfigError(
            f"the dataset has no column {', '.join(map(repr, missing))} (it has {sorted(row)}); "
            "make it with rlvr.integrations.trl.dataset(...) or `rlvr export`, which write "
            f"the task columns {list(TASK_COLUMNS)}"
        )
    task_id = row["task_id"]
    try:  # json.loads, not a depth-checked reader: this runs per reward (load_tasks checks more)
        answer = json.loads(row["answer"])
        metadata = json.loads(row["metadata"])
    except (TypeError, ValueError, RecursionError) as exc:
        why = "nested too deeply" if isinstance(exc, RecursionError) else exc
        raise IntegrationConfigError(
            f"task {task_id!r:.80}: the answer and metadata columns must be JSON text: {why}"
        ) from None
    try:
        return Task(id=task_id, prompt=row["task_prompt"], answer=answer, metadata=metadata)
    except TaskFormatError as exc:
        raise IntegrationConfigError(f"not a task: {exc}") from None


def _exact_json(value: Any, what: str) -> str:
    text = json.dumps(value, ensure_ascii=False)
    problem = _difference(value, json.loads(text), "")
    if problem is not None:
        raise IntegrationConfigError(
            f"{what} does not survive JSON: {problem}; use lists, dicts with str keys, str, "
            "int, float, bool and None"
        )
    return text


def _difference(value: Any, back: Any, path: str) -> str | None:
    """Where `back` (value read back from JSON) differs from `value`, or None."""
    where = path or "the value"
    if type(value) is not type(back):
        return f"{where} is a {type(value).__name__}, read back as a {type(back).__name__}"
    if isinstance(value, list):
        for index, (item, item_back) in enumerate(zip(value, back)):
            problem = _difference(item, item_back, f"{path}[{index}]")
            if problem is not None:
                return problem
        return None
    if isinstance(value, dict):
        if list(value) != list(back):
            return f"{where} has keys that are not str"
        for key in value:
            problem = _difference(value[key], back[key], f"{path}[{key!r}]")
            if problem is not None:
                return problem
        return None
    if isinstance(value, float) and math.isnan(value):
        return None  # NaN != NaN, and JSON text keeps it
    return None if value == back else f"{where} reads back as {back!r}"


def opening_messages(env: TextEnv, task: Task) -> list[Message]:
    """The chat messages an episode of `env` on `task` opens with: the system prompt (if any)
    and the judge's prompt for the task, as `env.reset` gives them.

    A tool env (`ToolUse`) is the exception: its system prompt keeps the instructions but leaves
    out rlvr's tool list and `<tool_call>` format, because a trainer that runs the tools renders
    them with its chat template (TRL's `environment_factory`).
    """
    from rlvr.envs.tools.env import ToolUse

    judge, interaction = env.judge, env.interaction
    assert judge is not None and interaction is not None  # the adapters check for a judge
    if isinstance(interaction, ToolUse):
        instructions = interaction.instructions or judge.system_prompt
        parts = [part for part in (instructions, interaction.final_instructions) if part]
        system = "\n\n".join(parts) if parts else None
    else:
        system = interaction.system_prompt(judge)
    messages: list[Message] = [{"role": "system", "content": system}] if system else []
    messages.append({"role": "user", "content": judge.prompt(task)})
    return messages
