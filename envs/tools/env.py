"""Tool use: the `ToolUse` interaction (tool calls, then a final answer) and `VerifiableToolEnv`
(tools around any single-turn env's judge). A tool env is `TextEnv(judge, ToolUse(tools))`;
`ToolEnv`, the base of tool envs written without a judge, is deprecated (importable for one
release, with a `DeprecationWarning`; docs/multiturn.md#migrating-from-toolenv).

Each reply either calls tools or gives the final answer. A reply with tool calls gets the
results back as one `tool` message (reward 0, the episode goes on); a reply without one is the
final answer, judged by the judge. A tool may also end the episode itself by returning an
`Outcome` ("buy", "submit"). Bad calls never crash an episode: they come back as error messages.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import gymnasium as gym

from rlvr.envs import options as checks
from rlvr.envs.core import Outcome, Start, TextEnv
from rlvr.envs.interactions import Interaction
from rlvr.envs.judge import Judge
from rlvr.envs.tools.parsing import ToolCall, parse_tool_calls
from rlvr.envs.tools.tool import Tool, Toolbox, ToolResult
from rlvr.envs.verifiable import as_verifiable_env, base_of
from rlvr.verifiers.types import Task

CALL_FORMAT = (
    "To call a tool, write a block like\n"
    '<tool_call>{"name": "TOOL_NAME", "arguments": {...}}</tool_call>\n'
    "and end your reply there: the result comes back in the next message. One reply may hold "
    "several blocks."
)
DEFAULT_FINAL_INSTRUCTIONS = "When you have the final answer, reply without any tool call."

Oracle = Callable[["ToolUse", TextEnv], str]
"""`oracle(tool_use, env) -> reply`: the next reply of a scripted solver, read from the
interaction's state (`tool_use.called(...)`, a browser's page, ...) and the env's `task`."""


