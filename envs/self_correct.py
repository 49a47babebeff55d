"""`SelfCorrectEnv`: any single-turn verifiable env as a multi-turn self-correction env: the
judge of that env under the `SelfCorrect` interaction."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym

from rlvr.envs.core import TextEnv
from rlvr.envs.interactions import (
    FEEDBACK_MODES,
    REWARD_MODES,
    SelfCorrect,
    mentions_gold,
)
from rlvr.envs.options import declare, flag, mapping, of_type, one_of, optional, real, whole
from rlvr.envs.tasks import SPLITS
from rlvr.envs.verifiable import as_verifiable_env, base_of


class SelfCorrectEnv(TextEnv):
    """Answer, get feedback, try again: self-correction over a single-turn verifiable env.

    ## Description
    Takes the judge of a single-turn env (given by id, e.g. `"rlvr/Math-v0"`, or as an
    instance): the first prompt is that env's prompt, unchanged, and the same seed poses the
    same task. After a wrong attempt the env answers with feedback and the agent tries again,
    up to `max_attempts` attempts. Feedback never contains the gold answer.

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
    With `restate=True` the feedback ends with the task's prompt again, nearest the next attempt
    (a small model loses a task asked several messages back: rlvr/Math-v0's tiny warm start
    answers a second attempt with a guess unrelated to the problem).

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
    `env` (id or instance of a single-turn env with a judge: a `VerifiableEnv`, `rlvr/Math-v0`,
    ...), `env_kwargs` (for `gym.make` when `env` is an id), `split` (given to that env, e.g.
    "test" for held-out evaluation; overrides a split in `env_kwargs`), `max_attempts` (default
    3), `feedback` ("binary", "details" or "none"), `reward` ("final" or "shaped"), `bonus` (the
    shaped reward's weight, default 0.5), `restate` (default False), `render_mode`.

    ## Version History
    - v0: initial version; `restate` added later (off by default: v0's episodes unchanged).
    """

    argument_checks = declare(
        env=of_type(str, gym.Env, what="an env id or a gymnasium.Env"),
        env_kwargs=optional(mapping),
        split=optional(one_of(*SPLITS)),
        max_attempts=whole(1),
        feedback=one_of(*FEEDBACK_MODES),
        reward=one_of(*REWARD_MODES),
        bonus=real(0.0, 1.0),
        restate=flag,
    )

    def __init__(
        self,
        env: str | gym.Env,
        *,
        env_kwargs: Mapping[str, Any] | None = None,
        split: str | None = None,
        max_attempts: int = 3,
        feedback: str = "binary",
        reward: str = "final",
        bonus: float = 0.5,
        restate: bool = False,
        render_mode: str | None = None,
    ) -> None:
        interaction = SelfCorrect(max_attempts, feedback, reward, bonus, restate)  # checked first
        self.env = as_verifiable_env(env, env_kwargs, split=split)
        base = base_of(self.env)
        super().__init__(
            base.judge,
            interaction,
            render_mode=render_mode,
            max_text_length=base.observation_space.max_length,
        )

    def close(self) -> None:
        super().close()
        self.env.close()  # the env the judge came from (closing the judge twice is harmless)


__all__ = ["FEEDBACK_MODES", "REWARD_MODES", "SelfCorrectEnv", "mentions_gold"]
