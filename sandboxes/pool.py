"""A pool of sandbox workers shared by every user in the process, and the `Executor` handle.

- One pool per (backend, config) per process, sized to the cores: 64 environments that each ask
  for an executor share one pool instead of starting 64 (`get_executor`).
- Each slot of the pool has a thread that owns one warm worker, takes the next job, runs it and
  replaces the worker if it died. Worker processes are started from these long-lived threads
  because bubblewrap's `--die-with-parent` follows the thread that started it.
- Jobs queue per client (per `Executor` handle) and slots serve clients round-robin, so one
  environment submitting a thousand runs cannot starve another. A job's limits start counting
  only when a worker starts its program: queueing never eats into a submission's time, and
  neither does it count towards deciding that the sandbox is stuck (`Job.result`).
- A worker proves it is alive by acknowledging each run before anything of the run happens. One
  that died while idle (a container killed from outside, say) never acknowledges: it is replaced
  and the run goes to the fresh worker, so a dead worker is never the run's infrastructure error.
- Cancellation (asyncio task cancelled, KeyboardInterrupt in `run`) removes a queued job, or kills
  the worker running it; the slot then starts a fresh worker. Closing the pool, and interpreter
  exit, kill every worker: no orphaned processes or containers.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import itertools
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Hashable
from typing import Any

from rlvr._shared import Handle, HandleClosed, SharedResources
from rlvr.sandboxes.connection import WorkerConnection, WorkerLost
from rlvr.sandboxes.errors import SandboxClosed, SandboxConfigError
from rlvr.sandboxes.types import ExecRequest, ExecResult, Limits

logger = logging.getLogger(__name__)

# A run with no result this many seconds past its wall time, counted from when a worker took it,
# means the slot is stuck (the worker's own deadline, a few seconds past the wall time, failed).
STUCK_GRACE = 30.0
QUEUE_POLL = 1.0  # how often a queued job checks that the pool still serves jobs


def default_workers() -> int:
    """Worker count when none is given: RLVR_SANDBOX_WORKERS, else the usable cores."""
    configured = os.environ.get("RLVR_SANDBOX_WORKERS")
    if configured:
        try:
            value = int(configured)
        except ValueError:
            value = 0
        if value < 1:
            raise SandboxConfigError(
                f"RLVR_SANDBOX_WORKERS must be a positive integer, got {configured!r}"
            )
        return value
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class Backend:
    """How to start workers of one kind (local bubblewrap, Docker). Implemented per backend."""

    name = "backend"

    def start_worker(self, slot: int, limits: Limits | None = None) -> WorkerConnection:
        """Start a worker; `limits` are those of the request it is started for, if any."""
        raise NotImplementedError

    def prepare(self, worker: WorkerConnection, request: ExecRequest) -> None:
        """Apply the request's limits to `worker` before it runs (no-op if unchanged)."""

    def forget(self, worker: WorkerConnection) -> None:
        """Drop what the backend keeps about a worker that is gone."""

    def needs_fresh_worker(self, request: ExecRequest) -> bool:
        """True if the request cannot run in a warm worker (network access, strict mode)."""
        return request.limits.network

    def close(self) -> None:
        pass


