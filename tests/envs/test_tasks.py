"""Task sources: procedural generation with disjoint splits, JSONL files, HF datasets."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlvr.core.jsonfiles import depth_exceeds
from rlvr.envs import DatasetError, ListSource, Problem, ProceduralSource, load_jsonl, split_of
from rlvr.verifiers import Task, TaskFormatError
from tests.conftest import require_extra


def add_two(rng: np.random.Generator, difficulty: int) -> Problem:
    hi = 10 ** (difficulty + 1)
    a, b = (int(x) for x in rng.integers(hi // 10, hi, size=2))
    return Problem(f"What is {a} + {b}?", str(a + b), {"family": "add"})


def tiny_space(rng: np.random.Generator, difficulty: int) -> Problem:
    return Problem(f"Say {int(rng.integers(0, 2))}", "0")


def test_item_is_regenerable_alone():
    source = ProceduralSource(add_two, name="add", seed=4)
    fresh = ProceduralSource(add_two, name="add", seed=4)
    assert fresh[12345] == source[12345]
    assert [source[i] for i in range(5)] == [fresh[i] for i in reversed(range(5))][::-1]
    assert ProceduralSource(add_two, name="add", seed=5)[0] != source[0]


def test_items_carry_metadata_and_stable_ids():
    task = ProceduralSource(add_two, name="add", seed=1, difficulty=2)[7]
    assert task.id == "add/train/s1/d2/7"
    assert task.metadata == {"family": "add", "difficulty": 2, "split": "train", "source": "add"}
    a, b = (int(x) for x in task.prompt.removeprefix("What is ").rstrip("?").split(" + "))
    assert task.answer == str(a + b) and 100 <= a < 1000


def test_train_and_test_share_no_problem():
    train = ProceduralSource(add_two, name="add", split="train", difficulty=1)
    test = ProceduralSource(add_two, name="add", split="test", difficulty=1)
    train_prompts = {train[i].prompt for i in range(3000)}
    test_prompts = {test[i].prompt for i in range(300)}
    assert len(test_prompts) > 250  # many distinct held-out problems
    assert not train_prompts & test_prompts
    assert all(split_of(p, 0.1) == "test" for p in test_prompts)


def test_mixed_difficulty_draws_each_level():
    source = ProceduralSource(add_two, name="add", difficulty=[1, 3])
    levels = {source[i].metadata["difficulty"] for i in range(50)}
    assert levels == {1, 3}


def test_too_small_a_problem_space_for_a_split_says_so():
    source = ProceduralSource(tiny_space, name="tiny", split="test", test_fraction=0.01)
    if all(split_of(f"Say {n}", 0.01) == "train" for n in (0, 1)):
        with pytest.raises(DatasetError, match="too small"):
            source[0]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"split": "valid"}, "split must be one of"),
        ({"difficulty": 0}, "difficulty"),
        ({"difficulty": []}, "difficulty"),
        ({"size": 0}, "size"),
        ({"seed": -1}, "seed"),
        ({"test_fraction": 1.0}, "test_fraction"),
    ],
)
def test_bad_procedural_config_names_the_fix(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ProceduralSource(add_two, name="add", **kwargs)


def test_index_bounds_and_types():
    source = ProceduralSource(add_two, name="add", size=10)
    assert len(source) == 10
    with pytest.raises(IndexError):
        source[10]
    with pytest.raises(TypeError):
        source["3"]


def write_jsonl(path, rows):
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


def test_load_jsonl_with_field_mapping_and_parser(tmp_path):
    file = write_jsonl(
        tmp_path / "gsm.jsonl",
        [
            {"question": "2+2?", "solution": "Two and two... #### 4", "level": "easy"},
            "",
            {"question": "3*3?", "solution": "#### 9", "level": "hard", "nested": {"x": 1}},
        ],
    )
    source = load_jsonl(
        file,
        fields={"prompt": "question", "answer": "solution"},
        answer_parser=lambda text: text.split("####")[-1].strip(),
    )
    assert len(source) == 2
    assert [t.answer for t in source.tasks] == ["4", "9"]
    assert source[1].metadata == {"level": "hard", "source": str(file)}
    assert (
        source[0].id
        == load_jsonl(
            file,
            fields={"prompt": "question", "answer": "solution"},
            answer_parser=lambda t: t.split("####")[-1].strip(),
        )[0].id
    )


def test_load_jsonl_uses_ids_when_present(tmp_path):
    file = write_jsonl(tmp_path / "t.jsonl", [{"id": "a", "prompt": "p", "answer": "1"}])
    assert load_jsonl(file)[0].id == "a"
    dup = write_jsonl(tmp_path / "d.jsonl", [{"id": "a", "prompt": "p", "answer": 1}] * 2)
    with pytest.raises(DatasetError, match="appears at items 0 and 1"):
        load_jsonl(dup)


@pytest.mark.parametrize(
    "lines, message",
    [
        (
            ['{"prompt": "p", "answer": 1}', '{"prompt": "q", "answer": '],
            r"t.jsonl:2: invalid JSON",
        ),
        (['{"prompt": "p", "answer": 1}', "[1, 2]"], r"t.jsonl:2: expected a JSON object"),
        (['{"question": "p", "answer": 1}'], r"t.jsonl:1: no field 'prompt'.*fields=\{'prompt'"),
        (['{"prompt": 3, "answer": 1}'], r"t.jsonl:1: the prompt field must be text"),
        ([""], r"no tasks"),
    ],
)
def test_bad_jsonl_names_the_line_and_the_fix(tmp_path, lines, message):
    file = tmp_path / "t.jsonl"
    file.write_text("\n".join(lines))
    with pytest.raises(DatasetError, match=message):
        load_jsonl(file)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b'{"prompt": "p", "answer": ' + b"[" * 5000 + b"]" * 5000 + b"}", "JSON nested more"),
        (b'{"prompt": "p", "answer": ' + b"[" * 100 + b"]" * 100 + b"}", "JSON nested more"),
        (b'{"prompt": "caf\xe9", "answer": 1}', r"not UTF-8 text \(byte 0xe9 at column 16\)"),
        (b'{"prompt": "p", "answer": ' + b"9" * 5000 + b"}", "invalid JSON .*digits"),
        (b'{"prompt": "p", "answer": 1, "id": [1, 2]}', "the id field must be text or an integer"),
    ],
    ids=["deep", "just-too-deep", "latin-1", "huge-number", "list-id"],
)
def test_every_malformed_row_names_its_file_and_line(tmp_path, line, message):
    """Rows that made json.loads or the file iterator raise RecursionError, UnicodeDecodeError or
    a bare ValueError (or were silently accepted) are a DatasetError naming file and line."""
    file = tmp_path / "t.jsonl"
    file.write_bytes(b'{"prompt": "ok", "answer": 1}\n\n' + line + b"\n")
    with pytest.raises(DatasetError, match=f"^{re.escape(str(file))}:3: {message}"):
        load_jsonl(file)
    file.write_bytes(b'{"prompt": "p", "answer": ' + b"[" * 99 + b"]" * 99 + b"}")  # 100 levels
    assert load_jsonl(file)[0].answer


def _depth(value: object) -> int:
    """How deep arrays and objects nest in `value`, by the definition (recursive)."""
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


_JSON = st.recursive(
    st.none() | st.integers() | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=2), inner),
    max_leaves=30,
)


@given(value=_JSON, limit=st.integers(0, 6))
def test_depth_exceeds_agrees_with_the_recursive_definition(value, limit):
    assert depth_exceeds(value, limit) == (_depth(value) > limit)


@pytest.mark.parametrize(
    ("row", "field"),
    [
        ('{"prompt": "caf\\udce9", "answer": 1}', "prompt"),
        ('{"prompt": "p", "answer": {"tests": ["ok", "\\ud800"]}}', "answer"),
        ('{"prompt": "p", "answer": 1, "id": "x\\udfff"}', "id"),
        ('{"prompt": "p", "answer": 1, "source": "\\udbff!"}', "source"),
        ('{"prompt": "p", "answer": 1, "k\\ud800": 2}', "k\ud800"),
    ],
    ids=["prompt", "nested-answer", "id", "extra-column", "column-name"],
)
def test_a_lone_surrogate_in_any_field_is_a_dataset_error_naming_the_line(tmp_path, row, field):
    """JSON's \\ud800 escapes decode to strings that cannot be encoded: every later reader (a
    tokenizer, a sandbox's stdin, a parquet writer) would fail on them."""
    file = tmp_path / "t.jsonl"
    file.write_text('{"prompt": "ok", "answer": 1}\n' + row + "\n")
    with pytest.raises(DatasetError) as refused:
        load_jsonl(file)
    message = str(refused.value)
    assert message.startswith(f"{file}:2: field {field!r} holds a lone surrogate "), message
    assert "which is no text" in message
    file.write_text('{"prompt": "a pair is text: \\ud83d\\ude00", "answer": 1}\n')
    assert load_jsonl(file)[0].prompt.endswith("\U0001f600")


