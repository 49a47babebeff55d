"""rlvr/ToolMath-v0: generated problems, their verifier, and the calculator trajectory."""

from __future__ import annotations

import dataclasses
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction

import gymnasium as gym
import pytest

import rlvr  # noqa: F401
from rlvr.envs import EnvConfigError, Task, check_env
from rlvr.envs.tool_math import NumericAnswerVerifier, ToolMathEnv
from rlvr.envs.tools import Toolbox, ToolCall, format_tool_call
from rlvr.envs.tools.calculator import evaluate, format_number
from rlvr.envs.tools.python import PythonRunner
from rlvr.sandboxes import get_executor
from tests.conftest import require_service
from tests.sandboxes.conftest import require_local_sandbox


def test_passes_check_env():
    env = gym.make("rlvr/ToolMath-v0")
    check_env(env)
    env.close()


@pytest.mark.parametrize("difficulty", [1, 2, 3])
def test_the_calculator_reproduces_every_gold_answer(difficulty):
    source = ToolMathEnv(difficulty=difficulty).judge.tasks
    families = set()
    for index in range(60):
        task = source[index]
        families.add(task.metadata["family"])
        computed = format_number(evaluate(task.metadata["expression"]))
        assert Fraction(computed) == Fraction(str(task.answer)), task.id
    assert len(families) >= 2


def test_sum_of_multiples_gold_matches_brute_force():
    source = ToolMathEnv(difficulty=3).judge.tasks
    checked = 0
    for index in range(40):
        task = source[index]
        if task.metadata["family"] != "multiples":
            continue
        numbers = [int(word) for word in task.prompt.replace("?", " ").split() if word.isdigit()]
        low, high, k = numbers[:3]
        assert task.answer == sum(n for n in range(low, high + 1) if n % k == 0)
        checked += 1
    assert checked >= 3


def test_train_and_test_splits_are_disjoint():
    train = {ToolMathEnv(split="train").judge.tasks[i].prompt for i in range(300)}
    test = {ToolMathEnv(split="test").judge.tasks[i].prompt for i in range(300)}
    assert not train & test


@pytest.mark.parametrize(
    ("reply", "answer", "status"),
    [
        ("so \\boxed{18126888}", 18126888, "correct"),
        ("\\boxed{18,126,888.}", 18126888, "correct"),
        ("Answer: 18126888", 18126888, "correct"),
        ("\\boxed{18126887}", 18126888, "incorrect"),
        ("\\boxed{25570.74}", "25570.74", "correct"),
        ("\\boxed{\\$25570.745}", "25570.74", "correct"),
        ("\\boxed{25570.76}", "25570.74", "incorrect"),
        ("\\boxed{<number>}", 5, "unparsable"),
        ("\\boxed{}", 5, "unparsable"),
        ("the answer is 5", 5, "unparsable"),
        ("\\boxed{5} no wait \\boxed{6}", 6, "correct"),
        ("Final answer:\n5", 5, "correct"),
    ],
)
def test_numeric_verifier(reply, answer, status):
    verdict = NumericAnswerVerifier().verify(reply, Task("t", "q", answer))
    assert verdict.status.value == status


@pytest.mark.parametrize("reply", ["\n" * 20_000, "\t\n" * 10_000, "Answer: " + "x" * 100_000])
def test_adversarial_final_answers_are_judged_fast_and_echoed_short(reply):
    env = gym.make("rlvr/ToolMath-v0")
    env.reset(seed=0)
    start = time.process_time()
    observation, reward, terminated, _, _ = env.step(reply)
    assert time.process_time() - start < 2.0  # 20,000 newlines took 6 s, 10 MB forever
    assert (reward, terminated) == (0.0, True)
    assert len(observation) < 500
    env.close()


def test_oracle_computes_with_the_calculator_then_answers():
    env = gym.make("rlvr/ToolMath-v0")
    env.reset(seed=7)
    first = env.unwrapped.oracle_reply()
    assert first.startswith('<tool_call>{"name": "calculator"')
    observation, reward, terminated, _, info = env.step(first)
    assert (reward, terminated) == (0.0, False)
    assert info["tool_calls"][0]["ok"]
    second = env.unwrapped.oracle_reply()
    assert f"\\boxed{{{observation}}}" in second
    _, reward, terminated, _, info = env.step(second)
    assert (reward, terminated) == (1.0, True)
    assert info["verdict"]["status"] == "correct"
    env.close()


