"""`rlvr/ProposerSolver-v1`: one agent poses a math problem, k solver agents answer it."""

from __future__ import annotations

from fractions import Fraction
from typing import Any, ClassVar

from rlvr.envs.errors import EnvConfigError
from rlvr.envs.judge import checked_verdict
from rlvr.envs.multiagent.base import Round, TextAECEnv
from rlvr.envs.multiagent.parallel import TextParallelEnv
from rlvr.envs.multiagent.problems import MAX_CHARS, Posed, answer_in_problem, pose, question
from rlvr.envs.options import declare, real, whole
from rlvr.envs.replies import last_tagged
from rlvr.verifiers.math import MathVerifier
from rlvr.verifiers.types import Task, Verdict, Verifier, content_id

PROPOSER = "proposer_0"
SOLVER_PROMPT = "{question}\nPut your final answer in \\boxed{{}}."
PROPOSER_PROMPT = (
    "Pose a math problem for {solvers} solvers, who will each try it once without seeing your "
    "answer. Your reward is 1 - p, where p is the fraction of solvers who get it right, but "
    "only when some and not all of them do (a problem everyone solves, or no one solves, earns "
    "0). The problem must be either an arithmetic expression to evaluate, e.g. "
    "(3 + 4/5) * 2^3 - 7, or a linear equation in x with exactly one solution, e.g. "
    "3(x - 2) + 5 = x/2 + 14: whole numbers, x, + - * / ^ (whole exponents 0 to 10), "
    "parentheses and =, at most {max_chars} characters. Forms that conventions read two ways "
    "are refused, so write parentheses: after a divisor, nothing more in the same product "
    "(not 6/2(1+2) nor 6/2*3: write (6/2)(1+2) or 6/(2*3)); no sign before a power (not -2^2: "
    "write -(2^2) or (-2)^2); no power of a power (not 2^3^2: write (2^3)^2 or 2^(3^2)); no "
    "factor right after a power (not 2^3x: write (2^3)x). No number in the problem may equal "
    "its answer, sign aside, however written (for the answer 5: not 5, 005, -5 or 10/2). "
    "Write it as <problem>...</problem> and its exact answer (an integer or a fraction in "
    "lowest terms, the value of x for an equation) as <answer>...</answer>. A problem outside "
    "these rules, or a wrong answer, earns 0."
)
EXAMPLE_PROPOSAL = "<problem>3(x - 2) + 5 = x/2 + 14</problem><answer>6</answer>"
ILL_POSED_PROPOSALS = (
    ("no problem", "The problem is 3(x - 2) + 5 = x/2 + 14 and its answer is 6."),
    ("not in the grammar", "<problem>What is 7 times 8?</problem><answer>56</answer>"),
    ("vacuous: an expression in x", "<problem>3x + 1</problem><answer>1</answer>"),
    ("vacuous: no single solution", "<problem>2(x + 1) = 2x + 2</problem><answer>0</answer>"),
    ("vacuous: no x", "<problem>2 + 2 = 4</problem><answer>4</answer>"),
    ("a wrong answer", "<problem>3(x - 2) + 5 = x/2 + 14</problem><answer>7</answer>"),
    ("leak: the answer written", "<problem>2x - 7 = x</problem><answer>7</answer>"),
    ("leak: leading zeros", "<problem>x = 2(x - 007) + 7</problem><answer>7</answer>"),
    ("leak: a fraction written out", "<problem>3x - 14/2 = 2x</problem><answer>7</answer>"),
    ("leak: the answer's negative", "<problem>x + 7 = 0</problem><answer>-7</answer>"),
    ("leak: a fraction answer", "<problem>3x = 2 * 7/3 + 7/3</problem><answer>7/3</answer>"),
    ("ambiguous: a product after a divisor", "<problem>6/2(1+2)</problem><answer>9</answer>"),
    ("ambiguous: the other reading", "<problem>6/2(1+2)</problem><answer>1</answer>"),
    ("ambiguous: two divisors", "<problem>8/4/2 = x</problem><answer>1</answer>"),
    ("ambiguous: a sign before a power", "<problem>-3^2 + 20</problem><answer>11</answer>"),
    ("ambiguous: a power of a power", "<problem>2^3^2</problem><answer>512</answer>"),
    ("ambiguous: a factor after a power", "<problem>2^3x = 16</problem><answer>2</answer>"),
    ("nested too deep", f"<problem>{'(' * 30}5{')' * 30} + 1</problem><answer>6</answer>"),
)
"""One proposal breaking each rule of well-posedness: each earns 0 (`ill_posed_proposals`)."""
SOLVER_OPENING = "Another agent is writing a math problem for you; solve it when it arrives."