def test_the_family_loaders_share_the_row_errors(tmp_path):
    from rlvr.envs.code import load_humaneval
    from rlvr.envs.math import load_gsm8k

    file = tmp_path / "t.jsonl"
    file.write_bytes(b'{"question": "\xff", "answer": "#### 1"}\n')
    with pytest.raises(DatasetError, match=f"^{re.escape(str(file))}:1: not UTF-8"):
        load_gsm8k(file)
    row = {"task_id": "X/0", "prompt": "def f():\n", "test": "", "entry_point": "f"}
    write_jsonl(file, [{**row, "test": "assert f() == 1", "canonical_solution": " return 1"}, row])
    where = re.escape(str(file))
    with pytest.raises(DatasetError, match=f"^{where}:2: X/0: "):  # a bad task names its line
        load_humaneval(file)


def test_missing_file_and_failing_parser(tmp_path):
    with pytest.raises(DatasetError, match="no such file"):
        load_jsonl(tmp_path / "nope.jsonl")
    file = write_jsonl(tmp_path / "t.jsonl", [{"prompt": "p", "answer": "no marker"}])

    def parser(text):
        if "####" not in text:
            raise ValueError("no '####' marker")
        return text

    with pytest.raises(DatasetError, match="t.jsonl:1: cannot read the answer: no '####'"):
        load_jsonl(file, answer_parser=parser)


