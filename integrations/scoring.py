"""Judging a trainer's completions with an env's own judge.

`EnvJudge(env_id, env_kwargs)` makes the env once and judges replies to tasks with
`env.unwrapped.judge.judge(reply, task)`: the same call, on the same task, as an episode of the
env makes, so a trainer's reward is the env's verdict. It judges a batch in a few threads (the
verifiers are thread-safe; a shared sandbox pool bounds the code runs) and remembers the last
batch, so that several reward terms of one completion (correctness, format) judge it once.

Only envs whose reward is the judge's verdict on one final reply can be judged this way: a
single reply (`SingleTurn`), or tool calls then a final answer (`ToolUse`: the trainer runs the
tools, see `rlvr.integrations.trl.environment_factory`). Interactions whose reward depends on
more than the last reply (self-correction, SQL exploration, a web site's purchases) are refused.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rlvr.integrations.errors import IntegrationConfigError
from rlvr.verifiers.types import Status, Task

if TYPE_CHECKING:
    from rlvr.envs.core import Outcome, TextEnv
    from rlvr.envs.judge import Judge

logger = logging.getLogger(__name__)

Completion = str | Sequence[Mapping[str, Any]]
"""A completion as trainers hand it over: text, or chat messages (the last assistant message
is the final reply)."""


@dataclass(frozen=True)
class Score:
    """How the env judges one reply. Every value is None when the reply could not be judged
    because our machinery failed (`infra_error`): trainers drop the sample."""

    reward: float | None
    """The env's reward for the reply (with `format_weight`, the weighted sum of the terms)."""
    correctness: float | None
    """The verifier's score in [0, 1]."""
    format: float | None
    """1.0 when an answer could be read from the reply at all (the judge's format term)."""
    status: str
    """The verdict's status (correct, incorrect, unparsable, error), or "unfinished" for a
    completion that ended on a tool call."""
    infra_error: bool = False

    @classmethod
    def of(cls, outcome: Outcome) -> Score:
        verdict = outcome.verdict
        if outcome.infra_error:
            return cls(None, None, None, Status.ERROR.value, True)
        terms = outcome.rewards or {}
        readable = verdict is not None and verdict.status in (Status.CORRECT, Status.INCORRECT)
        return cls(
            reward=float(outcome.reward),
            correctness=float(terms.get("correctness", outcome.reward)),
            format=float(terms.get("format", 1.0 if readable else 0.0)),
            status=verdict.status.value if verdict is not None else "judged",
        )


UNFINISHED = Score(0.0, 0.0, 0.0, "unfinished")
"""A completion that stopped on a tool call never gave a final answer: 0, as the env's episode
would (it is the policy's doing, not an infrastructure error)."""
INFRA_ERROR = Score(None, None, None, Status.ERROR.value, True)


def final_reply(completion: Completion) -> str | None:
    """The final reply of a completion: the text, or the last assistant message's content; None
    when that message calls tools (the episode never got a final answer)."""
    if isinstance(completion, str):
        return completion
    assistant = [m for m in completion if m.get("role") == "assistant"]
    if not assistant:
        return ""
    last = assistant[-1]
    if last.get("tool_calls"):
        return None
    content = last.get("content") or ""
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if part.get("type") == "text")


