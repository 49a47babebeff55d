"""`VerifiableEnv`: a single-turn environment made of a task source and a verifier.

Most verifiable tasks need nothing more: the agent gets a prompt, replies once, and the verifier's
score is the reward. It is `TextEnv(TaskJudge(tasks, verifier, ...))`, the env that
`rlvr.envs.register_task_env` registers. Envs built on another env (`SelfCorrectEnv`,
`VerifiableToolEnv`) take that env's judge with `as_verifiable_env` and `base_of`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import gymnasium as gym

from rlvr.envs.core import TextEnv
from rlvr.envs.errors import EnvConfigError
from rlvr.envs.interactions import SingleTurn
from rlvr.envs.judge import TaskJudge
from rlvr.envs.options import declare, optional, real, tasks_argument, text
from rlvr.envs.tasks import TaskSource
from rlvr.verifiers.function import VerifyFunction
from rlvr.verifiers.types import Task, Verdict, Verifier


def verifier_argument(value: Any, name: str) -> Any:
    """A `Verifier` (with `verify(reply, task)`) or a function `fn(reply, task)`."""
    if not (hasattr(value, "verify") or callable(value)):
        raise EnvConfigError(
            f"{name} must be a Verifier or a function fn(reply, task) -> bool | float | Verdict, "
            f"got {value!r:.80}"
        )
    return value


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

    argument_checks = declare(
        tasks=tasks_argument,
        verifier=verifier_argument,
        system_prompt=optional(text),
        prompt_template=text,
        format_weight=real(0.0, 1.0, high_open=True),
    )

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
        judge = _HookedJudge(
            self,
            tasks,
            verifier,
            prompt_template=prompt_template,
            format_weight=format_weight,
            system_prompt=system_prompt,
        )
        super().__init__(
            judge, SingleTurn(), render_mode=render_mode, max_text_length=max_text_length
        )
        self.tasks = judge.tasks
        self.verifier = judge.verifier

    # Hooks of earlier releases, kept for subclasses: a subclass of `TaskJudge` (passed as
    # `TextEnv(judge)`) is the way to customise a family now.

    def render_prompt(self, task: Task) -> str:
        return TaskJudge.prompt(self._judge, task)

    def coerce_task(self, task: Task | Mapping[str, Any]) -> Task:
        return TaskJudge.coerce(self._judge, task)

    def feedback(self, verdict: Verdict) -> str:
        return TaskJudge.feedback(self._judge, verdict)

    def reference_reply(self, task: Task) -> str:
        return TaskJudge.reference_reply(self._judge, task)

    @property
    def _judge(self) -> TaskJudge:
        assert isinstance(self.judge, TaskJudge)
        return self.judge


class _HookedJudge(TaskJudge):
    """The judge of a `VerifiableEnv`: a `TaskJudge` that goes through the env's hooks, so a
    subclass overriding `render_prompt`, `coerce_task`, `feedback` or `reference_reply` is
    judged its way, alone or wrapped."""

    def __init__(self, env: VerifiableEnv, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.env = env

    def prompt(self, task: Task) -> str:
        return self.env.render_prompt(task)

    def coerce(self, task: Task | Mapping[str, Any]) -> Task:
        return self.env.coerce_task(task)

    def feedback(self, verdict: Verdict) -> str:
        return self.env.feedback(verdict)

    def reference_reply(self, task: Task) -> str:
        return self.env.reference_reply(task)


def as_verifiable_env(
    env: str | gym.Env,
    env_kwargs: Mapping[str, Any] | None = None,
    *,
    split: str | None = None,
) -> gym.Env:
    """The env another env builds on: an id (made here with `env_kwargs`, and `split` when
    given) or an env instance, whose `.unwrapped` is a single-turn env with a judge.

    Returns the env as given or made (close it when done); `base_of` gives the env under it.
    """
    made = isinstance(env, str)
    if isinstance(env, str):
        kwargs = dict(env_kwargs or {})
        if split is not None:
            kwargs["split"] = split
        env = make_by_id(env, kwargs)
    elif env_kwargs or split is not None:
        raise EnvConfigError(
            "env_kwargs and split apply only when env is an id; configure the env itself"
        )
    base = env.unwrapped if isinstance(env, gym.Env) else None
    if not isinstance(base, TextEnv) or not isinstance(base.interaction, SingleTurn):
        if isinstance(env, gym.Env) and made:
            env.close()
        raise EnvConfigError(
            f"expected the id or instance of a single-turn env with a judge (a VerifiableEnv, "
            f"rlvr/Math-v0, ...), got {env!r}; build one with rlvr.envs.register_task_env(...) "
            "or VerifiableEnv(tasks, verifier)"
        )
    return env


def make_by_id(env_id: str, kwargs: Mapping[str, Any]) -> gym.Env:
    """`gym.make(env_id, **kwargs)`, with gymnasium's refusals (an unknown id, a render_mode
    that is not text, which gym.make reads before the env does) as `EnvConfigError`."""
    bad_names = [name for name in kwargs if not isinstance(name, str)]
    if bad_names:
        raise EnvConfigError(f"env_kwargs names must be str, got {bad_names!r:.120}")
    render_mode = kwargs.get("render_mode")
    if render_mode is not None and not isinstance(render_mode, str):
        raise EnvConfigError(
            f"env_kwargs['render_mode'] must be a str or None, got {render_mode!r:.120}"
        )
    try:
        return gym.make(env_id, **kwargs)
    except gym.error.Error as exc:
        raise EnvConfigError(f"env={env_id!r:.120}: {exc}") from None


def base_of(env: gym.Env) -> TextEnv:
    """The single-turn env with a judge under an env returned by `as_verifiable_env`."""
    base = env.unwrapped
    assert isinstance(base, TextEnv) and base.judge is not None  # as_verifiable_env checked
    return base
