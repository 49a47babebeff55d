"""Per-worker cgroups for memory, process-count and CPU limits, on cgroup v1 or v2.

Each sandbox worker gets its own cgroup, joined once when the worker starts (moving a process
into a v1 cgroup costs milliseconds, so it is never done per run). Limits are rewritten only when
a request asks for different ones.

- v1 (hybrid hierarchies, like this project's CI machines): one directory per controller
  (memory, pids, cpu), nested under the cgroup we already run in, so that limits set on us
  still apply to our sandboxes.
- v2 (most current distributions): one directory under `<mount>/rlvr-sandbox`, with the memory,
  pids and cpu controllers enabled for it. Needs root (or a cgroup delegated to this user whose
  controllers are already enabled).
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import time
from dataclasses import dataclass, field

from rlvr.sandboxes.errors import SandboxUnavailable

V1_CONTROLLERS = ("memory", "pids", "cpu")
V2_CONTROLLERS = ("memory", "pids", "cpu")
CPU_PERIOD_US = 100_000


@dataclass
class _Mount:
    version: int
    path: str
    controllers: frozenset[str]


def _mounts() -> list[_Mount]:
    mounts = []
    with open("/proc/self/mountinfo") as handle:
        for line in handle:
            left, _, right = line.partition(" - ")
            fields, tail = left.split(), right.split()
            if len(tail) < 3 or len(fields) < 5:
                continue
            fstype, options = tail[0], tail[2].split(",")
            if fstype == "cgroup":
                mounts.append(_Mount(1, fields[4], frozenset(options)))
            elif fstype == "cgroup2":
                mounts.append(_Mount(2, fields[4], frozenset()))
    return mounts


def _own_cgroups() -> dict[str, str]:
    """Controller (or "" for v2) -> our cgroup path, from /proc/self/cgroup."""
    own = {}
    with open("/proc/self/cgroup") as handle:
        for line in handle:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for controller in controllers.split(",") if controllers else [""]:
                own[controller] = path
    return own


def _write(path: str, value: str) -> None:
    with open(path, "w") as handle:
        handle.write(value)


def _read(path: str) -> str:
    with open(path) as handle:
        return handle.read()


class CgroupTree:
    """Where our workers' cgroups live; `create(name)` makes one worker cgroup."""

    def __init__(self, version: int, bases: dict[str, str]) -> None:
        self.version = version
        self.bases = bases  # controller -> directory that holds our worker cgroups

    @classmethod
    def detect(cls) -> CgroupTree:
        """Find usable cgroups; raise `SandboxUnavailable` saying why not."""
        try:
            mounts = _mounts()
            own = _own_cgroups()
        except OSError as exc:
            raise SandboxUnavailable(f"cannot read cgroup information: {exc}") from None
        v1 = {c: m for m in mounts if m.version == 1 for c in m.controllers if c in V1_CONTROLLERS}
        if all(c in v1 for c in V1_CONTROLLERS):
            return cls._v1(v1, own)
        v2 = [m for m in mounts if m.version == 2]
        for mount in v2:
            try:
                available = set(_read(os.path.join(mount.path, "cgroup.controllers")).split())
            except OSError:
                continue
            if set(V2_CONTROLLERS) <= available:
                return cls._v2(mount, own.get("", "/"))
        missing = [c for c in V1_CONTROLLERS if c not in v1]
        raise SandboxUnavailable(
            "no usable cgroups: the memory, pids and cpu controllers are needed, on cgroup v1 "
            f"(missing here: {', '.join(missing)}) or v2 (not enabled on any cgroup2 mount)"
        )

    @classmethod
    def _v1(cls, mounts: dict[str, _Mount], own: dict[str, str]) -> CgroupTree:
        bases = {}
        for controller in V1_CONTROLLERS:
            base = os.path.join(
                mounts[controller].path, own.get(controller, "/").lstrip("/"), "rlvr-sandbox"
            )
            try:
                os.makedirs(base, exist_ok=True)
            except OSError as exc:
                raise SandboxUnavailable(
                    f"cannot create cgroup {base}: {exc.strerror}; run as root or give this user "
                    "a writable cgroup"
                ) from None
            bases[controller] = base
        tree = cls(1, bases)
        tree.remove_stale()
        tree.weigh_cpu()
        return tree

    @classmethod
    def _v2(cls, mount: _Mount, own: str) -> CgroupTree:
        candidates = [os.path.join(mount.path, "rlvr-sandbox")]
        if own not in ("", "/"):  # a cgroup delegated to us, e.g. by systemd
            candidates.append(os.path.join(mount.path, own.lstrip("/"), "rlvr-sandbox"))
        wanted = " ".join("+" + c for c in V2_CONTROLLERS)
        problems = []
        for base in candidates:
            try:
                os.makedirs(base, exist_ok=True)
                parent = os.path.dirname(base)
                enabled = set(_read(os.path.join(parent, "cgroup.subtree_control")).split())
                if not set(V2_CONTROLLERS) <= enabled:
                    _write(os.path.join(parent, "cgroup.subtree_control"), wanted)
                _write(os.path.join(base, "cgroup.subtree_control"), wanted)
            except OSError as exc:
                problems.append(f"{base}: {exc.strerror}")
                continue
            tree = cls(2, {c: base for c in V2_CONTROLLERS})
            tree.remove_stale()
            tree.weigh_cpu()
            return tree
        raise SandboxUnavailable(
            "cgroup v2 is mounted but no cgroup with the memory, pids and cpu controllers could "
            f"be created ({'; '.join(problems)}); run as root or delegate a cgroup to this user"
        )

    def weigh_cpu(self) -> None:
        """Give the group holding our workers the CPU weight of one process per core.

        CFS shares CPU between sibling cgroups by weight: left at the default, all the workers
        together would weigh as much as one ordinary process and lose to any busy neighbour.
        """
        cores = os.cpu_count() or 1
        base = self.bases["cpu"]
        with contextlib.suppress(OSError):
            if self.version == 1:
                _write(os.path.join(base, "cpu.shares"), str(1024 * cores))
            else:
                _write(os.path.join(base, "cpu.weight"), str(min(100 * cores, 10000)))

    def create(self, name: str) -> WorkerCgroup:
        dirs = {}
        for controller, base in self.bases.items():
            path = os.path.join(base, name)
            os.makedirs(path, exist_ok=True)
            dirs[controller] = path
        return WorkerCgroup(self.version, dirs)

    def remove_stale(self) -> None:
        """Remove worker cgroups left by processes that died (their names start with the pid)."""
        for base in set(self.bases.values()):
            try:
                names = os.listdir(base)
            except OSError:
                continue
            for name in names:
                owner = name.split("-", 1)[0]
                if owner.isdigit() and not _pid_alive(int(owner)):
                    WorkerCgroup(
                        self.version, {c: os.path.join(b, name) for c, b in self.bases.items()}
                    ).remove()


