"""rlvr environments as verl rewards and datasets (extra `verl`; written against verl 0.9).

verl trains on parquet files of rows (`data_source`, `prompt`, `ability`, `reward_model`,
`extra_info`) and scores each response with a `compute_score` function that its reward manager
calls. `write_dataset(env_id, path, n=...)` writes the rows of an env's tasks (the task columns
in `extra_info`, the gold as `reward_model.ground_truth`), and `compute_score` judges a response
with the env's own judge:

    python -m verl.trainer.main_ppo \\
        data.train_files=math.parquet \\
        reward.custom_reward_function.path=pkg://rlvr.integrations.verl \\
        reward.custom_reward_function.name=compute_score

Env kwargs (`format_weight`, `scoring`, ...) go in
`+reward.custom_reward_function.reward_kwargs.env_kwargs={...}`. verl has no way to drop a
sample, so a reply our machinery could not judge raises `InfraError` rather than training on a
fake 0. Nothing here imports verl or torch.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rlvr.integrations.columns import decode_task
from rlvr.integrations.errors import InfraError
from rlvr.integrations.rows import prompt_rows
from rlvr.integrations.scoring import EnvJudge

_JUDGES: dict[tuple[str, str], EnvJudge] = {}
_LOCK = threading.Lock()


def rows(
    env_id: str, n: int | None = None, *, split: str | None = None, **env_kwargs: Any
) -> list[dict[str, Any]]:
    """The first `n` tasks of the env as verl dataset rows: `data_source` (the env id),
    `prompt` (chat messages), `ability`, `reward_model` (`{"style": "rule", "ground_truth":
    the gold as JSON}`) and `extra_info` (the task columns and the row's `index`)."""
    out = []
    for index, row in enumerate(prompt_rows(env_id, n, split=split, env_kwargs=env_kwargs)):
        out.append(
            {
                "data_source": env_id,
                "prompt": row["prompt"],
                "ability": env_id.split("/")[-1].split("-")[0].lower(),
                "reward_model": {"style": "rule", "ground_truth": row["answer"]},
                "extra_info": {
                    "index": index,
                    "task_id": row["task_id"],
                    "task_prompt": row["task_prompt"],
                    "answer": row["answer"],
                    "metadata": row["metadata"],
                },
            }
        )
    return out


def write_dataset(
    env_id: str,
    path: str | Path,
    n: int | None = None,
    *,
    split: str | None = None,
    **env_kwargs: Any,
) -> Path:
    """Write `rows(...)` to the parquet file `path` (verl's `data.train_files`)."""
    try:
        import datasets
    except ImportError:
        raise ImportError("write_dataset needs HF datasets: pip install 'rlvr-gym[verl]'") from None
    import pyarrow.parquet as pq  # a dependency of datasets

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    table = datasets.Dataset.from_list(rows(env_id, n, split=split, **env_kwargs)).data.table
    pq.write_table(table, target)
    return target


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: str,
    extra_info: Mapping[str, Any] | None = None,
    env_kwargs: Mapping[str, Any] | None = None,
    **_: Any,
) -> dict[str, float]:
    """verl's reward function: the env's judge on `solution_str`, for the task rebuilt from the
    row (`ground_truth` is the gold, `extra_info` holds the other task columns).

    Returns `{"score": reward, "acc": correctness, "format": 1.0 if an answer could be read}`
    (verl logs the extra keys); raises `InfraError` when our machinery could not judge.
    """
    columns = dict(extra_info or {})
    columns["answer"] = ground_truth
    judge = _judge(data_source, env_kwargs or {})
    task = judge.task(decode_task(columns))
    score = judge.judge_reply(solution_str, task)
    if score.infra_error:
        raise InfraError(
            f"{data_source}: the reply to task {task.id} could not be judged (our verifier or "
            "sandbox failed, see the log); fix the machinery rather than train on a fake 0"
        )
    assert score.reward is not None and score.correctness is not None and score.format is not None
    return {"score": score.reward, "acc": score.correctness, "format": score.format}


def _judge(env_id: str, env_kwargs: Mapping[str, Any]) -> EnvJudge:
    """One judge per (env, kwargs) per process, shared by verl's reward threads."""
    key = (env_id, json.dumps(dict(env_kwargs), sort_keys=True, default=repr))
    with _LOCK:
        if key not in _JUDGES:
            _JUDGES[key] = EnvJudge(env_id, env_kwargs, workers=1)
        return _JUDGES[key]


def close() -> None:
    """Release the judges `compute_score` made (their sandboxes, databases)."""
    with _LOCK:
        judges = list(_JUDGES.values())
        _JUDGES.clear()
    for judge in judges:
        judge.close()
