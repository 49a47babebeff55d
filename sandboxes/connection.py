"""The host's side of the worker protocol (see `rlvr.sandboxes.worker`).

A `Transport` moves bytes to a worker's stdin and from its stdout (result frames) and stderr
(control frames): pipes of a local process, or a Docker attach socket. `WorkerConnection` runs
one request at a time over a transport and turns every failure into an `ExecResult`: a program
that misbehaves gets a program status, a worker that breaks gets a sandbox error and is marked
dead so that the pool replaces it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import struct
import subprocess
import time
from collections.abc import Callable

from rlvr.sandboxes.errors import ProtocolError
from rlvr.sandboxes.types import (
    ExecRequest,
    ExecResult,
    ProgramStatus,
    SandboxStatus,
    WorkdirChanges,
)
from rlvr.sandboxes.worker import RUN_COMMAND, FrameError, FrameReader, encode_frame

logger = logging.getLogger(__name__)

RESULT, CONTROL = "result", "control"
BACKSTOP_GRACE = 2.0  # the zygote ends a run this long after the program's wall time
HOST_GRACE = 8.0  # the host gives up on a worker this long after the program's wall time


class TransportClosed(Exception):
    """The worker's streams ended (it exited or was killed)."""


class WorkerLost(Exception):
    """The worker was gone before it took the run (it never acknowledged it): nothing of the run
    happened, so the run may go to a fresh worker. Raised by `WorkerConnection.run`."""


class Transport:
    """Bytes to and from one worker. Subclasses implement the four methods."""

    def send(self, data: bytes, deadline: float) -> None:
        raise NotImplementedError

    def receive(self, deadline: float) -> list[tuple[str, bytes]]:
        """Wait until bytes arrive (or `deadline` passes): [(RESULT|CONTROL, data), ...]."""
        raise NotImplementedError

    def kill(self) -> None:
        raise NotImplementedError

    def interrupt(self) -> None:
        """Make the worker go away without releasing our descriptors: called from another thread
        than the one using the transport, which sees the end of the streams and then kills it
        (closing descriptors under a thread that reads them could let it read a reused one)."""
        raise NotImplementedError

    def describe_exit(self) -> str:
        """Why the worker went away, if known (exit status, engine state)."""
        return ""

    def is_closed(self) -> bool:
        """True if the worker is known to be gone (checked between runs, without blocking)."""
        return False