class ToolUse(Interaction):
    """Tool calls, then a final answer judged by the judge.

    Arguments:
        tools: the tools of every episode (a subclass may bind tools per episode instead, in
            `episode_tools`).
        instructions: put before the tool descriptions in the system prompt (default: the
            judge's system prompt).
        describe_tools: put the tools and the call format into the system prompt (turn off when
            a chat template renders `info["tools"]` itself).
        final_instructions: how to give the final answer (shown in the system prompt).
        tool_timeout: seconds a tool call may take unless the tool sets its own limit.
        max_calls_per_reply: calls run from one reply; later ones get an error.
        max_result_chars: longest tool result shown; longer ones are cut with a note.
        oracle: the scripted solver's next reply (default: the judge's one-shot reference
            reply, given as the final answer at once).

    State of the episode: `toolbox` (its tools), `calls` (each call so far: name, arguments,
    ok, and the result's text) and `called(name, **arguments)`.
    """

    def __init__(
        self,
        tools: Sequence[Tool] = (),
        *,
        instructions: str | None = None,
        describe_tools: bool = True,
        final_instructions: str = DEFAULT_FINAL_INSTRUCTIONS,
        tool_timeout: float = 10.0,
        max_calls_per_reply: int = 4,
        max_result_chars: int = 4000,
        oracle: Oracle | None = None,
    ) -> None:
        self.tool_timeout = checks.number(tool_timeout, name="tool_timeout", low=0.0, low_open=True)
        self.max_calls_per_reply = checks.integer(max_calls_per_reply, name="max_calls_per_reply")
        self.max_result_chars = checks.integer(
            max_result_chars, name="max_result_chars", minimum=100
        )
        self.tools = list(tools)
        Toolbox(self.tools)  # check names now rather than at the first reset
        self.instructions = instructions
        self.describe_tools = describe_tools
        self.final_instructions = final_instructions
        self.oracle = oracle
        self.toolbox = Toolbox((), self.tool_timeout, self.max_result_chars)
        self.calls: list[dict[str, Any]] = []

    # --- episodes --------------------------------------------------------------------------------

    def start(self, env: TextEnv, task: Task) -> Start:
        self.end_episode()
        start = super().start(env, task)
        return self.open(start, self.episode_tools(env, task))

    def episode_tools(self, env: TextEnv, task: Task) -> Sequence[Tool]:
        """Set up the episode's state and return its tools (bound to that state)."""
        return self.tools

    def open(self, start: Start, tools: Sequence[Tool]) -> Start:
        """Begin an episode with `tools`; `start` with the tools' specs in its info."""
        self.toolbox = Toolbox(tools, self.tool_timeout, self.max_result_chars)
        self.calls = []
        start.info.setdefault("tools", self.toolbox.specs())
        return start

    def end_episode(self) -> None:
        """Release per-episode state (called before the next episode and on close)."""

    def close(self) -> None:
        self.end_episode()

    def system_prompt(self, judge: Judge | None) -> str | None:
        instructions = self.instructions
        if instructions is None and judge is not None:
            instructions = judge.system_prompt
        parts = [instructions] if instructions else []
        if self.describe_tools:
            specs = "\n".join(json.dumps(spec, ensure_ascii=False) for spec in self.toolbox.specs())
            parts += [CALL_FORMAT, self.final_instructions, f"Available tools:\n{specs}"]
        elif self.final_instructions:
            parts.append(self.final_instructions)
        return "\n\n".join(parts) if parts else None

    # --- replies ---------------------------------------------------------------------------------

    def answer(self, env: TextEnv, reply: str) -> Outcome:
        judge_reply = super().answer  # the final answer is judged as a single reply is
        return self.run(reply, lambda final: judge_reply(env, final))

    def run(self, reply: str, final: Callable[[str], Outcome]) -> Outcome:
        """Run the tool calls of `reply`, or answer it with `final` when it calls none."""
        parsed = parse_tool_calls(reply)
        if not parsed.is_tool_turn:
            return final(reply)
        # Unreadable blocks count against the same per-reply limit as calls (a reply of
        # thousands of empty tags must not come back as megabytes of error messages).
        texts = [f"Error: {error}" for error in parsed.errors[: self.max_calls_per_reply]]
        if len(parsed.errors) > self.max_calls_per_reply:
            texts.append(f"Error: {len(parsed.errors) - len(texts)} more blocks could not be read")
        step_calls = []
        for index, call in enumerate(parsed.calls):
            if index == self.max_calls_per_reply:
                skipped = len(parsed.calls) - index
                texts.append(
                    f"Error: only {self.max_calls_per_reply} calls run per reply; "
                    f"{skipped} more were ignored"
                )
                break
            result = self.toolbox.call(call)
            step_calls.append(self._record(call, result))
            if result.outcome is not None:
                return _with_calls(result.outcome, step_calls)
            if result.infra_error:
                outcome = Outcome(result.content, 0.0, True, infra_error=True, role="tool")
                return _with_calls(outcome, step_calls)
            texts.append(result.content)
        if len(texts) == 1:
            feedback = texts[0]
        else:
            feedback = "\n\n".join(f"[result {i}]\n{text}" for i, text in enumerate(texts, 1))
        return _with_calls(Outcome(feedback, 0.0, False, role="tool"), step_calls)

    def _record(self, call: ToolCall, result: ToolResult) -> dict[str, Any]:
        record = {
            "name": call.name,
            "arguments": json.loads(json.dumps(call.arguments, default=str)),
            "ok": result.ok,
            "result": result.content,
        }
        self.calls.append(record)
        return record

    def called(self, name: str, **arguments: Any) -> bool:
        """Whether this episode already made the call `name(**arguments)` successfully."""
        return any(
            call["name"] == name and call["ok"] and call["arguments"] == arguments
            for call in self.calls
        )

    def oracle_reply(self, env: TextEnv) -> str:
        if self.oracle is None:
            return super().oracle_reply(env)
        return self.oracle(self, env)


def _with_calls(outcome: Outcome, step_calls: list[dict[str, Any]]) -> Outcome:
    outcome.info = {**outcome.info, "tool_calls": [dict(call) for call in step_calls]}
    return outcome


