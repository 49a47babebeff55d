"""`TextEnv`: the Gymnasium contract for text environments.

Observation: the text the agent sees now (the task prompt after `reset`, feedback after a step).
Action: the agent's reply, a `str`. An env is built from a judge (`rlvr.envs.judge`: poses tasks,
judges replies) and an interaction (`rlvr.envs.interactions`: how an episode unfolds around the
judge), the one way to write a single-agent env (docs/design.md). The base class owns the
bookkeeping every text environment needs:

- `info["messages"]`: the whole conversation as chat messages, system prompt first, so an agent
  using a chat template needs no bookkeeping of its own;
- `info["task_id"]`, `info["turn"]`, `info["infra_error"]`, and after a judged step
  `info["verdict"]` (a dict: status, score, extracted, details, data) and `info["rewards"]`;
- order checks (no `step` before `reset` or after the episode ended) and action validation.

Every call returns fresh `info` objects (Gymnasium's checker verifies this) and never timings,
so seeded episodes compare equal. `Start` and `Outcome`, what an interaction hands the env, are
data of the ground layer (`rlvr.core.episode`), exported here too.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, ClassVar

import gymnasium as gym

from rlvr.core.episode import Outcome, Start
from rlvr.envs.errors import ArgumentTypeError, EnvConfigError, NotTextError, ResetNeeded
from rlvr.envs.options import CheckedArguments
from rlvr.envs.spaces import TextSpace
from rlvr.verifiers.types import Task

if TYPE_CHECKING:
    from rlvr.envs.interactions import Interaction
    from rlvr.envs.judge import Judge

__all__ = [
    "Message",
    "Outcome",
    "Start",
    "TextEnv",
    "check_options",
    "format_conversation",
    "require_text",
]

Message = dict[str, Any]


class TextEnv(CheckedArguments, gym.Env[str, str]):
    """Base class of every rlvr text environment.

    `TextEnv(judge, interaction)` is a whole env: the judge poses each episode's task (drawn
    with `self.np_random`, or pinned by the reset options) and judges replies; the interaction
    (default `SingleTurn()`: one reply, judged) runs the episode. (A subclass of an earlier
    release may still implement `_start`, `_answer` and `oracle_reply` itself, without a judge;
    new envs put that code in a judge and an interaction.)

    Arguments:
        judge: poses tasks and judges replies (`rlvr.envs.judge.Judge`), or None.
        interaction: how an episode unfolds around the judge (`rlvr.envs.interactions`).
        system_prompt: first message of `info["messages"]`, or None for no system message; with
            a judge it comes from the interaction (the judge's, plus tool descriptions, ...).
        render_mode: "ansi" (render returns the conversation as text) or "human" (prints it).
        max_text_length: longest observation/action accepted by the spaces, in characters.
    """

    # Gymnasium reads metadata from the class but declares it as an instance attribute.
    metadata: ClassVar[dict[str, Any]] = {  # type: ignore[misc]
        "render_modes": ["ansi", "human"],
        "render_fps": 1,
    }
    observation_space: TextSpace
    action_space: TextSpace
    verifier_version: ClassVar[str | None] = None
    """For an env without a judge: the version of its judging, recorded with results (bump it
    whenever a change can alter a reward). An env with a judge is described by the judge."""

    def __init__(
        self,
        judge: Judge | None = None,
        interaction: Interaction | None = None,
        *,
        system_prompt: str | None = None,
        render_mode: str | None = None,
        max_text_length: int = 1 << 16,
    ) -> None:
        if judge is not None:
            if system_prompt is not None:
                raise EnvConfigError(
                    "the system prompt of an env with a judge is the judge's (its system_prompt)"
                )
            if interaction is None:
                from rlvr.envs.interactions import SingleTurn  # imports this module

                interaction = SingleTurn()
            system_prompt = interaction.system_prompt(judge)
        self.judge = judge
        self.interaction = interaction
        self.task: Task | None = None
        """The task of the current episode (set by the judge; subclasses may set their own)."""
        self.system_prompt = system_prompt
        self.render_mode = render_mode
        self.observation_space = TextSpace(max_text_length)
        self.action_space = TextSpace(max_text_length)
        self._messages: list[Message] = []
        self._task_id: str | None = None
        self._turn = 0
        self._done = True
        self._started = False

    # --- the episode, run by the judge and the interaction ----------------------------------------
    # (a judge-less subclass of an earlier release overrides these three itself)

    def _start(self, options: dict[str, Any]) -> Start:
        """Begin an episode (choose the task with `self.np_random` or from `options`)."""
        judge, interaction = self._parts("_start")
        self.task = judge.pose(self.np_random, options)
        start = interaction.start(self, self.task)
        self.system_prompt = interaction.system_prompt(judge)  # tools are listed per episode
        return start

    def _answer(self, reply: str) -> Outcome:
        """Judge or answer the agent's reply."""
        _, interaction = self._parts("_answer")
        return interaction.answer(self, reply)

    def oracle_reply(self) -> str:
        """A reply that earns full reward from the current state (used by `check_env` and the
        oracle baseline). Reads the gold answer: never give its output to a policy in training."""
        if self.judge is None:
            raise NotImplementedError(f"{type(self).__name__} has no oracle")
        if self.task is None:
            raise RuntimeError("call reset() before oracle_reply()")
        _, interaction = self._parts("oracle_reply")
        return interaction.oracle_reply(self)

    def _parts(self, method: str) -> tuple[Judge, Interaction]:
        if self.judge is None or self.interaction is None:
            raise NotImplementedError(
                f"{type(self).__name__} has no judge: build it as TextEnv(judge, interaction) "
                f"or implement {method}"
            )
        return self.judge, self.interaction

    # --- the Gymnasium API ----------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        check_options(options)
        start = self._start(dict(options or {}))
        self._messages = []
        if self.system_prompt is not None:
            self._messages.append({"role": "system", "content": self.system_prompt})
        self._messages.append({"role": "user", "content": start.prompt})
        self._task_id = start.task_id
        self._turn = 0
        self._done = False
        self._started = True
        info = self._info(infra_error=False)
        info.update(copy.deepcopy(start.info))
        if self.render_mode == "human":
            self.render()
        return start.prompt, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if not self._started:
            raise ResetNeeded("call env.reset() before env.step()")
        if self._done:
            raise ResetNeeded("the episode has ended; call env.reset() to start a new one")
        require_text(action)
        outcome = self._answer(action)
        self._messages.append({"role": "assistant", "content": action})
        self._turn += 1
        self._done = outcome.terminated
        if not outcome.terminated:
            self._messages.append({"role": outcome.role, "content": outcome.feedback})
        info = self._info(infra_error=outcome.infra_error)
        if outcome.verdict is not None:
            info["verdict"] = outcome.verdict.to_dict()
        rewards = outcome.rewards if outcome.rewards is not None else {"total": outcome.reward}
        info["rewards"] = {name: float(value) for name, value in rewards.items()}
        info.update(copy.deepcopy(outcome.info))
        if self.render_mode == "human":
            self.render()
        return outcome.feedback, float(outcome.reward), outcome.terminated, False, info

    def close(self) -> None:
        """Close the interaction and the judge (both may be closed more than once)."""
        if self.interaction is not None:
            self.interaction.close()
        if self.judge is not None:
            self.judge.close()
        super().close()

    def render(self) -> str | None:
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='ansi'")
            return None
        text = format_conversation(self._messages)
        if self.render_mode == "human":
            print(text, flush=True)
            return None
        return text

    # --- helpers ---------------------------------------------------------------------------------

    @property
    def messages(self) -> list[Message]:
        """A copy of the conversation so far."""
        return copy_messages(self._messages)

    @property
    def turn(self) -> int:
        return self._turn

    def _info(self, *, infra_error: bool) -> dict[str, Any]:
        return {
            "task_id": self._task_id,
            "messages": copy_messages(self._messages),
            "turn": self._turn,
            "infra_error": bool(infra_error),
        }


def copy_messages(messages: list[Message]) -> list[Message]:
    """A deep copy of `messages`, as `copy.deepcopy` makes it, built faster: every step's info
    holds one, and deepcopy's generic walk over each text was most of a step's own time in a long
    episode. Text values are immutable and kept; anything else goes through deepcopy (one memo
    for the whole list, so what messages share stays shared in the copy)."""
    memo: dict[int, Any] = {}
    copies = []
    for message in messages:
        copied = memo.get(id(message))
        if copied is None:
            if type(message) is dict:
                copied = {
                    key: value if type(value) is str else copy.deepcopy(value, memo)
                    for key, value in message.items()
                }
                memo[id(message)] = copied
            else:
                copied = copy.deepcopy(message, memo)
        copies.append(copied)
    return copies


def require_text(action: Any, who: str = "the action") -> None:
    """Refuse an action that is not a `str` with `NotTextError` (a `TypeError`)."""
    if not isinstance(action, str):
        raise NotTextError(
            f"{who} must be the reply as a str, got {type(action).__name__}; "
            "decode token ids with your tokenizer first"
        )


def check_options(options: Any) -> None:
    """Refuse reset options that are not a dict (or None) with `ArgumentTypeError`."""
    if options is not None and not isinstance(options, dict):
        raise ArgumentTypeError(f"options must be a dict or None, got {type(options).__name__}")


def format_conversation(messages: list[Message]) -> str:
    """The conversation as plain text, one block per message (for render and the terminal)."""
    blocks = []
    for message in messages:
        blocks.append(f"[{message['role']}]\n{message['content']}")
    return "\n\n".join(blocks)
