"""`SelfCorrectEnv`: any single-turn verifiable env as a multi-turn self-correction env."""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import gymnasium as gym

from rlvr.envs.core import Outcome, Start, TextEnv
from rlvr.envs.errors import EnvConfigError
from rlvr.envs.replies import shorten
from rlvr.envs.verifiable import VerifiableEnv, as_verifiable_env
from rlvr.verifiers.types import Status, Task, Verdict

FEEDBACK_MODES = ("binary", "details", "none")
# Echoes of the reply and the verifier's details are cut: a long reply must not come back whole.
MAX_ECHO_CHARS = 300
MAX_DETAILS_CHARS = 2000
REWARD_MODES = ("final", "shaped")

RETRY_INSTRUCTION = "Try again ({remaining} attempt{s} left)."
NEUTRAL_RETRY = (
    "Check your previous answer carefully. If you find a mistake, correct it; if not, keep it. "
    "Give your answer again in the same format ({remaining} attempt{s} left)."
)


class SelfCorrectEnv(TextEnv):
    """Answer, get feedback, try again: self-correction over a single-turn verifiable env.

    ## Description
    Wraps a single-turn `VerifiableEnv` (given by id, e.g. `"rlvr/Math-v0"`, or as an instance).
    The first prompt is the wrapped env's prompt, unchanged, and the same seed poses the same
    task. After a wrong attempt the env answers with feedback and the agent tries again, up to
    `max_attempts` attempts. Feedback never contains the gold answer.

    ## Action Space
    `TextSpace`: each attempt, a reply in the wrapped env's format.

    ## Observation Space
    `TextSpace`: the task prompt after `reset`; after each attempt, feedback that depends on
    `feedback`:
    - `"binary"`: only that the attempt is incorrect;
    - `"details"`: the wrapped env's feedback on the verdict (the verifier's details: a failing
      test's output, an SQL error, ...) and the answer as it was read. Details that mention the
      gold answer are withheld;
    - `"none"`: nothing about correctness; the agent is asked to review its answer and give it
      again (intrinsic self-correction, as in SCoRe). Every episode then runs `max_attempts`.

    ## Rewards
    `s_t` is attempt t's reward in the wrapped env (its verifier score, in [0, 1]).
    - `"final"`: the last attempt's `s_T`, paid at the end; 0 before.
    - `"shaped"` (SCoRe-style): the return is `mean(s_1..s_K) + bonus * (s_K - s_1) / K` over the
      K = `max_attempts` attempts, i.e. SCoRe's `r(y1) + r(y2) + a * (r(y2) - r(y1))` normalised
      so that always being right earns 1: turning a wrong answer right earns a bonus and turning
      a right answer wrong a penalty, relative to the plain sum. Each attempt's share is paid
      when it is made (weights `(1 - bonus)/K`, `1/K`, ..., `(1 + bonus)/K`); an episode that
      ends early on a correct answer is paid as if that answer were kept to the last attempt, so
      solving sooner never earns less. `bonus` must be in [0, 1] to keep every step's reward in
      [0, 1].
    Either way a correct first attempt earns exactly 1 and never-correct earns 0.
    `info["attempt_scores"]` holds `s_1..s_t` and `info["step_rewards"]` the reward of every step
    so far, for learners that assign credit per turn; `info["attempt_rewards"]` is the wrapped
    env's reward breakdown for the latest attempt.

    ## Starting State
    The wrapped env's: a task drawn with this env's generator, or pinned with
    `options={"task_index": i}` / `options={"task": {...}}`.

    ## Episode End
    Terminates on a correct attempt (with `"binary"`/`"details"` feedback), after `max_attempts`
    attempts, or at once when an attempt could not be judged (`info["infra_error"]`).

    ## Arguments
    `env` (id or instance of a single-turn `VerifiableEnv`), `env_kwargs` (for `gym.make` when
    `env` is an id), `max_attempts` (default 3), `feedback` ("binary", "details" or "none"),
    `reward` ("final" or "shaped"), `bonus` (the shaped reward's weight, default 0.5),
    `render_mode`.

    ## Version History
    - v0: initial version.
    """

    def __init__(
        self,
        env: str | gym.Env,
        *,
        env_kwargs: Mapping[str, Any] | None = None,
        max_attempts: int = 3,
        feedback: str = "binary",
        reward: str = "final",
        bonus: float = 0.5,
        render_mode: str | None = None,
    ) -> None:
        if not isinstance(max_attempts, int) or max_attempts < 1:
            raise EnvConfigError(f"max_attempts must be an int >= 1, got {max_attempts!r}")
        if feedback not in FEEDBACK_MODES:
            raise EnvConfigError(f"feedback must be one of {FEEDBACK_MODES}, got {feedback!r}")
        if reward not in REWARD_MODES:
            raise EnvConfigError(f"reward must be one of {REWARD_MODES}, got {reward!r}")
        if not 0.0 <= bonus <= 1.0:
            raise EnvConfigError(
                f"bonus must be in [0, 1] (above 1 the first attempt's reward would be "
                f"negative), got {bonus!r}"
            )
        self.env = as_verifiable_env(env, env_kwargs)
        self.inner: VerifiableEnv = self.env.unwrapped
        super().__init__(
            system_prompt=self.inner.system_prompt,
            render_mode=render_mode,
            max_text_length=self.inner.observation_space.max_length,
        )
        self.max_attempts = max_attempts
        self.feedback_mode = feedback
        self.reward_mode = reward
        self.bonus = float(bonus)
        self._scores: list[float] = []
        self._step_rewards: list[float] = []

    # --- episode ---------------------------------------------------------------------------------

    def _start(self, options: dict[str, Any]) -> Start:
        self._scores = []
        self._step_rewards = []
        return self.inner.begin(self.np_random, options)

    def _answer(self, reply: str) -> Outcome:
        attempt = self.inner.attempt(reply)
        verdict = attempt.verdict
        if attempt.infra_error:
            return self._outcome(attempt, 0.0, attempt.feedback, terminated=True)
        score = float(attempt.reward)
        self._scores.append(score)
        correct = verdict.is_correct if verdict is not None else score == 1.0
        last = len(self._scores) == self.max_attempts
        stop_early = correct and self.feedback_mode != "none"
        terminated = last or stop_early
        reward = self._reward(score, terminated=terminated)
        if terminated:
            text = "Correct." if correct else "Incorrect. No attempts left."
        else:
            text = self._retry_feedback(verdict, score)
        return self._outcome(attempt, reward, text, terminated=terminated)

    def _outcome(self, attempt: Outcome, reward: float, text: str, *, terminated: bool) -> Outcome:
        self._step_rewards.append(reward)
        return Outcome(
            feedback=text,
            reward=reward,
            terminated=terminated,
            verdict=attempt.verdict,
            infra_error=attempt.infra_error,
            info={
                "attempt_scores": list(self._scores),
                "step_rewards": list(self._step_rewards),
                "attempt_rewards": dict(attempt.rewards or {"total": attempt.reward}),
            },
        )

    # --- rewards ---------------------------------------------------------------------------------

    def _reward(self, score: float, *, terminated: bool) -> float:
        """The reward of the attempt just scored (see the env card)."""
        if self.reward_mode == "final":
            return score if terminated else 0.0
        t = len(self._scores)
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

    def _retry_feedback(self, verdict: Verdict | None, score: float) -> str:
        remaining = self.max_attempts - len(self._scores)
        plural = {"remaining": remaining, "s": "" if remaining == 1 else "s"}
        if self.feedback_mode == "none":
            return NEUTRAL_RETRY.format(**plural)
        lines = ["Your answer is incorrect."]
        if self.feedback_mode == "details" and verdict is not None:
            lines = self._details(verdict, score)
        lines.append(RETRY_INSTRUCTION.format(**plural))
        return "\n".join(lines)

    def _details(self, verdict: Verdict, score: float) -> list[str]:
        task = self.inner.task
        assert task is not None  # an attempt was just judged
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
        details = self.inner.feedback(verdict)
        # The wrapped env's feedback repeats the headline; keep only what it adds.
        for prefix in ("Incorrect.", "No answer could be read from the reply."):
            details = details.removeprefix(prefix).strip()
        if details and not mentions_gold(details, task):
            lines.append(shorten(details, MAX_DETAILS_CHARS))
        return lines

    # --- the rest --------------------------------------------------------------------------------

    def oracle_reply(self) -> str:
        return self.inner.oracle_reply()

    def close(self) -> None:
        self.env.close()
        super().close()


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
