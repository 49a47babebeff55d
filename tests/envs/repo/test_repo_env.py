"""rlvr/Repo-v0's episodes: the tools, the turn and token limits, scoring, the transcript, tasks
of one's own, argument checks, and the Docker backend."""

from __future__ import annotations

import gymnasium as gym
import pytest

import rlvr  # noqa: F401
from rlvr.envs import EnvConfigError
from rlvr.envs.repo.patches import apply_patch, unified_diff
from rlvr.envs.tools.parsing import format_tool_call


def start(executor, task_index=0, **kwargs):
    kwargs.setdefault("difficulty", 1)
    env = gym.make("rlvr/Repo-v0", executor=executor, **kwargs)
    observation, info = env.reset(seed=0, options={"task_index": task_index})
    return env, observation, info


def call(env, name, **arguments):
    return env.step(format_tool_call(name, **arguments))


def fix_of(env):
    base = env.unwrapped
    return base.judge.parse(base.task).fix


# A repository of one's own, with hidden tests and a fix.
OWN_FILES = {
    "calc/__init__.py": "",
    "calc/ops.py": "def add(a, b):\n    return a - b\n\n\ndef neg(a):\n    return -a\n",
    "tests/__init__.py": "",
    "tests/test_ops.py": (
        "import unittest\n\nfrom calc.ops import neg\n\n\nclass TestOps(unittest.TestCase):\n"
        "    def test_neg(self):\n        self.assertEqual(neg(2), -2)\n"
    ),
}
OWN_FIXED = {**OWN_FILES, "calc/ops.py": OWN_FILES["calc/ops.py"].replace("a - b", "a + b")}


def own_task(**extra):
    encoded = {path: text.encode() for path, text in OWN_FILES.items()}
    fixed = {path: text.encode() for path, text in OWN_FIXED.items()}
    answer = {
        "files": OWN_FILES,
        "tests": [
            {
                "name": "test_add",
                "calls": [
                    {"target": "calc.ops:add", "args": [1, 2], "expected": 3},
                    {"target": "calc.ops:add", "args": [5, 5], "expected": 10},
                ],
            },
            {
                "name": "test_neg",
                "calls": [{"target": "calc.ops:neg", "args": [3], "expected": -3}],
            },
        ],
        "fail_to_pass": ["test_add"],
        "pass_to_pass": ["test_neg"],
        "fix": unified_diff(encoded, fixed),
        **extra,
    }
    return {"id": "own/1", "prompt": "add(1, 2) returns -1, expected 3.", "answer": answer}


def test_the_observation_is_the_issue_and_the_file_list(executor):
    env, observation, info = start(executor)
    files = env.unwrapped.workspace.files
    assert env.unwrapped.task.prompt.strip() in observation
    assert all(path in observation for path in files)
    assert not any(line.startswith("+") for line in observation.splitlines())  # no fix
    assert {spec["function"]["name"] for spec in info["tools"]} == {
        "run", "read_file", "write_file", "replace_in_file", "apply_patch", "list_files",
        "run_tests", "submit",
    }  # fmt: skip
    env.close()


def test_file_tools_read_and_edit_the_workspace(executor):
    env, *_ = start(executor)
    observation, *_ = call(env, "read_file", path="README.md", start_line=1, end_line=2)
    assert observation.startswith("README.md (lines 1-2 of") and "\n1  # " in observation
    observation, *_ = call(env, "read_file", path="nope.py")
    assert observation.startswith("Error: no file")
    call(env, "write_file", path="notes/a.txt", content="one two two")
    observation, *_ = call(env, "replace_in_file", path="notes/a.txt", old="two", new="2")
    assert "found 2 times" in observation
    observation, *_ = call(env, "replace_in_file", path="notes/a.txt", old="one", new="1")
    assert observation == "Replaced 1 occurrence in notes/a.txt."
    assert env.unwrapped.workspace.files["notes/a.txt"] == b"1 two two"
    observation, *_ = call(env, "list_files", directory="notes")
    assert observation == "notes/a.txt"
    observation, *_ = call(env, "apply_patch", patch="not a diff")
    assert observation.startswith("Error: the patch was not applied")
    env.close()


