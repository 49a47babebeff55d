"""`ToolEnv`: the base of tool-use environments, and `VerifiableToolEnv`, tools around any
single-turn verifiable env.

Each reply either calls tools or gives the final answer. A reply with tool calls gets the
results back as one `tool` message (reward 0, the episode goes on); a reply without one is the
final answer, judged by the subclass. A tool may also end the episode itself by returning an
`Outcome` ("buy", "submit"). Bad calls never crash an episode: they come back as error messages.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym

from rlvr.envs.core import Outcome, Start, TextEnv
from rlvr.envs.errors import EnvConfigError
from rlvr.envs.tools.parsing import ToolCall, parse_tool_calls
from rlvr.envs.tools.tool import Tool, Toolbox, ToolResult
from rlvr.envs.verifiable import as_verifiable_env, judge_of

CALL_FORMAT = (
    "To call a tool, write a block like\n"
    '<tool_call>{"name": "TOOL_NAME", "arguments": {...}}</tool_call>\n'
    "and end your reply there: the result comes back in the next message. One reply may hold "
    "several blocks."
)
DEFAULT_FINAL_INSTRUCTIONS = "When you have the final answer, reply without any tool call."


class ToolEnv(TextEnv):
    """Base class of tool-use envs. Subclasses implement `_begin`, `episode_tools`, `_final` and
    `oracle_reply`, and may override `_end_episode` to release per-episode state.

    Arguments:
        system_prompt: instructions put before the tool descriptions (None for none).
        describe_tools: put the tools and the call format into the system prompt (turn off when
            a chat template renders `info["tools"]` itself).
        final_instructions: how to give the final answer (shown in the system prompt).
        tool_timeout: seconds a tool call may take unless the tool sets its own limit.
        max_calls_per_reply: calls run from one reply; later ones get an error.
        max_result_chars: longest tool result shown; longer ones are cut with a note.
    """

    def __init__(
        self,
        *,
        system_prompt: str | None = None,
        describe_tools: bool = True,
        final_instructions: str = DEFAULT_FINAL_INSTRUCTIONS,
        tool_timeout: float = 10.0,
        max_calls_per_reply: int = 4,
        max_result_chars: int = 4000,
        render_mode: str | None = None,
        max_text_length: int = 1 << 16,
    ) -> None:
        super().__init__(render_mode=render_mode, max_text_length=max_text_length)
        if tool_timeout <= 0:
            raise EnvConfigError(f"tool_timeout must be > 0 seconds, got {tool_timeout!r}")
        if max_calls_per_reply < 1:
            raise EnvConfigError(f"max_calls_per_reply must be >= 1, got {max_calls_per_reply!r}")
        if max_result_chars < 100:
            raise EnvConfigError(f"max_result_chars must be >= 100, got {max_result_chars!r}")
        self.instructions = system_prompt
        self.describe_tools = describe_tools
        self.final_instructions = final_instructions
        self.tool_timeout = float(tool_timeout)
        self.max_calls_per_reply = max_calls_per_reply
        self.max_result_chars = max_result_chars
        self.toolbox = Toolbox((), tool_timeout, max_result_chars)
        self.calls: list[dict[str, Any]] = []
        """The calls of this episode so far: name, arguments, ok, and the result's text."""

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
        start = self._begin(options)
        self.toolbox = Toolbox(self.episode_tools(), self.tool_timeout, self.max_result_chars)
        self.calls = []
        self.system_prompt = self.compose_system_prompt()
        start.info.setdefault("tools", self.toolbox.specs())
        return start

    def compose_system_prompt(self) -> str | None:
        parts = [self.instructions] if self.instructions else []
        if self.describe_tools:
            specs = "\n".join(json.dumps(spec, ensure_ascii=False) for spec in self.toolbox.specs())
            parts += [CALL_FORMAT, self.final_instructions, f"Available tools:\n{specs}"]
        elif self.final_instructions:
            parts.append(self.final_instructions)
        return "\n\n".join(parts) if parts else None

    def _answer(self, reply: str) -> Outcome:
        parsed = parse_tool_calls(reply)
        if not parsed.is_tool_turn:
            return self._final(reply)
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
                return self._with_calls(result.outcome, step_calls)
            if result.infra_error:
                outcome = Outcome(result.content, 0.0, True, infra_error=True, role="tool")
                return self._with_calls(outcome, step_calls)
            texts.append(result.content)
        if len(texts) == 1:
            feedback = texts[0]
        else:
            feedback = "\n\n".join(f"[result {i}]\n{text}" for i, text in enumerate(texts, 1))
        return self._with_calls(Outcome(feedback, 0.0, False, role="tool"), step_calls)

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

    @staticmethod
    def _with_calls(outcome: Outcome, step_calls: list[dict[str, Any]]) -> Outcome:
        outcome.info = {**outcome.info, "tool_calls": [dict(call) for call in step_calls]}
        return outcome

    def close(self) -> None:
        self._end_episode()
        super().close()


class VerifiableToolEnv(ToolEnv):
    """Tools around a single-turn verifiable env.

    ## Description
    The wrapped env (an id such as `"rlvr/Math-v0"`, or an instance) poses the task and judges
    the final answer; in between the agent may call `tools`. The same seed poses the same task as
    the wrapped env.

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
    `env`, `tools` (a list of `Tool`), `env_kwargs`, and `ToolEnv`'s arguments.

    ## Version History
    - v0: initial version.
    """

    def __init__(
        self,
        env: str | gym.Env,
        tools: Sequence[Tool],
        *,
        env_kwargs: Mapping[str, Any] | None = None,
        **tool_env_kwargs: Any,
    ) -> None:
        self.env = as_verifiable_env(env, env_kwargs)
        self.inner = self.env.unwrapped
        judge = judge_of(self.env)
        tool_env_kwargs.setdefault("system_prompt", judge.system_prompt)
        tool_env_kwargs.setdefault("max_text_length", self.inner.observation_space.max_length)
        super().__init__(**tool_env_kwargs)
        self.judge = judge
        self.tools = list(tools)
        Toolbox(self.tools)  # check names now rather than at the first reset

    def _begin(self, options: dict[str, Any]) -> Start:
        self.task = self.judge.pose(self.np_random, options)
        return Start(self.judge.prompt(self.task), self.task.id)

    def episode_tools(self) -> Sequence[Tool]:
        return self.tools

    def _final(self, reply: str) -> Outcome:
        return self.judge.judge(reply, self.task)

    def oracle_reply(self) -> str:
        if self.task is None:
            raise RuntimeError("call reset() before oracle_reply()")
        return self.judge.reference_reply(self.task)

    def close(self) -> None:
        super().close()
        self.env.close()