class Job:
    """One submitted request. `future` resolves to its `ExecResult`."""

    def __init__(self, pool: WorkerPool, client: int, request: ExecRequest) -> None:
        self.pool = pool
        self.client = client
        self.request = request
        self.future: concurrent.futures.Future[ExecResult] = concurrent.futures.Future()
        self.submitted = time.monotonic()
        self.started: float | None = None
        """When a worker took the job (time.monotonic()); None while it waits for one."""
        self.state = "queued"
        self.worker: WorkerConnection | None = None
        self.cancelled = False
        self._taken = threading.Event()  # a worker took the job, or it ended
        self.future.add_done_callback(lambda _: self._taken.set())

    def cancel(self) -> None:
        """Drop the job if queued; kill its worker if running (the slot starts a fresh one)."""
        self.pool.cancel(self)

    def mark_taken(self) -> None:
        """Called by the slot handing the job to a worker: from now on, its clock runs."""
        self.started = time.monotonic()
        self._taken.set()

    def wait_taken(self, grace: float = STUCK_GRACE) -> bool:
        """Block while the job waits for a worker, however long the queue: True once a worker
        has taken it (or it ended), False if every slot of the pool is stuck (`stalled`)."""
        while not self._taken.wait(QUEUE_POLL):
            if self.pool.stalled(grace):
                return False
        return True

    def result(self, grace: float = STUCK_GRACE) -> ExecResult:
        """Wait for the result, however long the job waits in the queue.

        Once a worker has the job, the wait ends `grace` seconds past the run's wall time: a
        run that long without a result means the sandbox is stuck, and the result is then a
        sandbox error (the job is cancelled, its worker killed). Time spent queued never
        counts; a queued job gives up only when every slot of the pool is stuck.
        """
        if not self.wait_taken(grace):
            return self._give_up("every worker of the pool is stuck on an earlier run")
        limit = self.request.limits.wall_time + grace
        while True:
            started = self.started  # None again while a lost worker is being replaced
            wait = QUEUE_POLL if started is None else started + limit - time.monotonic()
            try:
                return self.future.result(timeout=max(wait, 0.0))
            except concurrent.futures.TimeoutError:
                pass
            started = self.started
            if started is not None and time.monotonic() >= started + limit:
                return self._give_up(f"no result {limit:g}s after a worker took the run")

    def _give_up(self, why: str) -> ExecResult:
        self.cancel()
        if self.future.done() and not self.future.cancelled():
            return self.future.result()  # it ended after all
        logger.error("%s sandbox is stuck: %s", self.pool.backend.name, why)
        return ExecResult.sandbox_error(
            f"the sandbox is stuck: {why}",
            backend=self.pool.backend.name,
            queued=(self.started or time.monotonic()) - self.submitted,
        )


