"""The `local` backend: bubblewrap namespaces + cgroups + a pre-forked worker per core.

Each worker is started once as

    sh (joins the worker's cgroups) -> setpriv (drops to the sandbox uid, when we are root)
       -> bwrap (every namespace unshared, no capabilities, seccomp filter, empty environment)
          -> python3 worker.py (pid 1 of the new pid namespace; see `rlvr.sandboxes.worker`)

The sandbox sees a read-only root made of /usr (and the merged-/usr symlinks), a fresh /proc and
/dev, and private tmpfs mounts for /tmp (the working directory lives there) and /dev/shm. No
host file outside /usr is visible, and nothing is writable outside the two tmpfs mounts, which
are emptied after every run. The uid inside is the sandbox uid on the host too (61000 by default
when we run as root; otherwise our own uid), never root.

Without bubblewrap or cgroups the backend refuses to start, naming what is missing, unless
`allow_weak_isolation=True`: then it runs workers with whatever is left (rlimits instead of
cgroups; without bubblewrap, a plain process of the sandbox uid that can read the host's files)
and warns loudly.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import shutil
import subprocess
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlvr.sandboxes import seccomp
from rlvr.sandboxes.cgroups import CgroupTree, WorkerCgroup
from rlvr.sandboxes.connection import PipeTransport, WorkerConnection
from rlvr.sandboxes.errors import SandboxConfigError, SandboxUnavailable
from rlvr.sandboxes.pool import Backend
from rlvr.sandboxes.types import ExecRequest, Limits, MiB

logger = logging.getLogger(__name__)

WORKER_SOURCE = Path(__file__).with_name("worker.py")
WORKDIR = "/tmp/work"
MEMORY_OVERHEAD = 48 * MiB  # the worker's own processes share the memory cgroup with the program
PROCESS_OVERHEAD = 3  # our processes in the worker's pids cgroup: bwrap, zygote, supervisor
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
JOIN_CGROUPS = (
    'for f in "$@"; do shift; [ "$f" = -- ] && break; echo $$ > "$f" || exit 97; done; exec "$@"'
)


def worker_config(**settings: Any) -> dict[str, Any]:
    """The config a worker reads (see `rlvr.sandboxes.worker`): what every backend gives it (a
    working directory under /tmp, the writable places emptied after each run, a minimal
    environment) plus the backend's `settings`.

    The environment is the same in every run of every backend, and so is the hash seed: the
    worker's interpreter starts with PYTHONHASHSEED=0, which its forked runs inherit, and the
    programs' environment carries it to any interpreter they start. A program's results then
    never depend on which worker ran it (set iteration order, `hash()`)."""
    return {
        "workdir": WORKDIR,
        "clean": ["/tmp", "/dev/shm"],
        "env": {"PATH": SANDBOX_PATH, "LANG": "C.UTF-8", "TMPDIR": "/tmp", "PYTHONHASHSEED": "0"},
        **settings,
    }


def worker_command(python: str, config: dict[str, Any]) -> list[str]:
    """The argv that runs the worker's source with `python` (no site packages, no user site, no
    bytecode files) and its config."""
    return [python, "-S", "-s", "-B", "-c", WORKER_SOURCE.read_text(), json.dumps(config)]


@dataclass(frozen=True)
class LocalConfig:
    """Options of the local backend (pass them to `get_executor("local", ...)`)."""

    bwrap: str = "bwrap"
    """The bubblewrap executable (a name on PATH or a path)."""
    python: str = "/usr/bin/python3"
    """The interpreter inside the sandbox; it must live under /usr (the only host tree mounted)."""
    uid: int = 61000
    """Host uid (and gid) the sandbox runs as when we are root. Keep it dedicated: RLIMIT_NPROC
    and keyrings are counted per uid across the whole machine."""
    allow_weak_isolation: bool = False
    """Run with weaker isolation when bubblewrap or cgroups are missing, instead of refusing."""
    use_seccomp: bool = True
    """Install the syscall filter of `rlvr.sandboxes.seccomp` (x86_64 and aarch64)."""
    tmp_size: int = 256 * MiB
    """Size of the sandbox's /tmp (working directory included) and of its /dev/shm."""
    start_timeout: float = 20.0
    """Seconds to wait for a worker to start before giving up."""
    extra_ro_binds: tuple[str, ...] = ()
    """More host paths to mount read-only at the same place (e.g. a toolchain under /opt)."""

    def __post_init__(self) -> None:
        if not isinstance(self.uid, int) or isinstance(self.uid, bool) or self.uid <= 0:
            raise SandboxConfigError(f"uid must be a positive int (never 0), got {self.uid!r}")
        if not isinstance(self.tmp_size, int) or self.tmp_size < MiB:
            raise SandboxConfigError(f"tmp_size must be an int >= 1 MiB, got {self.tmp_size!r}")
        if not self.python.startswith("/usr/") and not any(
            self.python.startswith(path.rstrip("/") + "/") for path in self.extra_ro_binds
        ):
            raise SandboxConfigError(
                f"python={self.python!r} is not under /usr, the only host tree mounted in the "
                "sandbox; use /usr/bin/python3 or add its directory to extra_ro_binds"
            )
        object.__setattr__(self, "extra_ro_binds", tuple(self.extra_ro_binds))