class VerifiableToolEnv(TextEnv):
    """Tools around a single-turn verifiable env.

    ## Description
    The judge of a single-turn env (an id such as `"rlvr/Math-v0"`, or an instance) poses the
    task and judges the final answer; in between the agent may call `tools` (the `ToolUse`
    interaction). The same seed poses the same task as that env.

    ## Action Space
    `TextSpace`: a reply with tool calls, or the final answer in the wrapped env's format.

    ## Observation Space
    `TextSpace`: the task prompt; then tool results (role `tool`); the verdict at the end.

    ## Rewards
    0 for tool turns; the wrapped env's reward for the final answer.

    ## Starting State
    The wrapped env's (`options={"task_index": i}` pins a task).

    ## Episode End
    Terminates on the final answer (or an infrastructure error). Register it with
    `max_episode_steps` so that a policy that only calls tools is truncated.

    ## Arguments
    `env`, `tools` (a list of `Tool`), `env_kwargs`, `split` (given to the env when `env` is an
    id), `system_prompt` (instructions before the tool descriptions; default: the judge's), and
    `ToolUse`'s: `describe_tools`, `final_instructions`, `tool_timeout`, `max_calls_per_reply`,
    `max_result_chars`; `render_mode`, `max_text_length`.

    ## Version History
    - v0: initial version.
    """

    def __init__(
        self,
        env: str | gym.Env,
        tools: Sequence[Tool],
        *,
        env_kwargs: Mapping[str, Any] | None = None,
        split: str | None = None,
        system_prompt: str | None = None,
        render_mode: str | None = None,
        max_text_length: int | None = None,
        **tool_use_kwargs: Any,
    ) -> None:
        self.env = as_verifiable_env(env, env_kwargs, split=split)
        base = base_of(self.env)
        interaction = ToolUse(tools, instructions=system_prompt, **tool_use_kwargs)
        if max_text_length is None:
            max_text_length = base.observation_space.max_length
        super().__init__(
            base.judge,
            interaction,
            render_mode=render_mode,
            max_text_length=max_text_length,
        )

    def close(self) -> None:
        super().close()
        self.env.close()  # the env the judge came from (closing the judge twice is harmless)


TOOL_ENV_DEPRECATION = (
    "rlvr.envs.tools.ToolEnv is deprecated and will be removed in the next release: build a "
    "tool env as TextEnv(judge, ToolUse(tools)), and for tools bound to the episode subclass "
    "ToolUse (episode_tools, end_episode); see docs/multiturn.md#migrating-from-toolenv"
)


def deprecated_names(module: str) -> Callable[[str], Any]:
    """The `__getattr__` of a module that still gives `ToolEnv`: it warns, naming the
    replacement, at the line that asked for the name (`import` or attribute)."""

    def module_getattr(name: str) -> Any:
        if name == "ToolEnv":
            warnings.warn(TOOL_ENV_DEPRECATION, DeprecationWarning, stacklevel=2)
            return _ToolEnv
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return module_getattr


__getattr__ = deprecated_names(__name__)


class _ToolEnv(TextEnv):
    """Deprecated (`TOOL_ENV_DEPRECATION`): the base class of tool-use envs without a judge,
    kept for one release. Subclasses implement `_begin`, `episode_tools`, `_final` and
    `oracle_reply`, and may override `_end_episode` to release per-episode state; the `ToolUse`
    interaction (`self.interaction`) runs the calls.

    Arguments: `system_prompt` (instructions put before the tool descriptions), and `ToolUse`'s:
    `describe_tools`, `final_instructions`, `tool_timeout`, `max_calls_per_reply`,
    `max_result_chars`; `render_mode`, `max_text_length`.
    """

    interaction: ToolUse

    def __init__(
        self,
        *,
        system_prompt: str | None = None,
        render_mode: str | None = None,
        max_text_length: int = 1 << 16,
        **tool_use_kwargs: Any,
    ) -> None:
        super().__init__(render_mode=render_mode, max_text_length=max_text_length)
        self.interaction = ToolUse(instructions=system_prompt, **tool_use_kwargs)

    # --- what subclasses implement -------------------------------------------------------------

    def _begin(self, options: dict[str, Any]) -> Start:
        """Choose the task and set up per-episode state."""
        raise NotImplementedError

    def episode_tools(self) -> Sequence[Tool]:
        """The tools of the episode `_begin` just set up (bound to its state)."""
        raise NotImplementedError

    def _final(self, reply: str) -> Outcome:
        """Judge a reply that calls no tool (the final answer)."""
        raise NotImplementedError

    def _end_episode(self) -> None:
        """Release per-episode state (called before the next episode and on close)."""

    # --- the loop --------------------------------------------------------------------------------

    def _start(self, options: dict[str, Any]) -> Start:
        self._end_episode()
        start = self.interaction.open(self._begin(options), self.episode_tools())
        self.system_prompt = self.interaction.system_prompt(None)
        return start

    def _answer(self, reply: str) -> Outcome:
        return self.interaction.run(reply, self._final)

    @property
    def toolbox(self) -> Toolbox:
        return self.interaction.toolbox

    @property
    def calls(self) -> list[dict[str, Any]]:
        """The calls of this episode so far: name, arguments, ok, and the result's text."""
        return self.interaction.calls

    def called(self, name: str, **arguments: Any) -> bool:
        """Whether this episode already made the call `name(**arguments)` successfully."""
        return self.interaction.called(name, **arguments)

    def close(self) -> None:
        self._end_episode()
        super().close()
