"""Interactions: how an episode unfolds around a judge.

A `TextEnv(judge, interaction)` asks its judge for the task (`env.task`), then hands the episode
to its interaction: `start` gives the first message, `answer` answers each reply (judging the
final one with `env.judge.judge`), `oracle_reply` says what the oracle replies now. Per-episode
state (attempts so far, tool calls, a browser session) lives on the interaction and is reset in
`start`; one interaction serves one env.

- `SingleTurn()`: one reply, judged.
- `SelfCorrect(max_attempts, feedback, reward, bonus)`: attempts with feedback in between.
- `ToolUse(tools, ...)` (`rlvr.envs.tools`): tool calls, then a final answer.
- `Explore(...)` (`rlvr.envs.sql.interactive`): exploratory SQL queries, then an answer.
- `WebSite(app, ...)` (`rlvr.envs.web.base`): a `ToolUse` whose tools browse a local site.

The last three live with their families (they need those modules) and load on first use here.
"""

from __future__ import annotations

import importlib
import re
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from rlvr.envs import options as checks
from rlvr.envs.core import Outcome, Start
from rlvr.envs.replies import shorten
from rlvr.verifiers.types import Status, Task, Verdict

if TYPE_CHECKING:
    from rlvr.envs.core import TextEnv
    from rlvr.envs.judge import Judge
    from rlvr.envs.sql.interactive import Explore
    from rlvr.envs.tools.env import ToolUse
    from rlvr.envs.web.base import WebSite


class Interaction:
    """Base class: one reply judged, unless a subclass answers otherwise.

    Methods get the env, to read `env.judge`, `env.task` (the task of this episode), `env.turn`
    (replies so far) and `env.np_random`.
    """

    def system_prompt(self, judge: Judge) -> str | None:
        """The system message of an episode (read after `start`)."""
        return judge.system_prompt

    def start(self, env: TextEnv, task: Task) -> Start:
        """Reset per-episode state; the first user message."""
        assert env.judge is not None  # TextEnv calls this only with a judge
        return Start(prompt=env.judge.prompt(task), task_id=task.id)

    def answer(self, env: TextEnv, reply: str) -> Outcome:
        """Answer one reply of the agent."""
        assert env.judge is not None and env.task is not None  # TextEnv.step checks the order
        return env.judge.judge(reply, env.task)

    def oracle_reply(self, env: TextEnv) -> str:
        """A reply that earns full reward from the current state (reads the gold answer)."""
        assert env.judge is not None and env.task is not None  # TextEnv checks
        return env.judge.reference_reply(env.task)

    def close(self) -> None:
        """Release per-episode state (may be called more than once)."""


class SingleTurn(Interaction):
    """One reply, judged; the episode ends."""


# --- self-correction -----------------------------------------------------------------------------

FEEDBACK_MODES = ("binary", "details", "none")
REWARD_MODES = ("final", "shaped")
# Echoes of the reply and the verifier's details are cut: a long reply must not come back whole.
MAX_ECHO_CHARS = 300
MAX_DETAILS_CHARS = 2000

RETRY_INSTRUCTION = "Try again ({remaining} attempt{s} left)."
RESTATE_HEADER = "The problem again:"
NEUTRAL_RETRY = (
    "Check your previous answer carefully. If you find a mistake, correct it; if not, keep it. "
    "Give your answer again in the same format ({remaining} attempt{s} left)."
)