@dataclass(frozen=True)
class Isolation:
    """What this machine gives the local backend (see `probe`)."""

    bwrap: str | None
    setpriv: str | None
    cgroups: CgroupTree | None
    problems: tuple[str, ...]

    @property
    def complete(self) -> bool:
        return not self.problems


def probe(config: LocalConfig) -> Isolation:
    """Check bubblewrap, privilege dropping and cgroups (cheap: no process is started)."""
    problems = []
    bwrap = shutil.which(config.bwrap)
    if bwrap is None:
        problems.append(
            f"bubblewrap ({config.bwrap!r}) not found: install it (apt-get install bubblewrap)"
        )
    setpriv = None
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            problems.append("setpriv (util-linux) not found: it drops root before bubblewrap")
    try:
        cgroups = CgroupTree.detect()
    except SandboxUnavailable as exc:
        cgroups = None
        problems.append(str(exc))
    if not os.path.exists(config.python):
        problems.append(f"the sandbox interpreter {config.python} does not exist")
    return Isolation(bwrap, setpriv, cgroups, tuple(problems))


def require_isolation(config: LocalConfig) -> Isolation:
    """`probe(config)`, or `SandboxUnavailable` when the sandbox cannot run code as configured:
    isolation incomplete without `allow_weak_isolation`, or too weak to run at all."""
    isolation = probe(config)
    if not isolation.complete:
        # Weak isolation still never runs untrusted code as root.
        fatal = os.geteuid() == 0 and isolation.setpriv is None
        if not config.allow_weak_isolation or fatal or not os.path.exists(config.python):
            raise SandboxUnavailable(
                "the local sandbox cannot isolate code here: "
                + "; ".join(isolation.problems)
                + ". Fix that (run `rlvr sandbox doctor`), use backend='docker', or pass "
                "allow_weak_isolation=True to run with weaker isolation"
            )
    return isolation