class WorkerPool:
    """`size` slots, each a thread with one warm worker; jobs served round-robin by client."""

    def __init__(self, backend: Backend, size: int) -> None:
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise SandboxConfigError(f"workers must be a positive int, got {size!r}")
        self.backend = backend
        self.size = size
        self._cond = threading.Condition()
        self._queues: dict[int, deque[Job]] = {}
        self._turns: deque[int] = deque()  # clients with queued jobs, in round-robin order
        self._threads: list[threading.Thread] = []
        self._running: dict[int, Job] = {}  # slot -> the job it is running
        self._workers: set[WorkerConnection] = set()
        self._ready = 0
        self._closed = False

    # --- submitting -----------------------------------------------------------------------------

    def submit(self, client: int, request: ExecRequest) -> Job:
        if not isinstance(request, ExecRequest):
            raise TypeError(f"expected an ExecRequest, got {type(request).__name__}")
        job = Job(self, client, request)
        with self._cond:
            if self._closed:
                raise SandboxClosed("this sandbox executor is closed")
            self._start_threads()
            queue = self._queues.setdefault(client, deque())
            if not queue:
                self._turns.append(client)
            queue.append(job)
            self._cond.notify()
        return job

    def warm_up(self, timeout: float = 60.0) -> None:
        """Start every worker now and wait until they are ready (or `timeout` passes)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            self._start_threads()
            while self._ready < self.size and not self._closed:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)

    def cancel(self, job: Job) -> None:
        with self._cond:
            if job.state == "queued":
                queue = self._queues.get(job.client)
                if queue is not None and job in queue:
                    queue.remove(job)
                    if not queue:  # a client is in the round-robin only while it has jobs
                        del self._queues[job.client]
                        self._turns.remove(job.client)
                job.state = "done"
                job.future.cancel()
                return
            job.cancelled = True
            worker = job.worker if job.state == "running" else None
        if worker is not None:
            worker.interrupt()  # the slot's thread, which reads the worker, kills it

    def _start_threads(self) -> None:
        if self._threads:
            return
        for slot in range(self.size):
            thread = threading.Thread(
                target=self._slot_main,
                args=(slot,),
                name=f"rlvr-sandbox-{self.backend.name}-{slot}",
                daemon=True,
            )
            self._threads.append(thread)
            thread.start()

    def stalled(self, grace: float = STUCK_GRACE) -> bool:
        """True when no slot will take another job: each is gone, or stuck on a run that has
        had a worker for `grace` seconds past its wall time without ending."""
        now = time.monotonic()
        with self._cond:
            if self._closed or not self._threads:
                return False  # closing answers every queued job itself
            for slot, thread in enumerate(self._threads):
                job = self._running.get(slot)
                started = job.started if job is not None else None
                if started is None:
                    if thread.is_alive():  # free, or starting a worker (bounded by its timeout)
                        return False
                elif job is not None and now < started + job.request.limits.wall_time + grace:
                    return False
            return True

    def _take(self, slot: int) -> Job | None:
        with self._cond:
            while not self._turns and not self._closed:
                self._cond.wait()
            if self._closed:
                return None
            client = self._turns.popleft()
            queue = self._queues[client]
            job = queue.popleft()
            if queue:
                self._turns.append(client)
            else:
                del self._queues[client]
            job.state = "running"
            self._running[slot] = job
            return job

    def _done(self, slot: int, job: Job) -> None:
        with self._cond:
            job.state = "done"
            job.worker = None
            self._running.pop(slot, None)

    # --- the slot threads -----------------------------------------------------------------------

    def _slot_main(self, slot: int) -> None:
        worker, start_error = self._start(slot)
        with self._cond:
            self._ready += 1
            self._cond.notify_all()
        while True:
            job = self._take(slot)
            if job is None:
                break
            if not job.future.set_running_or_notify_cancel():
                self._done(slot, job)
                continue
            queued = time.monotonic() - job.submitted
            if self.backend.needs_fresh_worker(job.request):
                result = self._run_fresh(slot, job)
            else:
                result, worker, start_error = self._run_warm(slot, job, worker, start_error)
            self._done(slot, job)
            job.future.set_result(dataclasses.replace(result, queued=queued))
            if worker is not None:
                worker.settle()  # the end of the run, after its caller has the result
            if worker is not None and not worker.alive:
                self._forget(worker)
                worker, start_error = self._start(slot)
        if worker is not None:
            worker.kill()
            self._forget(worker)

    def _run_warm(
        self, slot: int, job: Job, worker: WorkerConnection | None, start_error: str
    ) -> tuple[ExecResult, WorkerConnection | None, str]:
        """Run `job` on the slot's warm worker (started afresh if it is gone); a worker that
        turns out to be dead when handed the job is replaced and the job given to the new one.
        Returns the result, and the slot's worker and start error from now on."""
        lost: WorkerLost | None = None
        for _ in range(2):
            if worker is None or not worker.healthy():
                if worker is not None:
                    self._forget(worker)
                worker, start_error = self._start(slot)
            if worker is None:
                error = ExecResult.sandbox_error(start_error, backend=self.backend.name)
                return error, None, start_error
            try:
                return self._run_on(worker, job), worker, start_error
            except WorkerLost as exc:
                lost = exc
                self._forget(worker)
                worker = None
        return self._lost_twice(lost), None, start_error

    def _run_fresh(self, slot: int, job: Job) -> ExecResult:
        lost: WorkerLost | None = None
        for _ in range(2):
            worker, error = self._start(slot, job.request.limits)
            if worker is None:
                return ExecResult.sandbox_error(error, backend=self.backend.name)
            try:
                return self._run_on(worker, job)
            except WorkerLost as exc:
                lost = exc
            finally:
                worker.kill()
                self._forget(worker)
        return self._lost_twice(lost)

    def _lost_twice(self, lost: WorkerLost | None) -> ExecResult:
        message = f"two sandbox workers in a row could not take the run: {lost}"
        logger.warning(message)
        return ExecResult.sandbox_error(message, backend=self.backend.name)

    def _run_on(self, worker: WorkerConnection, job: Job) -> ExecResult:
        """Run `job` on `worker`; raises `WorkerLost` if the worker never took it (nothing of
        the job ran: the caller may give it to another worker)."""
        with self._cond:
            job.worker = worker
            cancelled = job.cancelled
        if cancelled:
            worker.kill()
            return ExecResult.sandbox_error("cancelled", backend=self.backend.name)
        job.mark_taken()
        try:
            self.backend.prepare(worker, job.request)
        except Exception as exc:  # e.g. a Docker API call on a container that died meanwhile
            logger.warning("%s sandbox: preparing a worker failed: %s", self.backend.name, exc)
            worker.kill()
            job.started = None
            raise WorkerLost(f"preparing the worker failed: {type(exc).__name__}: {exc}") from None
        try:
            return worker.run(job.request)
        except WorkerLost:
            job.started = None
            raise
        except Exception as exc:  # the executor boundary: our failure becomes a sandbox error
            logger.exception("%s sandbox failed to run a request", self.backend.name)
            worker.kill()
            return ExecResult.sandbox_error(
                f"{type(exc).__name__}: {exc}", backend=self.backend.name
            )

    def _start(
        self, slot: int, limits: Limits | None = None
    ) -> tuple[WorkerConnection | None, str]:
        if self._closed:
            return None, "this sandbox executor is closed"
        try:
            worker = self.backend.start_worker(slot, limits)
        except Exception as exc:  # reported per job as a sandbox error, and logged
            message = f"cannot start a {self.backend.name} sandbox worker: {exc}"
            logger.warning(message)
            return None, message
        with self._cond:
            if self._closed:
                worker.kill()
                return None, "this sandbox executor is closed"
            self._workers.add(worker)
        return worker, ""

    def _forget(self, worker: WorkerConnection) -> None:
        # A worker is forgotten because it is dead or must not be reused (a run left it unclean,
        # or its program killed its supervisor): make sure its process or container is gone.
        worker.kill()
        with self._cond:
            self._workers.discard(worker)
        self.backend.forget(worker)

    # --- shutdown -------------------------------------------------------------------------------

    def close(self) -> None:
        with self._cond:
            if self._closed:
                return
            self._closed = True
            abandoned = [job for queue in self._queues.values() for job in queue]
            self._queues.clear()
            self._turns.clear()
            workers = list(self._workers)
            self._cond.notify_all()
        for job in abandoned:
            if job.future.set_running_or_notify_cancel():
                job.future.set_result(
                    ExecResult.sandbox_error("the executor was closed", backend=self.backend.name)
                )
        for worker in workers:
            worker.interrupt()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout=15)
        with self._cond:
            leftovers = list(self._workers)
        for worker in leftovers:
            worker.kill()
        self.backend.close()

    @property
    def closed(self) -> bool:
        return self._closed


