"""The `docker` backend: a warm pool of long-lived containers, each with a worker inside.

Every container runs `rlvr.sandboxes.worker` as its pid 1 with no network, a read-only root
filesystem with tmpfs mounts for /tmp and /dev/shm, memory/pids/CPU limits, a non-root user, all
capabilities dropped, `no-new-privileges` and Docker's default seccomp profile. The host talks to
the worker over the container's attach stream (stdin, and stdout/stderr multiplexed by Docker),
so a run costs no Docker API call: that is what makes the warm pool many times faster than a
fresh container per run. `strict=True` gives each run a fresh container instead.

Containers are created with `stdin_once` and `auto_remove`: when our process exits or dies, the
attach connection closes, the worker sees the end of its stdin and exits, and Docker removes the
container. A dead engine or a vanished container becomes a sandbox error with the reason, and the
pool starts a replacement worker.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import logging
import os
import select
import socket
import struct
import threading
import time
from dataclasses import dataclass
from typing import Any, ClassVar

from rlvr.sandboxes import seccomp
from rlvr.sandboxes.cgroups import weighted_parent
from rlvr.sandboxes.connection import CONTROL, RESULT, Transport, TransportClosed, WorkerConnection
from rlvr.sandboxes.errors import SandboxConfigError
from rlvr.sandboxes.image import (
    DEFAULT_IMAGE,
    SANDBOX_UID,
    docker_client,
    docker_sdk,
    image_method,
)
from rlvr.sandboxes.local import (
    MEMORY_OVERHEAD,
    SANDBOX_PATH,
    worker_command,
    worker_config,
)
from rlvr.sandboxes.pool import Backend
from rlvr.sandboxes.types import ExecRequest, Limits, MiB

logger = logging.getLogger(__name__)

OWNER_LABEL = "rlvr.sandbox.owner"
PROCESS_OVERHEAD = 2  # our processes in the container: the zygote and the run's supervisor
CGROUP = "rlvr-sandbox-docker"


@dataclass(frozen=True)
class DockerConfig:
    """Options of the docker backend (pass them to `get_executor("docker", ...)`)."""

    image: str = DEFAULT_IMAGE
    """Image to run; build it with `rlvr sandbox build-image`."""
    base_url: str | None = None
    """Docker engine address, e.g. "unix:///var/run/docker.sock"; default: DOCKER_HOST."""
    strict: bool = False
    """A fresh container for every run (slower; no state can survive inside a container)."""
    uid: int = SANDBOX_UID
    """User (and group) id the worker runs as inside the container; never 0."""
    python: str = "/usr/bin/python3"
    """The interpreter inside the image."""
    tmp_size: int = 256 * MiB
    """Size of the container's /tmp (working directory included) and of its /dev/shm."""
    runtime: str | None = None
    """OCI runtime, e.g. "runsc" for gVisor; default: the engine's."""
    start_timeout: float = 30.0
    """Seconds to wait for a new container's worker to start."""
    use_seccomp: bool = True
    """Add the syscall filter of `rlvr.sandboxes.seccomp` on top of the engine's profile (older
    engines' default profiles allow io_uring, for one)."""

    def __post_init__(self) -> None:
        if not isinstance(self.uid, int) or isinstance(self.uid, bool) or self.uid <= 0:
            raise SandboxConfigError(f"uid must be a positive int (never 0), got {self.uid!r}")
        if not isinstance(self.tmp_size, int) or self.tmp_size < MiB:
            raise SandboxConfigError(f"tmp_size must be an int >= 1 MiB, got {self.tmp_size!r}")


