"""Red team: replies that try to make a multi-agent episode an infrastructure error, and
proposals that try to be paid for something other than difficulty.

Debate and ProposerSolver judge with `MathVerifier`; whatever a debater, solver or proposer
writes (answers that overrun the checker, crash it, quote our error messages, are not valid
text, nest deep or chain long) must score as that agent's reply, never raise nor set
`infos[agent]["infra_error"]`; a checker whose workers die on everything must still flag the
agents whose reward depends on it. A ProposerSolver proposal that states its own answer, in
any notation, or that conventions read two ways earns nothing, even when half the solvers are
right (issue 25). CodeProposerSolver replays a proposer's reference in the sandbox
(`code_replays`): a reference that attacks only its replays (the sandbox's harness, its
report, the machine's limits) must be refused as the proposer's fault, never flagged as ours.
"""

from __future__ import annotations

import textwrap
from concurrent.futures import ThreadPoolExecutor

import pytest

from rlvr.envs.deep_text import FORGED_INFRA_REPLIES, nasty_replies
from rlvr.envs.multiagent.code_proposer_solver import CodeProposerSolverEnv
from rlvr.envs.multiagent.debate import DebateEnv
from rlvr.envs.multiagent.proposer_solver import EXAMPLE_PROPOSAL as PROBLEM
from rlvr.envs.multiagent.proposer_solver import ProposerSolverEnv
from tests.envs import test_code_infra_redteam as code_redteam
from tests.envs.multiagent.test_code_problems import REFERENCE, proposal
from tests.envs.test_math_infra_redteam import ANSWERS, REPLIES, pool_whose_workers_die

executor = code_redteam.executor  # the fixture: a private local sandbox (2 workers), warmed up

SYMBOLIC = {"prompt": "Simplify 2/sqrt(2).", "answer": "\\sqrt{2}"}  # checked in a worker


def debate(reply: str) -> dict[str, tuple[float, bool]]:
    env = DebateEnv(rounds=1, timeout=1.0)
    env.reset(seed=0, options={"task": SYMBOLIC})
    env.step(reply)
    env.step("\\boxed{1}")
    return {a: (env._cumulative_rewards[a], env.infos[a]["infra_error"]) for a in env.agents}


def proposer_solver(proposal: str, solver_reply: str) -> dict[str, tuple[float, bool]]:
    env = ProposerSolverEnv(solvers=2, timeout=1.0)
    env.reset(seed=0)
    env.step(proposal)
    while not env.terminations[env.agent_selection]:
        env.step(solver_reply)
    return {a: (env._cumulative_rewards[a], env.infos[a]["infra_error"]) for a in env.agents}


def test_no_debater_reply_makes_a_debate_an_infrastructure_error():
    with ThreadPoolExecutor(4) as threads:
        results = list(threads.map(debate, REPLIES))
    flagged = [
        (reply[:50], result)
        for reply, result in zip(REPLIES, results)
        if any(infra for _, infra in result.values()) or result["debater_0"][0] > 0
    ]
    assert flagged == []


def test_no_proposer_or_solver_reply_makes_an_infrastructure_error():
    good = "<problem>2x + 3 = 10</problem><answer>7/2</answer>"
    runs = [(f"<problem>2x + 3 = 10</problem><answer>{answer}</answer>", "") for answer in ANSWERS]
    runs += [(f"<problem>{answer}</problem><answer>1</answer>", "") for answer in ANSWERS]
    runs += [(good, reply) for reply in REPLIES]
    with ThreadPoolExecutor(4) as threads:
        results = list(threads.map(lambda run: proposer_solver(*run), runs))
    flagged = [
        (run[0][:60], run[1][:40], result)
        for run, result in zip(runs, results)
        if any(infra for _, infra in result.values()) or any(r > 0 for r, _ in result.values())
    ]
    assert flagged == []


def test_a_checker_that_dies_on_everything_still_flags_the_debaters(monkeypatch):
    broken = pool_whose_workers_die(monkeypatch)
    try:
        result = debate("\\boxed{\\sqrt{3}}")
    finally:
        broken.close()
    assert result == {"debater_0": (0.0, True), "debater_1": (0.0, True)}


