"""`rlvr export`: a Hugging Face dataset folder that `datasets.load_dataset` reloads, and whose
tasks, read back with `load_tasks`, are a task source of the same env posing the same tasks."""

from __future__ import annotations

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
