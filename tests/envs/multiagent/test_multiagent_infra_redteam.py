"""Red team: replies that try to make a multi-agent episode an infrastructure error.

Debate and ProposerSolver judge with `MathVerifier`; whatever a debater, solver or proposer
writes (answers that overrun the checker, crash it, quote our error messages, are not valid
text) must score as that agent's reply, never set `infos[agent]["infra_error"]`; a checker
whose workers die on everything must still flag the agents whose reward depends on it.
CodeProposerSolver replays a proposer's reference in the sandbox (`code_replays`): a reference
that attacks only its replays (the sandbox's harness, its report, the machine's limits) must be
refused as the proposer's fault, never flagged as ours.
"""

from __future__ import annotations

import textwrap
from concurrent.futures import ThreadPoolExecutor

from rlvr.envs.multiagent.code_proposer_solver import CodeProposerSolverEnv
from rlvr.envs.multiagent.debate import DebateEnv
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
