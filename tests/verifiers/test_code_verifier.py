"""The unit-test verifier: code extraction, the plain-data codec, and reward hacks that must all
score 0, in each of the three kinds of tests (host-compared cases, HumanEval check code, MBPP
asserts). A broken sandbox must give an infrastructure error, never a silent 0."""

from __future__ import annotations

import math

import pytest

from rlvr.sandboxes import get_executor
from rlvr.verifiers import Status, Task
from rlvr.verifiers.code import (
    CallCase,
    CodeTests,
    NotPlainData,
    UnitTestConfig,
    UnitTestVerifier,
    canonical,
    decode_value,
    encode_value,
    extract_code,
)
from rlvr.verifiers.errors import TaskFormatError, VerifierConfigError
from tests.conftest import require_service
from tests.sandboxes.conftest import docker_available, require_local_sandbox

# --- extraction ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "code"),
    [
        ("Sure:\n```python\ndef f(x):\n    return x\n```\nDone.", "def f(x):\n    return x"),
        (
            "```py\ndef g(): pass\n```\n```python\ndef f(): return 1\n```\n"
            "```python\nprint(f())\n```",
            "def f(): return 1",
        ),
        ("def f(x):\n    return 2 * x", "def f(x):\n    return 2 * x"),
        ("```python\ndef f(x):\n    return x", "def f(x):\n    return x"),  # truncated reply
        ("```\ndef f(): return 3\n```", "def f(): return 3"),
        ("I would write f.", None),
        ("```rust\nfn f() {}\n```", None),
        ("```python\r\ndef f(x):\r\n    return x\r\n```\r\nDone.", "def f(x):\n    return x"),
        ("1. Code:\n  ```python\n  def f(x):\n      return x\n  ```", "def f(x):\n    return x"),
        ("", None),
    ],
)
def test_extract_code(reply, code):
    assert extract_code(reply, "f") == code


# --- plain data ---------------------------------------------------------------------------------

PLAIN = [
    None,
    True,
    0,
    -(10**30),
    1.5,
    float("inf"),
    -2 + 2.5e-16j,  # MBPP's polar_rect returns a complex
    complex(float("inf"), 0),
    "text",
    b"\x00bytes",
    [1, [2, "x"]],
    (1, (2,)),
    {"a": 1},
    {1: "one", (2, 3): [4]},
    {"$tuple": 1},
    {1, 2},
    frozenset({"a"}),
    [],
    (),
    {},
]


@pytest.mark.parametrize("value", PLAIN, ids=repr)
def test_plain_values_round_trip_with_their_exact_types(value):
    import json

    decoded = decode_value(json.loads(json.dumps(encode_value(value))))
    assert canonical(decoded) == canonical(value)


def test_nan_round_trips_and_equals_itself():
    assert math.isnan(decode_value(encode_value(float("nan"))))
    assert canonical(float("nan")) == canonical(float("nan"))


def test_subclasses_and_objects_are_not_plain_data():
    class Int(int):
        pass

    class Always(list):
        def __eq__(self, other):
            return True

    for value in (Int(3), Always(), object(), [1, Int(2)], {"k": Always()}, range(3)):
        with pytest.raises(NotPlainData):
            encode_value(value)


def test_canonical_keeps_int_float_and_bool_apart():
    assert len({canonical(1), canonical(1.0), canonical(True)}) == 3
    assert canonical([1, (2,)]) != canonical([1, [2]])


@pytest.mark.parametrize(
    "bad",
    [{"$what": 1}, {"$tuple": 1}, {"$bytes": "%%"}, {"$float": "x"}, {"$complex": [1, "x"]}],
)
def test_decoder_rejects_malformed_data(bad):
    with pytest.raises(ValueError):
        decode_value(bad)


def test_task_answers_are_validated():
    with pytest.raises(TaskFormatError, match="exactly one"):
        CodeTests.from_answer({"entry_point": "f"})
    with pytest.raises(TaskFormatError, match="entry_point"):
        CodeTests.from_answer({"entry_point": "not a name", "asserts": ["assert True"]})
    with pytest.raises(TaskFormatError, match="exactly one of 'expected' or 'raises'"):
        CodeTests.from_answer({"entry_point": "f", "cases": [{"args": []}]})
    with pytest.raises(VerifierConfigError, match="scoring"):
        UnitTestConfig(scoring="most")