# Every pool of the process, shared (one per backend, config and size) or not (a key of its own):
# closed when its last handle closes and at interpreter exit, never inherited through fork.
POOLS: SharedResources[WorkerPool] = SharedResources(
    "sandbox pool", WorkerPool.close, usable=lambda pool: not pool.closed
)
_client_ids = itertools.count(1)
_private_keys = itertools.count(1)


class Executor:
    """Runs `ExecRequest`s in sandboxes. Thread-safe; close it (or use `with`) when done.

    `run(request)` blocks; `await arun(request)` does not block the event loop. Neither raises
    for a failing program or a broken sandbox: look at the result's two statuses. A handle that
    reaches a forked child process (e.g. a Gymnasium async vector env) starts a pool of its own
    there at its first run: the parent's workers belong to the parent.
    """

    def __init__(self, handle: Handle[WorkerPool]) -> None:
        self._handle = handle
        self._client = next(_client_ids)

    @property
    def _pool(self) -> WorkerPool:
        return self._handle.resource

    @property
    def backend(self) -> str:
        return self._pool.backend.name

    @property
    def workers(self) -> int:
        return self._pool.size

    @property
    def closed(self) -> bool:
        return self._handle.closed or (self._pool.closed and self._handle.mine)

    def _current_pool(self) -> WorkerPool:
        try:
            return self._handle.get()
        except HandleClosed:
            raise SandboxClosed("this sandbox executor is closed") from None

    def submit(self, request: ExecRequest) -> Job:
        return self._current_pool().submit(self._client, request)

    def run(self, request: ExecRequest) -> ExecResult:
        """Run `request` and wait for its result (see `Job.result`: queueing is never charged)."""
        job = self.submit(request)
        try:
            return job.result()
        except BaseException:
            job.cancel()
            raise

    async def arun(self, request: ExecRequest) -> ExecResult:
        job = self.submit(request)
        try:
            return await asyncio.wrap_future(job.future)
        except asyncio.CancelledError:
            job.cancel()
            raise

    def warm_up(self, timeout: float = 60.0) -> None:
        """Start the pool's workers now instead of at the first run."""
        self._current_pool().warm_up(timeout)

    def close(self) -> None:
        """Give the pool back: a shared pool closes with its last handle, a private one now."""
        self._handle.close()

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<Executor {self.backend} workers={self.workers} {state}>"


