"""A worker process of the math verifier's pool: `python -m rlvr.verifiers.math.worker`.

Protocol, one JSON object per line. On start the worker imports sympy and math-verify, warms
them up and writes `{"ready": true}` (or `{"fatal": "..."}` and exits). Then, for each request
`{"gold": str, "answers": [str, ...], "final_form": bool, "cpu_seconds": float}` on stdin it writes
`{"results": [[outcome, detail], ...]}` (outcomes from `equivalence`) on stdout. It exits at the
end of its input, i.e. when the parent closes the pipe or dies.

The parent kills a worker whose check overruns its wall-clock limit. As a second line of defence
that also holds when the parent is gone, the worker bounds itself: its CPU time per request
(RLIMIT_CPU, re-armed for every request) and its address space (RLIMIT_AS, so a blow-up raises
MemoryError instead of summoning the OOM killer). Core dumps are off.
"""

from __future__ import annotations

import json
import os
import sys
from typing import IO, Any

MEMORY_LIMIT_BYTES = int(os.environ.get("RLVR_MATH_WORKER_MEMORY_MB", "4096")) << 20


def main() -> int:
    protocol = os.fdopen(os.dup(1), "w", encoding="ascii", buffering=1)
    os.dup2(2, 1)  # a stray print must not corrupt the protocol
    try:
        from rlvr.verifiers.math import equivalence

        equivalence.compare("\\frac{\\sqrt{2}}{2}", "\\sqrt{2}/2")  # loads the LaTeX grammar
    except BaseException as exc:
        _send(protocol, {"fatal": f"{type(exc).__name__}: {exc}"})
        return 1
    _set_limits()
    _send(protocol, {"ready": True, "pid": os.getpid()})
    for line in sys.stdin.buffer:
        request = json.loads(line)
        _limit_cpu(float(request.get("cpu_seconds", 60.0)))
        final_form = bool(request.get("final_form", True))
        results = [
            _compare(equivalence, request["gold"], answer, final_form)
            for answer in request["answers"]
        ]
        _send(protocol, {"results": results})
    return 0


def _compare(equivalence: Any, gold: str, answer: str, final_form: bool) -> list[str]:
    try:
        return list(equivalence.compare(gold, answer, final_form=final_form))
    except MemoryError:
        return [equivalence.DIFFERENT, "checking the answer exhausted the memory limit"]
    except RecursionError:
        return [equivalence.DIFFERENT, "the answer is nested too deeply to check"]
    except Exception as exc:  # sympy failing on an adversarial answer is the answer's fault
        return [equivalence.DIFFERENT, f"the answer could not be compared ({type(exc).__name__})"]


def _send(stream: IO[str], message: dict[str, Any]) -> None:
    stream.write(json.dumps(message) + "\n")
    stream.flush()


def _set_limits() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = MEMORY_LIMIT_BYTES if hard == resource.RLIM_INFINITY else min(MEMORY_LIMIT_BYTES, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _limit_cpu(seconds: float) -> None:
    """Let the coming request use at most `seconds` more CPU time; SIGXCPU ends the worker."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    soft = int(usage.ru_utime + usage.ru_stime + seconds) + 1
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


if __name__ == "__main__":
    sys.exit(main())