class DockerTransport(Transport):
    """The attach socket of a container: stdin out, Docker-multiplexed stdout/stderr in."""

    STREAMS: ClassVar[dict[int, str]] = {1: RESULT, 2: CONTROL}

    def __init__(self, sock: Any, container: Any, backend: DockerBackend) -> None:
        self.raw = getattr(sock, "_sock", sock)
        self.sock = sock
        self.container = container
        self.backend = backend
        self.buffer = bytearray()
        self.closed = False
        self.raw.setblocking(False)

    def send(self, data: bytes, deadline: float) -> None:
        view = memoryview(data)
        while view:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("the container did not accept the request in time")
            _, writable, _ = select.select([], [self.raw], [], remaining)
            if writable:
                try:
                    view = view[self.raw.send(view) :]
                except BlockingIOError:
                    continue
                except OSError:
                    raise TransportClosed("the container's stream closed") from None

    def receive(self, deadline: float) -> list[tuple[str, bytes]]:
        if self.closed:
            raise TransportClosed("the container's stream closed")
        chunks = self._parse()
        if chunks:
            return chunks
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return []
        ready, _, _ = select.select([self.raw], [], [], remaining)
        if not ready:
            return []
        try:
            data = self.raw.recv(1 << 20)
        except BlockingIOError:
            return []
        except OSError:
            data = b""
        if not data:
            self.closed = True
            raise TransportClosed("the container's stream closed")
        self.buffer += data
        return self._parse()

    def _parse(self) -> list[tuple[str, bytes]]:
        chunks = []
        while len(self.buffer) >= 8:
            kind, size = self.buffer[0], struct.unpack(">I", self.buffer[4:8])[0]
            if len(self.buffer) < 8 + size:
                break
            payload = bytes(self.buffer[8 : 8 + size])
            del self.buffer[: 8 + size]
            chunks.append((self.STREAMS.get(kind, CONTROL), payload))
        return chunks

    def is_closed(self) -> bool:
        if self.closed:
            return True
        try:
            ready, _, _ = select.select([self.raw], [], [], 0)
            if ready and self.raw.recv(1, socket.MSG_PEEK) == b"":
                self.closed = True
        except BlockingIOError:
            pass
        except OSError:
            self.closed = True
        return self.closed

    def kill(self) -> None:
        self.closed = True
        with contextlib.suppress(OSError):
            self.sock.close()
        self.backend.remove_container(self.container)

    def interrupt(self) -> None:
        # The reading thread sees the end of the stream; Docker closes the container's input, and
        # the worker kills its run and exits.
        with contextlib.suppress(OSError):
            self.raw.shutdown(socket.SHUT_RDWR)

    def describe_exit(self) -> str:
        try:
            self.container.reload()
        except Exception:  # gone: removed by Docker, or the engine is down
            return "the container no longer exists"
        state = self.container.attrs.get("State", {})
        return f"container {state.get('Status')}, exit code {state.get('ExitCode')}" + (
            ", OOM-killed" if state.get("OOMKilled") else ""
        )


