"""The TOML task files of rlvr/Code-v0: the built-in tasks read from them unchanged, and any bad
file or record refused with a message naming the file, the task and the field."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from rlvr.envs import DatasetError, check_env
from rlvr.envs.code import CodeEnv
from rlvr.envs.code.tasks import (
    BUILTIN_FILES,
    SOURCE,
    _tasks,
    builtin_paths,
    builtin_tasks,
    load_code_tasks,
    read_problems,
)
from tests.sandboxes.conftest import require_local_sandbox

# sha256 of the built-in tasks (id, prompt, answer, metadata, in order) as the Python module that
# held them before the TOML files gave them: a leaderboard's code results compare only while the
# tasks stay the same. Change it only with a deliberate change of the tasks.
BUILTIN_SHA256 = "3cf379b3eee20091492892ee087b3851ebfffd1c43390a069d2794075f1a58ae"

TASK = '''
[[tasks]]
name = "add"
difficulty = 1
signature = "def add(a: int, b: int) -> int:"
description = """
Return the sum
    of `a` and `b`.
"""
reference = """
    def add(a, b):
        return a + b
"""
cases = """
[
  {"args": [1, 2], "expected": 3},
  {"args": [{"$tuple": []}, {"$tuple": [1]}], "expected": {"$tuple": [1]}},
  {"args": [1], "kwargs": {"b": -1}, "expected": 0},
  {"args": [1, "x"], "raises": "TypeError"}
]
"""
'''


def write(tmp_path: Path, text: str, name: str = "tasks.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_builtin_tasks_are_those_of_the_python_module_they_came_from():
    data = [[task.id, task.prompt, task.answer, task.metadata] for task in builtin_tasks()]
    assert hashlib.sha256(json.dumps(data).encode()).hexdigest() == BUILTIN_SHA256
    assert [len(builtin_tasks(level)) for level in (1, 2, 3)] == [26, 24, 19]


@pytest.mark.parametrize("difficulty", [None, 1, 2, 3, [1, 3]])
def test_builtin_tasks_are_exactly_those_of_the_checked_read_of_their_files(difficulty):
    # builtin_tasks skips the checks (a trusted path, for speed); this is where the built-in
    # files are fully checked, and where a case not written in CallCase.to_dict's canonical form
    # (say "compare": "exact" or "kwargs": {}) would show as a difference.
    checked = _tasks(read_problems(*builtin_paths()), difficulty, SOURCE)
    fast = builtin_tasks(difficulty)
    assert fast == checked
    # json.dumps tells 1, 1.0 and True apart, and keys in another order, which == does not
    as_json = [[task.id, task.prompt, task.answer, task.metadata] for task in checked]
    assert json.dumps([[t.id, t.prompt, t.answer, t.metadata] for t in fast]) == json.dumps(as_json)


def test_every_builtin_task_passes_the_judges_check_which_the_env_skips_for_them():
    env = CodeEnv()  # made with checked=True: this test is the check
    assert env.tasks.tasks == builtin_tasks()
    for task in env.tasks.tasks:
        env.judge.check(task)
    env.close()


def test_each_call_gives_builtin_tasks_of_their_own():
    first = builtin_tasks()
    first[0].answer["cases"].clear()
    first[0].metadata["source"] = "changed"
    again = builtin_tasks()[0]
    assert again.answer["cases"] and again.metadata["source"] == SOURCE


def test_a_file_of_your_own_loads_with_its_layout_normalised(tmp_path):
    path = write(tmp_path, TASK)
    (problem,) = read_problems(path)
    assert problem.description == "Return the sum of `a` and `b`."  # whitespace collapsed
    assert problem.reference == "def add(a, b):\n    return a + b\n"  # dedented
    assert [case.args for case in problem.cases] == [(1, 2), ((), (1,)), (1,), (1, "x")]
    assert problem.cases[2].kwargs == {"b": -1} and problem.cases[3].raises == "TypeError"
    (task,) = load_code_tasks(path).tasks
    assert task.id == "code/add" and task.metadata == {
        "family": "code",
        "difficulty": 1,
        "source": str(path),
    }
    assert "def add(a: int, b: int) -> int:" in task.prompt
    with pytest.raises(DatasetError, match="no tasks"):
        load_code_tasks(path, difficulty=2)


def test_a_file_of_your_own_makes_a_working_env(tmp_path):
    require_local_sandbox()
    env = CodeEnv(load_code_tasks(write(tmp_path, TASK)))
    check_env(env, seeds=(0,))  # the reference passes, junk fails
    env.close()


def _replace(old: str, new: str) -> str:
    assert old in TASK
    return TASK.replace(old, new)


def _cases(value: str) -> str:
    """TASK with its field `cases` given as `value` (TOML)."""
    return TASK.split("cases = ")[0] + f"cases = {value}\n"


BAD_RECORDS = {
    "missing field": (_replace("difficulty = 1\n", ""), r"task 1: missing fields \['difficulty'\]"),
    "unknown field": (TASK + "tests = 1\n", r"task 1: .*unknown fields \['tests'\]"),
    "name": (_replace('"add"', '"add me"'), r"task 1: field 'name' must be a Python function"),
    "difficulty": (_replace("difficulty = 1", "difficulty = 4"), r"'add': field 'difficulty'"),
    "difficulty bool": (_replace("difficulty = 1", "difficulty = true"), "field 'difficulty'"),
    "signature": (_replace("def add(a", "def plus(a"), r"'add': field 'signature' must be"),
    "description": (_replace("Return the sum\n    of `a` and `b`.", " "), "field 'description'"),
    "reference": (_replace("return a + b", "return a +"), "field 'reference' does not parse"),
    "cases table": (_cases("[{args = [1, 2], expected = 3}]"), "field 'cases': must be a JSON"),
    "cases json": (
        _replace('"expected": 3},', '"expected": 3}'),
        r"field 'cases': invalid JSON .*line 3 .*line 1 is the line after",
    ),
    "cases empty": (_cases("'[]'"), "field 'cases': must be a non-empty JSON array"),
    "cases object": (_cases("'{}'"), "field 'cases': must be a non-empty JSON array"),
    "case": (
        _replace('"expected": 3},', '"expected": 3, "raises": "ValueError"},'),
        r"field 'cases', case 1: give exactly one of 'expected' or 'raises'",
    ),
    "case key twice": (_replace('"expected": 3},', '"expected": 3, "expected": 4},'), "twice"),
    "nan": (_replace('"expected": 3},', '"expected": NaN},'), "NaN is not a JSON number"),
    "surrogate": (_replace('"expected": 3},', '"expected": "\\\\ud800"},'), "lone surrogate"),
    "low surrogate": (_replace('"expected": 3},', '"expected": "a\\\\uDFFF"},'), "lone surrogate"),
    "deep": (_replace('"expected": 3},', '"expected": ' + "[" * 200 + "]" * 200 + "},"), "deep"),
    "huge int": (_replace('"expected": 3},', '"expected": ' + "9" * 5000 + "},"), "invalid JSON"),
}


@pytest.mark.parametrize("text, message", BAD_RECORDS.values(), ids=BAD_RECORDS.keys())
def test_a_bad_record_names_the_file_task_and_field(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(DatasetError, match=message) as caught:
        load_code_tasks(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert "\n" not in str(caught.value)


BAD_FILES = {
    "not toml": ("[[tasks]\n", "not valid TOML"),
    "deep toml": ("tasks = " + "[" * 150 + "]" * 150, "nested more than 100 levels deep"),
    "no tasks": ("# nothing yet\n", r"no tasks; write one \[\[tasks\]\] table"),
    "top-level key": ('name = "add"\n' + TASK, r"unknown top-level keys \['name'\]"),
    "tasks not tables": ("tasks = [1]\n", r"task 1: a task is a \[\[tasks\]\] table, got int"),
    "name twice": (TASK + TASK, r"task 2 'add': the name is taken by .*task 1 'add'"),
}


@pytest.mark.parametrize("text, message", BAD_FILES.values(), ids=BAD_FILES.keys())
def test_a_bad_file_names_itself(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(DatasetError, match=message) as caught:
        load_code_tasks(path)
    assert str(caught.value).startswith(str(path))


def test_missing_and_non_utf8_files_are_refused(tmp_path):
    with pytest.raises(DatasetError, match=r"missing.toml: no such file"):
        load_code_tasks(tmp_path / "missing.toml")
    path = tmp_path / "latin1.toml"
    path.write_bytes(TASK.replace("Return", "R\xe9turn").encode("latin-1"))
    with pytest.raises(DatasetError, match=r"latin1.toml: .*not UTF-8 text .*line 7"):
        load_code_tasks(path)


def test_a_name_used_in_two_files_is_refused(tmp_path):
    first, second = write(tmp_path, TASK, "a.toml"), write(tmp_path, TASK, "b.toml")
    with pytest.raises(DatasetError, match=r"b.toml: task 1 'add': the name is taken by .*a.toml"):
        read_problems(first, second)


def test_builtin_files_are_read_on_first_use_not_on_import():
    code = (
        "import sys, rlvr.envs, rlvr.envs.code\n"
        "assert 'rlvr.envs.code.tasks' not in sys.modules\n"  # (tomllib is: the family files)
        "import rlvr.envs.code.tasks as module\n"
        "assert module._builtin_problems.cache_info().currsize == 0\n"
        "assert module._builtin_records.cache_info().currsize == 0\n"
        "assert len(module.PROBLEMS) == 69 and module.PROBLEMS[0].name == 'sum_of_squares'\n"
        "try:\n    module.NOT_A_NAME\nexcept AttributeError:\n    print('ok')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "ok", result.stderr


@pytest.mark.slow
def test_wheel_ships_the_builtin_task_files(built_wheel):
    names = set(zipfile.ZipFile(built_wheel.path).namelist())
    assert {f"rlvr/envs/code/data/{name}" for name in BUILTIN_FILES} <= names
