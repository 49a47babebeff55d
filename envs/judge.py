"""Judges: what poses tasks and judges replies, apart from how an episode unfolds.

A `Judge` knows a family's tasks and how to score a reply to one; an `Interaction`
(`rlvr.envs.interactions`) knows how an episode unfolds around it (one reply, several attempts,
tool calls, ...); a `TextEnv` is built from the two. A judge holds no per-episode state: the
task is passed in every call, so one judge can serve several envs or seats, and wrappers such as
`SelfCorrectEnv` reuse the judge of the env they are given. Consumers read `env.unwrapped.judge`
(provenance: `describe()`) and `env.unwrapped.task` (the task posed).

`TaskJudge(tasks, verifier)` is the general judge: a task source and a `Verifier`, the reward
being the verifier's score. Families subclass it once to add their prompt wording, reference
reply and task checks (`MathJudge`, `CodeJudge`, `SQLJudge`, ...).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from rlvr.envs import options as checks
from rlvr.envs.core import Outcome, TextEnv
from rlvr.envs.errors import ArgumentTypeError, DatasetError, EnvConfigError
from rlvr.envs.tasks import ListSource, TaskSource, as_source
from rlvr.verifiers.function import FunctionVerifier, VerifyFunction
from rlvr.verifiers.types import Status, Task, TaskFormatError, Verdict, Verifier

if TYPE_CHECKING:
    import gymnasium as gym

logger = logging.getLogger(__name__)

RESET_OPTIONS = ("task", "task_index")
HEADLINES = {
    Status.CORRECT: "Correct.",
    Status.INCORRECT: "Incorrect.",
    Status.UNPARSABLE: "No answer could be read from the reply.",
    Status.ERROR: "The reply could not be judged (infrastructure error).",
}


@runtime_checkable
class Judge(Protocol):
    """Poses tasks and judges replies to them; holds no per-episode state."""

    system_prompt: str | None
    """The system message of the family (None for none)."""

    def pose(self, rng: np.random.Generator, options: Mapping[str, Any]) -> Task:
        """A task drawn with `rng` (the env's `np_random`), or pinned by the reset `options`
        (`task`, checked against the family's format, or `task_index`)."""
        ...

    def prompt(self, task: Task) -> str:
        """The first user message of an episode on `task`."""
        ...

    def judge(self, reply: str, task: Task) -> Outcome:
        """One final reply, judged: never raises on a bad reply (it scores 0), a failure of our
        machinery is an `infra_error`, and the feedback never reveals the gold answer."""
        ...

    def reference_reply(self, task: Task) -> str:
        """A one-shot reply that `judge` scores 1 (the oracle's; it reads the gold answer)."""
        ...

    def describe(self) -> dict[str, Any]:
        """What judges, for provenance: `name`, `version` (declared, or the rlvr-gym version as a
        fallback) and `declared`."""
        ...

    def close(self) -> None:
        """Release resources (sandboxes, databases); may be called more than once."""
        ...


class TaskJudge:
    """A task source and a verifier: the judge of single-answer tasks.

    Arguments:
        tasks: a task source, or a list of `Task`s or dicts.
        verifier: a `Verifier`, or a function `fn(reply, task) -> bool | float | Verdict`.
        prompt_template: a format string with `{prompt}`, the task's prompt.
        format_weight: in [0, 1); above 0 a second reward term pays a reply whose answer could
            be read at all: reward = (1 - w) * correctness + w * format.
        system_prompt: the family's system message, or None.
        checked: the tasks are known to pass `check` (a family's built-in tasks, which its tests
            check), so they are not checked again here; given tasks are checked at once.
    """

    def __init__(
        self,
        tasks: TaskSource | Iterable[Task | Mapping[str, Any]],
        verifier: Verifier | VerifyFunction,
        *,
        prompt_template: str = "{prompt}",
        format_weight: float = 0.0,
        system_prompt: str | None = None,
        checked: bool = False,
    ) -> None:
        if "{prompt}" not in prompt_template:
            raise EnvConfigError(
                f"prompt_template must contain '{{prompt}}', got {prompt_template!r}"
            )
        self.tasks = as_source(tasks)
        self.verifier = verifier if hasattr(verifier, "verify") else FunctionVerifier(verifier)
        self.prompt_template = prompt_template
        self.format_weight = checks.number(
            format_weight, name="format_weight", low=0.0, high=1.0, high_open=True
        )
        self.system_prompt = system_prompt
        if isinstance(self.tasks, ListSource) and not checked:
            for position, task in enumerate(self.tasks.tasks):  # fail now, not in training
                self._check(task, f"tasks item {position} ({{}})")

    # --- posing ----------------------------------------------------------------------------------

    def pose(self, rng: np.random.Generator, options: Mapping[str, Any]) -> Task:
        unknown = set(options) - set(RESET_OPTIONS)
        if unknown:
            raise EnvConfigError(
                f"unknown reset options {sorted(unknown, key=repr)}; "
                f"this env accepts {list(RESET_OPTIONS)}"
            )
        if "task" in options and "task_index" in options:
            raise EnvConfigError("pass either options['task'] or options['task_index'], not both")
        if "task" in options:
            return self.coerce(options["task"])
        if "task_index" in options:
            return self.item(task_index(options["task_index"], len(self.tasks)))
        return self.item(int(rng.integers(len(self.tasks))))

    def item(self, index: int) -> Task:
        """Task `index` of the source, which must be a `Task` (a source of your own may hold
        anything)."""
        task = self.tasks[index]
        if not isinstance(task, Task):
            raise DatasetError(
                f"item {index} of the task source {self.tasks!r:.80} is a "
                f"{type(task).__name__}, not a Task"
            )
        return task

    def coerce(self, task: Task | Mapping[str, Any]) -> Task:
        """`options["task"]` as a `Task` the family can judge."""
        if not isinstance(task, Task):
            try:
                task = Task.from_dict(task)
            except TaskFormatError as exc:
                raise EnvConfigError(f"options['task']: {exc}") from None
        self._check(task, "options['task']: {}")
        return task

    def check(self, task: Task) -> None:
        """Raise `TaskFormatError` for a task this family cannot judge (a gold answer in the
        wrong form). Given tasks are checked when the judge is made or the task pinned, so they
        are refused at once rather than as an infrastructure error on every reply."""

    def _check(self, task: Task, where: str) -> None:
        try:
            self.check(task)
        except TaskFormatError as exc:
            raise EnvConfigError(where.format(exc)) from None

    def prompt(self, task: Task) -> str:
        return self.prompt_template.format(prompt=task.prompt)

    # --- judging ---------------------------------------------------------------------------------

    def judge(self, reply: str, task: Task) -> Outcome:
        verdict = self.verdict(reply, task)
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

    def verdict(self, reply: str, task: Task) -> Verdict:
        """Run the verifier; a verifier that raises is an infrastructure error, never a 0."""
        return checked_verdict(self.verifier, reply, task)

    def feedback(self, verdict: Verdict) -> str:
        """The text the agent sees after a judged reply (never reveals the gold answer)."""
        return f"{HEADLINES[verdict.status]} {verdict.details}".strip()

    def reference_reply(self, task: Task) -> str:
        return str(task.answer)

    # --- the rest --------------------------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        return describe(self.verifier)

    def close(self) -> None:
        """Nothing to release: the verifier is the caller's (families that make their own
        verifier close it)."""


def checked_verdict(verifier: Verifier, reply: str, task: Task) -> Verdict:
    """`verifier.verify(reply, task)`, where a verifier that raises or returns something else
    than a `Verdict` gives an error verdict (our failure, an `infra_error`), never a 0."""
    try:
        verdict = verifier.verify(reply, task)
    except Exception as exc:
        logger.exception("verifier %r raised on task %s", verifier, task.id)
        return Verdict.error(f"verifier raised {type(exc).__name__}: {exc}")
    if not isinstance(verdict, Verdict):
        return Verdict.error(f"verifier returned {type(verdict).__name__}, not a Verdict")
    return verdict


def task_index(value: Any, size: int) -> int:
    """`options["task_index"]` checked against a source of `size` tasks."""
    name = "options['task_index']"
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
        raise ArgumentTypeError(f"{name} must be an int, got {value!r:.80}")
    if not 0 <= value < size:
        raise EnvConfigError(f"{name} must be an int from 0 to {size - 1}, got {value}")
    return int(value)


def describe(component: Any) -> dict[str, Any]:
    """Provenance of a verifier or judge: its qualified name and its declared `VERSION` (or
    `version`), bumped whenever a change can alter a verdict (docs/leaderboards.md); without
    one, the rlvr-gym version stands in, so results of different releases count as judged
    differently. A `FunctionVerifier` is described by the function it wraps."""
    subject = component.fn if isinstance(component, FunctionVerifier) else component
    for owner in (subject, component):
        for attribute in ("VERSION", "version"):
            value = getattr(owner, attribute, None)
            if isinstance(value, (str, int)) and not isinstance(value, bool):
                return {"name": qualname(subject), "version": str(value), "declared": True}
    return {"name": qualname(subject), "version": fallback_version(), "declared": False}


def qualname(obj: Any) -> str:
    """`module.QualName` of a class or function, else of the object's type."""
    target = obj if hasattr(obj, "__qualname__") else type(obj)
    return f"{target.__module__}.{target.__qualname__}"


def fallback_version() -> str:
    from rlvr import __version__  # the root package: loaded before any env can be made

    return f"rlvr-gym {__version__}"


def verifier_info(env: gym.Env) -> dict[str, Any]:
    """The name and version of what judges `env`'s replies: its judge's description, or for an
    env without a judge its class and declared `verifier_version`. (Results record it, and `rlvr
    serve` describes its envs with it; `rlvr.leaderboards.provenance` re-exports it.)"""
    base = env.unwrapped
    if isinstance(base, TextEnv) and base.judge is not None:
        return base.judge.describe()
    served = getattr(base, "served_verifier", None)  # an env served by `rlvr serve`
    if isinstance(served, dict) and served:
        return served
    declared = base.verifier_version if isinstance(base, TextEnv) else None
    return {
        "name": qualname(type(base)),
        "version": declared if declared is not None else fallback_version(),
        "declared": declared is not None,
    }
