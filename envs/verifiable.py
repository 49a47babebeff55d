"""`VerifiableEnv`: a single-turn environment made of a task source and a verifier.

Most verifiable tasks need nothing more: the agent gets a prompt, replies once, and the verifier's
score is the reward. Family envs (`rlvr/Math-v0`, ...) subclass it to add their own task
generators, prompt wording and reference replies; users build one from a list of tasks and a
function with `rlvr.envs.register_task_env`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from rlvr.envs.core import Outcome, Start, TextEnv
from rlvr.envs.errors import EnvConfigError, ResetNeeded
from rlvr.envs.tasks import TaskSource, as_source
from rlvr.verifiers.function import FunctionVerifier, VerifyFunction
from rlvr.verifiers.types import Status, Task, TaskFormatError, Verdict, Verifier

logger = logging.getLogger(__name__)

RESET_OPTIONS = ("task", "task_index")


class VerifiableEnv(TextEnv):
    """A prompt, one reply, a verdict.

    ## Description
    Each episode poses one task from `tasks`; the agent's reply is judged by `verifier`.

    ## Action Space
    `TextSpace`: the reply as a `str`.

    ## Observation Space
    `TextSpace`: the prompt after `reset`; a one-line verdict after `step`.

    ## Rewards
    The verifier's score in [0, 1]. With `format_weight > 0` a second named term rewards a reply
    whose answer could be read at all: reward = (1 - w) * correctness + w * format.
    `info["rewards"]` holds the terms.

    ## Starting State
    A task drawn uniformly with `self.np_random`, or pinned with `options={"task": {...}}` or
    `options={"task_index": i}`.

    ## Episode End
    Terminates after the first reply.

    ## Arguments
    `tasks` (a task source or a list of tasks/dicts), `verifier` (a `Verifier`, or a function
    `fn(reply, task) -> bool | float | Verdict`), `system_prompt`, `prompt_template` (a format
    string with `{prompt}`), `format_weight` (default 0.0).

    ## Version History
    An env built from this class is versioned by the id it is registered under
    (`register_task_env("myorg/Name-v0", ...)`): bump it when the tasks, the prompt or the
    verifier change.
    """

    def __init__(
        self,
        tasks: TaskSource | Iterable[Task | Mapping[str, Any]],
        verifier: Verifier | VerifyFunction,
        *,
        system_prompt: str | None = None,
        prompt_template: str = "{prompt}",
        format_weight: float = 0.0,
        render_mode: str | None = None,
        max_text_length: int = 1 << 16,
    ) -> None:
        super().__init__(
            system_prompt=system_prompt, render_mode=render_mode, max_text_length=max_text_length
        )
        self.tasks = as_source(tasks)
        self.verifier = verifier if hasattr(verifier, "verify") else FunctionVerifier(verifier)
        if "{prompt}" not in prompt_template:
            raise EnvConfigError(
                f"prompt_template must contain '{{prompt}}', got {prompt_template!r}"
            )
        if not 0.0 <= format_weight < 1.0:
            raise EnvConfigError(f"format_weight must be in [0, 1), got {format_weight!r}")
        self.prompt_template = prompt_template
        self.format_weight = float(format_weight)
        self.task: Task | None = None

    # --- episode ---------------------------------------------------------------------------------

    def _start(self, options: dict[str, Any]) -> Start:
        self.task = self.choose_task(options)
        return Start(prompt=self.render_prompt(self.task), task_id=self.task.id)

    def choose_task(self, options: dict[str, Any]) -> Task:
        unknown = set(options) - set(RESET_OPTIONS)
        if unknown:
            raise EnvConfigError(
                f"unknown reset options {sorted(unknown)}; this env accepts {list(RESET_OPTIONS)}"
            )
        return choose_task(self.tasks, options, self.np_random, self.coerce_task)

    def coerce_task(self, task: Task | Mapping[str, Any]) -> Task:
        """Turn `options["task"]` into a `Task` (subclasses may fill defaults for their family)."""
        if isinstance(task, Task):
            return task
        try:
            return Task.from_dict(task)
        except TaskFormatError as exc:
            raise EnvConfigError(f"options['task']: {exc}") from None

    def render_prompt(self, task: Task) -> str:
        return self.prompt_template.format(prompt=task.prompt)

    def _answer(self, reply: str) -> Outcome:
        assert self.task is not None  # _start ran: TextEnv.step checks the order
        verdict = self.judge(reply, self.task)
        correctness = verdict.score if verdict.score is not None else 0.0
        rewards = {"correctness": correctness}
        reward = correctness
        if self.format_weight > 0:
            readable = verdict.status in (Status.CORRECT, Status.INCORRECT)
            rewards["format"] = 1.0 if readable else 0.0
            reward = (1 - self.format_weight) * correctness + self.format_weight * rewards["format"]
        return Outcome(
            feedback=self.feedback(verdict),
            reward=reward,
            terminated=True,
            verdict=verdict,
            rewards=rewards,
            infra_error=verdict.infra_error,
        )

    def judge(self, reply: str, task: Task) -> Verdict:
        """Run the verifier; a verifier that raises is an infrastructure error, never a 0."""
        try:
            verdict = self.verifier.verify(reply, task)
        except Exception as exc:
            logger.exception("verifier %r raised on task %s", self.verifier, task.id)
            return Verdict.error(f"verifier raised {type(exc).__name__}: {exc}")
        if not isinstance(verdict, Verdict):
            return Verdict.error(f"verifier returned {type(verdict).__name__}, not a Verdict")
        return verdict

    def feedback(self, verdict: Verdict) -> str:
        """The text the agent sees after a judged reply (never reveals the gold answer)."""
        headline = {
            Status.CORRECT: "Correct.",
            Status.INCORRECT: "Incorrect.",
            Status.UNPARSABLE: "No answer could be read from the reply.",
            Status.ERROR: "The reply could not be judged (infrastructure error).",
        }[verdict.status]
        return f"{headline} {verdict.details}".strip()

    def reference_reply(self, task: Task) -> str:
        """A reply that the verifier accepts for `task` (subclasses format it their way)."""
        return str(task.answer)

    def oracle_reply(self) -> str:
        if self.task is None:
            raise RuntimeError("call reset() before oracle_reply()")
        return self.reference_reply(self.task)

    # --- hooks for envs that drive this one (self-correction, tools) ----------------------------

    def begin(self, rng: np.random.Generator, options: dict[str, Any]) -> Start:
        """Start an episode on behalf of another env, drawing the task with that env's `rng`.

        Used by multi-turn envs built around a single-turn one (`SelfCorrectEnv`,
        `VerifiableToolEnv`): the outer env owns the conversation, this env only poses the task.
        Sharing the generator means the same seed poses the same task as this env alone does.
        """
        self.np_random = rng
        return self._start(dict(options))

    def attempt(self, reply: str) -> Outcome:
        """Judge `reply` for the current task without recording it or ending anything.

        May be called many times per task (a retry is judged like a first reply), so `_answer`
        must not consume per-episode state.
        """
        if self.task is None:
            raise ResetNeeded("start an episode (reset() or begin()) before attempt()")
        return self._answer(reply)


def as_verifiable_env(env: str | gym.Env, env_kwargs: Mapping[str, Any] | None = None) -> gym.Env:
    """The env another env builds on: an id (made here with `env_kwargs`) or an env instance.

    Returns the env as given or made (close it when done); its `.unwrapped` is a `VerifiableEnv`.
    """
    if isinstance(env, str):
        env = gym.make(env, **dict(env_kwargs or {}))
    elif env_kwargs:
        raise EnvConfigError("env_kwargs applies only when env is an id; configure the env itself")
    if not isinstance(env, gym.Env) or not isinstance(env.unwrapped, VerifiableEnv):
        raise EnvConfigError(
            f"expected the id or instance of a single-turn VerifiableEnv, got {env!r}; "
            "build one with rlvr.envs.register_task_env(...) or VerifiableEnv(tasks, verifier)"
        )
    return env


def choose_task(
    tasks: TaskSource,
    options: Mapping[str, Any],
    rng: np.random.Generator,
    coerce: Callable[[Any], Task],
) -> Task:
    """The task pinned by `options["task"]` (made a `Task` by `coerce`) or
    `options["task_index"]`, else one drawn uniformly with `rng`."""
    if "task" in options and "task_index" in options:
        raise EnvConfigError("pass either options['task'] or options['task_index'], not both")
    if "task" in options:
        return coerce(options["task"])
    if "task_index" in options:
        return tasks[options["task_index"]]
    return tasks[int(rng.integers(len(tasks)))]