class ProposerSolverEnv(TextAECEnv):
    """A proposer poses a verifiable math problem; k solvers try it (Absolute-Zero-style reward).

    ## Description
    Round 1: `proposer_0` writes `<problem>...</problem><answer>...</answer>`. The problem must
    be in a family we solve exactly ourselves (`rlvr.envs.multiagent.problems`: an arithmetic
    expression, or a linear equation in x with one solution, in a small grammar evaluated with
    fractions), so the gold answer is ours, never the proposer's. The problem is well-posed
    when it parses, in a grammar without forms that conventions read two ways (`6/2(1+2)`,
    `-2^2`, `2^3^2`, `2^3x` are refused: parentheses say which reading is meant), when
    `MathVerifier` accepts the proposer's own answer against our gold, and when no number the
    problem writes is its answer, sign aside, judged on values (`007`, `+7`, `14/2` all write
    7). docs/multiagent.md ("What a proposer is paid for") states each rule with examples
    accepted and refused. Round 2, simultaneous:
    each of the `solvers` solver agents gets "Evaluate: ..." or "Solve for x: ..." and answers
    once, judged by `MathVerifier` against our gold. The k solver samples of one problem are
    k agents acting in the same round (a self-play trainer seats one policy in all of them),
    which is how the proposer's learnability reward sees a solve rate.

    ## Agents
    `proposer_0`, then `solver_0` ... `solver_{k-1}` (k = `solvers`).

    ## Action Space
    `TextSpace` for every agent. The proposer's tags are read from the last `<problem>` and
    last `<answer>` blocks; a solver's answer from its last `\\boxed{}` (as in `Math-v0`).

    ## Observation Space
    `TextSpace`. The proposer: the rules. A solver: the question only; it never sees the
    proposer's reply, its answer, or our gold.

    ## Rewards
    Solver: 1.0 if its answer equals our gold exactly, else 0.0 (`infos[solver]["verdict"]`).
    Proposer: with p the solvers' success rate, `1 - p` if 0 < p < 1, else 0 (trivial or
    impossible), and 0 for a problem that is not well-posed; `infos[proposer_0]["outcome"]` is
    "learnable", "trivial", "impossible", "unreadable", "outside_family", "ambiguous",
    "wrong_answer" or "answer_in_problem", with `solve_rate`. An ill-posed problem ends the
    episode after round 1 (the solvers never act and get 0). If the verifier fails (our
    machinery) on a solver's reply, that solver and the proposer get `infra_error`; on the
    proposer's answer, the proposer does.

    ## Starting State
    Nothing is drawn: the proposer starts from the rules. No reset options.

    ## Episode End
    After round 2, or after round 1 when the problem is ill-posed.

    ## Arguments
    - `solvers`: the number k of solver agents, at least 2 (default 4).
    - `timeout`: time limit in seconds of one math check (default 5).
    - `render_mode`, `max_text_length`: as for every `TextAECEnv`.

    ## Version History
    - v1: well-posedness on principles (issue 25): forms that conventions read two ways are
      refused (outcome "ambiguous": `6/2(1+2)`, `-2^2`, `2^3^2`, `2^3x`; parentheses say which
      reading), and a leak is any number written in the problem whose value is the answer,
      sign aside (`007`, `14/2`, `7/(3)` now count); the proposer's prompt states both rules.
      v0 accepted those proposals, so rewards and the prompt differ: hence the new version.
    - v0: initial release: evaluate and solve-linear families, learnability reward.
    """

    metadata: ClassVar[dict[str, Any]] = {**TextAECEnv.metadata, "name": "proposer_solver_v1"}
    # Several solvers: a solve rate needs several attempts.
    argument_checks = declare(solvers=whole(2), timeout=real(0.0, low_open=True))

    def __init__(
        self,
        *,
        solvers: int = 4,
        timeout: float = 5.0,
        render_mode: str | None = None,
        max_text_length: int = 1 << 16,
    ) -> None:
        try:
            verifier = MathVerifier(timeout=timeout)
        except ValueError as exc:
            raise EnvConfigError(str(exc)) from None
        self._set_up(verifier, solvers, render_mode, max_text_length)

    def _set_up(
        self, verifier: Verifier, solvers: int, render_mode: str | None, max_text_length: int
    ) -> None:
        """The rounds around `verifier`, which judges the solvers' replies to a posed task."""
        self.verifier = verifier
        self.solvers = [f"solver_{i}" for i in range(solvers)]
        super().__init__(
            (PROPOSER, *self.solvers), render_mode=render_mode, max_text_length=max_text_length
        )
        self.task: Task | None = None
        self._solution: str | None = None  # a solver's reply that solves the posed task

    # --- what a family changes ------------------------------------------------------------------

    solver_opening: ClassVar[str] = SOLVER_OPENING
    """What a solver reads while the proposer writes."""

    example_proposal: ClassVar[str] = EXAMPLE_PROPOSAL
    """A well-posed proposal (the proposer's `reference_reply`)."""

    def _rules(self) -> str:
        """The proposer's opening: how to pose a problem of the family, and the reward."""
        return PROPOSER_PROMPT.format(solvers=len(self.solvers), max_chars=MAX_CHARS)

    # --- the rounds -----------------------------------------------------------------------------

    def _start(self, options: dict[str, Any]) -> dict[str, str]:
        self.task, self._solution = None, None
        return {PROPOSER: self._rules(), **dict.fromkeys(self.solvers, self.solver_opening)}

    def _movers(self) -> list[str]:
        return [PROPOSER] if self.task is None else list(self.solvers)

    def _play(self, moves: dict[str, str]) -> Round:
        if self.task is None:
            return self._propose(moves[PROPOSER])
        return self._solve(moves)

    # --- round 1: the proposal ------------------------------------------------------------------

    def _propose(self, reply: str) -> Round:
        problem_text, answer_text = last_tagged(reply, "problem"), last_tagged(reply, "answer")
        if problem_text is None or answer_text is None:
            return self._ill_posed("unreadable", "no <problem>...</problem><answer>...</answer>")
        posed = pose(problem_text)
        if posed.answer is None:
            outcome = "ambiguous" if posed.ambiguous else "outside_family"
            return self._ill_posed(outcome, posed.problem or "")
        task = _task(posed)
        verdict = self.verifier.verify(f"\\boxed{{{answer_text.strip()}}}", task)
        if verdict.infra_error:
            return self._ill_posed("infra_error", "our checker failed on your answer", verdict)
        if not verdict.is_correct:
            return self._ill_posed(
                "wrong_answer", "the stated answer is not the problem's", verdict
            )
        if answer_in_problem(posed):
            why = "a number in the problem is its answer (sign aside)"
            return self._ill_posed("answer_in_problem", why)
        info = {"problem": posed.text, "family": posed.family}
        return self._posed(task, verdict, info, solution=f"\\boxed{{{task.answer}}}")

    def _posed(
        self, task: Task, verdict: Verdict, info: dict[str, Any], solution: str | None = None
    ) -> Round:
        """A well-posed problem (`verdict`: the check of the proposer's own answer): the solvers
        get its prompt, and only that. `solution`: a solver's reply that solves it (the
        solvers' `reference_reply`), if the family knows one."""
        self.task_id = task.id
        self.task, self._solution = task, solution
        return Round(
            messages=dict.fromkeys(self.solvers, task.prompt),
            verdicts={PROPOSER: verdict},
            info={PROPOSER: info},
        )

    def _ill_posed(self, outcome: str, why: str, verdict: Verdict | None = None) -> Round:
        text = f"The episode ends: {why}."
        return Round(
            messages={PROPOSER: text},
            game_over=True,
            verdicts={} if verdict is None else {PROPOSER: verdict},
            reward_terms={PROPOSER: {"learnability": 0.0}},
            infra_error=frozenset({PROPOSER}) if outcome == "infra_error" else frozenset(),
            info={
                PROPOSER: {"outcome": outcome},
                **{solver: {"outcome": "no_problem"} for solver in self.solvers},
            },
        )

    # --- for checkers ---------------------------------------------------------------------------

    def reference_reply(self, agent: str) -> str | None:
        """A reply that plays `agent`'s seat right now, or None: the proposer's is a well-posed
        proposal (`example_proposal`), a solver's the solution of the posed problem. For checks
        and tests only: it reads the gold, never give it to a policy in training."""
        if agent == PROPOSER:
            return self.example_proposal if self.task is None else None
        return self._solution if agent in self.solvers else None

    def ill_posed_proposals(self) -> list[tuple[str, str]]:
        """(what each tests, a proposer's reply) for proposals that must earn 0 whatever the
        solvers reply: one of each rule of well-posedness (docs/multiagent.md, "What a proposer
        is paid for"). `rlvr.envs.multiagent.check_env` plays them."""
        return list(ILL_POSED_PROPOSALS)

    # --- round 2: the solvers -------------------------------------------------------------------

    def _solve(self, moves: dict[str, str]) -> Round:
        assert self.task is not None
        verdicts = self._check_all(moves, self.task)
        failed = frozenset(s for s, verdict in verdicts.items() if verdict.infra_error)
        scores = {s: verdict.score or 0.0 for s, verdict in verdicts.items()}
        solved = sum(1 for s in self.solvers if verdicts[s].is_correct)
        solve_rate = solved / len(self.solvers)
        outcome, learnability = _learnability(solve_rate)
        if failed:
            outcome, learnability = "infra_error", 0.0
        rewards = {PROPOSER: learnability, **scores}
        summary = f"{solved} of {len(self.solvers)} solvers solved it."
        return Round(
            messages={PROPOSER: summary, **{s: _solver_result(verdicts[s]) for s in self.solvers}},
            rewards=rewards,
            game_over=True,
            verdicts=verdicts,
            reward_terms={
                PROPOSER: {"learnability": learnability},
                **{s: {"correctness": scores[s]} for s in self.solvers},
            },
            infra_error=failed | ({PROPOSER} if failed else set()),
            info={PROPOSER: {"outcome": outcome, "solve_rate": solve_rate}},
        )

    def _check_all(self, moves: dict[str, str], task: Task) -> dict[str, Verdict]:
        """Each solver's reply checked by the verifier (a verifier that raises: an error)."""
        return {solver: checked_verdict(self.verifier, moves[solver], task) for solver in moves}


