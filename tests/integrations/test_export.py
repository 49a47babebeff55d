"""`rlvr export`: a Hugging Face dataset folder that `datasets.load_dataset` reloads, and whose
tasks, read back with `load_tasks`, are a task source of the same env posing the same tasks."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

from rlvr.cli import main
from tests.conftest import require_extra


def export(env_id: str, out, *args: str) -> int:
    require_extra("datasets", "datasets")
    return main(["export", env_id, "--out", str(out), *args])


def test_math_round_trip_through_load_dataset_and_the_env(tmp_path):
    from datasets import load_dataset

    from rlvr.integrations.export import load_tasks

    out = tmp_path / "math"
    assert export("rlvr/Math-v0", out, "--split", "train", "--n", "30") == 0
    assert export("rlvr/Math-v0", out, "--split", "test", "--n", "5") == 0
    loaded = load_dataset(str(out))
    assert {split: len(rows) for split, rows in loaded.items()} == {"train": 30, "test": 5}
    original = gym.make("rlvr/Math-v0").unwrapped
    reloaded = gym.make("rlvr/Math-v0", tasks=load_tasks(out)).unwrapped
    try:
        for index in range(30):
            _, info = reloaded.reset(options={"task_index": index})
            expected = original.judge.tasks[index]
            assert reloaded.task == expected  # id, prompt, gold and metadata, exactly
            assert loaded["train"][index]["prompt"] == info["messages"]  # what the model reads
            assert reloaded.step(original.judge.reference_reply(expected))[1] == 1.0
        test_task = load_tasks(out, split="test")[0]
        assert test_task == gym.make("rlvr/Math-v0", split="test").unwrapped.judge.tasks[0]
    finally:
        original.close()
        reloaded.close()
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "path: data/train-*.parquet" in card and "| test | 5 | `{}` |" in card


def test_code_tasks_keep_their_hidden_tests_and_pass_the_sandbox(tmp_path):
    from rlvr.integrations.export import load_tasks
    from tests.sandboxes.conftest import require_local_sandbox

    require_local_sandbox()
    # the built-in code tasks are all an evaluation set (Code-v0 refuses split="train")
    assert export("rlvr/Code-v0", tmp_path, "--split", "test", "--n", "3") == 0
    env = gym.make("rlvr/Code-v0", tasks=load_tasks(tmp_path, split="test")).unwrapped
    original = gym.make("rlvr/Code-v0", split="test").unwrapped
    try:
        for index in range(3):
            env.reset(options={"task_index": index})
            assert env.task == original.judge.tasks[index]
            assert isinstance(env.task.answer, dict)  # nested tests, not a JSON string
            assert env.step(env.oracle_reply())[1] == 1.0
            env.reset(options={"task_index": index})
            assert env.step("```python\ndef nothing():\n    pass\n```")[1] == 0.0
    finally:
        env.close()
        original.close()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["rlvr/Nope-v0", "--n", "2"], "cannot make 'rlvr/Nope-v0'"),
        (["rlvr/Math-v0", "--n", "0"], "n must be a positive int"),
        (["rlvr/Math-v0", "--n", "2", "--kwargs", '{"colour": 1}'], "colour=1"),
        (["rlvr/Math-v0", "--split", "dev", "--n", "2"], "split"),
        (["rlvr/Code-v0", "--split", "test", "--n", "100000"], "pass n <= "),
        (["rlvr/MathSelfCorrect-v0", "--n", "2"], "SelfCorrect"),
    ],
)
def test_bad_input_is_one_line_naming_the_fix(argv, message, tmp_path, capsys):
    assert export(argv[0], tmp_path / "out", *argv[1:]) == 1
    error = capsys.readouterr().err
    assert error.startswith("error: ") and message in error and error.count("\n") == 1, error


def test_a_folder_holds_one_envs_tasks(tmp_path, capsys):
    assert export("rlvr/Math-v0", tmp_path, "--n", "2") == 0
    assert export("rlvr/Code-v0", tmp_path, "--split", "test", "--n", "2") == 1
    assert "holds tasks of ['rlvr/Math-v0']" in capsys.readouterr().err


# --- what the folder already holds, and what a user types, is untrusted ------------------------


def manifest_entry(rows: int = 2) -> dict:
    return {"env_id": "rlvr/Math-v0", "env_kwargs": {}, "rows": rows}


@pytest.mark.parametrize(
    "split",
    ["../../outside", "data/../../x", "a/b", "train\n  - split: evil", "", ".hidden", "t-1", "ü"],
)
def test_a_split_name_that_is_not_plain_is_refused_before_anything_is_written(
    split, tmp_path, capsys
):
    out = tmp_path / "out"
    assert export("rlvr/Math-v0", out, "--split", split, "--n", "2") == 1
    error = capsys.readouterr().err
    assert error.startswith("error: --split: split name ") and error.count("\n") == 1, error
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        (json.dumps({"../../../outside": manifest_entry()}), "split name '../../../outside'"),
        (json.dumps({"x\n  path: /etc/*": manifest_entry()}), "is not a plain name"),
        ("[1, 2]", "not the manifest `rlvr export` writes"),
        (json.dumps({"train": [1]}), "not the manifest `rlvr export` writes"),
        (json.dumps({"train": {**manifest_entry(), "rows": "2"}}), "not the manifest"),
        (json.dumps({"train": {"env_id": "rlvr/Math-v0"}}), "not the manifest"),
        ("[" * 10_000 + "]" * 10_000, "nested more than 100 levels deep"),
        (b'{"train": "\xff"}', "not UTF-8 text"),
        ("{oops", "invalid JSON"),
    ],
    ids=["dotdot", "yaml-lines", "list", "entry-list", "rows-text", "entry-short", "deep",
         "latin1", "not-json"],
)  # fmt: skip
def test_a_manifest_an_export_did_not_write_is_refused_in_one_line(
    manifest, message, tmp_path, capsys
):
    out = tmp_path / "out"
    out.mkdir()
    path = out / "rlvr_export.json"
    path.write_bytes(manifest if isinstance(manifest, bytes) else manifest.encode())
    assert export("rlvr/Math-v0", out, "--n", "2") == 1
    error = capsys.readouterr().err
    assert error.startswith(f"error: {path}") and message in error and error.count("\n") == 1
    assert sorted(p.name for p in out.iterdir()) == ["rlvr_export.json"]  # no card, no data


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ("[1]", "must be a JSON object of keyword arguments"),
        ("1", "must be a JSON object of keyword arguments"),
        ('{"difficulty": NaN}', "NaN is not a JSON number"),
        ("[" * 5000, "nested more than 100 levels deep"),
        ("{bad", "not valid JSON"),
    ],
)
def test_kwargs_that_are_not_a_json_object_are_a_usage_error(kwargs, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        export("rlvr/Math-v0", tmp_path / "out", "--n", "2", "--kwargs", kwargs)
    assert exit_.value.code == 2
    error = capsys.readouterr().err
    assert "argument --kwargs: " in error and message in error and "Traceback" not in error
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("env_kwargs", "message"),
    [([1], "env kwargs must be a mapping"), ({"x": object()}, "must be plain JSON data")],
)
def test_export_from_python_refuses_kwargs_the_manifest_cannot_hold(env_kwargs, message, tmp_path):
    from rlvr.integrations import IntegrationConfigError
    from rlvr.integrations.export import export as export_tasks

    require_extra("datasets", "datasets")
    with pytest.raises(IntegrationConfigError, match=message):
        export_tasks("rlvr/Math-v0", tmp_path / "out", n=2, env_kwargs=env_kwargs)
    assert not (tmp_path / "out").exists()


def test_the_card_table_keeps_kwargs_inside_their_cell():
    from rlvr.integrations.export import card

    text = card("rlvr/Math-v0", {"train": {**manifest_entry(), "env_kwargs": {"x": "a|b`c"}}})
    (row,) = [line for line in text.splitlines() if line.startswith("| train |")]
    assert row == '| train | 2 | `{"x": "a\\|b\\u0060c"}` |'


def write_rows(folder, rows):
    from datasets import Dataset

    (folder / "data").mkdir(parents=True)
    Dataset.from_list(rows).to_parquet(str(folder / "data" / "train-00000-of-00001.parquet"))


TASK_ROW = {"task_id": "t1", "task_prompt": "What is 1 + 1?", "answer": '"2"', "metadata": "{}"}


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (
            {**TASK_ROW, "answer": "[" * 5000 + "]" * 5000},
            "row 0: task 't1': the answer and "
            "metadata columns must be JSON text: nested too deeply",
        ),
        (
            {**TASK_ROW, "metadata": '{"a": ' * 300 + "1" + "}" * 300},
            "row 0: task 't1': the answer or metadata is nested more than 100 levels deep",
        ),
        ({**TASK_ROW, "answer": "{oops"}, "must be JSON text: Expecting property name"),
        ({**TASK_ROW, "metadata": "[1]"}, "row 0: not a task: Task 't1': metadata must be"),
        ({k: v for k, v in TASK_ROW.items() if k != "answer"}, "no column 'answer'"),
    ],
    ids=["deep-answer", "deep-metadata", "not-json", "metadata-list", "missing-column"],
)
def test_load_tasks_refuses_rows_it_cannot_read_naming_them(row, message, tmp_path):
    from rlvr.integrations import IntegrationConfigError
    from rlvr.integrations.export import load_tasks

    require_extra("datasets", "datasets")
    write_rows(tmp_path, [row])
    with pytest.raises(IntegrationConfigError) as refused:
        load_tasks(tmp_path)
    assert message in str(refused.value) and "\n" not in str(refused.value)
