"""Red team: proposals that try to get paid for a task that is not well-posed in
rlvr/CodeProposerSolver-v1 (issue 25), played through the env with the real sandbox.

- Noise: a reference whose results vary between runs, from every source a reference can read
  (`code_ill_posed.NOISE_SOURCES`); the solvers echo the proposal, so they submit the reference
  itself, which is what splits them on such a task. The proposer must earn 0, every episode.
- Text that used to crash the env (a deep default in the signature) must be a verdict.
- Vacuous tests (a stub or a simple transform passes them all) and specs that give the code
  away (rewritten: other quotes, renamed, re-spaced, invisible or look-alike characters).
- Every proposal of `env.ill_posed_proposals()` (what the multi-agent env checker plays) earns
  the proposer 0; the honest proposals of `honest_code_proposals` are all posed.
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor

import pytest

from rlvr.envs.multiagent import make
from rlvr.envs.multiagent.code_ill_posed import (
    LEAK_REFERENCE,
    LEAK_TESTS,
    LEAKS,
    NOISE_SOURCES,
    NOISE_SPEC,
    NOISE_TESTS,
    SEED_0,
    noise_reference,
    reply,
)
from rlvr.envs.multiagent.code_proposer_solver import CodeProposerSolverEnv
from rlvr.envs.multiagent.code_replays import CONFIRMING_RUNS, IDENTICAL_RUNS
from rlvr.sandboxes.types import MiB
from rlvr.verifiers.types import Verdict
from tests.envs import test_code_infra_redteam as redteam
from tests.envs.multiagent.honest_code_proposals import HONEST
from tests.sandboxes.conftest import docker_executor, docker_image  # noqa: F401 (fixtures)

executor = redteam.executor  # the fixture: a private local sandbox (2 workers), warmed up

TIMEOUT, TEST_TIMEOUT = 3.0, 1.0
EPISODES = 5  # per noisy source: the noise must never pay, not just on average
REFUSED = {"wrong_answer", "not_reproducible", "vacuous_tests", "answer_in_problem"}


def new_env(executor, solvers: int = 4) -> CodeProposerSolverEnv:
    return make(
        "rlvr/CodeProposerSolver-v1",
        executor=executor,
        solvers=solvers,
        timeout=TIMEOUT,
        test_timeout=TEST_TIMEOUT,
    )


def play(executor, proposal: str, solver_replies: list[str] | None = None) -> tuple[float, str]:
    """One episode: the proposal, then each solver's reply (default: the proposal echoed, so
    each solver submits the reference). The proposer's reward and outcome."""
    env = new_env(executor)
    env.reset(seed=0)
    env.step(proposal)
    replies = solver_replies or [proposal] * len(env.solvers)
    while not all(env.terminations.values()):
        env.step(replies[env.solvers.index(env.agent_selection)])
    return env._cumulative_rewards["proposer_0"], env.infos["proposer_0"]["outcome"]


def episodes(executor, proposal: str, count: int) -> list[tuple[float, str]]:
    with ThreadPoolExecutor(2) as threads:
        return list(threads.map(lambda _: play(executor, proposal), range(count)))


# --- 1. noise ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("setup", "condition", "first"),
    [(setup, condition, "".join(first)) for _, setup, condition, *first in NOISE_SOURCES],
    ids=[source[0] for source in NOISE_SOURCES],
)
def test_a_reference_whose_results_vary_earns_nothing(executor, setup, condition, first):
    reference = noise_reference(setup, condition.format(**SEED_0), first)
    played = episodes(executor, reply(NOISE_SPEC, reference, NOISE_TESTS), EPISODES)
    assert [reward for reward, _ in played] == [0.0] * EPISODES, played
    if "id(" not in condition:  # a worker's memory layout is the same for all its runs
        assert {outcome for _, outcome in played} <= {"wrong_answer", "not_reproducible"}


def test_a_reference_close_to_the_time_limit_is_refused(executor):
    slow = (
        "import time\n\n\ndef slow():\n"
        f"    end = time.monotonic() + {0.7 * TEST_TIMEOUT}\n"
        "    while time.monotonic() < end:\n        pass\n    return True"
    )
    played = episodes(executor, reply(NOISE_SPEC, noise_reference(slow, "slow()"), NOISE_TESTS), 2)
    assert played == [(0.0, "not_reproducible")] * 2