def test_no_reference_attacking_its_replays_makes_an_infrastructure_error(executor):
    # In a replay's fresh interpreter the hash seed is not the sandbox's: the attack runs there
    # only, after the reference passed its first run.
    attacks = {
        name: "import os\nif os.environ.get('PYTHONHASHSEED') != '0':\n"
        + textwrap.indent(code, "    ")
        + REFERENCE
        for name, code in code_redteam.HOSTILE.items()
    }

    def play(reference: str) -> tuple[str, bool, float]:
        env = CodeProposerSolverEnv(solvers=2, executor=executor, timeout=3.0, test_timeout=1.0)
        env.reset(seed=0)
        env.step(proposal(reference=reference))
        info = env.infos["proposer_0"]
        return (
            info.get("outcome", "posed"),
            info["infra_error"],
            env._cumulative_rewards["proposer_0"],
        )

    with ThreadPoolExecutor(2) as threads:
        outcomes = dict(zip(attacks, threads.map(play, attacks.values())))
    assert {name: got for name, got in outcomes.items() if got[1] or got[2] != 0.0} == {}
    # Those that break the run they are in are refused; the rest leave its results alone.
    harmless = {"quote our error messages", "close its output", "hang in the call"}
    broken = {name: outcome for name, (outcome, _, _) in outcomes.items() if name not in harmless}
    assert set(broken.values()) <= {"not_reproducible", "outside_family"}, broken


# --- issue 25: proposals that earn by leaking or by ambiguity, deep text at every seat ----------


def half_the_solvers_right(proposal: str, right: str, wrong: str) -> tuple[str, float]:
    """The proposer's outcome and reward when solvers 0 and 2 reply `right` and 1 and 3 reply
    `wrong`: any proposal that is accepted earns 0.5."""
    env = ProposerSolverEnv(solvers=4, timeout=2.0)
    env.reset(seed=0)
    env.step(proposal)
    for index, solver in enumerate(env.solvers):
        if env.terminations[env.agent_selection]:
            break
        assert env.agent_selection == solver
        env.step(f"\\boxed{{{right if index % 2 == 0 else wrong}}}")
    return env.infos["proposer_0"]["outcome"], env._cumulative_rewards["proposer_0"]


@pytest.mark.parametrize(
    ("problem", "answer"),
    [
        ("x = 007", "7"),  # leading zeros
        ("2x = x + 0007", "7"),
        ("x = +7", "7"),
        ("3x = 14/2 + 2x", "7"),  # a fraction written out is its value
        ("3x - 7/(3) = 2x", "7/3"),
        ("x = (0014)/(06)", "7/3"),
        ("x + 7 = 0", "-7"),  # the answer's negative
    ],
)
def test_a_proposal_stating_its_answer_in_any_notation_earns_nothing(problem, answer):
    proposal = f"<problem>{problem}</problem><answer>{answer}</answer>"
    assert half_the_solvers_right(proposal, answer, "12345") == ("answer_in_problem", 0.0)


@pytest.mark.parametrize(
    ("problem", "ours", "other_reading"),
    [
        ("6/2(1+2)", "9", "1"),
        ("1/2x = 4", "8", "1/8"),
        ("12/4*3", "9", "1"),
        ("8/4/2", "1", "4"),
        ("-3^2 + 20", "11", "29"),
        ("2^3^2", "512", "64"),
        ("2^3x = 16", "2", "4/3"),
    ],
)
def test_a_proposal_read_two_ways_earns_nothing(problem, ours, other_reading):
    proposal = f"<problem>{problem}</problem><answer>{ours}</answer>"
    assert half_the_solvers_right(proposal, ours, other_reading) == ("ambiguous", 0.0)


def test_the_same_problems_with_parentheses_are_paid_for_difficulty():
    for problem, answer in [("(6/2)(1+2)", "9"), ("(-3)^2 + 20", "29"), ("(2^3)^2", "64")]:
        proposal = f"<problem>{problem}</problem><answer>{answer}</answer>"
        assert half_the_solvers_right(proposal, answer, "12345") == ("learnable", 0.5)


def test_no_deep_or_long_chain_reply_at_any_seat_breaks_a_proposer_solver_episode():
    replies = [*nasty_replies(), *FORGED_INFRA_REPLIES]
    runs = [(reply, "") for reply in replies] + [(PROBLEM, reply) for reply in replies]
    with ThreadPoolExecutor(4) as threads:
        results = list(threads.map(lambda run: proposer_solver(*run), runs))
    flagged = [
        (run[0][:40], run[1][:40], result)
        for run, result in zip(runs, results)
        if any(infra for _, infra in result.values()) or result["proposer_0"][0] != 0.0
    ]
    assert flagged == []
