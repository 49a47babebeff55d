"""rlvr/ProposerSolver-v1: well-posedness, the learnability reward, what solvers see, infra."""

from __future__ import annotations

import re

import pytest

from rlvr.envs.errors import EnvConfigError
from rlvr.envs.multiagent import TextParallelEnv, make
from rlvr.envs.multiagent.proposer_solver import ProposerSolverEnv
from rlvr.verifiers.math import MathVerifier
from rlvr.verifiers.types import Verdict
from tests.envs.multiagent.support import assert_learnability_rewards

PROBLEM = "<problem>3(x - 2) + 5 = x/2 + 14</problem><answer>6</answer>"


def proposed(reply: str = PROBLEM, solvers: int = 4) -> ProposerSolverEnv:
    env = ProposerSolverEnv(solvers=solvers)
    env.reset(seed=0)
    env.step(reply)
    return env


def answer_all(env: ProposerSolverEnv, replies: list[str]) -> None:
    for solver, reply in zip(env.solvers, replies):
        assert env.agent_selection == solver
        env.step(reply)


@pytest.mark.parametrize(
    ("replies", "outcome", "reward"),
    [
        (["\\boxed{6}", "\\boxed{5}", "\\boxed{6}", "\\boxed{6}"], "learnable", 0.25),
        (["\\boxed{6}", "no idea", "\\boxed{1}", "\\boxed{-6}"], "learnable", 0.75),
        (["\\boxed{6}"] * 4, "trivial", 0.0),
        (["\\boxed{7}"] * 4, "impossible", 0.0),
    ],
)
def test_the_proposer_earns_one_minus_the_solve_rate_when_learnable(replies, outcome, reward):
    env = proposed()
    answer_all(env, replies)
    assert_learnability_rewards(env, replies, outcome, reward, right="\\boxed{6}")
    for solver in env.solvers:
        assert env.infos[solver]["verdict"]["status"] in ("correct", "incorrect", "unparsable")


@pytest.mark.parametrize(
    ("reply", "outcome"),
    [
        ("3(x - 2) + 5 = x/2 + 14, answer 6", "unreadable"),
        ("<problem>3(x - 2) + 5 = x/2 + 14</problem>", "unreadable"),
        ("<problem>x^2 = 36</problem><answer>6</answer>", "outside_family"),
        ("<problem>What is 6? Answer: 6</problem><answer>6</answer>", "outside_family"),
        ("<problem>3(x - 2) + 5 = x/2 + 14</problem><answer>7</answer>", "wrong_answer"),
        ("<problem>3(x - 2) + 5 = x/2 + 14</problem><answer>12/2</answer>", "wrong_answer"),
        ("<problem>3(x - 2) + 5 = x/2 + 14</problem><answer>x</answer>", "wrong_answer"),
        ("<problem>x + 0 = 6</problem><answer>6</answer>", "answer_in_problem"),
        ("<problem>6 * 1</problem><answer>6</answer>", "answer_in_problem"),
        ("<problem>x = 006</problem><answer>6</answer>", "answer_in_problem"),
        ("<problem>6/2(1+2)</problem><answer>9</answer>", "ambiguous"),
        ("<problem>-2^2 + 10</problem><answer>6</answer>", "ambiguous"),
    ],
)
def test_an_ill_posed_problem_earns_nothing_and_ends_the_episode(reply, outcome):
    env = proposed(reply)
    assert all(env.terminations.values())
    assert env.infos["proposer_0"]["outcome"] == outcome
    assert env._cumulative_rewards == dict.fromkeys(env.possible_agents, 0.0)
    assert all(env.infos[solver]["outcome"] == "no_problem" for solver in env.solvers)
    assert all(env.view(solver)[-1]["role"] == "user" for solver in env.solvers)  # never acted
    assert not any(env.infos[agent]["infra_error"] for agent in env.possible_agents)


def test_solvers_see_the_question_and_nothing_else_of_the_proposers_reply():
    secret = "SECRET-NOTE"
    views = []
    for reply in (PROBLEM, f"{secret} <answer>999</answer> " + PROBLEM + f" {secret}"):
        env = proposed(reply)
        views.append([(env.view(s), env.observe(s), env.infos[s]) for s in env.solvers])
    assert views[0] == views[1]
    text = str(views[0])
    assert "Solve for x: 3(x - 2) + 5 = x/2 + 14" in text
    assert "<answer>" not in text and re.search(r"(?<!\w)6(?!\w)", text) is None  # the gold