class LocalBackend(Backend):
    name = "local"

    def __init__(self, config: LocalConfig) -> None:
        self.config = config
        self.isolation = require_isolation(config)
        if not self.isolation.complete:
            message = "rlvr local sandbox runs with WEAKER ISOLATION: " + "; ".join(
                self.isolation.problems
            )
            warnings.warn(message, RuntimeWarning, stacklevel=3)
            logger.warning(message)
        self.weak = not self.isolation.complete
        self.tag = f"{os.getpid()}-{next(_backend_ids)}"
        self.generation = itertools.count()
        self.cgroups: dict[WorkerConnection, WorkerCgroup] = {}
        self.oom_baseline: dict[WorkerConnection, int] = {}
        self.filter = self._seccomp_filter()

    def _seccomp_filter(self) -> bytes | None:
        if not self.config.use_seccomp or self.isolation.bwrap is None:
            return None
        if not seccomp.supported():
            logger.warning("no seccomp filter for this architecture; namespaces only")
            return None
        return seccomp.build_filter()

    # --- starting workers -----------------------------------------------------------------------

    def start_worker(self, slot: int, limits: Limits | None = None) -> WorkerConnection:
        limits = limits or Limits()
        network = limits.network
        name = f"{self.tag}-w{slot}-g{next(self.generation)}"
        cgroup = self.isolation.cgroups.create(name) if self.isolation.cgroups else None
        if cgroup is not None:
            cgroup.set_limits(
                limits.memory + MEMORY_OVERHEAD, limits.processes + PROCESS_OVERHEAD, limits.cpus
            )
        read_fd = None
        try:
            argv, read_fd, weak_dir = self._command(cgroup, network)
            process = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(read_fd,) if read_fd is not None else (),
                env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
                cwd="/",
                start_new_session=True,  # a Ctrl-C in our terminal must not reach the workers
            )
        except BaseException:
            if cgroup is not None:
                cgroup.remove()
            raise
        finally:
            if read_fd is not None:
                os.close(read_fd)

        def cleanup() -> None:
            if cgroup is not None and not cgroup.remove():
                logger.warning("cgroup %s stayed busy after its worker was killed", name)
            if weak_dir is not None:
                shutil.rmtree(weak_dir, ignore_errors=True)

        worker = WorkerConnection(
            PipeTransport(process, on_kill=cleanup),
            backend=self.name,
            oom_check=(lambda: self._oom_since_prepare(worker)) if cgroup is not None else None,
        )
        worker.wait_ready(self.config.start_timeout)
        if cgroup is not None:
            self.cgroups[worker] = cgroup
        return worker

    def _command(self, cgroup: WorkerCgroup | None, network: bool):
        """The argv that starts one worker, the seccomp fd to pass, and the weak-mode workdir."""
        config = self.config
        bwrap = self.isolation.bwrap
        sandboxed = bwrap is not None
        weak_dir = None
        settings = worker_config(
            pid_namespace=sandboxed,
            weak=cgroup is None,
            oom_file=f"/run/rlvr/memcg/{cgroup.oom_file_name}" if cgroup is not None else None,
        )
        if not sandboxed:
            weak_dir = self._weak_dir()
            settings.update(workdir=os.path.join(weak_dir, "work"), clean=[weak_dir])
            settings["env"]["TMPDIR"] = weak_dir
            if cgroup is not None:
                settings["oom_file"] = os.path.join(cgroup.memory_dir, cgroup.oom_file_name)
        python = worker_command(config.python, settings)
        argv: list[str] = []
        if cgroup is not None:
            argv += ["/bin/sh", "-c", JOIN_CGROUPS, "sh", *cgroup.procs_files, "--"]
        if os.geteuid() == 0:
            argv += [
                self.isolation.setpriv or "setpriv",
                f"--reuid={config.uid}",
                f"--regid={config.uid}",
                "--clear-groups",
                "--inh-caps=-all",
                "--bounding-set=-all",
                "--no-new-privs",
                "--",
            ]
        read_fd = None
        if bwrap is not None:
            options = self._bwrap_args(cgroup, network)
            if self.filter is not None:
                read_fd, write_fd = os.pipe()
                os.write(write_fd, self.filter)
                os.close(write_fd)
                options += ["--seccomp", str(read_fd)]
            argv += [bwrap, *options, "--", *python]
        else:
            argv += ["/usr/bin/env", "-i", "PYTHONHASHSEED=0", *python]
        return argv, read_fd, weak_dir

    def _bwrap_args(self, cgroup: WorkerCgroup | None, network: bool) -> list[str]:
        args = [
            "--unshare-all",
            "--unshare-user",
            "--disable-userns",
            "--die-with-parent",
            "--new-session",
            "--as-pid-1",
            "--cap-drop",
            "ALL",
            "--hostname",
            "sandbox",
            "--clearenv",
            "--setenv",
            "PYTHONHASHSEED",
            "0",
            "--setenv",
            "PATH",
            SANDBOX_PATH,
            "--tmpfs",
            "/",
            "--ro-bind",
            "/usr",
            "/usr",
        ]
        if network:
            args.insert(1, "--share-net")
        for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
            path = f"/{name}"
            if os.path.islink(path):
                args += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                args += ["--ro-bind", path, path]
        for path in self.config.extra_ro_binds:
            args += ["--ro-bind", path, path]
        size = str(self.config.tmp_size)
        args += [
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--size",
            size,
            "--tmpfs",
            "/tmp",
            "--size",
            size,
            "--tmpfs",
            "/dev/shm",
        ]
        if cgroup is not None:
            args += ["--ro-bind", cgroup.memory_dir, "/run/rlvr/memcg"]
        args += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", "/tmp"]
        return args

    def _weak_dir(self) -> str:
        import tempfile

        path = tempfile.mkdtemp(prefix="rlvr-weak-sandbox-")
        os.chmod(path, 0o700)
        if os.geteuid() == 0:
            os.chown(path, self.config.uid, self.config.uid)
        return path

    # --- per run --------------------------------------------------------------------------------

    def prepare(self, worker: WorkerConnection, request: ExecRequest) -> None:
        cgroup = self.cgroups.get(worker)
        if cgroup is None:
            return
        limits = request.limits
        cgroup.set_limits(
            limits.memory + MEMORY_OVERHEAD, limits.processes + PROCESS_OVERHEAD, limits.cpus
        )
        self.oom_baseline[worker] = cgroup.oom_kills()

    def forget(self, worker: WorkerConnection) -> None:
        self.cgroups.pop(worker, None)
        self.oom_baseline.pop(worker, None)

    def _oom_since_prepare(self, worker: WorkerConnection) -> bool:
        cgroup = self.cgroups.get(worker)
        return cgroup is not None and cgroup.oom_kills() > self.oom_baseline.get(worker, 0)

    def close(self) -> None:
        for cgroup in list(self.cgroups.values()):
            cgroup.remove(timeout=1.0)
        self.cgroups.clear()
        self.oom_baseline.clear()


_backend_ids = itertools.count(1)
