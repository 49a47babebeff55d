"""A small pool of warm worker processes that run symbolic checks under a hard time limit.

math-verify's own timeout (SIGALRM) cannot interrupt C code such as sympy computing
`10**(10**10)`, and does not cover printing or simplifying around its calls. A process can always
be killed, so every symbolic check runs in a worker process (`worker.py`); a check that overruns
its wall-clock limit has its worker killed and a fresh worker started in its place. A worker that
dies while checking, or is found gone when handed a check, is replaced and the check retried once
on a fresh worker, within the same time budget: a worker lost for reasons of its own (killed from
outside) costs nothing. A check that overruns, or kills the fresh worker too, may be the answer's
doing or a broken pool's: a trivial check on a fresh worker decides. If it passes, the answer is
at fault (`CheckTimeout`, `CheckCrashed`: the verifier scores 0, so a policy cannot farm dropped
samples); if not, workers hang or die on anything and `WorkerFailure` is raised. A worker that
cannot start also raises `WorkerFailure` (an infrastructure error).

One pool serves every `MathVerifier` in a process. It is created on first use (importing this
module starts nothing), holds at most `RLVR_MATH_WORKERS` workers (default: min(2, CPUs)), starts
each worker only when a check needs one, and kills them all at interpreter exit. A forked child
gets a pool of its own.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import threading
import time
from typing import Any

from rlvr._shared import SharedResources
from rlvr.verifiers.errors import VerifierConfigError, VerifierError

WORKER_COMMAND = (sys.executable, "-m", "rlvr.verifiers.math.worker")
STARTUP_TIMEOUT = 120.0
# A check every sound worker answers at once: run after a check overran or killed two workers.
CANARY = {"gold": "\\sqrt{2}", "answers": ["\\frac{2}{\\sqrt{2}}"], "final_form": True}
CANARY_TIMEOUT = 30.0


class CheckTimeout(VerifierError):
    """A check overran its time limit; its worker was killed."""


class WorkerFailure(VerifierError):
    """A worker could not start or take a request: our machinery failed."""


class WorkerDied(WorkerFailure):
    """A worker's output ended: it exited or was killed, `seconds` into the check."""

    def __init__(self, message: str, seconds: float = 0.0) -> None:
        super().__init__(message)
        self.seconds = seconds


class CheckCrashed(VerifierError):
    """A check killed its worker, and then the fresh worker it was retried on."""


def default_size() -> int:
    configured = os.environ.get("RLVR_MATH_WORKERS", "").strip()
    if configured:
        try:
            size = int(configured)
        except ValueError:
            size = 0
        if size < 1:
            raise VerifierConfigError(
                f"RLVR_MATH_WORKERS must be a positive int, got {configured!r}"
            )
        return size
    return min(2, os.cpu_count() or 1)


class _Worker:
    def __init__(self, command: tuple[str, ...]) -> None:
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C meant for the trainer does not hit mid-check
        )
        self.ready = False
        self.buffer = b""

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def wait_ready(self, startup_timeout: float) -> None:
        if self.ready:
            return
        try:
            message = self.receive(time.monotonic() + startup_timeout)
        except CheckTimeout:
            raise WorkerFailure(
                f"math worker {self.pid} did not start within {startup_timeout:.0f}s"
            ) from None
        except WorkerDied as exc:
            raise WorkerFailure(f"math worker failed to start: {exc}") from None
        if not message.get("ready"):
            raise WorkerFailure(f"math worker {self.pid} failed to start: {message.get('fatal')}")
        self.ready = True

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(message).encode("ascii") + b"\n")
            self.process.stdin.flush()
        except (BrokenPipeError, ValueError):  # gone before it read the check: retried
            raise WorkerDied(f"math worker {self.pid} is gone ({self._exit()})") from None

    def receive(self, deadline: float) -> dict[str, Any]:
        """The next message, or `CheckTimeout` at `deadline`, or `WorkerFailure` if it died."""
        assert self.process.stdout is not None
        descriptor = self.process.stdout.fileno()
        poller = select.poll()
        poller.register(descriptor, select.POLLIN | select.POLLHUP)
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise CheckTimeout(f"math worker {self.pid} overran its time limit")
            if not poller.poll(max(1, int(remaining * 1000))):
                continue
            chunk = os.read(descriptor, 1 << 16)
            if not chunk:
                raise WorkerDied(f"math worker {self.pid} died ({self._exit()})")
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return json.loads(line)

    def _exit(self) -> str:
        try:
            code = self.process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            return "still running"
        return f"killed by signal {-code}" if code < 0 else f"exit status {code}"

    def kill(self) -> None:
        if self.alive():
            self.process.kill()
        self.process.wait()
        self.close_pipes()

    def close_pipes(self) -> None:
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


