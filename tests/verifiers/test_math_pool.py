"""The worker pool: hard time limits, recovery after a kill, infrastructure failures."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from rlvr.verifiers import Status, Task
from rlvr.verifiers.math import MathVerifier
from rlvr.verifiers.math import pool as pool_module
from rlvr.verifiers.math.pool import (
    CheckCrashed,
    CheckTimeout,
    WorkerFailure,
    WorkerPool,
    get_pool,
)

LIMIT = 1.0
# Generous: CI runners are slow and shared; the point is "seconds", not "minutes".
SLACK = 4.0

# Answers whose parsing, printing or simplification would run for minutes or forever.
PATHOLOGICAL = [
    "10^{10^{10}}",
    "9^{9^{9^{9}}}",
    "(10^{9})!",
    "\\sqrt{2}^{10^{10^{10}}} - \\sqrt{2}^{10^{10^{10}}}",
    "2^{" * 30 + "2" + "}" * 30,  # a tower just under the nesting screen
]


def judge(gold: str, reply: str, timeout: float = LIMIT):
    return MathVerifier(timeout=timeout).verify(reply, Task(id="t", prompt="?", answer=gold))


@pytest.fixture(autouse=True)
def warm_pool():
    """Start the shared pool before timing anything (start-up is not charged to a check)."""
    assert get_pool().check("\\sqrt{3}", ["\\sqrt{3}"], timeout=60) == [("equal", "")]


@pytest.mark.parametrize("answer", PATHOLOGICAL)
def test_overrunning_checks_are_killed_and_never_pass(answer):
    start = time.monotonic()
    verdict = judge("\\sqrt{2}", f"\\boxed{{{answer}}}")
    elapsed = time.monotonic() - start
    assert elapsed < LIMIT + SLACK, f"the check took {elapsed:.1f}s"
    assert verdict.score == 0.0
    assert verdict.status in (Status.INCORRECT, Status.UNPARSABLE), verdict
    if verdict.data.get("timed_out"):
        assert verdict.status is Status.INCORRECT
        assert "timed out" in verdict.details


def test_a_timeout_is_the_answers_fault_not_infrastructure():
    verdict = judge("\\sqrt{2}", "\\boxed{10^{10^{10}}}")
    assert verdict.status is Status.INCORRECT
    assert verdict.data["timed_out"] is True
    assert not verdict.infra_error


def test_deep_nesting_is_refused_without_parsing():
    start = time.monotonic()
    verdict = judge("\\sqrt{2}", "\\boxed{" + "\\sqrt{" * 500 + "2" + "}" * 500 + "}")
    assert time.monotonic() - start < 0.5
    assert verdict.status is Status.UNPARSABLE


def test_pool_recovers_after_a_kill():
    pool = get_pool()
    before = set(pool.pids())
    assert judge("\\sqrt{2}", "\\boxed{10^{10^{10}}}").data["timed_out"]
    after = set(pool.pids())
    assert before - after, "the overrunning worker should be gone"
    assert len(after) >= 1, "a replacement should have been started"
    for _ in range(3):
        assert judge("\\sqrt{2}", "\\boxed{\\frac{2}{\\sqrt{2}}}", timeout=60).is_correct
    assert len(pool.pids()) <= pool.size


def test_an_idle_worker_killed_from_outside_is_replaced_silently():
    pool = get_pool()
    for pid in pool.pids():
        os.kill(pid, signal.SIGKILL)
    time.sleep(0.2)
    assert judge("\\sqrt{5}", "\\boxed{\\sqrt{5}}", timeout=60).is_correct


def test_concurrent_checks_share_the_pool():
    results: list[bool] = []

    def work(k: int) -> None:
        for n in range(3):
            value = 2 + k + n
            results.append(
                judge(f"\\sqrt{{{value}}}", f"\\boxed{{\\sqrt{{{value}}}}}", 60).is_correct
            )

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [True] * 12
    assert len(get_pool().pids()) <= get_pool().size


# --- parse trees the workers keep by shape (shapes.py) --------------------------------------------


def test_a_hang_on_a_known_shape_costs_that_check_only():
    """The worker keeps the parse tree of `2^{2^{1}}`; `10^{10^{10}}` has its shape and hangs:
    killed at the limit, scored 0, and later answers of that shape are judged right."""
    gold = "2^{3^{2}}"
    assert judge(gold, "\\boxed{2^{2^{1}}}", timeout=60).status is Status.INCORRECT
    start = time.monotonic()
    verdict = judge(gold, "\\boxed{10^{10^{10}}}")
    assert time.monotonic() - start < LIMIT + SLACK
    assert verdict.data["timed_out"] is True
    assert not verdict.infra_error
    assert judge(gold, "\\boxed{2^{3^{2}}}", timeout=60).is_correct
    assert judge(gold, "\\boxed{2^{2^{3}}}", timeout=60).status is Status.INCORRECT
    assert judge(gold, "\\boxed{512}", timeout=60).is_correct


def test_answers_of_one_shape_never_share_a_verdict():
    """Golds and answers that differ only in their numbers (one parse tree in the worker)."""
    pairs = [(5, 6), (7, 2), (3, 5)]
    sets = [f"\\{{{a} - \\sqrt{{{b}}}, {a} + \\sqrt{{{b}}}\\}}" for a, b in pairs]
    for gold in sets:
        for answer in reversed(sets):
            verdict = judge(gold, f"\\boxed{{{answer}}}", timeout=60)
            assert verdict.is_correct == (answer == gold), (gold, answer, verdict)


# --- infrastructure failures ----------------------------------------------------------------------

CRASH_ON_REQUEST = textwrap.dedent(
    """
    import sys
    print('{"ready": true}', flush=True)
    sys.stdin.readline()
    sys.exit(3)
    """
)
FAIL_AT_START = 'print(\'{"fatal": "ImportError: no sympy"}\', flush=True)'
# Speaks the worker protocol and finds every answer equal, but aborts (like a big-number library
# out of memory) on any answer containing "boom" and takes a minute over any containing "slow";
# with a path argument, it also dies on the first request it sees while that file does not exist
# yet (a worker killed from outside, once).
FAKE_WORKER = textwrap.dedent(
    """
    import json, os, resource, sys, time
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # os.abort() below leaves no core file
    print('{"ready": true}', flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        if len(sys.argv) > 1 and not os.path.exists(sys.argv[1]):
            open(sys.argv[1], "w").close()
            os._exit(9)
        if any("boom" in answer for answer in request["answers"]):
            os.abort()
        if any("slow" in answer for answer in request["answers"]):
            time.sleep(60)
        print(json.dumps({"results": [["equal", ""] for _ in request["answers"]]}), flush=True)
    """
)
# The first time it runs (while that file does not exist) it closes its input and then says it is
# ready: found gone when it is handed a check (killed from outside while idle). Closing after
# saying ready raced the pool: a check sent in between sat unread in the pipe and timed out.
GONE_WHEN_HANDED_A_CHECK = textwrap.dedent(
    """
    import os, sys, time
    if not os.path.exists(sys.argv[1]):
        open(sys.argv[1], "w").close()
        os.close(0)
        print('{"ready": true}', flush=True)
        time.sleep(60)
    print('{"ready": true}', flush=True)
    for line in sys.stdin:
        print('{"results": [["equal", ""]]}', flush=True)
    """
)


def _pool(script: str, *args: str) -> WorkerPool:
    return WorkerPool(
        1, command=(sys.executable, "-c", script, *args), startup_timeout=30, canary_timeout=1
    )


def test_workers_dying_on_every_check_are_a_worker_failure():
    pool = _pool(CRASH_ON_REQUEST)
    try:  # retried, then a trivial check dies too: our machinery, not the answer
        with pytest.raises(WorkerFailure, match="exit status 3"):
            pool.check("1", ["1"], timeout=10)
    finally:
        pool.close()


def test_an_answer_that_kills_fresh_workers_is_the_answers_fault(monkeypatch):
    pool = _pool(FAKE_WORKER)
    try:
        with pytest.raises(CheckCrashed, match="killed by signal 6"):
            pool.check("1", ["1", "boom"], timeout=10)
        assert pool.check("1", ["1"], timeout=10) == [("equal", "")]
        monkeypatch.setattr(pool_module, "get_pool", lambda: pool)
        verdict = judge("\\sqrt{19}", "\\boxed{\\sqrt{19}\\,boom}", timeout=10)
    finally:
        pool.close()
    assert verdict.status is Status.INCORRECT  # a zero, not a dropped sample
    assert not verdict.infra_error
    assert verdict.data["crashed"] is True
    assert "crashed" in verdict.details


def test_a_worker_lost_once_mid_check_is_retried_transparently(tmp_path):
    pool = WorkerPool(1, command=(sys.executable, "-c", FAKE_WORKER, str(tmp_path / "died")))
    try:
        assert pool.check("1", ["1"], timeout=10) == [("equal", "")]
        assert (tmp_path / "died").exists()  # the first worker did die on the request
    finally:
        pool.close()


def test_a_worker_found_gone_when_handed_a_check_is_replaced_and_the_check_run(tmp_path):
    pool = _pool(GONE_WHEN_HANDED_A_CHECK, str(tmp_path / "gone"))
    try:  # not an infrastructure error: the check never reached the dead worker
        assert pool.check("1", ["1"], timeout=10) == [("equal", "")]
        assert (tmp_path / "gone").exists()
    finally:
        pool.close()


def test_a_worker_that_cannot_start_is_a_worker_failure():
    pool = _pool(FAIL_AT_START)
    try:
        with pytest.raises(WorkerFailure, match="no sympy"):
            pool.check("1", ["1"], timeout=10)
    finally:
        pool.close()


def test_an_answer_too_slow_to_check_raises_check_timeout():
    pool = _pool(FAKE_WORKER)
    try:
        start = time.monotonic()
        with pytest.raises(CheckTimeout):
            pool.check("1", ["slow"], timeout=0.5)
        assert time.monotonic() - start < 0.5 + SLACK
        assert pool.check("1", ["1"], timeout=10) == [("equal", "")]
    finally:
        pool.close()


def test_workers_hanging_on_every_check_are_a_worker_failure():
    # A timeout is the answer's fault only if the pool still answers a trivial check: a stuck
    # pool must not score every reply 0.
    pool = _pool("print('{\"ready\": true}', flush=True)\nimport time\ntime.sleep(60)")
    try:
        with pytest.raises(WorkerFailure, match="even on a trivial check"):
            pool.check("1", ["1"], timeout=0.5)
    finally:
        pool.close()


def test_infrastructure_failure_gives_an_error_verdict(monkeypatch):
    broken = _pool(CRASH_ON_REQUEST)
    monkeypatch.setattr(pool_module, "get_pool", lambda: broken)
    try:
        verdict = judge("\\sqrt{11}", "\\boxed{\\sqrt{11}}", timeout=10)
    finally:
        broken.close()
    assert verdict.status is Status.ERROR
    assert verdict.score is None
    assert verdict.infra_error
    assert "math checker failed" in verdict.details


def test_repeated_symbolic_checks_are_served_from_cache(monkeypatch):
    assert judge("\\sqrt{13}", "\\boxed{\\frac{26}{2\\sqrt{13}}}", timeout=60).is_correct
    broken = _pool(CRASH_ON_REQUEST)
    monkeypatch.setattr(pool_module, "get_pool", lambda: broken)
    try:  # the same comparison needs no worker; a new one does
        assert judge("\\sqrt{13}", "\\boxed{\\frac{26}{2\\sqrt{13}}}", timeout=10).is_correct
        assert judge("\\sqrt{13}", "\\boxed{\\sqrt{14}}", timeout=10).infra_error
    finally:
        broken.close()


def test_a_closed_pool_refuses_checks():
    pool = WorkerPool(1)
    pool.close()
    with pytest.raises(WorkerFailure, match="closed"):
        pool.check("1", ["1"], timeout=1)


# --- process lifecycle ----------------------------------------------------------------------------


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); read its state
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_workers_die_with_the_interpreter():
    script = textwrap.dedent(
        """
        from rlvr.verifiers import Task
        from rlvr.verifiers.math import MathVerifier
        from rlvr.verifiers.math.pool import get_pool
        task = Task(id="t", prompt="?", answer="\\\\sqrt{2}")
        assert MathVerifier(timeout=60).verify("\\\\boxed{\\\\sqrt{2}}", task).is_correct
        print(" ".join(map(str, get_pool().pids())), flush=True)
        """
    )
    output = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    pids = [int(pid) for pid in output.stdout.split()]
    assert pids
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in pids)


def test_the_pool_starts_lazily():
    script = (
        "import rlvr, gymnasium as gym\n"
        "from rlvr.verifiers.math import pool\n"
        "env = gym.make('rlvr/Math-v0')\n"
        "print(pool.running_pool() is None, 'sympy' in __import__('sys').modules)\n"
    )
    output = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert output.stdout.split() == ["True", "False"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_gets_its_own_pool():
    parent_pids = set(get_pool().pids())
    child = os.fork()
    if child == 0:  # the child: must not use the parent's workers
        code = 1
        try:
            results = get_pool().check("\\sqrt{17}", ["\\sqrt{17}"], timeout=60)
            mine = set(get_pool().pids())
            code = 0 if results == [("equal", "")] and mine and not mine & parent_pids else 2
        finally:
            pool_module.shutdown_pool()
            os._exit(code)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert get_pool().check("\\sqrt{17}", ["\\sqrt{17}"], timeout=60) == [("equal", "")]
