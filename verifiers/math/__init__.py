"""The math verifier: exact, hedge-proof, time-bounded judging of a reply's final answer.

    from rlvr.verifiers.math import MathVerifier
    verdict = MathVerifier(timeout=5.0).verify("... so the answer is \\boxed{\\frac{1}{2}}.", task)

`extract_answers` (reading final answers) and `read_literal` (exact plain numbers) are usable on
their own. Importing this package imports neither sympy nor math-verify and starts no process:
the symbolic path loads in worker processes on the first check that needs it.
"""

from rlvr.verifiers.math.extract import Extraction, extract_answers, find_boxed, outside_think
from rlvr.verifiers.math.literals import Literal, format_fraction, read_literal, values_match
from rlvr.verifiers.math.screen import screen
from rlvr.verifiers.math.verifier import MathVerifier, gold_text

__all__ = [
    "Extraction",
    "Literal",
    "MathVerifier",
    "extract_answers",
    "find_boxed",
    "format_fraction",
    "gold_text",
    "outside_think",
    "read_literal",
    "screen",
    "values_match",
]