class SelfCorrect(Interaction):
    """Answer, get feedback, try again: up to `max_attempts` replies, each judged by the judge.

    `feedback`: "binary" (only that an attempt is wrong), "details" (the judge's feedback and
    the answer as read, withheld when it mentions the gold) or "none" (a neutral request to
    review; every episode runs all attempts). `reward`: "final" (the last attempt's score) or
    "shaped" (SCoRe-style, weighted by `bonus`). `restate`: the feedback ends with the task's
    prompt again. See `SelfCorrectEnv` for the full card.
    """

    def __init__(
        self,
        max_attempts: int = 3,
        feedback: str = "binary",
        reward: str = "final",
        bonus: float = 0.5,
        restate: bool = False,
    ) -> None:
        self.max_attempts = checks.integer(max_attempts, name="max_attempts")
        self.feedback_mode = checks.choice(feedback, FEEDBACK_MODES, name="feedback")
        self.reward_mode = checks.choice(reward, REWARD_MODES, name="reward")
        self.bonus = checks.number(
            bonus,
            name="bonus",
            low=0.0,
            high=1.0,
            why=" (above 1 the first attempt's reward would be negative)",
        )
        self.restate = checks.flag(restate, "restate")
        self.scores: list[float] = []
        self.step_rewards: list[float] = []

    def start(self, env: TextEnv, task: Task) -> Start:
        self.scores = []
        self.step_rewards = []
        return super().start(env, task)

    def answer(self, env: TextEnv, reply: str) -> Outcome:
        attempt = super().answer(env, reply)
        verdict = attempt.verdict
        if attempt.infra_error:
            return self._outcome(attempt, 0.0, attempt.feedback, terminated=True)
        score = float(attempt.reward)
        self.scores.append(score)
        correct = verdict.is_correct if verdict is not None else score == 1.0
        last = len(self.scores) == self.max_attempts
        terminated = last or (correct and self.feedback_mode != "none")
        reward = self._reward(score, terminated=terminated)
        if terminated:
            text = "Correct." if correct else "Incorrect. No attempts left."
        else:
            assert env.task is not None and env.judge is not None  # an attempt was just judged
            text = self._retry_feedback(attempt, score, env.task)
            if self.restate:  # the task last, nearest the next attempt
                text += f"\n\n{RESTATE_HEADER}\n{env.judge.prompt(env.task)}"
        return self._outcome(attempt, reward, text, terminated=terminated)

    def _outcome(self, attempt: Outcome, reward: float, text: str, *, terminated: bool) -> Outcome:
        self.step_rewards.append(reward)
        return Outcome(
            feedback=text,
            reward=reward,
            terminated=terminated,
            verdict=attempt.verdict,
            infra_error=attempt.infra_error,
            info={
                "attempt_scores": list(self.scores),
                "step_rewards": list(self.step_rewards),
                "attempt_rewards": dict(attempt.rewards or {"total": attempt.reward}),
            },
        )

    # --- rewards ---------------------------------------------------------------------------------

    def _reward(self, score: float, *, terminated: bool) -> float:
        """The reward of the attempt just scored (see `SelfCorrectEnv`'s card)."""
        if self.reward_mode == "final":
            return score if terminated else 0.0
        t = len(self.scores)
        if not terminated:
            return score * self._weight(t)
        # The last attempt, or an early stop on a correct answer: pay the remaining attempts as if
        # it were kept (computed as 1 - the weights already paid, so the oracle earns exactly 1).
        remaining_weight = 1.0 - sum(self._weight(u) for u in range(1, t))
        return min(1.0, max(0.0, score * remaining_weight))

    def _weight(self, attempt: int) -> float:
        k = self.max_attempts
        if k == 1:
            return 1.0
        if attempt == 1:
            return (1.0 - self.bonus) / k
        if attempt == k:
            return (1.0 + self.bonus) / k
        return 1.0 / k

    # --- feedback --------------------------------------------------------------------------------

    def _retry_feedback(self, attempt: Outcome, score: float, task: Task) -> str:
        remaining = self.max_attempts - len(self.scores)
        plural = {"remaining": remaining, "s": "" if remaining == 1 else "s"}
        if self.feedback_mode == "none":
            return NEUTRAL_RETRY.format(**plural)
        lines = ["Your answer is incorrect."]
        if self.feedback_mode == "details" and attempt.verdict is not None:
            lines = self._details(attempt.verdict, attempt.feedback, score, task)
        lines.append(RETRY_INSTRUCTION.format(**plural))
        return "\n".join(lines)

    def _details(self, verdict: Verdict, feedback: str, score: float, task: Task) -> list[str]:
        headline = (
            "No answer could be read from your reply."
            if verdict.status is Status.UNPARSABLE
            else "Your answer is incorrect."
        )
        lines = [headline]
        if 0.0 < score < 1.0:
            lines.append(f"Partial credit: {score:.2f}.")
        if verdict.extracted is not None:
            echo = shorten(str(verdict.extracted), MAX_ECHO_CHARS)
            lines.append(f"Your answer was read as: {echo}")
        # The judge's feedback repeats the headline; keep only what it adds.
        details = feedback
        for prefix in ("Incorrect.", "No answer could be read from the reply."):
            details = details.removeprefix(prefix).strip()
        if details and not mentions_gold(details, task):
            lines.append(shorten(details, MAX_DETAILS_CHARS))
        return lines


def mentions_gold(text: str, task: Task) -> bool:
    """Whether `text` contains the task's gold answer as a separate token (then it is withheld).

    Only scalar golds can be checked; a verifier whose gold is structured (hidden tests) must
    keep its own details free of it.
    """
    gold = task.answer
    if isinstance(gold, bool) or not isinstance(gold, (str, int, float, Fraction)):
        return False
    token = str(gold).strip()
    if not token:
        return False
    pattern = r"(?<![\w.])" + re.escape(token) + r"(?![\w]|\.\d)"
    return re.search(pattern, text, flags=re.IGNORECASE) is not None


# --- interactions that live with their families --------------------------------------------------

_ELSEWHERE = {
    "ToolUse": "rlvr.envs.tools.env",
    "Explore": "rlvr.envs.sql.interactive",
    "WebSite": "rlvr.envs.web.base",
}


def __getattr__(name: str) -> Any:
    if name in _ELSEWHERE:
        return getattr(importlib.import_module(_ELSEWHERE[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Explore",
    "Interaction",
    "SelfCorrect",
    "SingleTurn",
    "ToolUse",
    "WebSite",
    "mentions_gold",
]