def weighted_parent(name: str) -> bool:
    """Create the cpu cgroup `/name` weighted one process per core (for Docker's cgroup_parent).

    Without it every container sits in Docker's single parent cgroup, which the CPU scheduler
    weighs as one process. Returns False if it cannot be done here (no access, no cpu cgroup).
    """
    cores = os.cpu_count() or 1
    try:
        for mount in _mounts():
            if mount.version == 1 and "cpu" in mount.controllers:
                path = os.path.join(mount.path, name)
                os.makedirs(path, exist_ok=True)
                _write(os.path.join(path, "cpu.shares"), str(1024 * cores))
                return True
        for mount in _mounts():
            if (
                mount.version == 2
                and "cpu" in _read(os.path.join(mount.path, "cgroup.subtree_control")).split()
            ):
                path = os.path.join(mount.path, name)
                os.makedirs(path, exist_ok=True)
                _write(os.path.join(path, "cpu.weight"), str(min(100 * cores, 10000)))
                return True
    except OSError:
        return False
    return False


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class WorkerCgroup:
    """The cgroup(s) of one worker: limits, OOM counter, and removal."""

    version: int
    dirs: dict[str, str]
    applied: dict[str, object] = field(default_factory=dict)

    @property
    def procs_files(self) -> list[str]:
        return sorted({os.path.join(path, "cgroup.procs") for path in self.dirs.values()})

    @property
    def memory_dir(self) -> str:
        return self.dirs["memory"]

    @property
    def oom_file_name(self) -> str:
        return "memory.oom_control" if self.version == 1 else "memory.events"

    def set_limits(self, memory: int, processes: int, cpus: float) -> None:
        wanted: dict[str, object] = {"memory": memory, "processes": processes, "cpus": cpus}
        if wanted == self.applied:
            return
        if self.applied.get("memory") != memory:
            self._set_memory(memory)
        if self.applied.get("processes") != processes:
            _write(os.path.join(self.dirs["pids"], "pids.max"), str(processes))
        if self.applied.get("cpus") != cpus:
            quota = max(int(cpus * CPU_PERIOD_US), 1000)
            if self.version == 1:
                cpu = self.dirs["cpu"]
                _write(os.path.join(cpu, "cpu.cfs_period_us"), str(CPU_PERIOD_US))
                _write(os.path.join(cpu, "cpu.cfs_quota_us"), str(quota))
            else:
                _write(os.path.join(self.dirs["cpu"], "cpu.max"), f"{quota} {CPU_PERIOD_US}")
        self.applied = wanted

    def _set_memory(self, memory: int) -> None:
        path = self.dirs["memory"]
        if self.version == 2:
            _write(os.path.join(path, "memory.max"), str(memory))
            with contextlib.suppress(OSError):
                _write(os.path.join(path, "memory.swap.max"), "0")
            return
        limit = os.path.join(path, "memory.limit_in_bytes")
        memsw = os.path.join(path, "memory.memsw.limit_in_bytes")
        # memsw (memory + swap) must stay >= the memory limit at every step; equal means no swap.
        order = [limit, memsw] if memory < int(_read(limit)) else [memsw, limit]
        for file in order:
            if file == memsw and not os.path.exists(memsw):
                continue
            _write(file, str(memory))

    def oom_kills(self) -> int:
        try:
            for line in _read(os.path.join(self.dirs["memory"], self.oom_file_name)).splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def pids(self) -> set[int]:
        found: set[int] = set()
        for file in self.procs_files:
            with contextlib.suppress(OSError, ValueError):
                found.update(int(p) for p in _read(file).split())
        return found

    def kill_all(self) -> None:
        if self.version == 2:
            with contextlib.suppress(OSError):
                _write(os.path.join(self.dirs["memory"], "cgroup.kill"), "1")
        for pid in self.pids():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)

    def remove(self, timeout: float = 5.0) -> bool:
        """Kill what is left and remove the directories; False if some stayed busy."""
        deadline = time.monotonic() + timeout
        while True:
            self.kill_all()
            busy = False
            for path in self.dirs.values():
                try:
                    os.rmdir(path)
                except FileNotFoundError:
                    pass
                except OSError as exc:
                    if exc.errno != errno.EBUSY:
                        raise
                    busy = True
            if not busy:
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
