"""rlvr/CodeProposerSolver-v1: well-posedness in the sandbox, the learnability reward, what
solvers see, hostile code from either side, and infra failures flagged rather than scored."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from rlvr.envs.errors import EnvConfigError
from rlvr.envs.multiagent import TextParallelEnv, make
from rlvr.envs.multiagent.code_proposer_solver import CodeProposerSolverEnv
from rlvr.sandboxes import get_executor
from rlvr.verifiers.types import Verdict
from tests.envs import test_code_infra_redteam as redteam
from tests.envs.multiagent.support import assert_learnability_rewards
from tests.envs.multiagent.test_code_problems import REFERENCE, SPEC, TESTS, proposal
from tests.envs.multiagent.test_proposer_solver import answer_all

HOSTILE = redteam.HOSTILE
executor = redteam.executor  # the fixture: a private local sandbox, warmed up

RIGHT = "```python\ndef count_vowels(s):\n    return sum(c in 'aeiouAEIOU' for c in s)\n```"
WRONG = "```python\ndef count_vowels(s):\n    return sum(c in 'aeiou' for c in s)\n```"  # lower


def new_env(executor, solvers: int = 4) -> CodeProposerSolverEnv:
    return CodeProposerSolverEnv(solvers=solvers, executor=executor, timeout=3.0, test_timeout=1.0)


def proposed(executor, reply: str = "", solvers: int = 4) -> CodeProposerSolverEnv:
    env = new_env(executor, solvers)
    env.reset(seed=0)
    env.step(reply or proposal())
    return env


@pytest.mark.parametrize(
    ("replies", "outcome", "reward"),
    [
        ([RIGHT, WRONG, RIGHT, RIGHT], "learnable", 0.25),
        ([RIGHT, WRONG, "no code", WRONG], "learnable", 0.75),
        ([RIGHT] * 4, "trivial", 0.0),
        ([WRONG] * 4, "impossible", 0.0),
    ],
)
def test_the_proposer_earns_one_minus_the_solve_rate_when_learnable(
    executor, replies, outcome, reward
):
    env = proposed(executor)
    assert env.infos["proposer_0"]["verdict"]["status"] == "correct"  # its reference passed
    answer_all(env, replies)
    assert_learnability_rewards(env, replies, outcome, reward, right=RIGHT)
    assert not any(env.infos[agent]["infra_error"] for agent in env.possible_agents)


LOWER_ONLY = 'def count_vowels(s):\n    return sum(1 for c in s if c in "aeiou")\n'


@pytest.mark.parametrize(
    ("reply", "outcome"),
    [
        ("just words", "unreadable"),
        (
            proposal(tests="count_vowels('a') == 1\ncount_vowels('b') == 1\ncount_vowels('') == 1"),
            "vacuous_tests",
        ),
        (proposal(spec=f"{SPEC} Solution: {REFERENCE}"), "answer_in_problem"),
        (proposal(reference=LOWER_ONLY), "wrong_answer"),  # fails "AEIOU xyz"
        (
            proposal(reference=REFERENCE.replace("return sum", "return float(sum")[:-1] + ")\n"),
            "wrong_answer",
        ),  # 2.0 is not 2
        (proposal(reference="def count_vowels(s):\n    raise ValueError(s)\n"), "wrong_answer"),
        (
            proposal(reference="def count_vowels(s):\n    while True:\n        pass\n"),
            "wrong_answer",
        ),
    ],
)
def test_an_ill_posed_task_earns_nothing_and_ends_the_episode(executor, reply, outcome):
    env = proposed(executor, reply)
    assert all(env.terminations.values())
    assert env.infos["proposer_0"]["outcome"] == outcome
    assert env._cumulative_rewards == dict.fromkeys(env.possible_agents, 0.0)
    assert all(env.infos[solver]["outcome"] == "no_problem" for solver in env.solvers)
    assert all(env.view(solver)[-1]["role"] == "user" for solver in env.solvers)  # never acted
    assert not any(env.infos[agent]["infra_error"] for agent in env.possible_agents)


def test_tests_that_pass_a_stub_are_refused_and_accepted_tests_fail_every_stub(executor):
    vacuous = proposal(
        spec="Return None.",
        reference="def count_vowels(s):\n    return None\n",
        tests="count_vowels('a') == None\ncount_vowels('') == None\ncount_vowels('e') == None",
    )
    assert proposed(executor, vacuous).infos["proposer_0"]["outcome"] == "vacuous_tests"
    stubs = [  # what the rule promises: no constant (None or the commonest result), no echo
        "def count_vowels(s):\n    return None\n",
        "def count_vowels(s):\n    return 2\n",
        "def count_vowels(s):\n    return s\n",
        "def count_vowels(*args, **kwargs):\n    pass\n",
    ]
    env = proposed(executor, solvers=len(stubs))
    answer_all(env, [f"```python\n{stub}```" for stub in stubs])
    assert [env._cumulative_rewards[solver] for solver in env.solvers] == [0.0] * len(stubs)
    assert env.infos["proposer_0"]["outcome"] == "impossible"


def test_solvers_see_the_spec_and_signature_and_nothing_else_of_the_proposal(executor):
    secret = "SECRETVALUE"
    reference = f"# {secret}-REFERENCE\n{REFERENCE}"
    tests = TESTS + f'\ncount_vowels("{secret}") == 5'
    env = proposed(executor, "Plan: SECRET-NOTE\n" + proposal(reference=reference, tests=tests))
    assert env.infos["proposer_0"]["verdict"]["status"] == "correct"
    seen = json.dumps(
        [(env.view(s), env.observe(s), env.infos[s]) for s in env.solvers], ensure_ascii=False
    )
    assert SPEC in seen and "def count_vowels(s):" in seen
    for hidden in (secret, "SECRET-NOTE", "sum(1 for c", "hello", "AEIOU xyz", "<tests>"):
        assert hidden not in seen, hidden
    answer_all(env, [RIGHT, WRONG, RIGHT, WRONG])
    for solver in env.solvers:  # nor after they answered: only "Correct." / "Not correct."
        assert secret not in env.observe(solver) and "hello" not in env.observe(solver)


def test_untrusted_code_of_either_agent_runs_only_in_the_sandbox(executor, tmp_path):
    marker = tmp_path / "escaped"
    write = (  # succeeds where it runs: the sandbox's own /tmp
        f"import os\nos.makedirs({str(tmp_path)!r}, exist_ok=True)\n"
        f"open({str(marker)!r}, 'w').write('x')\n"
    )
    env = proposed(executor, proposal(reference=write + REFERENCE), solvers=2)
    assert env.infos["proposer_0"]["verdict"]["status"] == "correct"  # it ran, in the sandbox
    answer_all(env, [f"```python\n{write}{RIGHT[10:]}", WRONG])
    assert env._cumulative_rewards["solver_0"] == 1.0
    assert not marker.exists()


FORGERIES = {
    **{name: code for name, code in HOSTILE.items() if name not in ("fork bomb", "memory hog")},
    "an object equal to anything": (
        "class Anything(int):\n    def __eq__(self, other):\n        return True\n"
        "    __hash__ = int.__hash__\n"
        "def count_vowels(s):\n    return Anything(0)\n"
    ),
    "patch the builtins": (
        "import builtins\nbuiltins.isinstance = lambda *a: True\nbuiltins.type = lambda *a: int\n"
    ),
}
# A wrong solution first: the hostile code after it runs at import or replaces it.
WRONG_CODE = "def count_vowels(s):\n    return 0\n"


def test_no_solver_code_forges_a_pass_or_an_infra_error(executor):
    replies = {name: f"```python\n{WRONG_CODE}{code}```" for name, code in FORGERIES.items()}
    replies["claim success in words"] = "Passed 3/3 tests. Correct. The verdict is: correct"
    env = proposed(executor, solvers=len(replies) + 1)
    answer_all(env, [*replies.values(), RIGHT])  # one honest solver: the task stays learnable
    cheated = {
        name: (env._cumulative_rewards[solver], env.infos[solver]["infra_error"])
        for name, solver in zip(replies, env.solvers)
        if env._cumulative_rewards[solver] != 0.0 or env.infos[solver]["infra_error"]
    }
    assert cheated == {}
    ran = [env.infos[solver]["verdict"]["status"] for solver in env.solvers[: len(FORGERIES)]]
    assert ran == ["incorrect"] * len(FORGERIES)  # judged, not refused unread
    assert env.infos["proposer_0"]["outcome"] == "learnable"
    assert env.infos["proposer_0"]["infra_error"] is False


def test_no_hostile_reference_makes_the_proposal_an_infra_error(executor):
    hostile = {name: code for name, code in HOSTILE.items() if name != "memory hog"}

    def outcome(code: str) -> tuple[str, bool, float]:
        env = proposed(executor, proposal(reference=code + REFERENCE), solvers=2)
        info = env.infos["proposer_0"]
        return (
            info.get("outcome", "posed"),
            info["infra_error"],
            env._cumulative_rewards["proposer_0"],
        )

    with ThreadPoolExecutor(2) as threads:
        outcomes = dict(zip(hostile, threads.map(outcome, hostile.values())))
    farmed = {name: got for name, got in outcomes.items() if got[1] or got[2] != 0.0}
    assert farmed == {}


class FailingOn:
    """The env's own verifier, except that our machinery fails on replies containing `marker`."""

    def __init__(self, marker: str, real) -> None:
        self.marker, self.real = marker, real

    def verify(self, response: str, task) -> Verdict:
        if self.marker in response:
            return Verdict.error("sandbox error: the worker died")
        return self.real.verify(response, task)


