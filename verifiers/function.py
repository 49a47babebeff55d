"""Turn a plain Python function into a `Verifier`, for users who bring their own check."""

from __future__ import annotations

import logging
import math
import numbers
import sys
from collections.abc import Callable

from rlvr.verifiers.types import Task, Verdict

logger = logging.getLogger(__name__)

VerifyResult = Verdict | bool | float | int
VerifyFunction = Callable[[str, Task], VerifyResult]


class FunctionVerifier:
    """Adapts `fn(response, task) -> Verdict | bool | float` to the `Verifier` protocol.

    A bool or number becomes a verdict (1.0 is correct, anything lower incorrect with that score).
    If `fn` raises, or returns something else, the reply is not judged: the verdict has status
    `error` (an infrastructure error, so trainers drop the sample) and the traceback is logged.
    """

    def __init__(self, fn: VerifyFunction, name: str | None = None) -> None:
        if not callable(fn):
            raise TypeError(f"verify must be callable as fn(response, task), got {fn!r}")
        self.fn = fn
        self.name = name if name else str(getattr(fn, "__name__", "verify"))

    def verify(self, response: str, task: Task) -> Verdict:
        try:
            result = self.fn(response, task)
        except Exception as exc:
            logger.exception("verifier %s raised on task %s", self.name, task.id)
            return Verdict.error(f"verifier {self.name!r} raised {type(exc).__name__}: {exc}")
        return _as_verdict(result, self.name)

    def __repr__(self) -> str:
        return f"FunctionVerifier({self.name})"


def _as_verdict(result: object, name: str) -> Verdict:
    if isinstance(result, Verdict):
        return result
    if isinstance(result, bool) or _is_numpy_bool(result):
        return Verdict.correct() if result else Verdict.incorrect()
    if (
        isinstance(result, numbers.Real) and math.isfinite(result) and 0.0 <= result <= 1.0  # type: ignore[operator]  # numbers.Real's stub: no comparisons
    ):
        score = float(result)
        return Verdict.correct() if score == 1.0 else Verdict.incorrect(score=score)
    return Verdict.error(
        f"verifier {name!r} returned {result!r}; return a bool, a float in [0, 1] or a Verdict"
    )


def _is_numpy_bool(result: object) -> bool:
    """np.isclose(...) and friends return np.bool_. Only a program that imported numpy can
    return one, so this module does not import it (verifier worker processes stay light)."""
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(result, numpy.bool_)