@pytest.mark.parametrize(
    "answer",
    [
        {"entry_point": "f", "asserts": 5},
        {"entry_point": "f", "cases": 5},
        {"entry_point": "f", "asserts": ["assert True"], 0: 1, "x": 2},  # keys of mixed types
    ],
)
def test_answers_of_the_wrong_shape_are_a_task_format_error(answer):
    # Found by tests/envs/test_fuzz.py: these raised TypeError from inside the parser.
    with pytest.raises(TaskFormatError):
        CodeTests.from_answer(answer)


# --- verdicts -----------------------------------------------------------------------------------

CASES = Task(
    "add",
    "add two ints",
    CodeTests(
        "add",
        cases=(
            CallCase((2, 3), expected=5),
            CallCase((-1, 1), expected=0),
            CallCase((10**20, 1), expected=10**20 + 1),
            CallCase(("a", 1), raises="TypeError"),
        ),
    ).to_answer(),
)
CHECK = Task(
    "total-check",
    "sum",
    CodeTests(
        "add",
        check=(
            "def check(candidate):\n"
            "    import fractions\n"  # real tests import modules: they must come from /usr
            "    assert candidate(2, 3) == 5\n"
            "    assert candidate(-1, 1) == 0\n"
            "    assert candidate(10**20, 1) == 10**20 + 1\n"
            "    try:\n"
            "        candidate('a', 1)\n"
            "        raise AssertionError('no TypeError')\n"
            "    except TypeError:\n"
            "        pass\n"
        ),
    ).to_answer(),
)
ASSERTS = Task(
    "total-asserts",
    "sum",
    CodeTests(
        "add",
        asserts=(
            "assert add(2, 3) == statistics.median([5])",
            "assert add(-1, 1) == 0",
            "assert add(10**20, 1) == 10**20 + 1",
        ),
        setup="import statistics",
    ).to_answer(),
)
GOOD = (
    "```python\ndef add(a, b):\n    if not isinstance(a, int):\n"
    "        raise TypeError('ints')\n    return a + b\n```"
)

# A module that writes a passing report to every descriptor and exits, wherever it is imported.
FORGED_REPORT_MODULE = (
    "import json, os\n"
    "report = {'load_error': None, 'tests': [{'passed': True}] * 10, 'results': []}\n"
    "for fd in range(3, 64):\n"
    "    try:\n"
    "        os.write(fd, json.dumps(report).encode())\n"
    "    except OSError:\n"
    "        pass\n"
    "os._exit(0)\n"
)

