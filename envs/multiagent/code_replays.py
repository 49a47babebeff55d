"""Does a proposal's reference reproduce its results? (`rlvr/CodeProposerSolver-v1`)

A task whose own reference does not give its expected results every time, in every sandbox a
solver might run in, is noise: solvers submitting the very same code split between pass and
fail, and the proposer would be paid for the split. The reference runs once as a solver's code
does (the check every task gets); then, before the solvers play:

- one **probe** (`verifiers/code/replays.py`): replays of the reference's tests batched in one
  sandbox run, every one required to give the results of the first, which must pass: the first
  as a solver's run but with half the time of a call (`MARGIN`: a reference that passes only
  sometimes because it runs close to the limit is refused; the whole probe also gets half the
  memory); `PLAIN_REPLAYS` plain again (randomness, the clock's fine grain, process ids,
  scheduling, system counters); two in a fresh interpreter with `PYTHONHASHSEED` 1 and 2 (the
  hash seed, set order); `FRESH_LAYOUTS` more in a fresh interpreter each (memory addresses:
  every fresh interpreter gets a fresh random layout, a fork keeps its parent's, so a result
  that depends on one bit of an address passes all of them with odds of 2^-10; they repeat the
  plain replays' checks too); the tests in the reverse order, and each in a process of its own
  (state kept between calls: globals, mutable defaults, caches, files); and the wall clock moved
  ahead by a second, a minute, an hour, a day, 31 and 366 days (`time.time`, `datetime.now`,
  `date.today`, `time.strftime`, ...). Every replay starts from the run's own files. Most
  ill-posed references stop here, at the cost of one run.
- `IDENTICAL_RUNS` more runs exactly like a solver's: the same request to the same pool, so
  the reference cannot tell them from the solvers' runs (a probe replay it might), and spread
  over the pool's workers (a worker's own memory layout).

When the solvers' results would pay the proposer (some pass, some fail), the reference must
pass `CONFIRMING_RUNS` more runs made after the solvers ran (`confirm`): noise that shows only
in the solvers' window (a clock-gated branch) is caught there.

The sandbox makes the rest the same for every run, so it needs no check (docs/sandboxes.md,
"The same sandbox for every run"): the hash seed, the environment, the host name, the uid, the
working directory's files, the emptied /tmp and /dev/shm, the absent network.

Randomness can only be made unprofitable, not ruled out: a reference passing each run with
probability q is paid only if it passes every run, and its expected reward with 4 solvers is at
most 0.016 counting the probe's replays (0.032 counting only the 1 + 4 + 6 runs a reference
cannot tell from a solver's), against 0.23 with the single run of before (docs/multiagent.md).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlvr.envs.judge import checked_verdict
from rlvr.envs.multiagent.code_mutants import Candidate, Parameters
from rlvr.sandboxes import ExecRequest, Limits, ProgramStatus
from rlvr.sandboxes.errors import SandboxError
from rlvr.sandboxes.local import worker_config
from rlvr.verifiers.code import replays as replay_program
from rlvr.verifiers.code.harness import HARNESS_FILE, SOLUTION_FILE, decode_value, encode_value
from rlvr.verifiers.code.spec import CallCase, CodeTests
from rlvr.verifiers.code.verifier import HARNESS_SOURCE, RUN_OUTPUT, UnitTestVerifier
from rlvr.verifiers.types import Task, Verdict

REPLAY_PROGRAM = Path(replay_program.__file__).read_text(encoding="utf-8")
PLAIN_REPLAYS = 4
IDENTICAL_RUNS = 4
CONFIRMING_RUNS = 6
MARGIN = 0.5
HASH_SEEDS = (1, 2)
FRESH_LAYOUTS = 8
CLOCK_SHIFTS = {
    "a second": 1.0,
    "a minute": 60.0,
    "an hour": 3600.0,
    "a day": 86400.0,
    "31 days": 31 * 86400.0,
    "366 days": 366 * 86400.0,
}


@dataclass(frozen=True)
class Finding:
    """Why a posed task is refused: `outcome` ("not_reproducible", "vacuous_tests" or
    "infra_error"), `why` (a sentence for the proposer), and the verdict behind it, if any."""

    outcome: str
    why: str
    verdict: Verdict | None = None


@dataclass(frozen=True)
class _Replay:
    why: str  # how the results changed, for the proposer: "when run in ..."
    settings: dict[str, Any]


class Replays:
    """The reproducibility checks of proposals, run with the env's code verifier."""

    def __init__(self, verifier: UnitTestVerifier) -> None:
        self.verifier = verifier

    def check(
        self,
        task: Task,
        reference_reply: str,
        suspects: Sequence[Candidate] = (),
        parameters: Parameters | None = None,
        neighbours: Sequence[CallCase] = (),
    ) -> Finding | None:
        """Before the solvers play: the probe, the identical runs, and the suspects of vacuity
        told from the reference (`code_mutants`). None: all is well."""
        tests = CodeTests.from_answer(task.answer, task.id)
        # The probe first: one sandbox run, and most ill-posed references stop there.
        report, finding = self.probe(tests, neighbours if suspects else ())
        finding = finding or self.runs(task, reference_reply, IDENTICAL_RUNS)
        if finding is not None:
            return finding
        if suspects and parameters is not None:
            return _suspect_finding(suspects, parameters, neighbours, report[-1])
        return None

    def confirm(self, task: Task, reference_reply: str) -> Finding | None:
        """After the solvers ran: the reference passes again, `CONFIRMING_RUNS` times."""
        return self.runs(task, reference_reply, CONFIRMING_RUNS, after_solvers=True)

    # --- the identical runs ---------------------------------------------------------------------

    def runs(
        self, task: Task, reference_reply: str, count: int, after_solvers: bool = False
    ) -> Finding | None:
        """`count` runs of the reference, each exactly as a solver's code is run."""
        with ThreadPoolExecutor(count) as threads:
            verdicts = list(
                threads.map(
                    lambda _: checked_verdict(self.verifier, reference_reply, task), range(count)
                )
            )
        broken = [verdict for verdict in verdicts if verdict.infra_error]
        if broken:
            return Finding("infra_error", "our sandbox failed on your reference", broken[0])
        failed = [verdict for verdict in verdicts if not verdict.is_correct]
        if not failed:
            return None
        when = " after the solvers ran" if after_solvers else ""
        return Finding(
            "not_reproducible",
            f"your reference failed its own tests in {len(failed)} of {count} more runs{when}, "
            "so its results vary from run to run (randomness, the clock, process ids, memory "
            "addresses, timing)",
            failed[0],
        )

    # --- the probe ------------------------------------------------------------------------------

    def probe(
        self, tests: CodeTests, neighbours: Sequence[CallCase]
    ) -> tuple[list[Any], Finding | None]:
        """The batch of replays in one sandbox run: `(replays, finding)`, the last replay's
        results being the reference's on `neighbours` (when given)."""
        config = self.verifier.config
        replays = _replays(len(tests.cases), bool(neighbours))
        spec = tests.harness_input(stop_on_failure=True, test_timeout=config.test_timeout * MARGIN)
        spec["replays"] = [replay.settings for replay in replays]
        spec["fresh_roots"] = worker_config()["clean"]
        spec["neighbours"] = [
            {"args": encode_value(list(case.args)), "kwargs": encode_value(dict(case.kwargs))}
            for case in neighbours
        ]
        request = ExecRequest(
            code=REPLAY_PROGRAM,  # sent as code, not a file: the working directory is a run's
            files={HARNESS_FILE: HARNESS_SOURCE, SOLUTION_FILE: tests.reference or ""},
            stdin=json.dumps(spec),
            limits=Limits(
                wall_time=config.timeout, memory=int(config.memory * MARGIN), output=RUN_OUTPUT
            ),
        )
        try:
            result = self.verifier.executor().run(request)
        except SandboxError as exc:
            return [], Finding("infra_error", "our sandbox failed on your reference", _error(exc))
        if result.infra_error:
            return [], Finding(
                "infra_error", "our sandbox failed on your reference", _error(result.error)
            )
        finished = result.status is ProgramStatus.FINISHED
        reported = _replays_reported(result.stdout) if finished else None
        if reported is None:
            return [], Finding("not_reproducible", _why_unfinished(result.status, config.timeout))
        finding = _first_change(tests, replays, reported, spec["test_timeout"])
        if finding is None and len(reported) != len(replays):  # the runner stops at a change
            finding = Finding("not_reproducible", "your reference's replays stopped early")
        return reported, finding


