"""The shared pool: fairness, queueing outside the limits, sharing, threads, asyncio, cancellation,
and a pool that heals after its workers die."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import subprocess
import sys
import threading
import time

import pytest

from rlvr.sandboxes import ExecRequest, Executor, Limits, ProgramStatus, SandboxClosed, get_executor
from rlvr.sandboxes.connection import PipeTransport, TransportClosed
from rlvr.sandboxes.errors import SandboxConfigError
from rlvr.sandboxes.pool import POOLS
from rlvr.sandboxes.types import MiB
from rlvr.sandboxes.worker import encode_frame
from tests.sandboxes.conftest import require_local_sandbox, settled


@pytest.fixture(autouse=True)
def _local_sandbox():
    require_local_sandbox()


@pytest.fixture(scope="module")
def single():
    """A private pool of one worker: runs happen strictly one after the other."""
    executor = get_executor("local", workers=1, shared=False)
    executor.warm_up()
    yield executor
    executor.close()


def worker_pids(executor) -> set[int]:
    """Host pids of everything in the pool's worker cgroups (bwrap, zygote and the runs)."""
    pids: set[int] = set()
    for cgroup in executor._pool.backend.cgroups.values():
        pids |= cgroup.pids()
    return pids


def test_clients_are_served_round_robin(single):
    # a second handle on the same pool is a second client (as a second environment would be)
    key = single._handle.key
    first, second = single, Executor(POOLS.handle(key, lambda: pytest.fail("a new pool")))
    order: list[str] = []
    lock = threading.Lock()

    def submit(executor, label):
        job = executor.submit(ExecRequest(code="import time; time.sleep(0.05)"))
        job.future.add_done_callback(
            lambda _: (lock.acquire(), order.append(label), lock.release())
        )
        return job

    jobs = [submit(first, f"a{i}") for i in range(6)]
    jobs += [submit(second, f"b{i}") for i in range(2)]
    for job in jobs:
        assert job.future.result().ok
    # a0 was already running when b arrived; afterwards the clients alternate
    assert order.index("b1") < order.index("a3")
    assert order[-3:] == ["a3", "a4", "a5"]
    second.close()
    assert not first.closed  # the private pool stays open for its first handle


def test_time_spent_queued_never_counts_against_the_limits(single):
    request = ExecRequest(code="import time; time.sleep(0.5)", limits=Limits(wall_time=1.5))
    jobs = [single.submit(request) for _ in range(5)]
    results = [job.future.result() for job in jobs]
    assert all(result.ok for result in results), [r.describe() for r in results]
    assert results[-1].queued > 1.5  # waited longer than its own time limit, and still ran
    assert all(result.duration < 1.5 for result in results)


def test_environments_share_one_pool_per_process():
    handles = [get_executor("local") for _ in range(64)]
    try:
        assert len({id(handle._pool) for handle in handles}) == 1
        assert handles[0].workers == len(os.sched_getaffinity(0))
        pool = handles[0]._pool
        for handle in handles[:-1]:
            handle.close()
        assert not pool.closed  # still used by the last handle
        assert handles[-1].run(ExecRequest(code="print(1)")).ok
    finally:
        handles[-1].close()
    assert pool.closed
    assert get_executor("local")._pool is not pool  # a new pool once the old one is gone


def test_safe_to_share_across_threads(local_executor):
    results = []

    def work(n):
        for i in range(4):
            result = local_executor.run(ExecRequest(code=f"print({n} * 100 + {i})"))
            results.append((result.ok, int(result.stdout_text), n * 100 + i))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 32 and all(ok and got == want for ok, got, want in results)


def test_asyncio_entry_point(local_executor):
    async def main():
        requests = [ExecRequest(code=f"print({i} ** 2)") for i in range(10)]
        return await asyncio.gather(*(local_executor.arun(request) for request in requests))

    results = asyncio.run(main())
    assert [int(result.stdout_text) for result in results] == [i**2 for i in range(10)]


def test_cancelling_a_running_job_kills_its_processes(single):
    code = "import os, time\nif os.fork() == 0:\n    os.setsid()\ntime.sleep(60)"

    async def main():
        task = asyncio.ensure_future(
            single.arun(ExecRequest(code=code, limits=Limits(wall_time=60)))
        )
        await asyncio.sleep(0.5)
        running = worker_pids(single)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return running

    running = asyncio.run(main())
    assert len(running) >= 4  # bwrap, zygote, supervisor, program and its child
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(_alive(pid) for pid in running):
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in running)
    assert single.run(ExecRequest(code="print('next')")).ok


def test_cancelling_a_queued_job_drops_it(single):
    busy = single.submit(ExecRequest(code="import time; time.sleep(0.5)"))
    queued = single.submit(ExecRequest(code="open('/tmp/x', 'w')"))
    queued.cancel()
    assert queued.future.cancelled()
    assert busy.future.result().ok


