"""Loading math datasets as task sources for `rlvr/Math-v0` (`tasks=...`).

- GSM8K style: the gold is the number after `####` at the end of the answer field
  (`"... so she has 72 left.\\n#### 72"` -> `72`; thousands commas are dropped).
- MATH style: the gold is the last `\\boxed{}` of the solution field.

Each loader reads a JSON-lines file, or anything HuggingFace `datasets` opens (a hub name such as
`"openai/gsm8k"`, a folder written by `save_to_disk`, a local data file), with a field mapping
for datasets whose columns are named differently.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from rlvr.envs.tasks import ListSource, is_jsonl, load_hf_dataset, load_jsonl
from rlvr.verifiers.math.extract import find_boxed

GSM8K_FIELDS = {"prompt": "question", "answer": "answer"}
MATH_FIELDS = {"prompt": "problem", "answer": "solution"}

_GSM8K_NUMBER = re.compile(r"-?(?:\d+(?:\.\d+)?|\.\d+)(?:/\d+)?")


def gsm8k_answer(answer: Any) -> str:
    """The gold of a GSM8K answer field: the number after the last `####`, without commas."""
    if not isinstance(answer, str):
        raise ValueError(f"the answer field must be text ending in '#### <number>', got {answer!r}")
    marker = answer.rfind("####")
    if marker == -1:
        raise ValueError("the answer field has no '#### <number>' line")
    number = answer[marker + 4 :].strip().splitlines()[0] if answer[marker + 4 :].strip() else ""
    number = number.replace(",", "").replace("$", "").replace(" ", "").rstrip(".")
    if not _GSM8K_NUMBER.fullmatch(number):
        raise ValueError(f"expected a number after '####', got {number!r}")
    return number


def math_answer(solution: Any) -> str:
    """The gold of a MATH solution field: the content of its last non-empty `\\boxed{}`."""
    if not isinstance(solution, str):
        raise ValueError(
            f"the solution field must be text with a \\boxed{{}} answer, got {solution!r}"
        )
    boxed = [content.strip() for content in find_boxed(solution) if content.strip()]
    if not boxed:
        raise ValueError("the solution has no \\boxed{} answer")
    return boxed[-1]


def load_gsm8k(
    source: str | os.PathLike[str] = "openai/gsm8k",
    *,
    split: str = "train",
    subset: str | None = "main",
    revision: str | None = None,
    fields: Mapping[str, str] | None = None,
    limit: int | None = None,
) -> ListSource:
    """GSM8K-style tasks from a `.jsonl` file or a HuggingFace dataset (`split`, `subset` and
    `revision` apply to the latter)."""
    return _load(
        source, gsm8k_answer, {**GSM8K_FIELDS, **(fields or {})}, "gsm8k",
        split=split, subset=subset, revision=revision, limit=limit,
    )  # fmt: skip


def load_math(
    source: str | os.PathLike[str] = "HuggingFaceH4/MATH-500",
    *,
    split: str = "test",
    subset: str | None = None,
    revision: str | None = None,
    fields: Mapping[str, str] | None = None,
    limit: int | None = None,
) -> ListSource:
    """MATH-style tasks (gold = last `\\boxed{}` of the solution) from a `.jsonl` file or a
    HuggingFace dataset."""
    return _load(
        source, math_answer, {**MATH_FIELDS, **(fields or {})}, "math",
        split=split, subset=subset, revision=revision, limit=limit,
    )  # fmt: skip


def _load(
    source: str | os.PathLike[str],
    answer_parser: Any,
    fields: Mapping[str, str],
    family: str,
    *,
    split: str,
    subset: str | None,
    revision: str | None,
    limit: int | None,
) -> ListSource:
    metadata = {"family": family}
    if is_jsonl(source):
        return load_jsonl(
            source, fields=fields, answer_parser=answer_parser, metadata=metadata, limit=limit
        )
    return load_hf_dataset(
        source,
        split=split,
        subset=subset,
        revision=revision,
        fields=fields,
        answer_parser=answer_parser,
        metadata=metadata,
        limit=limit,
    )