def _replays(count: int, with_neighbours: bool) -> list[_Replay]:
    """The probe's replays: the first as a solver's run, at half the time of a call; the others
    must repeat its results; the neighbours' results last."""
    changes = {"report": "changes"}
    replays = [
        _Replay("", {}),  # a solver's run, but at half the time limit of a call
        *(
            _Replay("when run again (a result depends on randomness, the clock or timing)", changes)
            for _ in range(PLAIN_REPLAYS)
        ),
        *(
            _Replay(
                f"in a fresh interpreter with PYTHONHASHSEED={seed} (a result depends on the "
                "hash seed, the order of a set, memory addresses or randomness)",
                {"fresh": True, "hash_seed": seed, **changes},
            )
            for seed in HASH_SEEDS
        ),
        *(
            _Replay(
                "in a fresh interpreter (a result depends on memory addresses, randomness or "
                "the clock)",
                {"fresh": True, **changes},
            )
            for _ in range(FRESH_LAYOUTS)
        ),
        _Replay(
            "with the tests in the reverse order (a result depends on state kept between "
            "calls, or on randomness)",
            {"order": list(range(count))[::-1], **changes},
        ),
        _Replay(
            "with each test in a process of its own (a result depends on state kept between "
            "calls, or on randomness)",
            {"isolate": True, **changes},
        ),
        *(
            _Replay(
                f"with the clock moved {label} ahead (a result depends on the time, or on "
                "randomness)",
                {"clock_shift": shift, **changes},
            )
            for label, shift in CLOCK_SHIFTS.items()
        ),
    ]
    if with_neighbours:
        replays.append(_Replay("", {"inputs": "neighbours", "report": "values"}))
    return replays