class DockerBackend(Backend):
    name = "docker"

    def __init__(self, config: DockerConfig) -> None:
        docker_sdk()  # fail now, with the extra's name, not in a worker thread
        self.config = config
        self.tag = f"{socket.gethostname()}-{os.getpid()}-{next(_backend_ids)}"
        self.serial = itertools.count()
        self.lock = threading.Lock()
        self._client = None
        self.method: str | None = None
        self.cgroup_parent: str | None = None
        self.filter: str | None = None
        self.applied: dict[WorkerConnection, tuple] = {}

    def client(self) -> Any:
        with self.lock:
            if self._client is None:
                client = docker_client(self.config.base_url)
                self.method = image_method(client, self.config.image)
                self.cgroup_parent = self._cgroup_parent(client)
                self.filter = self._seccomp_filter(client)
                self._client = client
            return self._client

    def _seccomp_filter(self, client: Any) -> str | None:
        """Our filter for the engine's architecture (base64, installed by the worker), if any."""
        if not self.config.use_seccomp:
            return None
        engine = str(client.info().get("Architecture"))
        machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(engine, engine)
        if not seccomp.supported(machine):
            logger.warning("no seccomp filter for a %s engine; the engine's profile only", machine)
            return None
        return base64.b64encode(seccomp.build_filter(machine)).decode("ascii")

    def _cgroup_parent(self, client: Any) -> str | None:
        """Our own weighted cgroup parent, when the engine is local and uses cgroupfs."""
        local = (self.config.base_url or os.environ.get("DOCKER_HOST") or "unix://").startswith(
            "unix://"
        )
        try:
            driver = client.info().get("CgroupDriver")
        except Exception:  # an old or odd engine: keep Docker's default parent
            return None
        if local and driver == "cgroupfs" and os.geteuid() == 0 and weighted_parent(CGROUP):
            return "/" + CGROUP
        return None

    def needs_fresh_worker(self, request: ExecRequest) -> bool:
        return (
            self.config.strict
            or request.limits.network
            or request.limits.processes != Limits().processes
        )

    def start_worker(self, slot: int, limits: Limits | None = None) -> WorkerConnection:
        client = self.client()
        limits = limits or Limits()
        network = limits.network
        settings = worker_config(
            pid_namespace=True,
            weak=False,
            oom_file=None,
            seccomp_filter=self.filter,
            oom_files=["/sys/fs/cgroup/memory/memory.oom_control", "/sys/fs/cgroup/memory.events"],
        )
        tmp = f"rw,exec,nosuid,nodev,size={self.config.tmp_size}"
        container = client.containers.create(
            self.config.image,
            command=worker_command(self.config.python, settings),
            name=f"rlvr-sandbox-{self.tag}-{next(self.serial)}",
            labels={OWNER_LABEL: self.tag, "rlvr.sandbox": "1"},
            user=f"{self.config.uid}:{self.config.uid}",
            environment={"PYTHONHASHSEED": "0", "PATH": SANDBOX_PATH},
            hostname="sandbox",
            working_dir="/tmp",
            network_mode="bridge" if network else "none",
            read_only=True,
            tmpfs={"/tmp": tmp},
            shm_size=self.config.tmp_size,
            mem_limit=limits.memory + MEMORY_OVERHEAD,
            memswap_limit=limits.memory + MEMORY_OVERHEAD,
            pids_limit=limits.processes + PROCESS_OVERHEAD,
            cpu_period=100_000,
            cpu_quota=int(limits.cpus * 100_000),
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            volumes={"/usr": {"bind": "/usr", "mode": "ro"}} if self.method == "host" else None,
            runtime=self.config.runtime,
            cgroup_parent=self.cgroup_parent,
            stdin_open=True,  # not detached, so the SDK also sets StdinOnce
            auto_remove=True,
        )
        try:
            sock = client.api.attach_socket(
                container.id, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
            )
            container.start()
        except BaseException:
            self.remove_container(container)
            raise
        transport = DockerTransport(sock, container, self)
        worker = WorkerConnection(
            transport, backend=self.name, oom_check=lambda: _oom_killed(container)
        )
        worker.wait_ready(self.config.start_timeout)
        self.applied[worker] = (limits.memory, limits.cpus)
        return worker

    def prepare(self, worker: WorkerConnection, request: ExecRequest) -> None:
        transport = worker.transport
        assert isinstance(transport, DockerTransport), "this backend's workers run in containers"
        wanted = (request.limits.memory, request.limits.cpus)
        if self.applied.get(worker) == wanted:
            return
        memory = request.limits.memory + MEMORY_OVERHEAD
        self.client().api.update_container(
            transport.container.id,
            mem_limit=memory,
            memswap_limit=memory,
            cpu_period=100_000,
            cpu_quota=int(request.limits.cpus * 100_000),
        )
        self.applied[worker] = wanted

    def forget(self, worker: WorkerConnection) -> None:
        self.applied.pop(worker, None)

    def remove_container(self, container: Any) -> None:
        try:
            container.remove(force=True)
        except Exception as exc:  # already gone (auto-removed) or the engine is down
            if "No such container" not in str(exc) and "already in progress" not in str(exc):
                logger.debug("removing container %s: %s", container.id[:12], exc)

    def close(self) -> None:
        with self.lock:
            client, self._client = self._client, None
        if client is None:
            return
        try:  # anything of ours still there (e.g. a worker that failed to start)
            for found in client.api.containers(
                all=True, filters={"label": f"{OWNER_LABEL}={self.tag}"}
            ):
                self.remove_container(client.containers.prepare_model({"Id": found["Id"]}))
        except Exception as exc:  # the engine may be gone at exit
            logger.debug("listing leftover containers failed: %s", exc)
        client.close()


def _oom_killed(container: Any) -> bool:
    try:
        container.reload()
    except Exception:  # removed already
        return False
    return bool(container.attrs.get("State", {}).get("OOMKilled"))


_backend_ids = itertools.count(1)
