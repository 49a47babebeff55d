"""`rlvr/ToolMath-v0`: arithmetic word problems whose numbers are too big to do in one's head."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from rlvr.envs import services
from rlvr.envs.core import TextEnv
from rlvr.envs.errors import EnvConfigError, ToolInfraError
from rlvr.envs.judge import TaskJudge
from rlvr.envs.options import declare, level, one_of, real, whole
from rlvr.envs.replies import last_answer_line, shorten
from rlvr.envs.tasks import SPLITS, Problem, ProceduralSource, TaskSource
from rlvr.envs.tools.calculator import calculator_tool
from rlvr.envs.tools.env import ToolUse
from rlvr.envs.tools.parsing import format_tool_call
from rlvr.envs.tools.python import PythonRunner
from rlvr.verifiers.types import Task, TaskFormatError, Verdict

LEVELS = (1, 2, 3)
FINAL_INSTRUCTIONS = (
    "When you have the final answer, reply without any tool call and put the number in "
    "\\boxed{}, for example \\boxed{<number>}."
)


class ToolMathEnv(TextEnv):
    """Arithmetic word problems to solve with a calculator (and Python, when a sandbox exists).

    ## Description
    Procedurally generated questions with large numbers: stock counts, distances, remainders of
    big powers, least common multiples, committee counts (binomials), compound interest, sums of
    multiples. The answers are exact; getting them without a tool is hard for a language model.
    Tools: `calculator` (exact arithmetic, parsed safely, never `eval`); with
    `python_tool=True` also `python` (runs code in the sandbox, `rlvr.sandboxes`). The default is
    the calculator alone, so the prompt (which lists the tools) is the same on every machine.

    ## Action Space
    `TextSpace`: a reply with `<tool_call>{...}</tool_call>` blocks, or the final answer as
    `\\boxed{number}`.

    ## Observation Space
    `TextSpace`: the question; tool results (role `tool`); the verdict at the end.

    ## Rewards
    1.0 for the correct number in `\\boxed{}` (integers exactly; money within one cent), else 0.
    Tool turns earn 0.

    ## Starting State
    A question drawn with the env's generator from a procedural source with disjoint train/test
    splits; `options={"task_index": i}` pins one.

    ## Episode End
    Terminates on the final answer; truncated after `max_episode_steps` (10) replies.

    ## Arguments
    `split` ("train"/"test"), `difficulty` (1: two-step arithmetic, 2: powers mod m, lcm,
    binomials, 3: compound interest, sums of multiples; a list mixes levels), `seed` (of the
    task source), `python_tool` (False; True; or "auto": on when this machine can sandbox code),
    `tool_timeout`, `render_mode`.

    ## Version History
    - v0: initial version.
    """

    argument_checks = declare(
        split=one_of(*SPLITS),
        difficulty=level(LEVELS),
        seed=whole(0),
        python_tool=one_of(True, False, "auto"),
        tool_timeout=real(0.0, low_open=True),
    )

    def __init__(
        self,
        *,
        split: str = "train",
        difficulty: int | Sequence[int] = (1, 2, 3),
        seed: int = 0,
        python_tool: bool | str = False,
        tool_timeout: float = 10.0,
        render_mode: str | None = None,
    ) -> None:
        source = ProceduralSource(
            generate_problem,
            name="tool_math",
            split=split,
            difficulty=difficulty,
            seed=seed,
        )
        judge = NumericJudge(source)
        self.python = _python_runner(python_tool)
        tools = [calculator_tool()] + ([self.python.tool()] if self.python is not None else [])
        interaction = ToolUse(
            tools,
            instructions="Solve the problem. Use the tools for every calculation.",
            final_instructions=FINAL_INSTRUCTIONS,
            tool_timeout=tool_timeout,
            oracle=calculator_oracle,
        )
        super().__init__(judge, interaction, render_mode=render_mode)

    def close(self) -> None:
        super().close()
        if self.python is not None:
            self.python.close()


class NumericJudge(TaskJudge):
    """Problems with a numeric answer, judged by `NumericAnswerVerifier`; the reference reply
    gives the gold in `\\boxed{}`."""

    def __init__(self, tasks: TaskSource) -> None:
        super().__init__(tasks, NumericAnswerVerifier())

    def check(self, task: Task) -> None:
        numeric_gold(task)

    def reference_reply(self, task: Task) -> str:
        return boxed_answer(task)


def calculator_oracle(tools: ToolUse, env: TextEnv) -> str:
    """Compute the task's expression with the calculator, then answer with its result."""
    task = env.task
    assert task is not None  # TextEnv.oracle_reply checks
    expression = task.metadata.get("expression")
    if expression is None:  # a pinned task of the user's: nothing to compute, just answer
        return boxed_answer(task)
    if not tools.called("calculator", expression=expression):
        return format_tool_call("calculator", expression=expression)
    return f"The calculator gives the result.\n\\boxed{{{task.answer}}}"


