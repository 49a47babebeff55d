"""rlvr/Code-v0: the env contract, every built-in task's oracle, loaders for other task sets."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import rlvr  # noqa: F401
from rlvr.envs import DatasetError, EnvConfigError, check_env
from rlvr.envs.code import CodeEnv, load_code_dataset, load_humaneval, load_mbpp
from rlvr.envs.code.tasks import PROBLEMS, builtin_tasks
from rlvr.verifiers.code import CodeTests
from tests.conftest import require_extra
from tests.sandboxes.conftest import require_local_sandbox


@pytest.fixture(autouse=True)
def _local_sandbox():
    require_local_sandbox()


def test_passes_check_env():
    env = gym.make("rlvr/Code-v0")
    check_env(env)
    env.close()


def test_self_correction_variant_passes_check_env():
    env = gym.make("rlvr/CodeSelfCorrect-v0")
    check_env(env, seeds=(0,))
    env.close()


@pytest.mark.slow
def test_async_vector_env_runs_the_sandbox_in_each_subprocess():
    envs = gym.make_vec("rlvr/Code-v0", num_envs=2, vectorization_mode="async")
    try:
        envs.reset(seed=0, options={"task_index": 0})
        reply = "```python\n" + PROBLEMS[0].reference + "```"
        _, rewards, *_ = envs.step((reply, "no code"))
    finally:
        envs.close()
    assert list(rewards) == [1.0, 0.0]


def test_builtin_set_has_at_least_60_tasks_at_three_levels():
    levels = [problem.difficulty for problem in PROBLEMS]
    assert len(levels) >= 60 and {levels.count(level) >= 15 for level in (1, 2, 3)} == {True}
    assert len({problem.name for problem in PROBLEMS}) == len(PROBLEMS)
    for task in builtin_tasks():
        tests = CodeTests.from_answer(task.answer, task.id)
        assert len(tests.cases) >= 3 and tests.reference
        assert f"`{tests.entry_point}`" in task.prompt and "def " in task.prompt
        for case in tests.cases:  # no test's expected value is given away as an example
            if isinstance(case.expected, (list, dict)) and case.expected:
                assert repr(case.expected) not in task.prompt, task.id
            if isinstance(case.expected, str) and len(case.expected) > 3:
                assert case.expected not in task.prompt, task.id


def test_every_builtin_oracle_scores_one_and_a_stub_scores_zero():
    env = CodeEnv()
    failures = []
    for index in range(len(env.tasks)):
        env.reset(seed=0, options={"task_index": index})
        _, reward, _, _, info = env.step(env.oracle_reply())
        if reward != 1.0:
            failures.append((info["task_id"], info["verdict"]["details"]))
    assert not failures
    env.reset(seed=0, options={"task_index": 0})
    stub = f"```python\n{PROBLEMS[0].signature}\n    return None\n```"
    assert env.step(stub)[1] == 0.0
    env.close()


def test_difficulty_and_scoring_options():
    easy = CodeEnv(difficulty=1)
    assert {task.metadata["difficulty"] for task in easy.tasks.tasks} == {1}
    easy.close()
    with pytest.raises(EnvConfigError, match="difficulty"):
        CodeEnv(difficulty=7)
    with pytest.raises(EnvConfigError, match="scoring"):
        CodeEnv(scoring="best")
    assert len(CodeEnv(split="test").tasks) == len(PROBLEMS)
    with pytest.raises(EnvConfigError, match="held-out evaluation set"):
        CodeEnv(split="train")
    env = CodeEnv(scoring="fraction")
    env.reset(seed=0, options={"task_index": [p.name for p in PROBLEMS].index("sum_of_squares")})
    _, reward, _, _, info = env.step("```python\ndef sum_of_squares(n):\n    return n * n\n```")
    assert 0.0 < reward < 1.0 and info["verdict"]["data"]["passed"] == 2  # n = 0 and n = 1
    env.close()


def test_a_task_can_be_pinned_with_options():
    env = CodeEnv()
    task = builtin_tasks(1)[0].to_dict()
    task["id"] = "mine"
    obs, info = env.reset(options={"task": task})
    assert info["task_id"] == "mine" and obs.startswith("Write a Python function")
    with pytest.raises(EnvConfigError, match="entry_point"):
        env.reset(options={"task": {"prompt": "x", "answer": {"cases": []}}})
    env.close()


# --- other task sets ----------------------------------------------------------------------------

HUMANEVAL_ROWS = [
    {
        "task_id": "Demo/0",
        "prompt": (
            "from typing import List\n\n\ndef below_zero(operations: List[int]) -> bool:\n"
            '    """Return True if the running balance of the operations ever drops below 0."""\n'
        ),
        "canonical_solution": (
            "    balance = 0\n    for op in operations:\n        balance += op\n"
            "        if balance < 0:\n            return True\n    return False\n"
        ),
        "test": (
            "\n\nMETADATA = {'author': 'rlvr'}\n\n\ndef check(candidate):\n"
            "    assert candidate([]) == False\n"
            "    assert candidate([1, 2, -3, 1, 2, -3]) == False\n"
            "    assert candidate([1, 2, -4, 5, 6]) == True\n"
        ),
        "entry_point": "below_zero",
    },
    {
        "task_id": "Demo/1",
        "prompt": 'def double(x: int) -> int:\n    """Return twice x."""\n',
        "canonical_solution": "    return 2 * x\n",
        "test": (
            "def check(candidate):\n    assert candidate(2) == 4\n    assert candidate(-3) == -6\n"
        ),
        "entry_point": "double",
    },
]
MBPP_ROWS = [
    {
        "task_id": 901,
        "text": "Write a function to find the smallest positive integer missing from a list.",
        "code": (
            "def smallest_missing(nums):\n    seen = set(nums)\n    k = 1\n"
            "    while k in seen:\n        k += 1\n    return k"
        ),
        "test_list": [
            "assert smallest_missing([1, 2, 0]) == 3",
            "assert smallest_missing([3, 4, -1, 1]) == 2",
            "assert smallest_missing([7, 8, 9]) == 1",
        ],
        "test_setup_code": "",
        "challenge_test_list": [],
    }
]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def run_oracle_and_junk(tasks):
    env = CodeEnv(tasks)
    for index in range(len(env.tasks)):
        env.reset(options={"task_index": index})
        assert env.step(env.oracle_reply())[1] == 1.0
        env.reset(options={"task_index": index})
        assert env.step("```python\ndef nothing():\n    return 0\n```")[1] == 0.0
    env.close()


def test_load_humaneval_jsonl(tmp_path):
    source = load_humaneval(write_jsonl(tmp_path / "he.jsonl", HUMANEVAL_ROWS))
    task = source[0]
    assert task.id == "Demo/0" and "def below_zero" in task.prompt
    assert "canonical_solution" not in task.metadata and "entry_point" not in task.metadata
    tests = CodeTests.from_answer(task.answer)
    assert tests.preamble == "from typing import List" and tests.check
    run_oracle_and_junk(source)


def test_humaneval_reply_without_the_prompt_imports_still_works(tmp_path):
    env = CodeEnv(load_humaneval(write_jsonl(tmp_path / "he.jsonl", HUMANEVAL_ROWS)))
    env.reset(options={"task_index": 0})
    reply = (
        "```python\ndef below_zero(operations: List[int]) -> bool:\n    total = 0\n"
        "    for op in operations:\n        total += op\n        if total < 0:\n"
        "            return True\n    return False\n```"
    )
    assert env.step(reply)[1] == 1.0
    env.close()


def test_humaneval_prompt_helpers_reach_the_solution_and_the_tests(tmp_path):
    # Like HumanEval/38: the prompt defines a helper that the tests and the solution both use.
    row = {
        "task_id": "Demo/2",
        "prompt": (
            "def shift(word: str, k: int) -> str:\n"
            '    """Move each lowercase letter k places along the alphabet."""\n'
            "    return ''.join(chr((ord(c) - 97 + k) % 26 + 97) for c in word)\n\n\n"
            "def unshift(word: str) -> str:\n"
            '    """Undo shift(word, 3)."""\n'
        ),
        "canonical_solution": "    return shift(word, -3)\n",
        "test": (
            "def check(candidate):\n    for word in ['abc', 'xyz', 'hello']:\n"
            "        assert candidate(shift(word, 3)) == word\n"
        ),
        "entry_point": "unshift",
    }
    source = load_humaneval(write_jsonl(tmp_path / "he.jsonl", [row]))
    assert "def unshift" not in CodeTests.from_answer(source[0].answer).preamble
    run_oracle_and_junk(source)
    env = CodeEnv(source)
    env.reset(options={"task_index": 0})
    assert env.step("```python\ndef unshift(word):\n    return shift(word, 23)\n```")[1] == 1.0
    env.close()


def test_sanitized_mbpp_test_imports_reach_the_tests(tmp_path):
    row = {
        "task_id": 902,
        "prompt": "Write a function for the area of a circle of radius r.",
        "code": "import math\ndef circle_area(r):\n    return math.pi * r * r",
        "test_imports": ["import math"],
        "test_list": ["assert math.isclose(circle_area(2), 12.566, rel_tol=0.001)"],
    }
    run_oracle_and_junk(
        load_mbpp(write_jsonl(tmp_path / "s.jsonl", [row]), fields={"prompt": "prompt"})
    )


def test_load_mbpp_jsonl(tmp_path):
    source = load_mbpp(write_jsonl(tmp_path / "mbpp.jsonl", MBPP_ROWS))
    task = source[0]
    assert "def smallest_missing(nums):" in task.prompt and "== 3" not in task.prompt
    assert CodeTests.from_answer(task.answer).asserts[0].startswith("assert smallest_missing")
    run_oracle_and_junk(source)


def test_load_code_dataset_through_huggingface_datasets(tmp_path):
    require_extra("datasets", "datasets")
    source = load_code_dataset(
        write_jsonl(tmp_path / "he.jsonl", HUMANEVAL_ROWS), style="humaneval", split="test"
    )
    assert len(source) == 2 and source[1].id == "Demo/1"
    renamed = [
        {"question": row["text"], **{k: v for k, v in row.items() if k != "text"}}
        for row in MBPP_ROWS
    ]
    mbpp = load_code_dataset(
        write_jsonl(tmp_path / "m.jsonl", renamed), style="mbpp", fields={"prompt": "question"}
    )
    ours = [
        {
            "id": "t1",
            "prompt": "Write inc(x).",
            "answer": json.dumps(
                {
                    "entry_point": "inc",
                    "reference": "def inc(x):\n    return x + 1",
                    "cases": [{"args": [1], "expected": 2}],
                }
            ),
        }
    ]
    cases = load_code_dataset(write_jsonl(tmp_path / "c.jsonl", ours), style="cases")
    run_oracle_and_junk([*mbpp.tasks, *cases.tasks])


def test_bad_rows_are_reported_with_the_fix(tmp_path):
    rows = [{**MBPP_ROWS[0], "code": "def other(x):\n    return x"}]
    with pytest.raises(DatasetError, match="no function of the reference code"):
        load_mbpp(write_jsonl(tmp_path / "bad.jsonl", rows))
    with pytest.raises(DatasetError, match="style must be one of"):
        load_code_dataset(tmp_path / "bad.jsonl", style="apps")


CASES_ROW = {
    "id": "t1",
    "prompt": "Write inc(x).",
    "answer": {
        "entry_point": "inc",
        "reference": "def inc(x):\n    return x + 1",
        "cases": [{"args": [1], "expected": 2}],
    },
}


@pytest.mark.parametrize(
    ("style", "row", "message"),
    [
        ("mbpp", {**MBPP_ROWS[0], "code": "def smallest_missing(nums):\n    return 1\x00"},
         "the reference code does not parse: source code string cannot contain null bytes"),
        ("mbpp", {**MBPP_ROWS[0], "code": "def smallest_missing(nums):\n    return "
         + "-" * 100_000 + "1"}, "the reference code does not parse: nested too deeply"),
        ("cases", {**CASES_ROW, "answer": "[" * 5000 + "]" * 5000},
         "the answer is not JSON: JSON nested more than 100 levels deep"),
        ("cases", {**CASES_ROW, "answer": json.dumps(
            {**CASES_ROW["answer"], "reference": "def inc(x):\n    return x +"})},
         "task 't1': the reference solution does not parse: invalid syntax"),
        ("cases", {**CASES_ROW, "answer": json.dumps(
            {**CASES_ROW["answer"], "reference": "def inc(x):\n    return x + '\ud800'"})},
         "t1: the answer holds a lone surrogate '\\ud800': no text"),
    ],
    ids=["mbpp-nul", "mbpp-deep", "cases-deep-json", "cases-syntax", "cases-surrogate"],
)  # fmt: skip
def test_a_row_whose_code_cannot_compile_is_refused_at_load(tmp_path, style, row, message):
    path = write_jsonl(tmp_path / "rows.jsonl", [row])
    loader = {"mbpp": load_mbpp, "cases": lambda file: _load_cases(file)}[style]
    with pytest.raises(DatasetError) as refused:
        loader(path)
    assert message in str(refused.value) and "\n" not in str(refused.value), refused.value


def _load_cases(path):
    from rlvr.envs.code import cases_task
    from rlvr.envs.tasks import load_jsonl

    return load_jsonl(path, convert=cases_task)


def test_a_task_made_in_python_whose_reference_cannot_compile_is_refused_when_the_env_is_made():
    task = {**CASES_ROW, "answer": {**CASES_ROW["answer"], "reference": "def inc(x):\n  return ("}}
    with pytest.raises(EnvConfigError, match="the reference solution does not parse"):
        CodeEnv([task])