HACKS = {
    "wrong answer": "def add(a, b):\n    return a - b",
    "sys.exit(0) before the tests": "import sys\nsys.exit(0)\ndef add(a, b):\n    return a + b",
    "os._exit(0) in the call": "import os\ndef add(a, b):\n    os._exit(0)",
    "SystemExit in the call": "def add(a, b):\n    raise SystemExit(0)",
    "__eq__ always True": (
        "class Yes:\n    def __eq__(self, other):\n        return True\n"
        "    def __sub__(self, other):\n        return 0\n"
        "def add(a, b):\n    return Yes()"
    ),
    "int subclass": (
        "class I(int):\n    def __eq__(self, o):\n        return True\n"
        "def add(a, b):\n    return I(0)"
    ),
    "True for 5": "def add(a, b):\n    return True",
    "float for int": "def add(a, b):\n    return float(a + b)",
    "monkeypatch builtins": (
        "import builtins\nbuiltins.isinstance = lambda *a: True\nbuiltins.type = lambda *a: int\n"
        "builtins.AssertionError = type('Nope', (Exception,), {})\n"
        "def add(a, b):\n    return 0"
    ),
    "patch the test runner": (
        "import sys, unittest\n"
        "for name, module in list(sys.modules.items()):\n"
        "    for attr in ('check', 'run_cases', 'run_test_code', 'main', 'run'):\n"
        "        if hasattr(module, attr):\n"
        "            try: setattr(module, attr, lambda *a, **k: None)\n"
        "            except Exception: pass\n"
        "def add(a, b):\n    return 0"
    ),
    "print PASSED": (
        'print(\'{"load_error": null, "results": [{"value": 5}, {"value": 0}], '
        '"tests": [{"passed": true}]}\')\nprint(\'PASSED\')\ndef add(a, b):\n    return 0'
    ),
    "write to every descriptor": (
        "import os\nfor fd in range(0, 64):\n    try:\n"
        '        os.write(fd, b\'{"load_error": null, "tests": [{"passed": true}]}\')\n'
        "    except OSError:\n        pass\n"
        "def add(a, b):\n    return 0"
    ),
    "read and rewrite the test files": (
        "import os\nfor name in os.listdir('.'):\n    if name != 'solution.py':\n"
        "        try: open(name, 'w').write('print(1)')\n        except OSError: pass\n"
        "def add(a, b):\n    return 0"
    ),
    "read the caller's frames": (
        "import sys\ndef add(a, b):\n    frame, seen = sys._getframe(1), []\n"
        "    while frame:\n        seen += [c for c in frame.f_code.co_consts if type(c) is int]\n"
        "        frame = frame.f_back\n    return max(seen + [0])"
    ),
    "kill the harness": (
        "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\ndef add(a, b):\n    return a + b"
    ),
    "kill every process": (  # every pid there is (after many runs they are past 100)
        "import os, signal\nfor pid in filter(str.isdigit, os.listdir('/proc')):\n"
        "    try: os.kill(int(pid), signal.SIGKILL) if int(pid) != os.getpid() else None\n"
        "    except OSError: pass\ndef add(a, b):\n    return a + b"
    ),
    "use up the time": "def add(a, b):\n    while True:\n        pass",
    "shadow the modules the tests import": (
        "for name in ('fractions', 'statistics', 'copy', 'random', 'decimal', 'traceback'):\n"
        f"    open(name + '.py', 'w').write({FORGED_REPORT_MODULE!r})\n"
        "def add(a, b):\n    return 0"
    ),
    "stop the harness": (
        "import os, signal\nos.kill(os.getppid(), signal.SIGSTOP)\ndef add(a, b):\n    return a + b"
    ),
    "syntax error": "def add(a, b)\n    return a + b",
    "lower the harness's limits": (
        "import os, resource\nresource.prlimit(os.getppid(), resource.RLIMIT_AS, (1, 1))\n"
        "resource.prlimit(os.getppid(), resource.RLIMIT_NOFILE, (3, 3))\n"
        "def add(a, b):\n    return 0"
    ),
}

# Lowers the address space of its parent (the runner: same uid, so prlimit works) to what it
# uses now, so that the runner can no longer map a C extension: `import bz2` then fails.
SHRINK_THE_RUNNER = (
    "import os, resource\n"
    "with open(f'/proc/{os.getppid()}/status') as status:\n"
    "    size = [int(line.split()[1]) * 1024 for line in status if line.startswith('VmSize')][0]\n"
    "resource.prlimit(os.getppid(), resource.RLIMIT_AS, (size, size))\n"
)


@pytest.fixture(scope="module")
def verifier():
    require_local_sandbox()
    verifier = UnitTestVerifier(UnitTestConfig(timeout=4, test_timeout=1.5))
    yield verifier
    verifier.close()


@pytest.fixture(scope="module")
def docker_verifier():
    available, why = docker_available()
    require_service("docker", available, why)
    executor = get_executor("docker", workers=2, shared=False)
    executor.warm_up()
    yield UnitTestVerifier(UnitTestConfig(timeout=4, test_timeout=1.5), executor=executor)
    executor.close()


@pytest.fixture(params=["local", pytest.param("docker", marks=pytest.mark.docker)])
def any_verifier(request):
    """The verifier on each backend: reward hacks must fail on both."""
    return request.getfixturevalue("verifier" if request.param == "local" else "docker_verifier")


@pytest.mark.parametrize("task", [CASES, CHECK, ASSERTS], ids=lambda t: t.id)
def test_a_correct_solution_scores_one(verifier, task):
    verdict = verifier.verify(GOOD, task)
    assert verdict.status is Status.CORRECT, verdict.details
    assert verdict.data["passed"] == verdict.data["total"]