def get_executor(
    backend: str = "local", *, workers: int | None = None, shared: bool = True, **options: Any
) -> Executor:
    """An executor for `backend` ("local" or "docker"); options go to its config dataclass.

    With `shared=True` (the default) every call with the same backend and options returns a
    handle to one process-wide pool; the pool closes when the last handle is closed (and at
    interpreter exit). `workers` defaults to the number of usable cores.
    """
    config = make_config(backend, options)
    size = workers if workers is not None else default_workers()
    key: Hashable = (backend, config, size)
    if not shared:  # a pool of its own, still closed at exit and never inherited through fork
        key = (backend, config, size, "private", next(_private_keys))
    return Executor(POOLS.handle(key, lambda: WorkerPool(make_backend(backend, config), size)))


def make_config(backend: str, options: dict[str, Any]) -> Any:
    if backend == "local":
        from rlvr.sandboxes.local import LocalConfig

        return _build(LocalConfig, options)
    if backend == "docker":
        from rlvr.sandboxes.containers import DockerConfig

        return _build(DockerConfig, options)
    raise SandboxConfigError(f"unknown sandbox backend {backend!r}; use 'local' or 'docker'")


def check_backend(backend: str, config: Any, *, timeout: int = 5) -> None:
    """Raise `SandboxUnavailable` (saying how to fix it) when `backend` with `config` (from
    `make_config`) cannot run code on this machine. Cheap, starts nothing: for "local" the
    isolation probe, for "docker" a ping of the engine (within `timeout` seconds) and a look
    for the image."""
    if backend == "local":
        from rlvr.sandboxes.local import require_isolation

        require_isolation(config)
        return
    from rlvr.sandboxes.image import docker_client, image_method

    client = docker_client(config.base_url, timeout=timeout)
    try:
        image_method(client, config.image)
    finally:
        client.close()


def _build(cls: type, options: dict[str, Any]) -> Any:
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise SandboxConfigError(
            f"unknown option(s) {unknown} for {cls.__name__}; it accepts {sorted(known)}"
        )
    return cls(**options)


def make_backend(backend: str, config: Any) -> Backend:
    if backend == "local":
        from rlvr.sandboxes.local import LocalBackend

        return LocalBackend(config)
    from rlvr.sandboxes.containers import DockerBackend

    return DockerBackend(config)


def close_all_pools() -> None:
    """Kill every worker of every pool (also run at interpreter exit; safe to call twice)."""
    POOLS.close_all()