def test_a_dead_worker_is_replaced(single):
    assert single.run(ExecRequest(code="print(1)")).ok
    for worker in list(single._pool._workers):
        os.kill(worker.transport.process.pid, signal.SIGKILL)  # dies between runs
    time.sleep(0.2)
    result = single.run(ExecRequest(code="print(2)"))
    assert result.ok and result.stdout_text == "2\n"


def test_a_worker_killed_while_idle_never_fails_the_next_run(single):
    # The zygote is killed from outside between runs and the next run comes at once, before
    # bubblewrap has even exited: that worker never takes the run, so a fresh worker runs it.
    for _ in range(3):
        assert single.run(ExecRequest(code="print(1)")).ok
        settled(single)
        (worker,) = single._pool._workers
        for pid in worker_pids(single) - {worker.transport.process.pid}:
            # a process of the listing (the last run's supervisor, a cleaner) may end meanwhile
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        result = single.run(ExecRequest(code="print(2)"))
        assert result.ok and result.stdout_text == "2\n", result.describe()


def test_a_supervisor_that_died_waiting_for_its_run_is_replaced_in_the_same_worker(single):
    # Each run's supervisor is forked while the worker is idle; one killed meanwhile (the OOM
    # killer, say) is replaced by the zygote at the run's start, without losing the worker.
    assert single.run(ExecRequest(code="print(1)")).ok
    settled(single)  # the run's supervisor is reaped; the zygote forks the next one
    (worker,) = single._pool._workers
    bwrap = worker.transport.process.pid
    (zygote,) = [pid for pid in worker_pids(single) if parent_pid(pid) == bwrap]
    assert wait_until(lambda: len(children(zygote)) == 1, 10)
    (waiting,) = children(zygote)
    os.kill(waiting, signal.SIGKILL)
    result = single.run(ExecRequest(code="print(2)"))
    assert result.ok and result.stdout_text == "2\n", result.describe()
    assert single._pool._workers == {worker} and worker.alive


def test_output_a_byte_at_a_time_costs_its_supervisor_little_cpu(single):
    # A command's supervisor carries the command's CPU limit (the program inherits it from
    # there), so a program must not be able to make it spend its CPU time: past a hundred
    # wake-ups for a trickle of output, it reads at most once a millisecond.
    settled(single)
    (worker,) = single._pool._workers
    bwrap = worker.transport.process.pid
    (zygote,) = [pid for pid in worker_pids(single) if parent_pid(pid) == bwrap]
    code = "import os\nwhile True:\n    os.write(1, b'x')\n"
    before = reaped_cpu_seconds(zygote)
    result = single.run(
        ExecRequest(command=["python3", "-c", code], limits=Limits(wall_time=3, output=64 * MiB))
    )
    assert result.status is ProgramStatus.TIMEOUT and len(result.stdout) > 10_000
    assert single.run(ExecRequest(command=["true"])).ok  # the zygote has reaped the supervisor
    supervisor = reaped_cpu_seconds(zygote) - before - result.cpu_time
    assert supervisor < 0.4, supervisor  # 0.13 s here; 0.74 s when it woke for every write


def reaped_cpu_seconds(pid: int) -> float:
    """CPU seconds of the reaped children of `pid` (cutime + cstime)."""
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rpartition(")")[2].split()
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")


def children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as handle:
        return [int(child) for child in handle.read().split()]