def boxed_answer(task: Task) -> str:
    return f"The answer is \\boxed{{{task.answer}}}."


def _python_runner(python_tool: bool | str) -> PythonRunner | None:
    if python_tool is False:
        return None
    if python_tool is True:
        services.sandbox("local", None)  # no sandbox here: say so now, not at every call
        return PythonRunner()
    try:
        return PythonRunner(probe=True)
    except (EnvConfigError, ToolInfraError):
        return None  # "auto": no sandbox here, the calculator alone


# --- the verifier --------------------------------------------------------------------------------

_BOXED = "\\boxed{"
_NUMBER = re.compile(r"^[-+]?(\d+(\.\d*)?|\.\d+)(/\d+)?$")


class NumericAnswerVerifier:
    """Reads the last `\\boxed{...}` (or an `Answer: ...` line) as a number and compares it with
    the gold: exactly for integers, within 0.01 for golds written with decimals (money)."""

    def verify(self, response: str, task: Task) -> Verdict:
        text = extract_final_answer(response)
        if text is None:
            return Verdict.unparsable("no final answer found; put it in \\boxed{}")
        value = parse_number(text)
        if value is None:
            return Verdict.unparsable(
                f"the final answer {shorten(text)!r} is not a number", extracted=text
            )
        gold = numeric_gold(task)
        tolerance = Fraction(1, 100) if "." in str(task.answer) else Fraction(0)
        if abs(value - gold) <= tolerance:
            return Verdict.correct(text)
        return Verdict.incorrect(text)


def numeric_gold(task: Task) -> Fraction:
    """The task's gold as a number: an int or a decimal written as text ("12.50"), else
    `TaskFormatError` naming the form."""
    answer = task.answer
    value = None
    if isinstance(answer, int) and not isinstance(answer, bool):
        value = Fraction(answer)
    elif isinstance(answer, str):
        value = parse_number(answer)
    if value is None:
        raise TaskFormatError(
            f"task {task.id!r}: the answer must be a number (an int, or text such as "
            f"'12.50'), got {answer!r:.80}"
        )
    return value


def extract_final_answer(response: str) -> str | None:
    start = response.rfind(_BOXED)
    if start >= 0:
        depth, position = 1, start + len(_BOXED)
        for index in range(position, len(response)):
            depth += {"{": 1, "}": -1}.get(response[index], 0)
            if depth == 0:
                return response[position:index].strip()
        return None
    return last_answer_line(response) or None


def parse_number(text: str) -> Fraction | None:
    cleaned = re.sub(r"[\s,$€£]|\\[,!;: ]|\\\$", "", text).rstrip(".")
    if not _NUMBER.match(cleaned):
        return None
    try:
        return Fraction(cleaned)
    except (ValueError, ZeroDivisionError):
        return None


# --- the problems --------------------------------------------------------------------------------


def generate_problem(rng: np.random.Generator, difficulty: int) -> Problem:
    families = _FAMILIES[min(difficulty, max(_FAMILIES))]
    family = families[int(rng.integers(len(families)))]
    return family(rng)