def test_load_hf_dataset_from_local_file_and_saved_folder(tmp_path):
    datasets = require_extra("datasets", "datasets")
    from rlvr.envs import load_hf_dataset

    rows = [{"q": f"{i}+1?", "a": str(i + 1)} for i in range(4)]
    file = write_jsonl(tmp_path / "rows.jsonl", rows)
    fields = {"prompt": "q", "answer": "a"}
    from_file = load_hf_dataset(file, split="train", fields=fields)
    assert [t.answer for t in from_file.tasks] == ["1", "2", "3", "4"]

    folder = tmp_path / "saved"
    datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)}).save_to_disk(str(folder))
    from_disk = load_hf_dataset(folder, split="test", fields=fields, limit=2)
    assert [t.prompt for t in from_disk.tasks] == ["0+1?", "1+1?"]
    assert from_disk[0].metadata["split"] == "test"
    with pytest.raises(DatasetError, match="no split 'train'"):
        load_hf_dataset(folder, split="train", fields=fields)


def test_list_source_and_task_validation():
    source = ListSource([Task("a", "p", 1), {"prompt": "q", "answer": 2}])
    assert len(source) == 2 and source[1].answer == 2
    with pytest.raises(DatasetError, match="item 0: task is missing 'answer'"):
        ListSource([{"prompt": "q"}])
    with pytest.raises(DatasetError, match="no tasks"):
        ListSource([])
    with pytest.raises(TaskFormatError, match="unknown keys"):
        Task.from_dict({"prompt": "p", "answer": 1, "level": 3})
    with pytest.raises(TaskFormatError, match="prompt must be a str"):
        Task("id", None, 1)