def wait_until(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def parent_pid(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as handle:
        return int(handle.read().rpartition(")")[2].split()[1])


def test_what_a_dying_worker_wrote_is_read_before_its_end():
    # A worker that said it took the run and died at once: its last words and the end of both
    # streams arrive together. Read in the wrong order, it would look as if it never took the
    # run, and the run (which may have started) would be given to another worker.
    taken = encode_frame({"op": "taken"})
    dies = f"import sys\nsys.stderr.buffer.write({taken!r})"
    process = subprocess.Popen(
        [sys.executable, "-c", dies],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    process.wait()
    transport = PipeTransport(process)
    assert transport.receive(time.monotonic() + 5) == [("control", taken)]
    with pytest.raises(TransportClosed):
        transport.receive(time.monotonic() + 5)
    transport.kill()


def test_waiting_for_a_result_never_counts_the_time_queued(single):
    request = ExecRequest(code="import time; time.sleep(0.5)", limits=Limits(wall_time=1))
    jobs = [single.submit(request) for _ in range(4)]
    results = [job.result(grace=0.3) for job in jobs]  # gives up 1.3 s after a worker took it
    assert all(result.ok for result in results), [result.describe() for result in results]
    assert results[-1].queued > 1.3


def test_a_stuck_slot_is_a_sandbox_error_counted_from_when_it_took_the_run(monkeypatch):
    # A backend call that hangs (as a Docker API call can) leaves the slot stuck: its run gives
    # up its wall time plus the grace after the slot took it, and a run queued behind it gives
    # up once every slot is stuck, instead of waiting forever.
    executor = get_executor("local", workers=1, shared=False)
    executor.warm_up()
    backend, release = executor._pool.backend, threading.Event()
    prepare = backend.prepare
    monkeypatch.setattr(backend, "prepare", lambda *args: (release.wait(), prepare(*args)))
    try:
        request = ExecRequest(code="print(1)", limits=Limits(wall_time=0.5))
        stuck, queued = executor.submit(request), executor.submit(request)
        first = stuck.result(grace=0.5)
        waited = time.monotonic() - stuck.started
        second = queued.result(grace=0.5)
        assert first.infra_error and "no result 1s after a worker took the run" in first.error
        assert 1.0 <= waited < 3
        assert second.infra_error and "every worker of the pool is stuck" in second.error
        release.set()
        assert executor.run(ExecRequest(code="print('healed')")).stdout_text == "healed\n"
    finally:
        release.set()
        executor.close()


def test_a_worker_killed_mid_run_is_a_sandbox_error_and_the_pool_heals(single):
    job = single.submit(
        ExecRequest(code="import time; time.sleep(30)", limits=Limits(wall_time=30))
    )
    time.sleep(0.5)
    for worker in list(single._pool._workers):
        os.kill(worker.transport.process.pid, signal.SIGKILL)
    result = job.future.result(timeout=20)
    assert result.infra_error and result.status is None
    assert "died" in result.error
    assert single.run(ExecRequest(code="print('healed')")).stdout_text == "healed\n"


def test_a_forked_child_runs_on_a_pool_of_its_own(local_executor):
    assert local_executor.run(ExecRequest(code="print('parent')")).ok
    parent_pool = local_executor._pool
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: same handle, inherited through fork
        code = 1
        try:
            result = local_executor.run(ExecRequest(code="print('child')"))
            fresh = local_executor._pool is not parent_pool
            os.write(write, f"{result.stdout_text.strip()} {fresh}".encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert os.read(read, 100) == b"child True"
    os.close(read)
    # the child's exit did not touch the parent's workers
    assert local_executor._pool is parent_pool
    assert local_executor.run(ExecRequest(code="print('parent again')")).ok


def test_closed_executor_refuses_work():
    executor = get_executor("local", workers=1, shared=False)
    executor.close()
    with pytest.raises(SandboxClosed):
        executor.run(ExecRequest(code="print(1)"))


def test_bad_options_name_the_fix():
    with pytest.raises(SandboxConfigError, match="unknown option"):
        get_executor("local", not_an_option=1)
    with pytest.raises(SandboxConfigError, match="'local' or 'docker'"):
        get_executor("firecracker")
    with pytest.raises(SandboxConfigError, match="never 0"):
        get_executor("local", uid=0)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def test_cancelling_a_clients_only_queued_job_keeps_every_slot_serving(single):
    busy = single.submit(ExecRequest(code="import time; time.sleep(0.5)"))
    while busy.state == "queued":
        time.sleep(0.01)
    dropped = single.submit(ExecRequest(code="print('dropped')"))
    dropped.cancel()  # the client's queue is now empty
    later = [single.submit(ExecRequest(code=f"print({i})")) for i in range(2)]
    assert busy.future.result(timeout=20).ok
    assert [job.future.result(timeout=20).stdout_text for job in later] == ["0\n", "1\n"]
    # the slot's thread is still serving (a crashed one would leave this job queued forever)
    assert single.submit(ExecRequest(code="print('served')")).future.result(timeout=20).ok


def test_cancelling_running_jobs_never_disturbs_other_runs(caplog):
    # Cancelling kills the worker from the cancelling thread while the slot's thread reads it:
    # the reader must never find its descriptors closed under it (a reused descriptor would
    # hand it another worker's bytes).
    executor = get_executor("local", workers=2, shared=False)
    executor.warm_up()
    stop = time.monotonic() + 3
    results = []

    def run_normally():
        while time.monotonic() < stop:
            results.append(executor.run(ExecRequest(code="print('x' * 1000)")))

    def cancel_runs():
        rng = random.Random(0)
        slow = ExecRequest(code="import time\nprint('y' * 10**5)\ntime.sleep(5)")
        while time.monotonic() < stop:
            job = executor.submit(slow)
            time.sleep(rng.uniform(0, 0.03))
            job.cancel()

    threads = [threading.Thread(target=target) for target in (run_normally, cancel_runs) * 2]
    with caplog.at_level("WARNING", logger="rlvr.sandboxes"):
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    executor.close()
    assert results and all(r.ok and r.stdout_text == "x" * 1000 + "\n" for r in results)
    assert not [record for record in caplog.records if record.exc_info]