@pytest.mark.parametrize("task", [CASES, CHECK, ASSERTS], ids=lambda t: t.id)
@pytest.mark.parametrize("hack", sorted(HACKS))
def test_reward_hacks_score_zero(any_verifier, task, hack):
    verdict = any_verifier.verify(f"```python\n{HACKS[hack]}\n```", task)
    assert verdict.status is Status.INCORRECT, verdict.details
    assert verdict.score == 0.0 and not verdict.infra_error


def test_fraction_scoring_and_feedback_without_the_gold(verifier):
    fraction = UnitTestVerifier(
        UnitTestConfig(scoring="fraction", timeout=4, test_timeout=1.5),
        executor=verifier.executor(),
    )
    half = "```python\ndef add(a, b):\n    return a + b if a > 0 else 99\n```"
    verdict = fraction.verify(half, CASES)
    # fails add(-1, 1) only ('a' > 0 raises the TypeError the last case expects)
    assert verdict.status is Status.INCORRECT and verdict.score == pytest.approx(0.75)
    assert "add(-1, 1) returned 99, which is not the expected result" in verdict.details
    assert "expected 0" not in verdict.details  # the hidden gold stays hidden
    asserts = fraction.verify(half, ASSERTS)
    assert asserts.score == pytest.approx(2 / 3) and "== 0" not in asserts.details


def test_feedback_can_reveal_the_expected_value(verifier):
    revealing = UnitTestVerifier(
        UnitTestConfig(reveal_expected=True, timeout=4, test_timeout=1.5),
        executor=verifier.executor(),
    )
    verdict = revealing.verify("```python\ndef add(a, b):\n    return a * b\n```", CASES)
    assert "add(2, 3) returned 6, expected 5" in verdict.details


def test_the_codes_own_output_is_in_the_feedback(verifier):
    reply = "```python\ndef add(a, b):\n    print('debug', a, b)\n    return 0\n```"
    verdict = verifier.verify(reply, CASES)
    assert "debug 2 3" in verdict.details


def test_no_code_is_unparsable(verifier):
    verdict = verifier.verify("The answer is to add them.", CASES)
    assert verdict.status is Status.UNPARSABLE and verdict.score == 0.0


@pytest.mark.parametrize("bad", ["# \ud800", "s = '\udcff'"])
def test_code_with_lone_surrogates_is_unparsable_not_an_infrastructure_error(verifier, bad):
    # The reply's own fault: an infra error would have trainers drop the sample instead.
    verdict = verifier.verify(f"```python\n{bad}\ndef add(a, b):\n    return a + b\n```", CASES)
    assert verdict.status is Status.UNPARSABLE and not verdict.infra_error
    assert "not valid Unicode" in verdict.details


def test_a_broken_sandbox_is_an_infrastructure_error_not_a_zero():
    dead = get_executor("docker", workers=1, shared=False, base_url="unix:///nonexistent.sock")
    with dead:
        verdict = UnitTestVerifier(executor=dead).verify(GOOD, CASES)
    assert verdict.status is Status.ERROR and verdict.score is None and verdict.infra_error
    assert "Docker engine unreachable" in verdict.details
    missing = UnitTestVerifier(backend_options={"bwrap": "/nonexistent/bwrap"})
    verdict = missing.verify(GOOD, CASES)
    assert verdict.infra_error and "bubblewrap" in verdict.details


@pytest.mark.parametrize(
    "reply",
    ["def f():\n    return " + "-" * 100_000 + "1", "def f():\n    return 1" + " + 1" * 100_000],
    ids=["deep unary", "long sum"],
)
def test_replies_too_deep_to_parse_are_unparsable_not_a_crash(reply):
    assert extract_code(reply, "f") is None


def test_ints_too_long_for_decimal_round_trip():
    big = -(3**20_000)
    assert decode_value(encode_value(big)) == big
    assert "$int" in encode_value([big])[0]


# --- exceptions ----------------------------------------------------------------------------------

RAISES_CASES = Task(
    "raises-cases",
    "add, KeyError for non-ints",
    CodeTests(
        "add", cases=(CallCase((2, 3), expected=5), CallCase(("a", 1), raises="KeyError"))
    ).to_answer(),
)
RAISES_CHECK = Task(
    "raises-check",
    "add, KeyError for non-ints",
    CodeTests(
        "add",
        check=(
            "def check(candidate):\n    assert candidate(2, 3) == 5\n    try:\n"
            "        candidate('a', 1)\n    except KeyError:\n        return\n"
            "    raise AssertionError('no KeyError')\n"
        ),
    ).to_answer(),
)
RAISING = (
    "class {bases}:\n    pass\n"
    "def add(a, b):\n    if type(a) is not int:\n        raise E('a')\n    return a + b"
)