def test_the_oracle_answers_a_pinned_task_that_has_no_expression():
    env = gym.make("rlvr/ToolMath-v0")
    env.reset(options={"task": {"prompt": "What is 17 * 3?", "answer": "51"}})
    _, reward, terminated, _, info = env.step(env.unwrapped.oracle_reply())
    assert (reward, terminated, info["verdict"]["status"]) == (1.0, True, "correct")
    env.close()


def test_a_policy_that_only_calls_tools_is_truncated():
    env = gym.make("rlvr/ToolMath-v0")
    env.reset(seed=0)
    call = '<tool_call>{"name": "calculator", "arguments": {"expression": "1+1"}}</tool_call>'
    total = 0.0
    turn = 0
    while turn < 20:
        turn += 1
        _, reward, terminated, truncated, _ = env.step(call)
        total += reward
        if terminated or truncated:
            break
    assert (turn, truncated, total) == (10, True, 0.0)
    env.close()


# --- the python tool (needs rlvr.sandboxes) --------------------------------------------------


def test_python_tool_option_follows_the_sandbox_availability(monkeypatch):
    # An installation without rlvr.sandboxes: True names the fix, "auto" offers the calculator.
    monkeypatch.setattr("rlvr.envs.tools.python.sandbox_api", lambda: None)
    with pytest.raises(EnvConfigError, match="python_tool=False"):
        ToolMathEnv(python_tool=True)
    assert [spec["function"]["name"] for spec in _tool_specs("auto")] == ["calculator"]
    with pytest.raises(EnvConfigError, match="python_tool must be"):
        ToolMathEnv(python_tool="yes")


def _tool_specs(python_tool):
    env = ToolMathEnv(python_tool=python_tool)
    _, info = env.reset(seed=0)
    env.close()
    return info["tools"]


@pytest.fixture(scope="module")
def python_env():
    require_service("bubblewrap", shutil.which("bwrap") is not None, "apt-get install bubblewrap")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RLVR_TOOL_SECRET", "do not leak")  # the sandbox must not pass it on
        env = ToolMathEnv(python_tool=True)
        env.reset(seed=0)
        yield env
        env.close()


def test_python_tool_runs_code_in_the_sandbox(python_env):
    names = [tool["function"]["name"] for tool in python_env.unwrapped.interaction.toolbox.specs()]
    assert names == ["calculator", "python"]
    code = "import os\nprint(sum(range(10**6)), os.environ.get('RLVR_TOOL_SECRET'))"
    observation, *_ = python_env.step(format_tool_call("python", code=code))
    assert observation == "499999500000 None"


def test_python_tool_reports_failures_and_time_outs_to_the_agent(python_env):
    observation, _, terminated, _, info = python_env.step(
        format_tool_call("python", code="raise ValueError('nope')")
    )
    assert observation.startswith("Error: the program did not finish cleanly (failed")
    assert "ValueError: nope" in observation and not terminated and not info["infra_error"]
    python_env.unwrapped.python.time_limit = 1.0
    observation, *_ = python_env.step(format_tool_call("python", code="while True: pass"))
    assert "timeout" in observation


def test_python_code_with_lone_surrogates_is_the_agents_error_not_ours(python_env):
    # JSON escapes in plain ASCII reach the tool as a lone surrogate; an infrastructure error
    # would end the episode and have the trainer drop the sample.
    reply = '<tool_call>{"name": "python", "arguments": {"code": "print(\'\\ud800\')"}}</tool_call>'
    python_env.reset(seed=0)
    observation, _, terminated, _, info = python_env.step(reply)
    assert "not valid Unicode" in observation and not terminated and not info["infra_error"]


def test_python_calls_waiting_for_a_shared_worker_are_never_infrastructure_errors():
    # Eight envs call python at once and share one sandbox worker; every program runs close to
    # its 1 s limit, so the last call waits some 6 s for the worker. The tool's deadline (here
    # 2 s past the limit, to keep the test short; 30 s by default) must start when a worker
    # takes the program: the queue is other envs' doing, not this agent's, nor a stalled sandbox.
    require_local_sandbox()
    with get_executor("local", workers=1, shared=False) as executor:
        executor.warm_up()
        runner = PythonRunner(time_limit=1.0, executor=executor)
        python = dataclasses.replace(runner.tool(), timeout=3.0)
        call = ToolCall("python", {"code": "import time\ntime.sleep(0.8)\nprint('done')"})
        with ThreadPoolExecutor(8) as envs:
            results = list(envs.map(lambda _: Toolbox([python]).call(call), range(8)))
    assert [(result.content, result.infra_error) for result in results] == [("done", False)] * 8