def test_a_reference_close_to_the_memory_limit_is_refused(executor):
    env = new_env(executor, solvers=2)
    env.unit_tests.config = dataclasses.replace(env.unit_tests.config, memory=160 * MiB)
    hog = "def hog():\n    return len(bytearray(150 * 2**20)) > 0"  # fits 160 MiB, not 80
    env.reset(seed=0)
    env.step(reply(NOISE_SPEC, noise_reference(hog, "hog()"), NOISE_TESTS))
    assert env.infos["proposer_0"]["outcome"] == "not_reproducible"  # its first run passed
    assert "half the memory" in env.observe("proposer_0")


class LaterRunsFail:
    """The env's verifier, except that the reference fails from its `passes`-th run on: noise
    that shows only after the solvers ran (a clock-gated branch), made deterministic."""

    def __init__(self, real, reference: str, passes: int, verdict: Verdict | None = None) -> None:
        self.real, self.reference, self.passes, self.verdict = real, reference, passes, verdict
        self.config = real.config
        self.runs = 0

    def verify(self, response: str, task) -> Verdict:
        if self.reference in response:
            self.runs += 1
            if self.runs > self.passes:
                return self.verdict or Verdict.incorrect(details="failed this time")
        return self.real.verify(response, task)

    def executor(self):
        return self.real.executor()


@pytest.mark.parametrize(
    ("verdict", "outcome", "infra"),
    [(None, "not_reproducible", False), (Verdict.error("worker died"), "infra_error", True)],
)
def test_the_reference_must_pass_again_after_the_solvers(executor, verdict, outcome, infra):
    from tests.envs.multiagent.test_code_proposer_solver import RIGHT, WRONG

    env = new_env(executor)
    proposal = reply(
        "Return the number of vowels (a, e, i, o, u, either case) in the string s.",
        LEAK_REFERENCE,
        LEAK_TESTS,
    )
    checks = 1 + IDENTICAL_RUNS  # the first run and the identical runs, before the solvers
    env.verifier = env.replays.verifier = LaterRunsFail(
        env.unit_tests, LEAK_REFERENCE.strip(), checks, verdict
    )
    env.reset(seed=0)
    env.step(proposal)
    for answer in [RIGHT, WRONG, RIGHT, RIGHT]:
        env.step(answer)
    assert env.verifier.runs == checks + CONFIRMING_RUNS  # run again, after the solvers
    assert env.infos["proposer_0"]["outcome"] == outcome
    assert env._cumulative_rewards["proposer_0"] == 0.0
    assert env.infos["proposer_0"]["infra_error"] is infra
    assert [env._cumulative_rewards[s] for s in env.solvers] == [1.0, 0.0, 1.0, 1.0]


def test_identical_solutions_split_by_noise_pay_the_proposer_nothing(executor):
    honest = reply(*HONEST[1])  # total(xs): the sum of xs
    noisy = (
        "```python\nimport random\n\n\ndef total(xs):\n"
        "    return sum(xs) if random.random() < 0.5 else -1\n```"
    )
    # One code written three ways (a comment, the layout, a number's spelling): the same code.
    same = [
        noisy,
        noisy.replace("    return", "    # a coin\n    return"),
        noisy.replace("0.5", "0.50"),
        noisy.replace(" else -1", "  else  -1"),
    ]
    played = []
    while len(played) < 8 and "not_reproducible" not in [outcome for _, outcome in played]:
        played.append(play(executor, honest, same))  # 7 in 8 episodes split the solvers
    assert [reward for reward, _ in played] == [0.0] * len(played), played
    assert played[-1][1] == "not_reproducible", played


# --- 3. text that crashed the env ---------------------------------------------------------------


@pytest.mark.parametrize(
    "default",
    ["-" * 500 + "1", "not " * 300 + "1", ".".join(["a"] * 600), "+".join(["1"] * 900)],
    ids=["unary", "not", "attributes", "operators"],
)
def test_a_deep_signature_is_a_verdict_not_a_crash(executor, default):
    reference = f"def deep(s, d={default}):\n    return s\n"
    env = new_env(executor, solvers=2)
    env.reset(seed=0)
    env.step(reply("Return s.", reference, "deep('a') == 'a'\ndeep('b') == 'b'\ndeep('') == ''"))
    assert env.infos["proposer_0"]["outcome"] == "outside_family"
    assert env._cumulative_rewards["proposer_0"] == 0.0


