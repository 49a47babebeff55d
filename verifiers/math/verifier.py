"""`MathVerifier`: judge a reply's final answer against a gold answer, exactly and in bounded time.

1. Extract every final answer outside `<think>` (`extract.py`). None -> unparsable. Unicode
   symbols (`√`, `∞`, `±`, `x²`) are rewritten as LaTeX (`symbols.py`).
2. Screen each one (`screen.py`): code-like, huge or deeply nested text is never parsed.
3. Compare each with the gold. When the gold is a plain number or a list of them, the answer must
   be one too, compared exactly with `fractions.Fraction` in this process (`literals.py`);
   otherwise the comparison is symbolic, in a worker process killed at the time limit
   (`equivalence.py`, `pool.py`), after a final-form check (`form.py`).
4. Correct only if every stated answer is correct: several different answers are a hedge.

A reply's own fault (wrong, hedged, unreadable, too slow to check, or so pathological that it
kills a fresh worker too) scores 0; only a failure of our machinery (a worker that would not
start, or workers that die or hang even on a trivial check) gives a `Status.ERROR` verdict.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass
from fractions import Fraction
from numbers import Integral
from typing import Any

from rlvr.verifiers.errors import TaskFormatError, VerifierConfigError
from rlvr.verifiers.math import literals
from rlvr.verifiers.math.extract import Extraction, extract_answers
from rlvr.verifiers.math.form import leftover_operations
from rlvr.verifiers.math.literals import Literal, read_literal, values_match
from rlvr.verifiers.math.screen import MAX_ANSWER_CHARS, screen
from rlvr.verifiers.math.symbols import latex_symbols
from rlvr.verifiers.types import Task, Verdict

logger = logging.getLogger(__name__)

# Outcomes of the symbolic comparison (the values `equivalence` returns; kept as strings here so
# that this module does not import sympy).
EQUAL = "equal"
UNPARSABLE = "unparsable"
GOLD_UNPARSABLE = "gold_unparsable"

# More distinct final answers than any honest reply states: a hedge, judged without parsing them.
MAX_CANDIDATES = 16


@dataclass(frozen=True)
class MathVerifier:
    """Judges math answers; `verify(reply, task)` with `task.answer` the gold answer (a string
    such as `"42"`, `"\\frac{3}{4}"`, `"\\{-2, 3\\}"`, `"(1, 2)"`, `"x^2 + 1"`, `"[3, \\infty)"`).

    Instances hold only settings (cheap to copy); the worker processes are shared by all of them.
    """

    timeout: float = 5.0
    """Hard wall-clock limit in seconds for one reply's symbolic check; an overrunning check is
    killed and scores 0."""

    require_simplified: bool = True
    """Accept only answers in final form, so that the question copied into the box does not
    pass. When the gold is a plain number (or list of them), only plain numbers: `85`, `0.5`,
    `3/4` in lowest terms, not `47 + 38` or `6/8`. Otherwise no operation the gold does not use
    (`\\sin(\\pi/3)` for `\\frac{\\sqrt{3}}{2}`; see `form.py`), a polynomial in the gold's
    shape (expanded or factored) and no unsolved inequality (see `equivalence.py`). Turn off
    to accept any equivalent expression."""

    max_answer_chars: int = MAX_ANSWER_CHARS
    """Longest final answer that is parsed at all; longer ones score 0."""

    def __post_init__(self) -> None:
        if not isinstance(self.timeout, (int, float)) or not 0 < self.timeout <= 600:
            raise VerifierConfigError(f"timeout must be in (0, 600] seconds, got {self.timeout!r}")
        if not isinstance(self.max_answer_chars, int) or self.max_answer_chars < 1:
            raise VerifierConfigError(
                f"max_answer_chars must be a positive int, got {self.max_answer_chars!r}"
            )

    def verify(self, response: str, task: Task) -> Verdict:
        gold = gold_text(task)
        if not isinstance(response, str):
            return Verdict.unparsable(f"the reply must be text, got {type(response).__name__}")
        extraction = extract_answers(response)
        if not extraction.candidates:
            return Verdict.unparsable(extraction.problem, source=extraction.source)
        candidates = list(
            dict.fromkeys(latex_symbols(answer).strip() for answer in extraction.candidates)
        )
        if len(candidates) > MAX_CANDIDATES:
            return Verdict.incorrect(
                " | ".join(candidates[:MAX_CANDIDATES]) + " | ...",
                f"the reply states more than {MAX_CANDIDATES} final answers; give exactly one",
                source=extraction.source,
            )
        extracted = " | ".join(candidates)
        for answer in candidates:
            problem = screen(answer, self.max_answer_chars)
            if problem is not None:
                return Verdict.unparsable(problem, extracted=extracted, source=extraction.source)
        gold_literal = _gold_literal(gold)
        if gold_literal is not None:
            verdict = self._judge_literals(gold_literal, candidates, extraction, extracted)
            if verdict is not None:
                return verdict
        return self._judge_symbolic(gold, candidates, extraction, extracted)

    # --- the exact in-process path ------------------------------------------------------------

    def _judge_literals(
        self, gold: Literal, candidates: list[str], extraction: Extraction, extracted: str
    ) -> Verdict | None:
        """The verdict if every candidate is a plain number; None to fall back to symbolic."""
        matches = []
        for answer in candidates:
            value = read_literal(answer)
            if value is None and not self.require_simplified:
                return None
            if value is None or (self.require_simplified and not value.simplest):
                problem = (
                    "a fraction in the final answer is not in lowest terms"
                    if value is not None
                    else "the final answer must be a plain number: an integer, a decimal or a "
                    "fraction in lowest terms"
                )
                return Verdict.incorrect(
                    extracted, problem, source=extraction.source, checked_by="fraction"
                )
            matches.append(values_match(gold, value))
        return _combine(matches, extracted, extraction, checked_by="fraction")

    # --- the symbolic path, in a worker ---------------------------------------------------------

    def _judge_symbolic(
        self, gold: str, candidates: list[str], extraction: Extraction, extracted: str
    ) -> Verdict:
        from rlvr.verifiers.math.pool import CheckCrashed, CheckTimeout, WorkerFailure, get_pool

        if self.require_simplified:
            for answer in candidates:
                leftover = leftover_operations(answer, gold)
                if leftover:
                    return Verdict.incorrect(
                        extracted,
                        f"the final answer is not simplified: it still contains {leftover[0]}",
                        source=extraction.source,
                        checked_by="form",
                    )
        key = (gold, tuple(candidates), self.require_simplified)
        try:
            results = _SYMBOLIC_RESULTS.get(key)
            if results is None:
                results = get_pool().check(
                    gold, candidates, float(self.timeout), final_form=self.require_simplified
                )
                _SYMBOLIC_RESULTS.put(key, results)
        except CheckTimeout:
            return Verdict.incorrect(
                extracted,
                f"checking the answer timed out after {self.timeout:g}s",
                source=extraction.source,
                checked_by="sympy",
                timed_out=True,
            )
        except CheckCrashed as exc:
            # Two fresh workers died on this answer: the answer, not our machinery, is at fault
            # (else a policy could farm crashes into dropped samples instead of zeros).
            logger.warning("a math answer crashed two workers: %s", exc)
            return Verdict.incorrect(
                extracted,
                "checking the answer crashed the checker",
                source=extraction.source,
                checked_by="sympy",
                crashed=True,
            )
        except WorkerFailure as exc:
            logger.error("math verifier infrastructure failure: %s", exc)
            return Verdict.error(f"the math checker failed: {exc}")
        outcomes = [outcome for outcome, _ in results]
        if GOLD_UNPARSABLE in outcomes:
            return Verdict.error(f"the task's gold answer {gold!r:.80} could not be parsed")
        if all(outcome == UNPARSABLE for outcome in outcomes):
            return Verdict.unparsable(
                "the final answer could not be read as mathematics",
                extracted=extracted,
                source=extraction.source,
            )
        details = [detail for _, detail in results if detail]
        return _combine(
            [outcome == EQUAL for outcome in outcomes],
            extracted,
            extraction,
            checked_by="sympy",
            detail=details[0] if details else "",
        )


def _combine(
    matches: list[bool],
    extracted: str,
    extraction: Extraction,
    *,
    checked_by: str,
    detail: str = "",
) -> Verdict:
    data: dict[str, Any] = {"source": extraction.source, "checked_by": checked_by}
    if matches and all(matches):
        return Verdict.correct(extracted, **data)
    if len(matches) > 1:
        return Verdict.incorrect(
            extracted, "the reply states several different final answers; give exactly one", **data
        )
    return Verdict.incorrect(extracted, detail or "the final answer is not correct", **data)


def gold_text(task: Task) -> str:
    """The task's gold answer as text (ints and Fractions are rendered exactly)."""
    answer = task.answer
    if isinstance(answer, bool) or answer is None:
        raise TaskFormatError(f"task {task.id!r}: a math task needs a gold answer, got {answer!r}")
    if isinstance(answer, Integral):  # int, numpy integers
        return str(int(answer))
    if isinstance(answer, Fraction):
        return literals.format_fraction(answer)
    if isinstance(answer, str) and answer.strip():
        return latex_symbols(answer).strip()
    raise TaskFormatError(
        f"task {task.id!r}: the gold answer must be a non-empty string, an int or a Fraction "
        f"(floats are inexact), got {answer!r}"
    )


@functools.lru_cache(maxsize=1 << 16)
def _gold_literal(gold: str) -> Literal | None:
    return read_literal(gold)


_Key = tuple[str, tuple[str, ...], bool]  # (gold, candidates, final form required)


class _ResultCache:
    """A small thread-safe LRU of symbolic comparisons: in GRPO-style batches many completions
    of one prompt state the same answer, and a comparison's outcome never changes. Timeouts and
    failures are not cached."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[_Key, list[tuple[str, str]]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: _Key) -> list[tuple[str, str]] | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: _Key, value: list[tuple[str, str]]) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


_SYMBOLIC_RESULTS = _ResultCache(4096)
