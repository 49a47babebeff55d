"""`rlvr/CodeProposerSolver-v1`: one agent poses a Python function task with tests, k solvers
write the function; all code runs in the sandbox."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

from rlvr.envs.code import SANDBOX_ARGUMENTS, unit_test_verifier
from rlvr.envs.judge import checked_verdict
from rlvr.envs.multiagent.base import Round
from rlvr.envs.multiagent.code_ill_posed import ill_posed_proposals
from rlvr.envs.multiagent.code_leaks import code_tokens
from rlvr.envs.multiagent.code_problems import (
    MAX_SPEC_CHARS,
    MAX_TESTS,
    MIN_TESTS,
    CodeProposal,
    read_proposal,
)
from rlvr.envs.multiagent.code_replays import Finding, Replays
from rlvr.envs.multiagent.parallel import TextParallelEnv
from rlvr.envs.multiagent.proposer_solver import PROPOSER, ProposerSolverEnv
from rlvr.envs.options import declare
from rlvr.sandboxes import Executor
from rlvr.verifiers.code.extract import extract_code
from rlvr.verifiers.types import Task, Verdict

PROPOSER_RULES = (
    "Pose a Python programming task for {solvers} solvers, who will each try it once, seeing "
    "only your spec and the function's signature. Your reward is 1 - p, where p is the "
    "fraction of solvers whose function passes all your tests, but only when some and not all "
    "of them do (a task everyone solves, or no one solves, earns 0). Write three blocks:\n"
    "<spec>what the function must do, at most {max_spec} characters</spec>\n"
    "<reference>a correct solution: the function, defined at top level with def (the standard "
    "library only)</reference>\n"
    "<tests>{min_tests} to {max_tests} lines `name(args) == expected`, whose arguments and "
    "expected results are Python literals (numbers, strings, lists, tuples, dicts, sets, None, "
    "True, False), compared with exact types (2 is not 2.0 nor True)</tests>\n"
    "For example:\n{example}\n"
    "Your reference must pass your tests every time it runs (it runs many times in a "
    "sandbox, also in a fresh interpreter, in another order, at another time, with half the "
    "time and memory: no randomness, clock, hash or set order, or state kept between calls "
    "may decide a result); the tests must not all be passed by a trivial function (a "
    "constant, an argument returned unchanged, or a simple transform such as len(s) or a + b "
    "unless that is your function); two tests may not make the same call with different "
    "results; the spec must not give the code away (no def of the function, no run of your "
    "reference's code, however renamed or re-spaced). A task breaking these rules earns 0."
)
EXAMPLE_PROPOSAL = (
    "<spec>Return the number of vowels (a, e, i, o, u, either case) in the string s.</spec>\n"
    '<reference>\ndef count_vowels(s):\n    return sum(1 for c in s.lower() if c in "aeiou")\n'
    "</reference>\n"
    '<tests>\ncount_vowels("hello") == 2\ncount_vowels("") == 0\n'
    'count_vowels("AEIOU xyz") == 5\n</tests>'
)
"""A well-posed proposal: the prompt's example, and the proposer's `reference_reply`."""
SOLVER_OPENING = (
    "Another agent is writing a Python programming task for you; solve it when it arrives."
)


class CodeProposerSolverEnv(ProposerSolverEnv):
    """A proposer poses a Python function task with tests; k solvers write it (in the sandbox).

    Absolute-Zero-style learnability reward for the proposer; all code runs in the sandbox.

    ## Description
    Round 1: `proposer_0` writes a task in three tagged blocks: `<spec>` (what the function
    must do), `<reference>` (a solution defining the function at top level) and `<tests>`
    (3 to 20 lines `name(args) == expected` with literal arguments and results; the format is
    in `rlvr.envs.multiagent.code_problems`). The tests become `cases` of the code family's
    `CodeTests`: plain data, never code, whose expected values never enter the sandbox. The
    task must be well-posed (docs/multiagent.md, "What a proposer is paid for"): it reads,
    whatever the text (too deep a nesting is refused, never a crash); no two tests make the
    same call with different results; no trivial function passes every test (a constant, a
    parameter returned unchanged, or a simple transform such as `len(s)` that is not the
    reference's function: `code_mutants`); the spec does not give the reference's code away,
    compared on a normal form (`code_leaks`); and the reference passes its own tests every
    time, in every sandbox a solver might run in: once as a solver's code is run (the code
    family's verifier, `UnitTestVerifier`, as in `rlvr/Code-v0`), then in a batch of replays
    (again; in fresh interpreters with other hash seeds; in another order; a process per test;
    with the clock moved; at half the time and memory limits) and in more runs like a solver's
    (`code_replays`). Round 2, simultaneous: each of the `solvers` solver agents gets the spec
    and the function's signature (as in `Code-v0`'s prompts) and writes the function once; it
    runs in the sandbox against the proposer's tests. A split of the solvers pays the proposer
    only if it is not noise: solvers with the same code got the same verdict, and the
    reference passes again after they ran.

    ## Agents
    `proposer_0`, then `solver_0` ... `solver_{k-1}` (k = `solvers`).

    ## Action Space
    `TextSpace` for every agent. The proposer's blocks are the last `<spec>`, `<reference>`
    and `<tests>` blocks; a solver's code is its last ```python block defining the function
    (or the whole reply if it is Python), as in `Code-v0`.

    ## Observation Space
    `TextSpace`. The proposer: the rules. A solver: the task's prompt (spec and signature)
    only; never the proposer's reply, its reference or its tests.

    ## Rewards
    Solver: 1.0 if its function passes every test, else 0.0 (`infos[solver]["verdict"]`).
    What a solver's code does to fake a pass (printing a report, exiting early, patching
    builtins, objects that equal anything) fails, as in `Code-v0`: results travel back as plain
    data and are compared on the host. Proposer: with p the solvers' success rate, `1 - p` if
    0 < p < 1, else 0 (trivial or impossible), and 0 for a task that is not well-posed;
    `infos[proposer_0]["outcome"]` is "learnable", "trivial", "impossible", "unreadable",
    "outside_family", "ambiguous_tests", "vacuous_tests", "answer_in_problem", "wrong_answer"
    (the reference fails its tests) or "not_reproducible" (its results vary: before the
    solvers play, or found after they did), with `solve_rate`. An ill-posed task ends the
    episode after round 1 (the solvers never act and get 0). If the sandbox fails (our
    machinery) on a solver's code, that solver and the proposer get `infra_error`; on the
    reference, the proposer does (outcome "infra_error"). `env.ill_posed_proposals()` lists a
    proposal of every ill-posed class, each earning 0 (the multi-agent env checker plays them).

    ## Starting State
    Nothing is drawn: the proposer starts from the rules. No reset options.

    ## Episode End
    After round 2, or after round 1 when the task is ill-posed.

    ## Arguments
    - `solvers`: the number k of solver agents, at least 2 (default 4).
    - `backend`: the sandbox, "local" (default) or "docker"; `backend_options` (a dict for its
      config) or `executor` (an `rlvr.sandboxes.Executor` you manage), as in `Code-v0`.
    - `timeout`: seconds of wall time for one run of a reference or a solution, and for the
      reference's batch of replays (default 20); `test_timeout`: seconds for one test call
      (default 5; the replays allow half).
    - `render_mode`, `max_text_length`: as for every `TextAECEnv`.

    ## Version History
    - v1: the proposer is paid only for a well-posed task, by the rules of docs/multiagent.md
      ("What a proposer is paid for"), which its prompt now states: the reference reproduces
      its results (replays, more runs like a solver's, runs after the solvers; no split between
      identical solutions), no trivial function passes the tests (mutation testing), no two
      tests contradict each other, leaks are judged on a normal form, and any text is a
      verdict. v0 paid for noise (a reference passing by luck split solvers submitting the same
      code), took tests a stub passed and specs that rewrote the reference, and crashed on
      deeply nested text.
    - v0: initial release: Python functions with literal test cases, learnability reward.
    """

    metadata: ClassVar[dict[str, Any]] = {
        **ProposerSolverEnv.metadata,
        "name": "code_proposer_solver_v1",
    }
    argument_checks = declare(**SANDBOX_ARGUMENTS)
    solver_opening: ClassVar[str] = SOLVER_OPENING
    example_proposal: ClassVar[str] = EXAMPLE_PROPOSAL

    def __init__(
        self,
        *,
        solvers: int = 4,
        backend: str = "local",
        backend_options: dict[str, Any] | None = None,
        executor: Executor | None = None,
        timeout: float = 20.0,
        test_timeout: float = 5.0,
        render_mode: str | None = None,
        max_text_length: int = 1 << 16,
    ) -> None:
        verifier = unit_test_verifier(
            timeout=timeout,
            test_timeout=test_timeout,
            backend=backend,
            backend_options=backend_options,
            executor=executor,
        )
        self.unit_tests = verifier  # the env made it: it closes it
        self.replays = Replays(verifier)
        self.proposal: CodeProposal | None = None
        self._set_up(verifier, solvers, render_mode, max_text_length)

    def _rules(self) -> str:
        return PROPOSER_RULES.format(
            solvers=len(self.solvers),
            max_spec=MAX_SPEC_CHARS,
            min_tests=MIN_TESTS,
            max_tests=MAX_TESTS,
            example=EXAMPLE_PROPOSAL,
        )

    def ill_posed_proposals(self) -> list[tuple[str, str]]:
        """`(what it tests, proposer reply)` pairs, one per class of ill-posed task this env
        refuses (non-reproducible of each source, vacuous, leaking, ambiguous, unreadable):
        each must earn the proposer 0 however the solvers play. Each reply's reference is a
        fenced Python block, so a solver that echoes the reply submits the reference itself
        (what splits solvers on a task that is noise)."""
        return ill_posed_proposals(self.unit_tests.config.test_timeout)

    def _start(self, options: dict[str, Any]) -> dict[str, str]:
        self.proposal = None
        return super()._start(options)

    def _propose(self, reply: str) -> Round:
        reading = read_proposal(reply)
        proposal = reading.proposal
        if proposal is None:
            return self._ill_posed(reading.outcome, reading.why)
        task = proposal.task()
        # The proposer's code runs only in the sandbox, like the solvers'.
        verdict = checked_verdict(self.verifier, proposal.reference_reply(), task)
        if verdict.infra_error:
            return self._ill_posed("infra_error", "our sandbox failed on your reference", verdict)
        if not verdict.is_correct:
            why = "the reference fails its own tests"
            return self._ill_posed("wrong_answer", why, verdict)
        finding = self.replays.check(
            task,
            proposal.reference_reply(),
            proposal.suspects,
            proposal.parameters,
            proposal.neighbours,
        )
        if finding is not None:
            return self._ill_posed(finding.outcome, finding.why, finding.verdict)
        self.proposal = proposal
        info = {
            "problem": proposal.spec,
            "family": "function",
            "entry_point": proposal.entry_point,
            "tests": len(proposal.cases),
        }
        return self._posed(task, verdict, info, solution=proposal.reference_reply())

    def _solve(self, moves: dict[str, str]) -> Round:
        played = super()._solve(moves)
        if played.info[PROPOSER].get("outcome") != "learnable" or self.proposal is None:
            return played
        # The split pays the proposer only if it is not noise: solvers with the same code got
        # the same verdict, and the reference still passes after they ran.
        finding = _same_code_split(moves, played.verdicts, self.proposal.entry_point)
        if finding is None:
            assert self.task is not None
            finding = self.replays.confirm(self.task, self.proposal.reference_reply())
        return played if finding is None else _unpaid(played, finding)

    def _check_all(self, moves: dict[str, str], task: Task) -> dict[str, Verdict]:
        # The sandbox runs several at once (its pool's workers): the k solutions in parallel.
        with ThreadPoolExecutor(len(moves)) as threads:
            futures = {
                solver: threads.submit(checked_verdict, self.verifier, reply, task)
                for solver, reply in moves.items()
            }
        return {solver: future.result() for solver, future in futures.items()}

    def close(self) -> None:
        self.unit_tests.close()


def _same_code_split(
    moves: dict[str, str], verdicts: Mapping[str, Verdict], entry_point: str
) -> Finding | None:
    """Two solvers whose code is the same (up to layout, comments and quote style) and whose
    verdicts differ: the task's results vary between runs."""
    verdicts_by_code: dict[tuple[Any, ...], set[bool]] = defaultdict(set)
    for solver, reply in moves.items():
        verdict = verdicts.get(solver)
        code = extract_code(reply, entry_point)
        tokens = code_tokens(code) if code is not None else None
        if verdict is not None and not verdict.infra_error and tokens is not None:
            verdicts_by_code[tuple(tokens)].add(verdict.is_correct)
    if any(len(seen) > 1 for seen in verdicts_by_code.values()):
        return Finding(
            "not_reproducible",
            "solvers who submitted the same code got different verdicts, so your task's "
            "results vary between runs",
        )
    return None


def _unpaid(played: Round, finding: Finding) -> Round:
    """`played` with the proposer's learnability taken back, for `finding`'s reason."""
    infra = finding.outcome == "infra_error"
    summary = played.messages.get(PROPOSER, "")
    return dataclasses.replace(
        played,
        messages={**played.messages, PROPOSER: f"{summary} But {finding.why}: it earns 0."},
        rewards={**played.rewards, PROPOSER: 0.0},
        reward_terms={**played.reward_terms, PROPOSER: {"learnability": 0.0}},
        infra_error=played.infra_error | ({PROPOSER} if infra else set()),
        info={**played.info, PROPOSER: {**played.info[PROPOSER], "outcome": finding.outcome}},
    )


def env(**kwargs: Any) -> CodeProposerSolverEnv:
    """The AEC env (PettingZoo module style); it enforces call order itself."""
    return CodeProposerSolverEnv(**kwargs)


def parallel_env(**kwargs: Any) -> TextParallelEnv:
    """The Parallel env: the proposal in one step, the k solutions in the next."""
    return TextParallelEnv(CodeProposerSolverEnv(**kwargs))


raw_env = CodeProposerSolverEnv
