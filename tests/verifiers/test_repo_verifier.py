"""`RepoTestVerifier`: a repository's hidden tests, run in the sandbox by the code harness's repo
mode, compared on the host; the format of `RepoTests`."""

from __future__ import annotations

import json

import pytest

from rlvr.sandboxes import get_executor
from rlvr.verifiers.errors import TaskFormatError, VerifierConfigError
from rlvr.verifiers.repo import RepoTestConfig, RepoTests, RepoTestVerifier, score
from tests.sandboxes.conftest import require_local_sandbox

SENTINEL = "EXPECTED-VALUE-NEVER-SENT-4c1e"
TESTS = {
    "tests": [
        {
            "name": "t_join",
            "calls": [
                {
                    "target": "pkg.m:join",
                    "args": ["EXPECTED", "VALUE"],
                    "expected": "EXPECTED-VALUE",
                },
                {"target": "pkg.m:join", "args": ["a", "b"], "expected": "a-b"},
            ],
        },
        {
            "name": "t_parse",
            "calls": [
                {"target": "pkg.m:parse", "args": ["x"], "raises": "ValueError"},
                {"target": "pkg.m:parse", "args": ["12"], "expected": 12},
            ],
        },
        {
            "name": "t_sentinel",
            "calls": [{"target": "pkg.m:echo", "args": [], "expected": SENTINEL}],
        },
        {
            "name": "t_state",
            "calls": [{"target": "pkg.m:counter", "args": [], "expected": 1}],
        },
    ],
    "fail_to_pass": ["t_join"],
    "pass_to_pass": ["t_parse", "t_sentinel", "t_state"],
}
GOOD = (
    "import itertools\n_count = itertools.count(1)\n\n"
    "def join(a, b):\n    return a + '-' + b\n\n"
    "def parse(text):\n    return int(text)\n\n"
    f"def echo():\n    return {SENTINEL!r}\n\n"
    "def counter():\n    return next(_count)\n"
)
BUGGY = GOOD.replace("a + '-' + b", "a + '_' + b")


def files(module):
    return {"pkg/__init__.py": b"", "pkg/m.py": module.encode()}


@pytest.fixture(scope="module")
def verifier():
    require_local_sandbox()
    with get_executor("local", workers=2, shared=False) as executor:
        verifier = RepoTestVerifier(RepoTestConfig(timeout=10, test_timeout=1.0), executor=executor)
        yield verifier


def test_a_fixed_repository_scores_one_and_a_buggy_one_zero(verifier):
    tests = RepoTests.from_dict(TESTS)
    good = verifier.grade(files(GOOD), tests)
    assert good.score == 1.0 and good.is_correct, good.details
    buggy = verifier.grade(files(BUGGY), tests)
    assert buggy.score == 0.0 and not buggy.infra_error
    assert buggy.data["fail_to_pass"] == [0, 1] and buggy.data["pass_to_pass"] == [3, 3]
    assert "t_join" in buggy.details and "EXPECTED-VALUE" not in buggy.details.split("returned")[-1]


def test_every_hidden_test_gets_a_fresh_process(verifier):
    # counter() returns 1 only in a process where it was never called: two tests calling it
    # would see 1 and 2 if they shared one.
    data = json.loads(json.dumps(TESTS))
    data["tests"].append({"name": "t_state_again", "calls": data["tests"][3]["calls"]})
    data["pass_to_pass"].append("t_state_again")
    assert verifier.grade(files(GOOD), RepoTests.from_dict(data)).score == 1.0


def test_expected_values_never_enter_the_sandbox(verifier):
    request = verifier.request(files(GOOD), RepoTests.from_dict(TESTS))
    sent = request.stdin if isinstance(request.stdin, str) else request.stdin.decode()
    assert SENTINEL not in sent and "EXPECTED-VALUE" not in sent
    others = [content for path, content in request.files.items() if path != "repo/pkg/m.py"]
    assert all(SENTINEL not in (c if isinstance(c, str) else c.decode()) for c in others)


def test_fraction_scoring_multiplies_the_two_shares():
    tests = RepoTests.from_dict(TESTS)
    assert score({"t_join", "t_parse", "t_sentinel", "t_state"}, tests, "fraction") == 1.0
    assert score({"t_join", "t_parse"}, tests, "fraction") == pytest.approx(1 / 3)
    assert score({"t_parse", "t_sentinel", "t_state"}, tests, "fraction") == 0.0
    assert score({"t_join", "t_parse"}, tests, "all") == 0.0


@pytest.mark.parametrize(
    "module",
    [
        "import time\ntime.sleep(60)\n",  # sleeps through the whole run
        "def join(a, b):\n    import time\n    time.sleep(60)\n",  # sleeps in a call
        "import os\nos._exit(0)\n",
        "raise SystemExit(0)\n",
        "class Any:\n    def __eq__(self, other):\n        return True\n\n"
        "def join(a, b):\n    return Any()\n",
    ],
)
def test_cheating_repositories_score_zero_and_are_never_an_infrastructure_error(verifier, module):
    verdict = verifier.grade(files(module), RepoTests.from_dict(TESTS))
    assert verdict.score == 0.0 and not verdict.infra_error, verdict.details


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(fail_to_pass=[]), "at least one"),
        (lambda d: d.update(pass_to_pass=["t_parse"]), "exactly one"),
        (lambda d: d.update(fail_to_pass=["t_join", "t_parse"]), "exactly one"),
        (
            lambda d: d["tests"][0]["calls"][0].update(target="pkg.m.join"),
            "package.module:function",
        ),
        (lambda d: d["tests"][0].update(calls=[]), "non-empty"),
        (lambda d: d["tests"].append(dict(d["tests"][0])), "same name"),
        (lambda d: d["tests"][0]["calls"][0].pop("expected"), "expected"),
        (lambda d: d.update(tests="nope"), "non-empty list"),
    ],
)
def test_malformed_hidden_tests_are_refused(change, message):
    data = json.loads(json.dumps(TESTS))
    change(data)
    with pytest.raises(TaskFormatError, match=message):
        RepoTests.from_dict(data)


def test_round_trip_and_config_checks():
    tests = RepoTests.from_dict(TESTS)
    assert RepoTests.from_dict(json.loads(json.dumps(tests.to_dict()))) == tests
    with pytest.raises(VerifierConfigError):
        RepoTestConfig(scoring="most")
    with pytest.raises(VerifierConfigError):
        RepoTestConfig(timeout=1, test_timeout=2)


def test_a_dead_sandbox_is_an_error_verdict():
    with get_executor("docker", workers=1, shared=False, base_url="unix:///nonexistent.sock") as ex:
        verdict = RepoTestVerifier(executor=ex).grade(files(GOOD), RepoTests.from_dict(TESTS))
    assert verdict.infra_error and verdict.score is None