def _int(rng: np.random.Generator, low: int, high: int) -> int:
    """A uniform integer in [low, high]."""
    return int(rng.integers(low, high + 1))


def _problem(family: str, prompt: str, answer: Any, expression: str) -> Problem:
    text = f"{prompt}\nGive the final answer as \\boxed{{<number>}}."
    return Problem(text, answer, {"family": family, "expression": expression})


def _stock(rng: np.random.Generator) -> Problem:
    crates, per_crate = _int(rng, 120, 9999), _int(rng, 12, 480)
    shipped = _int(rng, 1, crates * per_crate - 1)
    return _problem(
        "stock",
        f"A warehouse holds {crates} crates of {per_crate} bottles each. After {shipped} bottles "
        "are shipped, how many bottles are left?",
        crates * per_crate - shipped,
        f"{crates} * {per_crate} - {shipped}",
    )


def _trip(rng: np.random.Generator) -> Problem:
    a, b, c, d = _int(rng, 150, 2400), _int(rng, 11, 365), _int(rng, 150, 2400), _int(rng, 11, 365)
    return _problem(
        "trip",
        f"A freight train covers {a} km per day for {b} days, then {c} km per day for {d} days. "
        "How many kilometres does it cover in total?",
        a * b + c * d,
        f"{a} * {b} + {c} * {d}",
    )


def _modpow(rng: np.random.Generator) -> Problem:
    base, exponent, modulus = _int(rng, 3, 999), _int(rng, 50, 400), _int(rng, 1000, 99999)
    return _problem(
        "modpow",
        f"What is the remainder when {base}^{exponent} is divided by {modulus}?",
        pow(base, exponent, modulus),
        f"pow({base}, {exponent}, {modulus})",
    )


def _lcm(rng: np.random.Generator) -> Problem:
    a, b, c = (_int(rng, 100, 99999) for _ in range(3))
    return _problem(
        "lcm",
        f"What is the least common multiple of {a}, {b} and {c}?",
        math.lcm(a, b, c),
        f"lcm({a}, {b}, {c})",
    )


def _committee(rng: np.random.Generator) -> Problem:
    n = _int(rng, 30, 120)
    k = _int(rng, 5, n // 2)
    return _problem(
        "committee",
        f"In how many ways can a committee of {k} people be chosen from {n} candidates?",
        math.comb(n, k),
        f"comb({n}, {k})",
    )


def _interest(rng: np.random.Generator) -> Problem:
    principal, rate_tenths, years = _int(rng, 1000, 99999), _int(rng, 15, 99), _int(rng, 5, 40)
    rate = Fraction(rate_tenths, 10)
    balance = principal * (1 + rate / 100) ** years
    cents = math.floor(balance * 100 + Fraction(1, 2))  # half away from zero (balance > 0)
    rate_text = f"{rate_tenths // 10}.{rate_tenths % 10}"
    return _problem(
        "interest",
        f"A savings account starts with ${principal} and earns {rate_text}% interest per year, "
        f"compounded yearly. What is the balance after {years} years, rounded to the nearest cent?",
        f"{cents // 100}.{cents % 100:02d}",
        f"round({principal} * (1 + {rate_text} / 100) ** {years}, 2)",
    )


def _multiples(rng: np.random.Generator) -> Problem:
    low = _int(rng, 1, 5000)
    high = low + _int(rng, 10_000, 1_000_000)
    k = _int(rng, 3, 97)
    first, last = -(-low // k) * k, high // k * k
    count = (last - first) // k + 1
    return _problem(
        "multiples",
        f"What is the sum of all integers from {low} to {high} (inclusive) that are divisible "
        f"by {k}?",
        count * (first + last) // 2,
        f"{count} * ({first} + {last}) / 2",
    )


_FAMILIES = {
    1: (_stock, _trip),
    2: (_modpow, _lcm, _committee),
    3: (_interest, _multiples),
}
