"""`rlvr.integrations.trl` without a trainer: the dataset's prompts are the env's, the reward
functions are the env's verdicts, an infra error is None (never 0), and what cannot be judged
this way is refused in one line."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import pytest

from rlvr.envs.registration import register_task_env
from rlvr.integrations import IntegrationConfigError, decode_task, encode_task
from rlvr.integrations.trl import environment_factory, reward_funcs
from rlvr.verifiers.types import Task, Verdict
from tests.conftest import require_extra
from tests.integrations import support

FLAKY = "test/TRLFlaky-v0"


def dataset(*args: Any, **kwargs: Any) -> Any:
    require_extra("datasets", "datasets")
    from rlvr.integrations.trl import dataset

    return dataset(*args, **kwargs)


def call(function: Any, rows: Any, completions: list, **extra: Any) -> list:
    columns = {name: rows[name] for name in rows.column_names if name != "prompt"}
    return function(prompts=rows["prompt"], completions=completions, **columns, **extra)


def test_the_prompts_are_what_an_episode_of_the_env_opens_with():
    rows = dataset("rlvr/Code-v0", n=3)
    env = gym.make("rlvr/Code-v0")
    try:
        for index, row in enumerate(rows):
            _, info = env.reset(options={"task_index": index})
            assert row["prompt"] == info["messages"]
            assert decode_task(row) == env.unwrapped.task
            assert row["env_id"] == "rlvr/Code-v0"
    finally:
        env.close()


def test_math_rewards_are_the_verdicts_with_the_format_term_weighted():
    rows = dataset("rlvr/Math-v0", n=3)
    gold = support.reference_replies("rlvr/Math-v0", rows)
    functions = reward_funcs("rlvr/Math-v0", format_weight=0.25)
    try:
        assert [(f.__name__, f.weight) for f in functions] == [
            ("correctness", 0.75),
            ("format", 0.25),
        ]
        completions = [
            [{"role": "assistant", "content": gold[0]}],
            [{"role": "assistant", "content": "\\boxed{-12345}"}],
            [{"role": "assistant", "content": "no idea"}],
        ]
        assert [call(f, rows, completions) for f in functions] == [[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]]
    finally:
        functions[0].close()


def flaky(reply: str, task: Task) -> Verdict:
    if task.answer == "down":
        return Verdict.error("grading service unreachable")
    return Verdict.correct() if reply.strip() == task.answer else Verdict.incorrect()


def test_an_infra_error_is_none_and_counted_never_a_zero():
    tasks = [{"id": f"t{i}", "prompt": "?", "answer": a} for i, a in enumerate(["up", "down"])]
    register_task_env(FLAKY, tasks, flaky, override=True)
    rows = dataset(FLAKY)
    (correctness,) = reward_funcs(FLAKY)
    metrics: dict[str, float] = {}
    extras: dict[str, list] = {}
    rewards = call(
        correctness,
        rows,
        ["up", "down"],
        log_metric=metrics.__setitem__,
        log_extra=extras.__setitem__,
    )
    assert rewards == [1.0, None]
    assert metrics == {f"rlvr/{FLAKY}/infra_error_rate": 0.5}
    assert extras == {"rlvr_verdict": ["correct", "error"]}


def test_rows_of_another_env_are_left_to_its_own_functions():
    rows = dataset("rlvr/Math-v0", n=2)
    rows = rows.map(
        lambda row, i: {"env_id": "rlvr/Other-v0" if i else row["env_id"]}, with_indices=True
    )
    gold = support.reference_replies("rlvr/Math-v0", rows)
    (correctness,) = reward_funcs("rlvr/Math-v0")
    assert call(correctness, rows, gold) == [1.0, None]


@pytest.mark.parametrize(
    ("env_id", "message"),
    [
        ("rlvr/MathSelfCorrect-v0", "unfold through SelfCorrect"),
        ("rlvr/Nope-v0", "cannot make 'rlvr/Nope-v0'"),
    ],
)
def test_envs_a_reward_function_cannot_replay_are_refused(env_id, message):
    with pytest.raises(IntegrationConfigError, match=message):
        reward_funcs(env_id)


def test_a_dataset_without_the_task_columns_is_refused_naming_the_fix():
    (correctness,) = reward_funcs("rlvr/Math-v0")
    with pytest.raises(IntegrationConfigError, match=r"no column 'task_id'.*rlvr export"):
        correctness(prompts=["?"], completions=["1"], answer=['"1"'])


def test_a_task_json_would_change_is_refused():
    with pytest.raises(IntegrationConfigError, match="tuple"):
        encode_task(Task(id="t", prompt="?", answer=(1, 2)))
    task = Task(id="t", prompt="?", answer={"cases": [{"args": [1], "expected": 2.5}]})
    assert decode_task(encode_task(task)) == task


def test_a_tool_env_becomes_a_trl_environment_whose_tools_run_the_envs():
    require_extra("transformers", "trl")
    from transformers.utils import get_json_schema

    rows = dataset("rlvr/ToolMath-v0", n=1)
    environment = environment_factory("rlvr/ToolMath-v0")()
    schema = get_json_schema(environment.calculator)  # how TRL shows the tool to the model
    assert schema["function"]["parameters"]["required"] == ["expression"]
    assert environment.reset(**rows[0]) is None
    assert environment.calculator(expression="6 * 7") == "42"
    (correctness,) = reward_funcs("rlvr/ToolMath-v0")
    answer = decode_task(rows[0]).answer
    completions = [
        [{"role": "assistant", "content": f"\\boxed{{{answer}}}"}],
        [{"role": "assistant", "content": "", "tool_calls": [{"name": "calculator"}]}],
    ]
    assert call(correctness, rows.select([0, 0]), completions, environments=[environment] * 2) == [
        1.0,
        0.0,  # ended on a tool call: no final answer, the policy's doing
    ]


def test_the_repository_env_trains_in_trl_with_its_workspace_tools():
    # One workspace per rollout: the model's tool calls edit it, submit grades it, and a
    # rollout that never submits scores 0 (as the env's own episode would).
    rows = dataset("rlvr/Repo-v0", n=1, difficulty=1)
    environment = environment_factory("rlvr/Repo-v0", difficulty=1)()
    environment.reset(**rows[0])
    assert "FAILED" in environment.run_tests()
    fix = decode_task(rows[0]).answer["fix"]
    assert environment.apply_patch(patch=fix).startswith("Patch applied")
    assert environment.submit().startswith("Submitted. Correct")
    unsubmitted = environment_factory("rlvr/Repo-v0", difficulty=1)()
    unsubmitted.reset(**rows[0])
    unsubmitted.apply_patch(patch=fix)
    (correctness,) = reward_funcs("rlvr/Repo-v0", difficulty=1)
    done = [[{"role": "assistant", "content": "Done."}]]
    assert call(correctness, rows, done, environments=[environment]) == [1.0]
    assert call(correctness, rows, done, environments=[unsubmitted]) == [0.0]