class PipeTransport(Transport):
    """Pipes of a local process: stdin, stdout (results), stderr (control)."""

    def __init__(
        self, process: subprocess.Popen[bytes], on_kill: Callable[[], None] | None = None
    ) -> None:
        assert process.stdin and process.stdout and process.stderr, "started with three pipes"
        self.process = process
        self.stdin = process.stdin.fileno()
        self.streams = {process.stdout.fileno(): RESULT, process.stderr.fileno(): CONTROL}
        self.on_kill = on_kill
        os.set_blocking(self.stdin, False)

    def send(self, data: bytes, deadline: float) -> None:
        view = memoryview(data)
        while view:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("the sandbox worker did not accept the request in time")
            _, writable, _ = select.select([], [self.stdin], [], remaining)
            if writable:
                try:
                    view = view[os.write(self.stdin, view) :]
                except BlockingIOError:
                    continue
                except (BrokenPipeError, ConnectionResetError):
                    raise TransportClosed("the sandbox worker closed its input") from None

    def receive(self, deadline: float) -> list[tuple[str, bytes]]:
        if not self.streams:
            raise TransportClosed("the sandbox worker closed its output")
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return []
        ready, _, _ = select.select(list(self.streams), [], [], remaining)
        # Every stream's bytes before the end of any: a dying worker's last frames (its
        # "taken") say whether it had the run.
        chunks, ended = [], False
        for fd in ready:
            data = os.read(fd, 1 << 20)
            if data:
                chunks.append((self.streams[fd], data))
            else:
                del self.streams[fd]
                ended = True
        if ended and not chunks:
            raise TransportClosed("the sandbox worker exited")
        return chunks

    def kill(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(OSError):
                self.process.kill()
        try:
            self.process.wait(timeout=10)
        except Exception:  # a process that will not die is logged, not raised
            logger.warning("sandbox worker %s did not exit after SIGKILL", self.process.pid)
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        if self.on_kill is not None:
            self.on_kill()

    def interrupt(self) -> None:
        with contextlib.suppress(OSError):
            self.process.kill()

    def is_closed(self) -> bool:
        return self.process.poll() is not None

    def describe_exit(self) -> str:
        code = self.process.poll()
        if code is None:
            return "still running"
        return f"exit status {code}" if code >= 0 else f"killed by signal {-code}"


class WorkerConnection:
    """One sandbox worker, driven over a `Transport`; runs one request at a time."""

    def __init__(
        self,
        transport: Transport,
        *,
        backend: str,
        oom_check: Callable[[], bool] | None = None,
    ) -> None:
        self.transport = transport
        self.backend = backend
        self.oom_check = oom_check
        self.readers = {RESULT: FrameReader(), CONTROL: FrameReader()}
        self.alive = True
        self.killed = False
        self.interrupted = False
        self.info: dict = {}
        self.runs = 0
        self.owes_done = False  # a run returned its result before the zygote's `done` came

    # --- lifecycle ------------------------------------------------------------------------------

    def wait_ready(self, timeout: float) -> dict:
        """Wait for the worker's hello; raise ProtocolError (with its stderr) if it fails."""
        deadline = time.monotonic() + timeout
        try:
            while True:
                frame = self._next_frame(CONTROL, deadline)
                if frame is None:
                    raise ProtocolError(f"the sandbox worker did not start within {timeout:g}s")
                header, _ = frame
                if header.get("op") == "ready":
                    self.info = header
                    return header
                raise ProtocolError(f"unexpected first message from the worker: {header}")
        except (TransportClosed, ProtocolError) as exc:
            self.kill()
            raise ProtocolError(f"{exc}{self._garbage()}") from None

    def kill(self) -> None:
        """Kill the worker (its process or container) and release it; safe to call again."""
        self.alive = False
        if not self.killed:
            self.killed = True
            self.transport.kill()

    def interrupt(self) -> None:
        """End the run in progress from another thread (see `Transport.interrupt`); the thread
        running it gets a sandbox error and the pool kills and replaces the worker."""
        self.alive = False
        self.interrupted = True
        self.transport.interrupt()

    def healthy(self) -> bool:
        """Alive as far as we can tell without a run (a vanished container shows up here)."""
        self.settle()
        if self.alive and self.transport.is_closed():
            self.kill()
        return self.alive

    def settle(self) -> None:
        """Read the `done` frame the last run still owes (see `run`): a worker that does not
        send it in time, or says it is not clean, is killed and so never runs again."""
        if not self.owes_done:
            return
        if not self.alive:
            self.owes_done = False
            return
        try:
            frame = self._next_frame(CONTROL, time.monotonic() + HOST_GRACE)
        except (TransportClosed, ProtocolError, FrameError):
            frame = None
        finally:
            self.owes_done = False
        if frame is None or frame[0].get("op") != "done":
            interrupted = self.interrupted  # the pool is closing: nothing to report
            self.kill()
            if not interrupted:
                logger.warning("%s sandbox: a worker did not end its run cleanly", self.backend)
        elif not frame[0].get("clean", False) or self.readers[RESULT].buffer:
            self.kill()  # leftovers: never reuse this worker

    # --- one run --------------------------------------------------------------------------------

    def run(self, request: ExecRequest) -> ExecResult:
        """Run `request`; any worker failure becomes a result and marks this worker dead, except
        a worker found dead before it took the run: that raises `WorkerLost`."""
        self.settle()
        if not self.alive:
            raise WorkerLost("the sandbox worker did not end its last run cleanly")
        limits = request.limits
        header, blobs = request_to_wire(request)
        backstop = limits.wall_time + BACKSTOP_GRACE
        deadline = time.monotonic() + limits.wall_time + HOST_GRACE
        self.runs += 1
        command = RUN_COMMAND + struct.pack(">Q", int(backstop * 1000))
        taken = False
        try:
            self.transport.send(command + encode_frame(header, blobs), deadline)
            result = done = None
            # A supervisor that exited (rather than being killed) wrote a result first; the two
            # streams are not ordered with respect to each other (Docker copies them apart).
            while done is None or (result is None and done.get("exit") is not None):
                stream, frame = self._next_any(deadline)
                if stream is None:
                    return self._give_up(
                        f"no answer {limits.wall_time + HOST_GRACE:g}s after start"
                    )
                if stream == RESULT:
                    if result is not None:
                        raise ProtocolError("two results for one run")
                    result = frame
                elif frame[0].get("op") == "taken" and not taken and done is None:
                    taken = True
                elif done is not None or not taken:
                    raise ProtocolError(f"unexpected control message {frame[0]}")
                else:
                    done = frame[0]
                if done is None and taken and result is not None and self._complete(result):
                    # The result is whole and the caller may have it now. The supervisor killed
                    # the run's processes before writing it; the zygote's own sweep (and its
                    # `done`) follows the supervisor's exit and is read before the worker's
                    # next run, which the zygote takes only once that sweep is over.
                    result_header, result_blobs = result
                    finished = result_from_wire(result_header, result_blobs, self.backend)
                    self.owes_done = True
                    return finished
            return self._finish(result, done, limits)
        except TransportClosed:
            if self.interrupted:  # cancelled, or the pool is closing: not a failure to report
                self.kill()
                return ExecResult.sandbox_error("the run was cancelled", backend=self.backend)
            self.alive = False
            if not taken:  # dead before our request reached it (killed from outside, say)
                why = self.transport.describe_exit()
                self.kill()
                message = f"the sandbox worker was gone before it took the run ({why})"
                raise WorkerLost(message) from None
            if self.oom_check is not None and self.oom_check():
                return ExecResult(
                    status=ProgramStatus.OOM,
                    error="the sandbox ran out of memory",
                    backend=self.backend,
                )
            return self._broken(f"the sandbox worker died ({self.transport.describe_exit()})")
        except TimeoutError as exc:
            return self._give_up(str(exc))
        except (ProtocolError, FrameError) as exc:
            return self._broken(f"protocol error: {exc}")

    @staticmethod
    def _complete(result: tuple[dict, list[bytes]]) -> bool:
        """A result the program's run produced (not the supervisor's report of its own end)."""
        return "internal_error" not in result[0]

    def _finish(self, result, done: dict, limits) -> ExecResult:
        if done.get("op") != "done":
            raise ProtocolError(f"unexpected control message {done}")
        if not done.get("clean", False) or self.readers[RESULT].buffer:
            self.alive = False  # leftovers: never reuse this worker
        if result is None:
            self.alive = False
            if done.get("backstop"):
                return ExecResult(
                    status=ProgramStatus.TIMEOUT,
                    error=f"killed after {limits.wall_time:g}s of wall time (supervisor stalled)",
                    duration=limits.wall_time,
                    backend=self.backend,
                )
            if done.get("oom"):
                return ExecResult(status=ProgramStatus.OOM, backend=self.backend)
            return ExecResult(
                status=ProgramStatus.FAILED,
                signal=done.get("signal"),
                error="the program killed its sandbox supervisor",
                backend=self.backend,
            )
        header, blobs = result
        if "internal_error" in header:
            self.alive = False
            return self._broken(f"the sandbox supervisor failed: {header['internal_error']}")
        return result_from_wire(header, blobs, self.backend)

    def _give_up(self, why: str) -> ExecResult:
        self.kill()
        return ExecResult.sandbox_error(f"sandbox worker unresponsive: {why}", backend=self.backend)

    def _broken(self, why: str) -> ExecResult:
        self.kill()
        logger.warning("%s sandbox: %s", self.backend, why)
        return ExecResult.sandbox_error(why + self._garbage(), backend=self.backend)

    def _garbage(self) -> str:
        """Non-protocol bytes the worker wrote (bwrap or Python error messages), for errors."""
        text = bytes(self.readers[CONTROL].buffer[-2000:]).decode("utf-8", "replace").strip()
        return f": {text}" if text else ""

    # --- frames ---------------------------------------------------------------------------------

    def _next_any(self, deadline: float):
        while True:
            for stream in (RESULT, CONTROL):
                frame = self.readers[stream].pop()
                if frame is not None:
                    return stream, frame
            chunks = self.transport.receive(deadline)
            if not chunks and time.monotonic() >= deadline:
                return None, None
            for stream, data in chunks:
                self.readers[stream].feed(data)

    def _next_frame(self, wanted: str, deadline: float):
        while True:
            frame = self.readers[wanted].pop()
            if frame is not None:
                return frame
            chunks = self.transport.receive(deadline)
            if not chunks and time.monotonic() >= deadline:
                return None
            for stream, data in chunks:
                self.readers[stream].feed(data)


def request_to_wire(request: ExecRequest) -> tuple[dict, list[bytes]]:
    blobs: list[bytes] = []

    def add(data: str | bytes) -> int:
        blobs.append(data.encode("utf-8") if isinstance(data, str) else data)
        return len(blobs) - 1

    header: dict = {
        "kind": "python" if request.code is not None else "command",
        "args": list(request.args),
        "env": dict(request.env),
        "limits": request.limits.to_wire(),
        "files": [
            [path, add(content), 0o755 if path in request.executable else 0o644]
            for path, content in request.files.items()
        ],
        "stdin": add(request.stdin) if request.stdin else None,
        "return_files": list(request.return_files),
    }
    if request.return_changes:
        header["return_changes"] = True
    if request.code is not None:
        header["code"] = add(request.code)
    else:
        header["argv"] = list(request.command or ())
    return header, blobs


def result_from_wire(header: dict, blobs: list[bytes], backend: str) -> ExecResult:
    try:
        files = {str(path): blobs[index] for path, index in header.get("files", [])}
        return ExecResult(
            status=ProgramStatus(header["status"]),
            sandbox_status=SandboxStatus.OK,
            exit_code=header.get("exit_code"),
            signal=header.get("signal"),
            stdout=blobs[header["stdout"]],
            stderr=blobs[header["stderr"]],
            duration=float(header.get("duration", 0.0)),
            cpu_time=header.get("cpu_time"),
            error=str(header.get("note") or ""),
            truncated=bool(header.get("truncated")),
            files=files,
            backend=backend,
            changes=_changes_from_wire(header.get("changes"), blobs),
        )
    except (KeyError, ValueError, IndexError, TypeError) as exc:
        raise ProtocolError(f"malformed result {header!r:.200}: {exc}") from None


def _changes_from_wire(data: dict | None, blobs: list[bytes]) -> WorkdirChanges | None:
    if data is None:
        return None
    files = {str(path): blobs[index] for path, index, _ in data["files"]}
    executable = frozenset(str(path) for path, _, flag in data["files"] if flag)
    return WorkdirChanges(
        files=files,
        executable=executable,
        deleted=tuple(str(path) for path in data["deleted"]),
        skipped=tuple(str(path) for path in data["skipped"]),
        complete=bool(data["complete"]),
    )