def _first_change(
    tests: CodeTests, replays: list[_Replay], reported: list[Any], call_time: float
) -> Finding | None:
    first = reported[0]
    if first.get("load_error") is not None or not isinstance(first.get("results"), list):
        return Finding("not_reproducible", "your reference did not load again in a replay")
    for case, result in zip(tests.cases, first["results"]):
        if not _passes(case, result):
            why = (
                "your reference failed its own tests when run again with half the time of a "
                "call and half the memory a solver gets"
            )
            if isinstance(result, dict) and result.get("timeout"):
                why += f": a call took more than {call_time:g}s"
            return Finding("not_reproducible", why)
    for replay, replayed in zip(replays[1:], reported[1:]):
        if replay.settings.get("inputs"):
            continue
        results = replayed.get("results")
        if replayed.get("load_error") is not None or not isinstance(results, list):
            return Finding("not_reproducible", f"your reference did not load {replay.why}")
        if any(result != "same" for result in results):
            return Finding("not_reproducible", f"your reference's results changed {replay.why}")
    return None


def _passes(case: CallCase, result: Any) -> bool:
    if not isinstance(result, dict) or "value" not in result:
        return False
    try:
        return case.matches(decode_value(result["value"]))
    except (ValueError, TypeError, RecursionError):
        return False


def _suspect_finding(
    suspects: Sequence[Candidate],
    parameters: Parameters,
    neighbours: Sequence[CallCase],
    replayed: Any,
) -> Finding | None:
    """The first suspect the reference is told apart from on a neighbour, as vacuous tests."""
    results = replayed.get("results") if isinstance(replayed, dict) else None
    results = results if isinstance(results, list) else []
    for suspect in suspects:
        for neighbour, result in zip(neighbours, results):
            if not isinstance(result, dict) or "value" not in result:
                continue  # outside the reference's domain: no evidence either way
            try:
                value = decode_value(result["value"])
            except (ValueError, TypeError, RecursionError):
                continue
            if not suspect.agrees(parameters, neighbour, value):
                return Finding(
                    "vacuous_tests",
                    f"every test is passed by a function returning {suspect.name}, which is "
                    "not your reference's function (they differ next to your tests): add tests "
                    "that tell them apart",
                )
    return None


def _replays_reported(stdout: bytes) -> list[Any] | None:
    try:
        report = json.loads(stdout)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    replays = report.get("replays") if isinstance(report, dict) else None
    if not isinstance(replays, list) or not all(isinstance(r, dict) for r in replays):
        return None
    return replays


def _why_unfinished(status: ProgramStatus | None, timeout: float) -> str:
    if status is ProgramStatus.TIMEOUT:
        return (
            f"replaying your reference's tests {len(_replays(0, False))} times did not finish "
            f"in {timeout:g}s: each run of them must take well under the time a solver gets"
        )
    if status is ProgramStatus.OOM:
        return "your reference needs more than half the memory a solver gets"
    return "your reference stopped the test harness when run again"


def _error(detail: Any) -> Verdict:
    return Verdict.error(f"sandbox error: {detail}")