def _learnability(solve_rate: float) -> tuple[str, float]:
    """Absolute Zero's proposer reward: 1 - p when some but not all solve it."""
    if solve_rate >= 1.0:
        return "trivial", 0.0
    if solve_rate <= 0.0:
        return "impossible", 0.0
    return "learnable", 1.0 - solve_rate


def _task(posed: Posed) -> Task:
    assert posed.answer is not None
    answer: Fraction | int = posed.answer
    if posed.answer.denominator == 1:
        answer = posed.answer.numerator
    prompt = SOLVER_PROMPT.format(question=question(posed))
    return Task(id=content_id(posed.family, posed.text), prompt=prompt, answer=answer)


def _solver_result(verdict: Verdict) -> str:
    if verdict.infra_error:
        return "Your answer could not be checked (our checker failed)."
    return "Correct." if verdict.is_correct else "Not correct."


def env(**kwargs: Any) -> ProposerSolverEnv:
    """The AEC env (PettingZoo module style); it enforces call order itself."""
    return ProposerSolverEnv(**kwargs)


def parallel_env(**kwargs: Any) -> TextParallelEnv:
    """The Parallel env: the proposal in one step, the k answers in the next."""
    return TextParallelEnv(ProposerSolverEnv(**kwargs))


raw_env = ProposerSolverEnv