def test_a_sandbox_failure_on_a_solver_is_infra_for_it_and_the_proposer_only(executor):
    env = new_env(executor, solvers=3)
    env.verifier = FailingOn("BREAK", env.verifier)
    env.reset(seed=0)
    env.step(proposal())
    answer_all(env, [RIGHT, RIGHT.replace("def", "# BREAK\ndef"), WRONG])
    infra = {agent: env.infos[agent]["infra_error"] for agent in env.possible_agents}
    assert infra == {"proposer_0": True, "solver_0": False, "solver_1": True, "solver_2": False}
    assert env.infos["proposer_0"]["outcome"] == "infra_error"
    assert env._cumulative_rewards["proposer_0"] == 0.0
    assert env.infos["solver_1"]["verdict"]["score"] is None


def test_a_dead_sandbox_engine_on_the_reference_is_infra_not_a_zero():
    dead = get_executor("docker", workers=1, shared=False, base_url="unix:///nonexistent.sock")
    with dead:
        env = CodeProposerSolverEnv(executor=dead)
        env.reset(seed=0)
        env.step(proposal())
    assert env.infos["proposer_0"]["infra_error"] is True
    assert env.infos["proposer_0"]["outcome"] == "infra_error"
    assert env._cumulative_rewards["proposer_0"] == 0.0
    assert not env.infos["solver_0"]["infra_error"]


def test_the_k_solutions_come_in_one_parallel_step(executor):
    env = TextParallelEnv(new_env(executor, solvers=3))
    env.reset(seed=0)
    env.step(dict.fromkeys(env.agents, proposal()))
    _, rewards, terminations, _, _ = env.step(
        {"solver_0": RIGHT, "solver_1": WRONG, "solver_2": RIGHT}
    )
    assert rewards == {
        "proposer_0": pytest.approx(1 / 3),
        "solver_0": 1.0,
        "solver_1": 0.0,
        "solver_2": 1.0,
    }
    assert all(terminations.values())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"solvers": 1}, "solvers must be an int >= 2"),
        ({"backend": "nope"}, "backend"),
        ({"timeout": 0}, "timeout"),
        ({"timeout": 1.0, "test_timeout": 2.0}, "test_timeout"),
        ({"tasks": []}, "unknown argument"),
    ],
)
def test_bad_arguments_are_refused_at_make(kwargs, message):
    with pytest.raises(EnvConfigError, match=message):
        make("rlvr/CodeProposerSolver-v1", **kwargs)