def test_the_k_solver_answers_come_in_one_parallel_step():
    env = TextParallelEnv(ProposerSolverEnv(solvers=3))
    env.reset(seed=0)
    _, _, _, _, infos = env.step(dict.fromkeys(env.agents, PROBLEM))
    assert [agent for agent in env.agents if infos[agent]["to_move"]] == [
        "solver_0",
        "solver_1",
        "solver_2",
    ]
    _, rewards, terminations, _, _ = env.step(
        {"solver_0": "\\boxed{6}", "solver_1": "\\boxed{6}", "solver_2": "\\boxed{0}"}
    )
    assert rewards == {
        "proposer_0": pytest.approx(1 / 3),
        "solver_0": 1.0,
        "solver_1": 1.0,
        "solver_2": 0.0,
    }
    assert all(terminations.values()) and env.agents == []


class FailingOn:
    """The real math verifier, except that our machinery fails on replies containing `marker`
    (as when the worker pool is down): an error verdict, never a score."""

    def __init__(self, marker: str) -> None:
        self.marker = marker
        self.real = MathVerifier()

    def verify(self, response: str, task) -> Verdict:
        if self.marker in response:
            return Verdict.error("the math checker failed: no worker would start")
        return self.real.verify(response, task)


def test_a_verifier_failure_on_a_solver_is_infra_for_it_and_the_proposer_only():
    env = ProposerSolverEnv(solvers=3)
    env.verifier = FailingOn("BREAK")
    env.reset(seed=0)
    env.step(PROBLEM)
    answer_all(env, ["\\boxed{6}", "BREAK \\boxed{6}", "\\boxed{1}"])
    infra = {agent: env.infos[agent]["infra_error"] for agent in env.possible_agents}
    assert infra == {"proposer_0": True, "solver_0": False, "solver_1": True, "solver_2": False}
    assert env.infos["proposer_0"]["outcome"] == "infra_error"
    assert env.infos["solver_1"]["verdict"]["status"] == "error"
    assert env.infos["solver_1"]["verdict"]["score"] is None


def test_a_verifier_failure_on_the_proposers_answer_is_infra_not_a_zero():
    env = ProposerSolverEnv()
    env.verifier = FailingOn("\\boxed{6}")
    env.reset(seed=0)
    env.step(PROBLEM)
    assert env.infos["proposer_0"]["infra_error"] is True
    assert env.infos["proposer_0"]["outcome"] == "infra_error"
    assert not env.infos["solver_0"]["infra_error"]


def test_solvers_must_be_several():
    with pytest.raises(EnvConfigError, match="solvers must be an int >= 2"):
        make("rlvr/ProposerSolver-v1", solvers=1)
    assert make("rlvr/ProposerSolver-v1", solvers=8).possible_agents[-1] == "solver_7"


def test_the_reference_replies_pose_a_problem_and_solve_it():
    env = ProposerSolverEnv(solvers=2)
    env.reset(seed=0)
    assert env.reference_reply("solver_0") is None  # nothing is posed yet
    env.step(env.reference_reply("proposer_0"))
    assert env.infos["proposer_0"]["family"] == "solve"
    assert env.reference_reply("proposer_0") is None
    for solver in env.solvers:
        env.step(env.reference_reply(solver))
    assert env.infos["proposer_0"]["outcome"] == "trivial"
    assert [env._cumulative_rewards[solver] for solver in env.solvers] == [1.0, 1.0]
    env.reset(seed=0)
    assert env.reference_reply("solver_0") is None  # a new episode forgets the solution


def test_every_listed_ill_posed_proposal_is_refused_at_round_one():
    env = ProposerSolverEnv(solvers=2)
    outcomes = set()
    for _, proposal in env.ill_posed_proposals():
        env.reset(seed=0)
        env.step(proposal)
        assert all(env.terminations.values()), proposal
        outcomes.add(env.infos["proposer_0"]["outcome"])
    assert outcomes == {
        "unreadable",
        "outside_family",
        "wrong_answer",
        "answer_in_problem",
        "ambiguous",
    }