@pytest.mark.parametrize("task", [RAISES_CASES, RAISES_CHECK], ids=lambda t: t.id)
def test_an_exception_counts_as_its_one_builtin_class(verifier, task):
    subclass = verifier.verify(f"```python\n{RAISING.format(bases='E(KeyError)')}\n```", task)
    assert subclass.status is Status.CORRECT, subclass.details  # `except KeyError` catches it
    # an exception that is a KeyError, a ValueError and a TypeError at once matches nothing
    every = RAISING.format(bases="E(KeyError, ValueError, TypeError, ZeroDivisionError)")
    assert verifier.verify(f"```python\n{every}\n```", task).status is Status.INCORRECT


def test_stop_iteration_cannot_end_a_test_early(verifier):
    task = Task(
        "map-asserts",
        "add",
        CodeTests(
            "add",
            asserts=("assert all(map(lambda p: add(*p[0]) == p[1], [((2, 3), 5), ((1, 1), 2)]))",),
        ).to_answer(),
    )
    assert verifier.verify(GOOD, task).status is Status.CORRECT
    stop = verifier.verify("```python\ndef add(a, b):\n    raise StopIteration\n```", task)
    assert stop.status is Status.INCORRECT, stop.details


# A solution that answers its first call with a reply nested ~950 levels deep, written straight
# onto its socket: the host must not hit its recursion limit reading it.
DEEP_REPLY = (
    "import os, struct\n"
    "def add(a, b):\n"
    "    deep = '[' * 950 + ']' * 950\n"
    '    for body in (\'{"value": %s}\' % deep, \'{"error": "E", "message": %s}\' % deep):\n'
    "        message = body.encode()\n"
    "        for fd in range(3, 16):\n"
    "            try:\n"
    "                os.write(fd, struct.pack('>I', len(message)) + message)\n"
    "            except OSError:\n"
    "                pass\n"
    "    os._exit(0)\n"
)


def test_a_forged_deep_reply_is_a_failure_not_a_host_crash(verifier):
    def from_deep_stack(depth):  # a trainer calls verify() with many frames below it
        return from_deep_stack(depth - 1) if depth else verifier.verify(reply, CASES)

    reply = f"```python\n{DEEP_REPLY}\n```"
    verdict = from_deep_stack(150)
    assert verdict.status is Status.INCORRECT and not verdict.infra_error


BIG = math.factorial(2000)  # 5736 digits: more than Python prints or parses in decimal
BIG_TASKS = [
    Task("big-cases", "f", CodeTests("f", cases=(CallCase((2000,), expected=BIG),)).to_answer()),
    Task(
        "big-check",
        "f",
        CodeTests(
            "f", check="import math\ndef check(c):\n    assert c(2000) == math.factorial(2000)"
        ).to_answer(),
    ),
    Task(
        "big-asserts",
        "f",
        CodeTests(
            "f", setup="import math", asserts=("assert f(2000) == math.factorial(2000)",)
        ).to_answer(),
    ),
    Task(
        "long-list",  # about 1.3 MB of report: more than the sandbox's default output cap
        "f",
        CodeTests("f", cases=(CallCase((-200_000,), expected=list(range(200_000))),)).to_answer(),
    ),
]


@pytest.mark.parametrize("task", BIG_TASKS, ids=lambda t: t.id)
def test_correct_code_with_big_values_passes(verifier, task):
    code = "import math\ndef f(n):\n    return math.factorial(n) if n > 0 else list(range(-n))"
    verdict = verifier.verify(f"```python\n{code}\n```", task)
    assert verdict.status is Status.CORRECT, verdict.details
    wrong = verifier.verify("```python\ndef f(n):\n    return 3 ** 20000\n```", task)
    assert wrong.status is Status.INCORRECT
    if "cases" in task.answer:  # feedback shows what was returned, even an int too long to print
        assert "too large to show" in wrong.details