class EnvJudge:
    """The judge of one env (`gym.make(env_id, **env_kwargs)`), for judging replies to tasks.

    Thread-safe; `close()` releases the env (its sandboxes, databases). A pickled copy (a
    trainer's worker process) makes its own env on first use.
    """

    def __init__(
        self, env_id: str, env_kwargs: Mapping[str, Any] | None = None, *, workers: int = 8
    ) -> None:
        if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
            raise IntegrationConfigError(f"workers must be an int >= 1, got {workers!r}")
        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs or {})
        self.workers = workers
        self._lock = threading.Lock()
        self._env: TextEnv | None = None
        self._last: dict[tuple[str, str, str], Score] = {}
        self.env  # noqa: B018  (made now: a bad id or argument fails here, not mid-training)

    @property
    def env(self) -> TextEnv:
        """The env (made on first use)."""
        with self._lock:
            if self._env is None:
                self._env = judged_env(self.env_id, self.env_kwargs)
            return self._env

    @property
    def judge(self) -> Judge:
        judge = self.env.judge
        assert judge is not None  # judged_env checked
        return judge

    def task(self, task: Task) -> Task:
        """`task` as the judge accepts it (checked against the family's format, as a pinned
        task is); a task the judge cannot judge raises `IntegrationConfigError`."""
        coerce = getattr(self.judge, "coerce", None)
        if coerce is None:
            return task
        try:
            return coerce(task)
        except ValueError as exc:
            raise IntegrationConfigError(
                f"{self.env_id} cannot judge task {task.id!r}: {exc}"
            ) from None

    def judge_replies(self, replies: Sequence[str | None], tasks: Sequence[Task]) -> list[Score]:
        """The score of each reply to its task (None for a reply: an unfinished completion)."""
        keys = [_key(reply, task) for reply, task in zip(replies, tasks)]
        with self._lock:
            known = {key: self._last[key] for key in keys if key in self._last}
        pending = {key: (reply, task) for key, reply, task in zip(keys, replies, tasks)}
        for key in known:
            pending.pop(key)
        judged = dict(zip(pending, self._judge_all(list(pending.values()))))
        scores = {**known, **judged}
        with self._lock:
            self._last = scores
        return [scores[key] for key in keys]

    def judge_reply(self, reply: str | None, task: Task) -> Score:
        return self.judge_replies([reply], [task])[0]

    def _judge_all(self, items: list[tuple[str | None, Task]]) -> list[Score]:
        if self.workers == 1 or len(items) < 2:
            return [self._judge_one(reply, task) for reply, task in items]
        with ThreadPoolExecutor(max_workers=min(self.workers, len(items))) as pool:
            return list(pool.map(lambda item: self._judge_one(*item), items))

    def _judge_one(self, reply: str | None, task: Task) -> Score:
        if reply is None:
            return UNFINISHED
        try:
            return Score.of(self.judge.judge(reply, task))
        except Exception:  # a judge must not raise on a reply: our failure, never a 0
            logger.exception("%s: the judge raised on task %s", self.env_id, task.id)
            return INFRA_ERROR

    def close(self) -> None:
        with self._lock:
            env, self._env = self._env, None
            self._last = {}
        if env is not None:
            env.close()

    def __getstate__(self) -> dict[str, Any]:
        return {"env_id": self.env_id, "env_kwargs": self.env_kwargs, "workers": self.workers}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        self._env = None
        self._last = {}

    def __repr__(self) -> str:
        return f"EnvJudge({self.env_id!r}, {self.env_kwargs!r})"


def _key(reply: str | None, task: Task) -> tuple[str, str, str]:
    return (task.id, repr(task.answer), "\0unfinished" if reply is None else reply)


def judged_env(env_id: str, env_kwargs: Mapping[str, Any]) -> TextEnv:
    """`gym.make(env_id, **env_kwargs)`, checked to be an env a reward function can judge."""
    import gymnasium as gym

    import rlvr.envs  # noqa: F401  (registers the built-in ids)
    from rlvr.envs.core import TextEnv

    try:
        env = gym.make(env_id, **dict(env_kwargs)).unwrapped
    except (gym.error.Error, TypeError) as exc:  # an unknown id or keyword argument
        raise IntegrationConfigError(f"cannot make {env_id!r}: {exc}") from None
    if not isinstance(env, TextEnv) or env.judge is None:
        env.close()
        raise IntegrationConfigError(
            f"{env_id} has no judge (rlvr.envs.Judge): its rewards come from its own episode "
            "code, which a trainer's reward function cannot call; build it as "
            "TextEnv(judge, interaction)"
        )
    problem = _unsupported(env)
    if problem is not None:
        env.close()
        raise IntegrationConfigError(f"{env_id}: {problem}")
    return env


def _unsupported(env: TextEnv) -> str | None:
    from rlvr.envs.core import TextEnv
    from rlvr.envs.interactions import Interaction, SingleTurn
    from rlvr.envs.tools.env import ToolUse
    from rlvr.envs.web.base import WebSite

    for method in ("_start", "_answer"):
        if getattr(type(env), method) is not getattr(TextEnv, method):
            return (
                f"{type(env).__name__} overrides TextEnv.{method}, so its episodes are its own "
                "code, which a trainer's reward function cannot reproduce"
            )
    interaction = env.interaction
    if type(interaction) in (Interaction, SingleTurn):
        return None
    if isinstance(interaction, ToolUse) and not isinstance(interaction, WebSite):
        return None  # tools, then a final answer judged by the judge
    return (
        f"its episodes unfold through {type(interaction).__name__}, whose reward depends on "
        "more than one final reply, so a trainer's reward function cannot reproduce it; use a "
        "single-turn env (e.g. the env it wraps) or a tool env"
    )