class WorkerPool:
    """At most `size` worker processes, started on demand and reused between checks."""

    def __init__(
        self,
        size: int | None = None,
        *,
        command: tuple[str, ...] = WORKER_COMMAND,
        startup_timeout: float = STARTUP_TIMEOUT,
        canary_timeout: float = CANARY_TIMEOUT,
    ) -> None:
        self.size = size if size is not None else default_size()
        if self.size < 1:
            raise VerifierConfigError(f"a worker pool needs size >= 1, got {self.size}")
        self.command = command
        self.startup_timeout = startup_timeout
        self.canary_timeout = canary_timeout
        self._condition = threading.Condition()
        self._idle: list[_Worker] = []
        self._busy: list[_Worker] = []
        self._closed = False

    def check(
        self, gold: str, answers: list[str], timeout: float, *, final_form: bool = True
    ) -> list[tuple[str, str]]:
        """Compare each answer with `gold` in a worker; (outcome, detail) per answer.

        `final_form` asks for the answer in the gold's form (see `equivalence.compare`). The
        time limit starts when a ready worker has the request; waiting for a worker to start is
        not charged to the answer. A worker dying mid-check is retried once with the time left;
        an overrun or a second death is the answer's only if the pool passes a trivial check
        (module docstring).
        """
        request = {"gold": gold, "answers": answers, "final_form": final_form}
        try:
            reply = self._attempt_twice(request, timeout)
        except (CheckTimeout, CheckCrashed):
            self._canary()  # raises WorkerFailure if the pool itself is broken
            raise
        return [(str(outcome), str(detail)) for outcome, detail in reply["results"]]

    def _attempt_twice(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        """`_attempt`, and once more with the time left if its worker died."""
        try:
            return self._attempt(request, timeout)
        except WorkerDied as first:
            left = timeout - first.seconds
            if left <= 0:
                raise CheckTimeout(f"{first}, with no time left to retry") from None
            try:
                return self._attempt(request, left)
            except WorkerDied as second:
                raise CheckCrashed(f"{first}; on retry, {second}") from None

    def pids(self) -> list[int]:
        """Process ids of the live workers (for tests and monitoring)."""
        with self._condition:
            return [worker.pid for worker in self._idle + self._busy if worker.alive()]

    def close(self) -> None:
        """Kill every worker. Checks after this raise `WorkerFailure`."""
        with self._condition:
            self._closed = True
            workers = self._idle + self._busy
            self._idle, self._busy = [], []
            self._condition.notify_all()
        for worker in workers:
            worker.kill()

    def abandon(self) -> None:
        """In a forked child: let go of the parent's workers without killing them."""
        for worker in self._idle + self._busy:
            worker.close_pipes()
        self._idle, self._busy, self._closed = [], [], True

    def _attempt(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        """One try of `request` on one worker, killed and replaced if it fails or overruns."""
        worker = self._acquire()
        try:
            worker.wait_ready(self.startup_timeout)
            worker.send({**request, "cpu_seconds": 2 * timeout + 5})
            started = time.monotonic()
            try:
                reply = worker.receive(started + timeout)
            except WorkerDied as exc:
                raise WorkerDied(str(exc), time.monotonic() - started) from None
        except (CheckTimeout, WorkerFailure):
            self._discard(worker, replace=True)
            raise
        except BaseException:  # interrupted mid-check: the worker's state is unknown
            self._discard(worker, replace=False)
            raise
        self._release(worker)
        if "results" not in reply:
            raise WorkerFailure(f"math worker {worker.pid} answered {reply!r:.200}")
        return reply

    def _canary(self) -> None:
        """Raise `WorkerFailure` unless a worker answers a trivial check in time."""
        try:
            self._attempt(CANARY, self.canary_timeout)
        except (CheckTimeout, WorkerFailure) as exc:
            raise WorkerFailure(f"math workers fail even on a trivial check: {exc}") from None

    def _acquire(self) -> _Worker:
        with self._condition:
            while True:
                if self._closed:
                    raise WorkerFailure("the math worker pool is closed")
                while self._idle:
                    # a warm worker first: a replacement may still be importing sympy
                    ready = [index for index, idle in enumerate(self._idle) if idle.ready]
                    worker = self._idle.pop(ready[-1] if ready else -1)
                    if worker.alive():
                        self._busy.append(worker)
                        return worker
                    worker.kill()
                if len(self._busy) < self.size:
                    worker = self._spawn()
                    self._busy.append(worker)
                    return worker
                self._condition.wait()

    def _spawn(self) -> _Worker:
        try:
            return _Worker(self.command)
        except OSError as exc:
            raise WorkerFailure(f"cannot start a math worker: {exc}") from exc

    def _release(self, worker: _Worker) -> None:
        with self._condition:
            self._busy.remove(worker)
            if self._closed:
                worker.kill()
            else:
                self._idle.append(worker)
            self._condition.notify()

    def _discard(self, worker: _Worker, *, replace: bool) -> None:
        worker.kill()
        with self._condition:
            self._busy.remove(worker)
            if replace and not self._closed:
                # Start the replacement now, so that it is warm by the next check.
                with contextlib.suppress(WorkerFailure):
                    self._idle.append(self._spawn())
            self._condition.notify()


# One pool per process, made at first use and held until `shutdown_pool` or exit; a forked child
# lets go of its parent's workers (closing only its copies of their pipes) and makes its own.
POOLS: SharedResources[WorkerPool] = SharedResources(
    "math worker pool", WorkerPool.close, abandon=WorkerPool.abandon
)


def get_pool() -> WorkerPool:
    """The process-wide pool, created on first use and closed at interpreter exit."""
    return POOLS.get("math", WorkerPool)


def running_pool() -> WorkerPool | None:
    """The process-wide pool if one was made (and not shut down) in this process."""
    return POOLS.current().get("math")


def shutdown_pool() -> None:
    """Kill the process-wide pool's workers now (a later check starts a new pool)."""
    POOLS.discard("math")