def test_commands_see_and_change_the_workspace(executor):
    env, *_ = start(executor)
    call(env, "write_file", path="tool.sh", content="echo from-script")
    observation, *_ = call(env, "run", command="chmod +x tool.sh && ./tool.sh && echo x > made.txt")
    assert "from-script" in observation and "[exit code 0]" in observation
    assert env.unwrapped.workspace.files["made.txt"] == b"x\n"
    observation, *_ = call(env, "run", command="./tool.sh; rm made.txt; exit 3")
    assert "from-script" in observation and "[exit code 3]" in observation
    assert "made.txt" not in env.unwrapped.workspace.files
    assert "tool.sh" in env.unwrapped.workspace.executable
    observation, *_ = call(env, "run", command="python3 -c 'print(1/0)'")
    assert "ZeroDivisionError" in observation and "[exit code 1]" in observation
    observation, *_ = call(env, "run", command="yes | head -c 100000")
    assert "characters cut" in observation and len(observation) < 7000
    env.close()


def test_a_command_that_changes_nothing_keeps_the_workspace_and_same_size_rewrites_count(executor):
    env, *_ = start(executor)
    call(env, "write_file", path="tool.sh", content="echo one")
    call(env, "run", command="chmod +x tool.sh")
    before = dict(env.unwrapped.workspace.files)
    observation, *_ = call(env, "run", command="true")
    assert "[exit code 0]" in observation and "discarded" not in observation
    assert dict(env.unwrapped.workspace.files) == before
    assert env.unwrapped.workspace.executable == {"tool.sh"}
    # Rewritten in place with the same size, its modification time then put back: still seen.
    rewrite = 't=$(stat -c %y tool.sh); printf "echo two" > tool.sh; touch -d "$t" tool.sh'
    call(env, "run", command=rewrite)
    assert env.unwrapped.workspace.files["tool.sh"] == b"echo two"
    call(env, "run", command="chmod -x tool.sh")
    assert "tool.sh" not in env.unwrapped.workspace.executable
    env.close()


def test_run_tests_runs_the_repository_tests_and_refuses_odd_targets(executor):
    env, *_ = start(executor)
    observation, *_ = call(env, "run_tests")
    assert "FAILED" in observation and " in 0." not in observation  # no timing: replayable
    observation, *_ = call(env, "run_tests", target="tests; rm -rf /")
    assert observation.startswith("Error: target must be")
    module = next(p for p in env.unwrapped.workspace.files if p.startswith("tests/test_"))
    observation, *_ = call(env, "run_tests", target=module[:-3].replace("/", "."))
    assert "Ran " in observation
    env.close()


def test_the_oracle_fixes_and_a_reply_without_a_tool_call_ends_unsubmitted(executor):
    env, *_ = start(executor)
    call(env, "apply_patch", patch=fix_of(env))
    _, reward, terminated, _, info = env.step("I fixed it, goodbye.")
    assert terminated and reward == 0.0 and info["verdict"]["details"] == "nothing was submitted"
    assert [entry["name"] for entry in info["transcript"]] == ["apply_patch"]
    env.close()


def test_the_turn_limit_grades_the_workspace_as_it_is(executor):
    env, *_ = start(executor, max_turns=3)
    call(env, "apply_patch", patch=fix_of(env))
    _, _, terminated, _, _ = call(env, "list_files")
    assert not terminated
    observation, reward, terminated, truncated, info = call(env, "list_files")
    assert (terminated, truncated, reward) == (True, False, 1.0)
    assert "turn limit (3 replies)" in observation and info["verdict"]["status"] == "correct"
    assert len(info["transcript"]) == 3
    env.close()


def test_the_token_limit_grades_too(executor):
    env, *_ = start(executor, max_tokens=10**9, count_tokens=lambda text: 1)
    base_tokens = env.unwrapped.interaction.tokens
    env.close()
    env, *_ = start(executor, max_tokens=base_tokens + 3, count_tokens=lambda text: 1)
    _, _, terminated, _, _ = call(env, "list_files")
    assert not terminated
    observation, reward, terminated, _, _ = call(env, "list_files")
    assert terminated and reward == 0.0 and "token limit" in observation
    env.close()


