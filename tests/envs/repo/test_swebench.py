"""SWE-bench-style tasks: loaded from JSON lines and a repository snapshot, graded by the named
tests of a runner (unittest here: the sandbox's Python has no pytest), with test files and test
configuration put back and a canary that generic tricks cannot get past."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import rlvr  # noqa: F401
from rlvr.envs.errors import DatasetError
from rlvr.envs.repo import load_swebench_style
from rlvr.envs.repo.patches import unified_diff
from rlvr.envs.tools.parsing import format_tool_call

BASE = {
    "calc/__init__.py": "",
    "calc/ops.py": "def add(a, b):\n    return a - b\n\n\ndef neg(a):\n    return -a\n",
    "tests/__init__.py": "",
    "tests/test_ops.py": (
        "import unittest\n\nfrom calc.ops import add, neg\n\n\nclass TestOps(unittest.TestCase):\n"
        "    def test_neg(self):\n        self.assertEqual(neg(2), -2)\n"
    ),
    "setup.cfg": "[metadata]\nname = calc\n",
}
FIXED = {**BASE, "calc/ops.py": BASE["calc/ops.py"].replace("a - b", "a + b")}
TESTED = {
    **BASE,
    "tests/test_ops.py": BASE["tests/test_ops.py"]
    + "\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n",
}


def encode(files):
    return {path: text.encode() for path, text in files.items()}


@pytest.fixture
def dataset(tmp_path):
    for path, text in BASE.items():
        target = tmp_path / "calc-1" / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    (tmp_path / "calc-1" / ".git").mkdir()
    (tmp_path / "calc-1" / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (tmp_path / "calc-1" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff")
    row = {
        "instance_id": "calc-1",
        "repo": "example/calc",
        "base_commit": "0" * 40,
        "problem_statement": "add(2, 3) returns -1 instead of 5.",
        "patch": unified_diff(encode(BASE), encode(FIXED)),
        "test_patch": unified_diff(encode(BASE), encode(TESTED)),
        "FAIL_TO_PASS": json.dumps(["tests.test_ops.TestOps.test_add"]),
        "PASS_TO_PASS": ["tests.test_ops.TestOps.test_neg"],
        "runner": "unittest",
    }
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(row) + "\n")
    return path


def test_the_loader_reads_the_snapshot_without_the_test_patch(dataset):
    (task,) = load_swebench_style(dataset).tasks
    files = task.answer["files"]
    assert set(files) == set(BASE)  # no .git, no binary file
    assert "test_add" not in files["tests/test_ops.py"]  # the hidden tests stay hidden
    assert "test_add" in task.answer["restore"]["tests/test_ops.py"]
    assert task.answer["restore"]["setup.cfg"] == BASE["setup.cfg"]
    assert task.metadata["repo"] == "example/calc"


def play(env, steps):
    for step in steps:
        _, reward, terminated, _, info = env.step(step)
        if terminated:
            return reward, info["infra_error"]
    raise AssertionError("the episode did not end")


def edit(path, content):
    return format_tool_call("write_file", path=path, content=content)


SUBMIT = format_tool_call("submit")
CHEATS = {
    "no fix": [],
    "exit 0 at import": [edit("calc/__init__.py", "import os\nos._exit(0)\n")],
    "every test passes": [
        edit(
            "calc/__init__.py",
            "import unittest\nunittest.TestCase.run = lambda self, result=None: None\n",
        )
    ],
    "rewrite the tests": [
        edit(
            "tests/test_ops.py",
            "import unittest\n\n\nclass TestOps(unittest.TestCase):\n"
            "    def test_add(self):\n        pass\n\n    def test_neg(self):\n        pass\n",
        )
    ],
    "configuration and site files": [
        edit("setup.cfg", "[tool:pytest]\naddopts = -p nothing\n"),
        edit("conftest.py", "import os\nos._exit(0)\n"),
        edit("sitecustomize.py", "import os\nos._exit(0)\n"),
    ],
}


def test_the_gold_patch_scores_one_and_cheats_zero(dataset, executor):
    tasks = load_swebench_style(dataset)
    env = gym.make("rlvr/Repo-v0", tasks=tasks, executor=executor)
    try:
        env.reset(seed=0)
        total = 0.0
        for _ in range(6):
            _, reward, terminated, _, _ = env.step(env.unwrapped.oracle_reply())
            total += reward
            if terminated:
                break
        assert total == 1.0
        for name, steps in CHEATS.items():
            env.reset(seed=0)
            assert play(env, [*steps, SUBMIT]) == (0.0, False), name
        env.reset(seed=0)
        fix = format_tool_call("replace_in_file", path="calc/ops.py", old="a - b", new="a + b")
        assert play(env, [fix, SUBMIT]) == (1.0, False)
    finally:
        env.close()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda row: row.pop("patch"), "'patch' must be text"),
        (lambda row: row.update(snapshot="nowhere"), "no repository snapshot"),
        (
            lambda row: row.update(test_patch="--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"),
            "does not apply",
        ),
        (lambda row: row.update(FAIL_TO_PASS="not json"), "FAIL_TO_PASS"),
        (lambda row: row.update(runner="nose"), "runner"),
    ],
)
def test_bad_lines_are_refused_naming_the_line(dataset, change, message):
    row = json.loads(dataset.read_text())
    change(row)
    dataset.write_text(json.dumps(row) + "\n")
    with pytest.raises(DatasetError, match=message) as caught:
        load_swebench_style(dataset)
    assert "tasks.jsonl:1" in str(caught.value)


def run_pytest_mode(tmp_path, module_source, extra=None):
    """The trusted runner's pytest mode, run here with this environment's pytest (the sandbox's
    Python has none): what it reports for one passing and one failing named test."""
    import os
    import subprocess
    import sys

    from rlvr.verifiers.repo.commands import RUNNER, CommandTests, canary_source

    files = {
        "calc/__init__.py": "",
        "calc/ops.py": module_source,
        "tests/test_ops.py": (
            "from calc.ops import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
            "\n\ndef test_other():\n    assert 1 + 1 == 2\n"
        ),
        **(extra or {}),
    }
    tests = CommandTests(
        "pytest", ("tests/test_ops.py::test_add",), ("tests/test_ops.py::test_other",), {}
    )
    graded = tests.graded_files(encode(files))
    graded["test_rlvr_canary_x.py"] = canary_source("pytest").encode()
    for path, data in graded.items():
        target = tmp_path / "repo" / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    spec = {
        "runner": "pytest",
        "tests": list(tests.names),
        "canary": "test_rlvr_canary_x",
        "root": "repo",
        "test_timeout": 60,
    }
    path = os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]
    done = subprocess.run(
        [sys.executable, "-c", RUNNER],
        input=json.dumps(spec),
        text=True,
        capture_output=True,
        cwd=tmp_path,
        env={"PATH": path, "HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_pytest_mode_passes_only_honest_runs(tmp_path):
    pytest.importorskip("pytest")
    good = "def add(a, b):\n    return a + b\n"
    assert run_pytest_mode(tmp_path / "good", good) == {
        "tests/test_ops.py::test_add": True,
        "tests/test_ops.py::test_other": True,
    }
    bad = run_pytest_mode(tmp_path / "bad", good.replace("+", "-"))
    assert bad == {"tests/test_ops.py::test_add": False, "tests/test_ops.py::test_other": True}
    exits = run_pytest_mode(tmp_path / "exit", "import os\nos._exit(0)\n")
    assert not any(exits.values())
    forged = run_pytest_mode(
        tmp_path / "conftest",
        good.replace("+", "-"),
        {
            "conftest.py": "import pytest\n\n@pytest.hookimpl(hookwrapper=True)\n"
            "def pytest_runtest_makereport(item, call):\n    outcome = yield\n"
            "    outcome.get_result().outcome = 'passed'\n",
            "pytest.ini": "[pytest]\naddopts = -p no:terminal\n",
        },
    )
    assert forged == bad  # the new conftest.py and pytest.ini are not graded
