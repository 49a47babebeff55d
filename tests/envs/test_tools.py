"""Tool calls: parsing, schemas, the toolbox's error handling, the ToolUse loop (and the
deprecated ToolEnv), the calculator."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from typing import Literal

import gymnasium as gym
import pytest

from rlvr.envs import (
    EnvConfigError,
    Outcome,
    Start,
    TaskJudge,
    TextEnv,
    Verdict,
    check_env,
    register_task_env,
)
from rlvr.envs.errors import ToolError, ToolInfraError
from rlvr.envs.tools import (
    CalculatorError,
    Tool,
    Toolbox,
    ToolCall,
    ToolUse,
    VerifiableToolEnv,
    calculator_tool,
    evaluate,
    format_tool_call,
    off_the_clock,
    parse_tool_calls,
    tool,
    validate_arguments,
)
from rlvr.envs.tools.calculator import format_number
from rlvr.envs.tools.parsing import MAX_CALL_CHARS, MAX_FENCED_BLOCKS

# --- parsing -------------------------------------------------------------------------------------


def calls(reply: str) -> list[tuple[str, dict]]:
    return [(call.name, call.arguments) for call in parse_tool_calls(reply).calls]


def test_parses_tagged_blocks_including_an_unclosed_last_one():
    reply = (
        'Let me compute.\n<tool_call>{"name": "add", "arguments": {"a": 1, "b": 2}}</tool_call>\n'
        '<tool_call>\n{"name": "add", "arguments": {"a": 3, "b": 4}}'
    )
    assert calls(reply) == [("add", {"a": 1, "b": 2}), ("add", {"a": 3, "b": 4})]


def test_parses_openai_shapes_and_string_arguments():
    openai = {"type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}
    assert calls(f"<tool_call>{json.dumps(openai)}</tool_call>") == [("add", {"a": 1, "b": 2})]
    batch = {"tool_calls": [openai, {"name": "noop"}]}
    assert calls(json.dumps(batch)) == [("add", {"a": 1, "b": 2}), ("noop", {})]


def test_parses_fenced_and_bare_json_and_python_dicts_in_tags():
    fenced = 'I will search.\n```json\n{"name": "search", "parameters": {"query": "x"}}\n```'
    assert calls(fenced) == [("search", {"query": "x"})]
    bare = 'Calling {"name": "search", "args": {"query": "y"}} now.'
    assert calls(bare) == [("search", {"query": "y"})]
    python_style = "<tool_call>{'name': 'flag', 'arguments': {'on': True}}</tool_call>"
    assert calls(python_style) == [("flag", {"on": True})]
    fenced_in_tags = '<tool_call>\n```json\n{"name": "a", "arguments": {}}\n```\n</tool_call>'
    assert calls(fenced_in_tags) == [("a", {})]


def test_a_reply_with_json_that_is_not_a_call_is_a_final_answer():
    for reply in (
        "The answer is \\boxed{42}.",
        'The record is {"name": "Ada", "born": 1815}.',
        "```json\n[1, 2, 3]\n```",
        "",
    ):
        assert not parse_tool_calls(reply).is_tool_turn, reply


def test_unreadable_tagged_blocks_are_reported_not_ignored():
    parsed = parse_tool_calls("<tool_call>{name: add, oops</tool_call>")
    assert parsed.is_tool_turn and not parsed.calls
    assert "invalid JSON" in parsed.errors[0]
    assert "no 'name'" in parse_tool_calls('<tool_call>{"arguments": {}}</tool_call>').errors[0]
    bad_args = parse_tool_calls('<tool_call>{"name": "a", "arguments": "{x"}</tool_call>')
    assert "not JSON" in bad_args.errors[0]


def test_parsing_an_adversarial_reply_is_fast():
    reply = '{"a":' * 20_000 + "[{" * 20_000
    start = time.process_time()
    parse_tool_calls(reply)
    assert time.process_time() - start < 2.0


def test_only_the_first_code_blocks_are_decoded():
    block = '```json\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n```\n'
    # A 10 MB reply of code blocks took seconds to decode; the work is now bounded.
    assert len(parse_tool_calls(block * 10_000).calls) == MAX_FENCED_BLOCKS


@pytest.mark.parametrize(
    "reply",
    [
        "```json\n" + "[" * 100_000 + "\n```",  # json.loads raises RecursionError
        "<tool_call>" + "[" * 100_000 + "</tool_call>",
        "<tool_call>" + "[" * 900 + '{"name": "a", "arguments": {}}' + "]" * 900 + "</tool_call>",
        '<tool_call>{"name": "a", "arguments": {"x": ' + "[" * 800 + "]" * 800 + "}}</tool_call>",
        "<tool_call>{'name': 'a', 'arguments': {(1, 2): 3}}</tool_call>",  # not JSON: tuple key
        "<tool_call>{'name': 'a', 'arguments': {'x': {1, 2}}}</tool_call>",  # a set
    ],
)
def test_deep_or_non_json_calls_are_errors_not_exceptions(reply):
    parsed = parse_tool_calls(reply)
    assert not parsed.calls
    env = counter_env()
    env.reset(seed=0)
    observation, reward, terminated, _, info = env.step(reply)
    assert reward == 0.0 and not info["infra_error"]
    assert terminated or observation.startswith("Error: could not read")


def test_a_huge_call_is_refused_unread():
    keys = ", ".join(f"'k{i}': {i}" for i in range(300_000))  # 4 MB: ast took seconds and GBs
    env = counter_env()
    env.reset(seed=0)
    start = time.process_time()
    observation, *_ = env.step(f"<tool_call>{{'name': 'increment', 'arguments': {{{keys}}}}}")
    assert time.process_time() - start < 2.0
    assert observation.endswith(f"block: it is longer than {MAX_CALL_CHARS} characters")


def test_a_reply_of_many_unreadable_blocks_gets_a_short_answer():
    env = counter_env(max_calls_per_reply=3)
    env.reset(seed=0)
    observation, *_ = env.step("<tool_call></tool_call>" * 20_000)
    assert observation.count("Error: could not read") == 3
    assert "19997 more blocks could not be read" in observation
    assert env.observation_space.contains(observation)


# --- tools and schemas ---------------------------------------------------------------------------


@tool(timeout=1.0)
def scale(values: list[float], factor: float = 2.0, mode: Literal["up", "down"] = "up") -> list:
    """Scale numbers.

    Args:
        values: the numbers.
        factor: how much.
    """
    return [v * factor if mode == "up" else v / factor for v in values]


def test_schema_inferred_from_hints_and_docstring():
    spec = scale.spec()
    assert spec["type"] == "function"
    function = spec["function"]
    assert function["name"] == "scale" and function["description"] == "Scale numbers."
    parameters = function["parameters"]
    assert parameters["required"] == ["values"]
    assert parameters["properties"]["values"] == {
        "type": "array",
        "items": {"type": "number"},
        "description": "the numbers.",
    }
    assert parameters["properties"]["mode"] == {"enum": ["up", "down"]}
    assert parameters["additionalProperties"] is False


def test_validate_arguments_names_every_problem():
    schema = scale.parameters
    assert validate_arguments(schema, {"values": [1, 2.5]}) == []
    problems = validate_arguments(schema, {"factor": "3", "mode": "sideways", "extra": 1})
    assert "missing required argument 'values'" in problems
    assert any("factor must be of type number" in p for p in problems)
    assert any("mode must be one of" in p for p in problems)
    assert any("unknown argument 'extra'" in p for p in problems)
    assert validate_arguments(schema, {"values": [1, "x"]}) == [
        "values[1] must be of type number, got string 'x'"
    ]


def test_bad_tool_definitions_are_refused():
    with pytest.raises(EnvConfigError, match="must match"):
        Tool("bad name", "", {"type": "object"}, print)
    with pytest.raises(EnvConfigError, match="type 'object'"):
        Tool("ok", "", {"type": "string"}, print)
    with pytest.raises(EnvConfigError, match="two tools"):
        Toolbox([scale, scale])


def sleepy(seconds: float) -> str:
    time.sleep(seconds)
    return "awake"


def boom() -> str:
    raise ZeroDivisionError("division by zero")


def refuse() -> str:
    raise ToolError("no such page: /nowhere")


def broken_backend() -> str:
    raise ToolInfraError("connection refused")


def finish(answer: str) -> Outcome:
    return Outcome(f"submitted {answer}", 1.0, True)


TOOLBOX = Toolbox(
    [
        scale,
        Tool.from_function(sleepy, timeout=0.2),
        Tool.from_function(boom),
        Tool.from_function(refuse),
        Tool.from_function(broken_backend),
        Tool.from_function(finish),
        Tool.from_function(lambda: "x" * 10_000, name="chatty"),
    ],
    max_result_chars=200,
)


@pytest.mark.parametrize(
    ("call", "ok", "expected"),
    [
        (ToolCall("scale", {"values": [1, 2]}), True, "[2.0, 4.0]"),
        (ToolCall("nope", {}), False, "Error: unknown tool 'nope'; available tools: scale,"),
        (ToolCall("scale", {}), False, "Error: bad arguments for scale: missing required"),
        (ToolCall("boom", {}), False, "Error: boom raised ZeroDivisionError: division by zero"),
        (ToolCall("refuse", {}), False, "Error: no such page: /nowhere"),
        (ToolCall("sleepy", {"seconds": 5}), False, "Error: sleepy timed out after 0.2 s"),
        (ToolCall("sleepy", {"seconds": 0}), True, "awake"),
    ],
)
def test_toolbox_turns_every_failure_into_a_message(call, ok, expected):
    result = TOOLBOX.call(call)
    assert result.ok is ok
    assert result.content.startswith(expected)
    assert not result.infra_error


def test_toolbox_flags_infra_errors_ends_episodes_and_cuts_long_results():
    assert TOOLBOX.call(ToolCall("broken_backend", {})).infra_error
    finished = TOOLBOX.call(ToolCall("finish", {"answer": "x"}))
    assert finished.outcome is not None and finished.outcome.terminated
    chatty = TOOLBOX.call(ToolCall("chatty", {})).content
    assert len(chatty) < 300 and chatty.endswith("[9800 more characters cut]")


def test_a_tool_that_cannot_be_slow_by_the_agents_doing_times_out_as_an_infra_error():
    stalled = Tool.from_function(sleepy, name="fetch", timeout=0.1)
    box = Toolbox([stalled, dataclasses.replace(stalled, name="site", slow_is_infra=True)])
    agents = box.call(ToolCall("fetch", {"seconds": 1}))
    assert not agents.infra_error and agents.content == "Error: fetch timed out after 0.1 s"
    ours = box.call(ToolCall("site", {"seconds": 1}))
    assert ours.infra_error and ours.content.startswith("Error: the tool is unavailable")


def test_time_a_tool_waits_off_the_clock_never_counts_against_its_limit():
    def queued(wait: float, work: float) -> str:
        with off_the_clock():  # e.g. waiting for a free worker that other envs keep busy
            time.sleep(wait)
        time.sleep(work)
        return "done"

    box = Toolbox([Tool.from_function(queued, timeout=0.3)])
    assert box.call(ToolCall("queued", {"wait": 0.6, "work": 0.1})).content == "done"
    late = box.call(ToolCall("queued", {"wait": 0.1, "work": 1.0}))
    assert late.content == "Error: queued timed out after 0.3 s"
    with off_the_clock():  # outside a Toolbox call it does nothing
        pass


# --- the ToolUse loop ----------------------------------------------------------------------------

COUNT_TASKS = [{"id": f"count-{n}", "prompt": f"Reach {n}.", "answer": n} for n in (2, 3, 4)]


def said_the_target(reply: str, task) -> bool:
    return reply.strip() == str(task.answer)


class Counter(ToolUse):
    """Count to the task's target with an `increment` tool, then say the number: the final
    answer earns 1 only when the calls reached it too."""

    def episode_tools(self, env, task):
        self.count = 0  # per-episode state, reset by every episode

        def increment() -> int:
            self.count += 1
            return self.count

        return [Tool.from_function(increment), TOOLBOX.by_name["boom"]]

    def answer(self, env, reply):
        return self.run(reply, lambda final: self.judge_final(env, final))

    def judge_final(self, env, final):
        if self.count != env.task.answer:
            return Outcome("You did not count.", 0.0, True, verdict=Verdict.incorrect())
        return env.judge.judge(final, env.task)

    def oracle_reply(self, env):
        if self.count < env.task.answer:
            return format_tool_call("increment")
        return str(env.task.answer)


def counter_env(interaction: Counter | None = None, **tool_use_kwargs) -> TextEnv:
    return TextEnv(
        TaskJudge(COUNT_TASKS, said_the_target), interaction or Counter(**tool_use_kwargs)
    )


def test_tool_env_loop_passes_check_env():
    check_env(counter_env())


def test_tool_env_returns_tool_messages_and_keeps_going_after_bad_calls():
    env = counter_env(max_calls_per_reply=2)
    _, info = env.reset(seed=0)
    assert [spec["function"]["name"] for spec in info["tools"]] == ["increment", "boom"]
    assert "<tool_call>" in info["messages"][0]["content"]  # the system prompt shows the format
    reply = (
        '<tool_call>{"name": "increment", "arguments": {}}</tool_call>'
        '<tool_call>{"name": "boom", "arguments": {"x": 1}}</tool_call>'
        '<tool_call>{"name": "increment", "arguments": {}}</tool_call>'
        "<tool_call>not json</tool_call>"
    )
    observation, reward, terminated, _, info = env.step(reply)
    assert not terminated and reward == 0.0
    assert info["messages"][-1] == {"role": "tool", "content": observation}
    assert "[result 1]\nError: could not read the <tool_call> block" in observation
    assert "[result 2]\n1" in observation
    assert "unknown argument 'x'" in observation
    assert "only 2 calls run per reply; 1 more were ignored" in observation
    assert [(c["name"], c["ok"]) for c in info["tool_calls"]] == [
        ("increment", True),
        ("boom", False),
    ]
    assert env.interaction.count == 1


def test_tool_env_state_is_per_episode():
    env = counter_env()
    env.reset(seed=0)
    env.step('<tool_call>{"name": "increment", "arguments": {}}</tool_call>')
    env.reset(seed=0)
    assert env.interaction.count == 0 and env.interaction.calls == []


@pytest.mark.parametrize("module", ["rlvr.envs.tools", "rlvr.envs.tools.env"])
def test_tool_env_is_deprecated_and_names_its_replacement(module):
    import importlib

    tools_module = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=r"TextEnv\(judge, ToolUse\(tools\)\)") as caught:
        legacy_base = tools_module.ToolEnv
    assert caught[0].filename == __file__  # the warning points at the user's line
    assert "docs/multiturn.md#migrating-from-toolenv" in str(caught[0].message)
    assert "ToolEnv" not in tools_module.__dict__.get("__all__", ())
    with pytest.raises(AttributeError, match=f"module '{module}' has no attribute 'Nope'"):
        tools_module.Nope  # noqa: B018 (only ToolEnv is looked up lazily)

    class LegacyCounter(legacy_base):  # a ToolEnv subclass of an earlier release still runs
        def _begin(self, options):
            self.count, self.target = 0, 2
            return Start(prompt="Reach 2.", task_id="count-2")

        def episode_tools(self):
            def increment() -> int:
                self.count += 1
                return self.count

            return [Tool.from_function(increment)]

        def _final(self, reply):
            correct = reply.strip() == str(self.target) == str(self.count)
            return Outcome("done", float(correct), True, verdict=Verdict.correct())

        def oracle_reply(self):
            return format_tool_call("increment") if self.count < self.target else "2"

    check_env(LegacyCounter())


def test_verifiable_tool_env_wraps_a_registered_env():
    register_task_env(
        "test/ToolBase-v0",
        [{"prompt": "What is 123456 * 654321?", "answer": 123456 * 654321}],
        lambda reply, task: reply.strip() == str(task.answer),
        override=True,
    )
    env = VerifiableToolEnv("test/ToolBase-v0", [calculator_tool()])
    check_env(env)
    env.reset(seed=0)
    observation, *_ = env.step(
        '<tool_call>{"name": "calculator", "arguments": {"expression": "123456*654321"}}'
        "</tool_call>"
    )
    assert observation == str(123456 * 654321)
    _, reward, terminated, _, _ = env.step(observation)
    assert reward == 1.0 and terminated


def test_a_tool_infra_error_ends_the_episode_flagged():
    class Broken(Counter):
        def episode_tools(self, env, task):
            return [Tool.from_function(broken_backend)]

    env = counter_env(Broken())
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step(
        '<tool_call>{"name": "broken_backend", "arguments": {}}</tool_call>'
    )
    assert terminated and reward == 0.0 and info["infra_error"]


def test_a_hung_tool_does_not_hang_the_episode():
    class Hung(Counter):
        def episode_tools(self, env, task):
            release = threading.Event()
            self.release = release
            return [Tool.from_function(lambda: release.wait(30), name="hang", timeout=0.1)]

    hung = Hung()
    env = counter_env(hung)
    env.reset(seed=0)
    start = time.perf_counter()
    observation, *_ = env.step('<tool_call>{"name": "hang", "arguments": {}}</tool_call>')
    assert time.perf_counter() - start < 5
    assert "timed out" in observation
    hung.release.set()


# --- the calculator ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("48213 * 376 - 1200", "18126888"),
        ("0.1 + 0.2", "0.3"),
        ("2^10 + 7 // 2 - -7 % 3", "1025"),
        ("round(12500 * (1 + 4.3/100) ** 17, 2)", "25570.74"),
        ("round(2.5) + round(-2.5)", "0"),
        ("1/3", "0.333333333333333 (exactly 1/3)"),
        ("sqrt(144) + sqrt(2.25)", "13.5"),
        ("pow(37, 251, 9973) + lcm(4, 6) + gcd(12, 18) + comb(10, 3)", str(209 + 138)),
        ("factorial(20)", "2432902008176640000"),
        ("floor(pi * 1000)", "3141"),
    ],
)
def test_calculator_is_exact(expression, expected):
    assert format_number(evaluate(expression)) == expected


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("__import__('os').system('true')", "only calls of named functions"),
        ("__import__('os')", "unknown function '__import__'"),
        ("(1).__class__", "Attribute is not allowed"),
        ("lambda: 1", "Lambda is not allowed"),
        ("[x for x in range(9)]", "not allowed"),
        ("open('/etc/passwd')", "unknown function 'open'"),
        ("9**9**9", "more than 14000 bits"),
        ("factorial(10**6)", "factorial needs"),
        ("1e999", "too large"),
        ("1,234", "thousands separators"),
        ("1 / 0", "ZeroDivisionError"),
        ("2 < 3", "Compare is not allowed"),
        ("(" * 5000 + "1" + ")" * 5000, "longer than 1000 characters"),
        ("(" * 300 + "1" + ")" * 300, "cannot parse|nested"),
        ("1+" * 400 + "1", "more than 300 parts"),
        ("round(1, 10**9)", "within"),  # would build 10**(10**9)
        ("comb(100000, 50000)", "more than 14000 bits"),  # refused before computing
        ("perm(100000, 100000)", "more than 14000 bits"),
        ("pow(3, 2**2048 + 1, 2**2047 + 1)", "below 2\\*\\*2048"),
        ("", "empty"),
    ],
)
def test_calculator_refuses_what_it_must(expression, message):
    start = time.process_time()
    with pytest.raises(CalculatorError, match=message.replace("(", r"\(")):
        evaluate(expression)
    assert time.process_time() - start < 1.0


def test_calculator_tool_reports_errors_as_messages():
    box = Toolbox([calculator_tool()])
    result = box.call(ToolCall("calculator", {"expression": "import os"}))
    assert not result.ok and result.content.startswith("Error: cannot parse")


def test_make_works_for_registered_tool_env():
    env = gym.make("rlvr/ToolMath-v0")
    assert env.spec.max_episode_steps == 10
    env.close()
