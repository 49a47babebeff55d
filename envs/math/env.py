"""`rlvr/Math-v0`: one math problem, one reply, an exact verdict."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rlvr.envs import options
from rlvr.envs.core import TextEnv
from rlvr.envs.errors import EnvConfigError
from rlvr.envs.judge import TaskJudge
from rlvr.envs.math.families import DEFAULT_FAMILIES, FAMILIES, LEVELS, generate
from rlvr.envs.options import (
    declare,
    flag,
    level,
    names,
    one_of,
    optional,
    real,
    tasks_argument,
    text,
    whole,
)
from rlvr.envs.tasks import SPLITS, ProceduralSource, TaskSource
from rlvr.verifiers.math import MathVerifier, gold_text
from rlvr.verifiers.types import Task

DEFAULT_PROMPT_TEMPLATE = "{prompt}\nPut your final answer in \\boxed{{}}."
# The arguments of math tasks and their checking, shared with the envs that pose math questions.
TASK_ARGUMENTS = declare(
    split=optional(one_of(*SPLITS)),
    difficulty=optional(level(LEVELS)),
    families=optional(names(FAMILIES)),
    seed=optional(whole(0)),
    tasks=optional(tasks_argument),
    timeout=real(0.0, low_open=True),
)


class MathEnv(TextEnv):
    """Procedural (or loaded) math problems judged by `MathVerifier`.

    ## Description
    Each episode poses one math problem. By default problems come from nine procedural families,
    each with difficulty levels 1 to 5: `arithmetic`, `fractions`, `linear` (equations),
    `quadratic` (equations; the answer is the set of real roots), `systems` (of linear equations;
    an ordered tuple), `polynomials` (evaluate, expand, remainders, build from roots),
    `number_theory` (gcd, lcm, remainders, inverses), `combinatorics` (counting and exact
    probabilities) and `word_problems`. A tenth, `arithmetic_choice` (`arithmetic`'s question
    with three options to choose from), is drawn only when named. Level 1 of `arithmetic` is
    two-digit addition ("What is 47 + 38?"), an easy start a tiny model can learn:
    `gym.make("rlvr/Math-v0", families=["arithmetic"], difficulty=1)`. Any task source can
    replace the generator, e.g. GSM8K or MATH loaded with `rlvr.envs.math.load_gsm8k` /
    `load_math`.

    ## Action Space
    `TextSpace`: the reply as a `str`. The final answer is read from the last `\\boxed{}` (or
    `<answer>` tags, or "The answer is ..."), outside any `<think>...</think>` block.

    ## Observation Space
    `TextSpace`: the problem followed by "Put your final answer in \\boxed{}." after `reset`; a
    one-line verdict after `step`.

    ## Rewards
    1.0 if the final answer equals the gold answer exactly (equivalent forms count: `0.5` and
    `\\frac{1}{2}`, sets in any order, `x = 5`, `2\\sqrt{2}` and `\\sqrt{8}`), else 0.0. Several
    different final answers, a list of candidates, an answer that is not in final form (a copied
    expression such as `47 + 38`, a fraction not in lowest terms, a factored polynomial where
    the expanded one is asked for), a check that overruns its time limit: all 0.0. With
    `format_weight > 0`, a second term rewards a readable final answer. If the checker itself
    fails, `info["infra_error"]` is True.

    ## Starting State
    A task drawn with `self.np_random`, or pinned with `options={"task_index": i}` or
    `options={"task": {"prompt": ..., "answer": ...}}`.

    ## Episode End
    Terminates after the first reply.

    ## Arguments
    - `split`: "train" (default) or "test"; the two never share a problem.
    - `difficulty`: a level in 1..5 or a list of levels (default: all five).
    - `families`: names of the families to draw from (default: the nine above, not
      `arithmetic_choice`).
    - `seed`: the dataset seed (which problems exist); episode sampling uses `reset(seed=...)`.
    - `tasks`: a task source or list of tasks replacing the generator (then leave `split`,
      `difficulty`, `families` and `seed` unset).
    - `system_prompt`: optional system message (default none).
    - `prompt_template`: a format string with `{prompt}` (default asks for `\\boxed{}`).
    - `format_weight`: weight of the format term in [0, 1) (default 0).
    - `timeout`: hard time limit in seconds for one symbolic check (default 5).
    - `require_simplified`: answers must be in final form: plain numbers for numeric golds, no
      operation left undone, polynomials in the gold's shape (default True; docs/math.md).

    ## Version History
    - v0: initial release: nine families x five levels, GSM8K/MATH loaders, exact verifier.
      `arithmetic_choice` added later, only when named (v0's default episodes unchanged).
    """

    argument_checks = declare(
        **TASK_ARGUMENTS,
        system_prompt=optional(text),
        prompt_template=text,
        format_weight=real(0.0, 1.0, high_open=True),
        require_simplified=flag,
    )

    def __init__(
        self,
        *,
        split: str | None = None,
        difficulty: int | Sequence[int] | None = None,
        families: str | Sequence[str] | None = None,
        seed: int | None = None,
        tasks: TaskSource | Iterable[Task | Mapping[str, Any]] | None = None,
        system_prompt: str | None = None,
        prompt_template: str = DEFAULT_PROMPT_TEMPLATE,
        format_weight: float = 0.0,
        timeout: float = 5.0,
        require_simplified: bool = True,
        render_mode: str | None = None,
    ) -> None:
        judge = MathJudge(
            math_tasks(tasks, split=split, difficulty=difficulty, families=families, seed=seed),
            timeout=timeout,
            require_simplified=require_simplified,
            system_prompt=system_prompt,
            prompt_template=prompt_template,
            format_weight=format_weight,
        )
        super().__init__(judge, render_mode=render_mode)
        self.tasks = judge.tasks


class MathJudge(TaskJudge):
    """Math tasks judged by `MathVerifier`; the oracle answers with the gold in `\\boxed{}`.

    `timeout` and `require_simplified` configure the verifier; the rest is `TaskJudge`'s.
    """

    def __init__(
        self,
        tasks: TaskSource | Iterable[Task | Mapping[str, Any]],
        *,
        timeout: float = 5.0,
        require_simplified: bool = True,
        prompt_template: str = DEFAULT_PROMPT_TEMPLATE,
        **judge_kwargs: Any,
    ) -> None:
        try:
            verifier = MathVerifier(timeout=timeout, require_simplified=require_simplified)
        except ValueError as exc:
            raise EnvConfigError(str(exc)) from None
        super().__init__(tasks, verifier, prompt_template=prompt_template, **judge_kwargs)

    def check(self, task: Task) -> None:
        gold_text(task)

    def reference_reply(self, task: Task) -> str:
        return f"The answer is \\boxed{{{gold_text(task)}}}."


def math_tasks(
    tasks: TaskSource | Iterable[Task | Mapping[str, Any]] | None,
    *,
    split: str | None = None,
    difficulty: int | Sequence[int] | None = None,
    families: str | Sequence[str] | None = None,
    seed: int | None = None,
) -> TaskSource | Iterable[Task | Mapping[str, Any]]:
    """`tasks`, or the procedural source when it is None; the generator's settings are refused
    beside `tasks`, which replaces the generator."""
    if tasks is None:
        return procedural_source(split=split, difficulty=difficulty, families=families, seed=seed)
    options.refuse_replaced(
        {"split": split, "difficulty": difficulty, "families": families, "seed": seed}
    )
    return tasks


def procedural_source(
    *,
    split: str | None = None,
    difficulty: int | Sequence[int] | None = None,
    families: str | Sequence[str] | None = None,
    seed: int | None = None,
) -> ProceduralSource:
    """The procedural task source of `rlvr/Math-v0` (arguments as in the env card)."""
    chosen = DEFAULT_FAMILIES if families is None else families
    names = tuple(dict.fromkeys(options.subset(chosen, FAMILIES, name="families")))
    levels = options.levels(LEVELS if difficulty is None else difficulty, LEVELS)
    return ProceduralSource(
        functools.partial(generate, families=names),
        name="math" if names == DEFAULT_FAMILIES else "math-" + "+".join(names),
        split="train" if split is None else split,
        difficulty=levels,
        seed=0 if seed is None else seed,
    )
