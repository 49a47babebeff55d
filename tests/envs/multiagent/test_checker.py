"""`rlvr.envs.multiagent.check_env`: a user's env that keeps the contract passes; each way of
breaking it (a reader that recurses on deep text, an `infra_error` that text can forge, an
unseeded game, an ill-posed proposal that pays, a proposer check that cannot tell) is named."""

from __future__ import annotations

import ast
import random
from typing import Any, ClassVar

import pytest

from rlvr.envs import EnvCheckError
from rlvr.envs.multiagent import Round, check_env
from rlvr.envs.multiagent.proposer_solver import EXAMPLE_PROPOSAL, ProposerSolverEnv
from tests.envs.multiagent.toy import HighCardEnv


def test_a_game_that_keeps_the_contract_passes():
    check_env(HighCardEnv())


class ExpressionCards(HighCardEnv):
    """Reads each number as a Python expression it normalises with `ast.unparse`, catching
    only the errors it expects (as a proposal reader once did)."""

    def _play(self, moves: dict[str, str]) -> Round:
        numbers = {}
        for agent, move in moves.items():
            try:
                numbers[agent] = str(len(ast.unparse(ast.parse(move, mode="eval"))))
            except (ValueError, SyntaxError):
                numbers[agent] = "x"
        return super()._play(numbers)


def test_a_reader_that_recurses_on_deep_text_is_named():
    with pytest.raises(EnvCheckError, match="any text is a move: .*player_0 replying.*Recursion"):
        check_env(ExpressionCards(), pettingzoo=False)


class ForgeableInfra(HighCardEnv):
    def _play(self, moves: dict[str, str]) -> Round:
        outcome = super()._play(moves)
        claimed = frozenset(a for a, move in moves.items() if "infrastructure error" in move)
        outcome.infra_error = claimed
        return outcome


def test_an_infra_error_that_text_can_forge_is_named():
    with pytest.raises(EnvCheckError, match="replying 'infrastructure error'.*got infra_error"):
        check_env(ForgeableInfra(), pettingzoo=False)


class Unseeded(HighCardEnv):
    def _start(self, options: dict[str, Any]) -> dict[str, str]:
        super()._start(options)
        self.bonus = {agent: random.randrange(100, 1000) for agent in self.bonus}  # global RNG
        return {a: f"Your secret bonus is {self.bonus[a]}. Name a number." for a in self.bonus}


def test_an_unseeded_game_is_named():
    with pytest.raises(EnvCheckError, match="same seed, same episode"):
        check_env(Unseeded(), pettingzoo=False)


class PaysAWellPosedProposal(ProposerSolverEnv):
    """Lists a proposal that is not ill-posed: the check must see it paid."""

    def ill_posed_proposals(self) -> list[tuple[str, str]]:
        return [*super().ill_posed_proposals(), ("not ill-posed at all", EXAMPLE_PROPOSAL)]


def test_an_ill_posed_proposal_that_pays_is_named():
    with pytest.raises(EnvCheckError, match=r"earned the proposer a reward: \[\('not ill-posed"):
        check_env(PaysAWellPosedProposal(solvers=2), pettingzoo=False)


class NoSolution(ProposerSolverEnv):
    """Never says how to solve what it poses: every solver plays junk, every proposal earns 0."""

    def reference_reply(self, agent: str) -> str | None:
        return super().reference_reply(agent) if agent == "proposer_0" else None


class RefusesItsOwnExample(ProposerSolverEnv):
    example_proposal: ClassVar[str] = "<problem>6/2(1+2)</problem><answer>9</answer>"


@pytest.mark.parametrize("env_class", [NoSolution, RefusesItsOwnExample])
def test_a_proposer_check_that_cannot_tell_accepted_from_refused_is_named(env_class):
    with pytest.raises(EnvCheckError, match="cannot tell an accepted proposal from a refused"):
        check_env(env_class(solvers=2), pettingzoo=False)


def test_the_proposer_solver_env_passes_with_its_ill_posed_proposals():
    env = ProposerSolverEnv(solvers=3)
    assert len(env.ill_posed_proposals()) >= 15
    check_env(env)