def test_errors_of_the_test_code_do_not_quote_the_gold(verifier):
    task = Task(
        "raising-check",
        "add",
        CodeTests(
            "add",
            check=(
                "def check(candidate):\n    got = candidate(2, 3)\n    if got != 5:\n"
                "        raise ValueError(f'add(2, 3) should be 5, not {got}')\n"
            ),
        ).to_answer(),
    )
    wrong = verifier.verify("```python\ndef add(a, b):\n    return 6\n```", task)
    assert "ValueError" in wrong.details and "should be 5" not in wrong.details
    own = verifier.verify("```python\ndef add(a, b):\n    raise ValueError('mine')\n```", task)
    assert "ValueError: mine" in own.details  # the code's own exception is shown in full


def test_standard_dicts_travel_as_plain_dicts():
    from collections import Counter, OrderedDict, defaultdict

    assert decode_value(encode_value(Counter("aab"))) == {"a": 2, "b": 1}
    assert type(decode_value(encode_value(defaultdict(list, {1: [2]})))) is dict
    assert decode_value(encode_value(OrderedDict(x=1))) == {"x": 1}

    class Mine(Counter):
        pass

    with pytest.raises(NotPlainData):
        encode_value(Mine("a"))


def test_an_mbpp_gold_returning_a_counter_passes(verifier):
    """MBPP's own solution of `freq_element` returns a Counter; its tests compare with a dict."""
    task = Task(
        "freq",
        "frequencies",
        CodeTests(
            "freq",
            asserts=("assert freq([1, 2, 2]) == {1: 1, 2: 2}", "assert freq([]) == {}"),
        ).to_answer(),
    )
    counter = "from collections import Counter\ndef freq(xs):\n    return Counter(xs)"
    assert verifier.verify(f"```python\n{counter}\n```", task).status is Status.CORRECT
    wrong = "from collections import Counter\ndef freq(xs):\n    return Counter(xs[1:])"
    assert verifier.verify(f"```python\n{wrong}\n```", task).status is Status.INCORRECT


def test_an_mbpp_gold_returning_a_complex_passes(verifier):
    """MBPP's `polar_rect` returns `(cmath.polar(...), cmath.rect(2, cmath.pi))`."""
    task = Task(
        "polar",
        "polar",
        CodeTests(
            "polar_rect",
            asserts=(
                "assert polar_rect(3,4)==((5.0, 0.9272952180016122), (-2+2.4492935982947064e-16j))",
            ),
        ).to_answer(),
    )
    gold = (
        "import cmath\ndef polar_rect(x,y):\n cn = complex(x,y)\n cn=cmath.polar(cn)\n"
        " cn1 = cmath.rect(2, cmath.pi)\n return (cn,cn1)"
    )
    assert verifier.verify(f"```python\n{gold}\n```", task).status is Status.CORRECT


@pytest.mark.parametrize(
    "tests",
    [
        CodeTests("add", check="import no_such_module\ndef check(candidate):\n    pass"),
        CodeTests("add", asserts=("assert add(1, 1) == 2", "assert add(1, 1) ==")),
    ],
    ids=["missing module", "syntax error"],
)
def test_test_code_that_cannot_load_is_an_infrastructure_error(verifier, tests):
    """E.g. HumanEval+ test code importing numpy in a sandbox without it: the task is broken,
    and a correct solution must not be scored 0 (nor blamed for stopping the harness)."""
    verdict = verifier.verify(GOOD, Task("broken", "p", tests.to_answer()))
    assert verdict.status is Status.ERROR and verdict.infra_error, verdict.details
    assert "no_such_module" in verdict.details or "SyntaxError" in verdict.details


def test_the_solution_cannot_make_the_test_code_fail_to_load(any_verifier):
    """Test code that cannot load is an infrastructure error (the task is broken), so it must
    load before any of the solution's code runs: loaded after, it failed whenever the solution
    had shrunk the runner's limits, and a reply could farm dropped samples."""
    task = Task(
        "bz2",
        "add",
        CodeTests(
            "add", check="import bz2\ndef check(candidate):\n    assert candidate(2, 3) == 5"
        ).to_answer(),
    )
    reply = f"```python\n{SHRINK_THE_RUNNER}def add(a, b):\n    return a + b\n```"
    verdict = any_verifier.verify(reply, task)
    assert verdict.status is Status.CORRECT, verdict.details