def test_partial_credit_only_when_asked(executor):
    for scoring, expected in (("all", 0.0), ("fraction", None)):
        env, *_ = start(executor, difficulty=3, scoring=scoring)
        base = env.unwrapped
        parsed = base.judge.parse(base.task)
        # Undo one of the two bugs only: the first file the fix changes.
        fixed, _ = apply_patch(parsed.files, parsed.fix)
        path = next(p for p in sorted(fixed) if fixed[p] != parsed.files.get(p))
        call(env, "write_file", path=path, content=fixed[path].decode())
        _, reward, *_ = call(env, "submit")
        if expected is None:
            assert 0.0 < reward < 1.0
        else:
            assert reward == expected
        env.close()


def test_tasks_of_ones_own(executor):
    env = gym.make("rlvr/Repo-v0", tasks=[own_task()], executor=executor)
    observation, _ = env.reset(seed=0)
    assert "calc/ops.py" in observation and "add(1, 2)" in observation
    _, reward, *_ = call(env, "submit")
    assert reward == 0.0
    env.reset(seed=0)
    call(env, "replace_in_file", path="calc/ops.py", old="a - b", new="a + b")
    _, reward, *_ = call(env, "submit")
    assert reward == 1.0
    env.reset(seed=0, options={"task": own_task()})
    assert env.unwrapped.oracle_reply().startswith("<tool_call>")
    env.close()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_turns": 0}, "max_turns"),
        ({"difficulty": 4}, "difficulty"),
        ({"split": "dev"}, "split"),
        ({"scoring": "most"}, "scoring"),
        ({"command_timeout": -1}, "command_timeout"),
        ({"count_tokens": "len"}, "count_tokens"),
        ({"tasks": [own_task()], "difficulty": 2}, "difficulty"),
        ({"tasks": [own_task(fix="--- a/x\n+++ b/x\n@@ -1 +1 @@\n-no\n+yes\n")]}, "fix"),
        ({"tasks": [own_task(fail_to_pass=[])]}, "fail_to_pass"),
        ({"backend": "podman"}, "backend"),
    ],
)
def test_arguments_are_checked_at_make(kwargs, message):
    with pytest.raises(EnvConfigError, match=message):
        gym.make("rlvr/Repo-v0", **kwargs)


def test_a_pinned_task_in_the_wrong_form_is_refused(executor):
    env = gym.make("rlvr/Repo-v0", executor=executor)
    bad = own_task()
    bad["answer"]["files"] = {"../escape.py": "x"}
    with pytest.raises(EnvConfigError, match="relative"):
        env.reset(options={"task": bad})
    env.close()


@pytest.mark.docker
def test_the_docker_backend_runs_episodes(docker_image):
    env = gym.make(
        "rlvr/Repo-v0", difficulty=1, backend="docker", backend_options={"image": docker_image}
    )
    try:
        env.reset(seed=0, options={"task_index": 0})
        total, done = 0.0, False
        while not done:
            _, reward, terminated, truncated, info = env.step(env.unwrapped.oracle_reply())
            total += reward
            done = terminated or truncated
        assert total == 1.0 and not info["infra_error"]
    finally:
        env.close()


def test_self_correction_resubmits_after_binary_feedback(executor):
    env = gym.make("rlvr/RepoSelfCorrect-v0", difficulty=1, executor=executor)
    env.reset(seed=0, options={"task_index": 0})
    observation, reward, terminated, _, info = call(env, "submit")
    assert (reward, terminated) == (0.0, False)
    assert observation == "Submitted: the hidden tests still fail. 2 submissions left."
    assert "verdict" not in info  # nothing about which hidden test failed
    call(env, "apply_patch", patch=fix_of(env))
    _, reward, terminated, _, _ = call(env, "submit")
    assert (reward, terminated) == (1.0, True)
    env.reset(seed=0, options={"task_index": 0})
    rewards = [call(env, "submit")[1:3] for _ in range(3)]
    assert rewards == [(0.0, False), (0.0, False), (0.0, True)]
    env.close()