# --- 4. vacuous tests, leaking specs ------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "reference", "tests", "why"),
    [
        (
            "Return the larger of a and b.",
            "def larger(a, b):\n    return max(a, b)\n",
            "larger(1, 2) == 2\nlarger(0, 5) == 5\nlarger(-3, 4) == 4",
            "returning b",
        ),
        (
            "Return the last item of xs, or d if xs is empty.",
            "def last(xs, d=None):\n    return xs[-1] if xs else d\n",
            "last([], d=1) == 1\nlast([], d='a') == 'a'\nlast([], d=[2]) == [2]",
            "returning d",
        ),
        (
            "Return the number of vowels (a, e, i, o, u) in the lowercase string s.",
            "def vowels(s):\n    return sum(c in 'aeiou' for c in s)\n",
            "vowels('aei') == 3\nvowels('') == 0\nvowels('ou') == 2",
            "len(s)",
        ),
        (
            "Return the sum of the squares of xs.",
            "def squares(xs):\n    return sum(x * x for x in xs)\n",
            "squares([1, 1]) == 2\nsquares([1]) == 1\nsquares([]) == 0",
            "len(xs)",
        ),
        (
            "Return the largest of a, b and c.",
            "def largest(a, b, c):\n    return max(a, b, c)\n",
            "largest(1, 2, 3) == 3\nlargest(9, -1, 4) == 9\nlargest(5, 7, 7) == 7",
            "max(a, c)",
        ),
    ],
    ids=["second argument", "a keyword's default", "len", "len of a list", "two of three"],
)
def test_tests_a_trivial_function_passes_are_vacuous(executor, spec, reference, tests, why):
    env = new_env(executor, solvers=2)
    env.reset(seed=0)
    env.step(reply(spec, reference, tests))
    assert env.infos["proposer_0"]["outcome"] == "vacuous_tests"
    assert why in env.observe("proposer_0")


@pytest.mark.parametrize(("what", "leak"), LEAKS, ids=[what for what, _ in LEAKS])
def test_a_spec_that_rewrites_the_reference_gives_it_away(executor, what, leak):
    env = new_env(executor, solvers=2)
    env.reset(seed=0)
    env.step(reply(f"Count the vowels of s. {leak}", LEAK_REFERENCE, LEAK_TESTS))
    assert env.infos["proposer_0"]["outcome"] == "answer_in_problem"


@pytest.mark.docker
def test_the_docker_backend_poses_and_refuses_alike(docker_executor):  # noqa: F811
    proposals = dict(new_env(docker_executor).ill_posed_proposals())
    outcomes = {}
    for what in ("the random module", "hash()", "state kept between calls (a global)"):
        outcomes[what] = play(docker_executor, proposals[f"not reproducible: {what}"])
    outcomes["honest"] = play(docker_executor, reply(*HONEST[0]), [reply(*HONEST[0])] * 4)
    assert outcomes["honest"] == (0.0, "trivial")  # posed, and every solver passes it
    assert (
        outcomes["hash()"]
        == outcomes["state kept between calls (a global)"]
        == (
            0.0,
            "not_reproducible",
        )
    )
    assert outcomes["the random module"][1] in ("wrong_answer", "not_reproducible")


# --- the checker's proposals, and the honest ones ---------------------------------------------


@pytest.mark.slow
def test_every_ill_posed_proposal_of_the_env_earns_the_proposer_nothing(executor):
    proposals = new_env(executor).ill_posed_proposals()
    assert len(proposals) >= len(NOISE_SOURCES) + len(LEAKS) + 5
    with ThreadPoolExecutor(2) as threads:
        played = list(threads.map(lambda item: play(executor, item[1]), proposals))
    paid = {what: got for (what, _), got in zip(proposals, played) if got[0] != 0.0}
    assert paid == {}
    refused = {what: outcome for (what, _), (_, outcome) in zip(proposals, played)}
    # Memory addresses too: 10 fresh layouts leave a one-bit address test 2^-10 odds.
    assert all(
        outcome in REFUSED | {"ambiguous_tests", "outside_family"} for outcome in refused.values()
    ), refused


@pytest.mark.slow
def test_honest_proposals_are_all_posed(executor):
    def posed(proposal: tuple[str, str, str]) -> str:
        env = new_env(executor, solvers=2)
        env.reset(seed=0)
        env.step(reply(*proposal))
        return env.infos["proposer_0"].get("outcome", "posed")

    with ThreadPoolExecutor(2) as threads:
        outcomes = dict(zip((spec for spec, _, _ in HONEST), threads.map(posed, HONEST)))
    assert {spec: outcome for spec, outcome in outcomes.items() if outcome != "posed"} == {}