@pytest.mark.parametrize("metadata", ["bad", [["level", 3]], 5])
def test_task_metadata_that_is_not_a_mapping_is_a_task_format_error(metadata):
    with pytest.raises(TaskFormatError, match="metadata must be a mapping"):
        Task.from_dict({"prompt": "p", "answer": 1, "metadata": metadata})


@pytest.mark.parametrize("limit", [0, -1, 1.5])
def test_a_limit_must_be_a_positive_int(tmp_path, limit):
    from rlvr.envs import EnvConfigError

    file = write_jsonl(tmp_path / "t.jsonl", [{"prompt": "p", "answer": "1"}])
    with pytest.raises(EnvConfigError, match="limit must be a positive int"):
        load_jsonl(file, limit=limit)
    assert len(load_jsonl(file, limit=1)) == 1


class KindsOfProblem:
    """Three kinds of problem: one fixed prompt, eight prompts, and thousands of prompts."""

    def strata(self, difficulty: int) -> int:
        return 3

    def __call__(
        self, rng: np.random.Generator, difficulty: int, stratum: int | None = None
    ) -> Problem:
        kind = int(rng.integers(3)) if stratum is None else stratum
        if kind == 0:
            return Problem("Name the fixed question.", "fixed", {"kind": 0})
        value = int(rng.integers(8 if kind == 1 else 100_000))
        return Problem(f"Kind {kind}: echo {value}.", str(value), {"kind": kind})


def _kinds(source: ProceduralSource, count: int) -> list[int]:
    return [source[i].metadata["kind"] for i in range(count)]


def test_stratified_split_gives_each_populated_stratum_an_equal_share():
    generator = KindsOfProblem()
    for split in ("train", "test"):
        source = ProceduralSource(
            generator, name="k", split=split, test_fraction=0.2, stratify=True
        )
        populated = {
            kind
            for kind, prompts in ((0, ["Name the fixed question."]), (1, _echoes(1, 8)))
            if any(split_of(prompt, 0.2) == split for prompt in prompts)
        } | {2}
        kinds = _kinds(source, 600)
        assert set(kinds) == populated
        for kind in populated:  # equal shares, within sampling noise
            assert abs(kinds.count(kind) / 600 - 1 / len(populated)) < 0.08
        tasks = [source[i] for i in range(50)]
        assert all(split_of(task.prompt, 0.2) == split for task in tasks)
        assert all(task.metadata["stratum"] == task.metadata["kind"] for task in tasks)
        assert tasks[3].id == f"k/{split}/s0/d1/k{tasks[3].metadata['kind']}/3"


def _echoes(kind: int, count: int) -> list[str]:
    return [f"Kind {kind}: echo {value}." for value in range(count)]


def test_stratified_items_do_not_depend_on_the_order_they_are_asked_for():
    def build() -> ProceduralSource:
        return ProceduralSource(
            KindsOfProblem(), name="k", split="test", test_fraction=0.2, stratify=True, seed=3
        )

    forward, backward = build(), build()
    assert [forward[i] for i in range(40)] == [backward[i] for i in reversed(range(40))][::-1]
    plain = ProceduralSource(KindsOfProblem(), name="k", split="test", test_fraction=0.2, seed=3)
    assert [plain[i] for i in range(40)] != [forward[i] for i in range(40)]


def test_stratify_needs_a_generator_with_strata():
    with pytest.raises(ValueError, match="strata.*stratify=False"):
        ProceduralSource(add_two, name="add", stratify=True)
