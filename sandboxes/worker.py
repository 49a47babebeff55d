"""The worker that runs inside a sandbox (a bubblewrap namespace or a container).

It is started once per sandbox as `python3 -S -s -B -c <this file> <config json>` and runs many
executions, one at a time. Standard library only: the same file is imported by the host for the
framing code, and runs inside images whose Python may be as old as 3.8.

Why one module of ~1,250 lines (the project keeps modules under ~600): it is sent into every
sandbox as one `-c` program, so it cannot import a sibling module of its own.

Process tree inside the sandbox, and why:

    zygote (pid 1 of the sandbox's pid namespace: other processes of the namespace cannot kill it)
     └─ supervisor, forked per run: reads the request, starts the program, enforces the wall time
        and the output cap, reports the result
         └─ program (and whatever it starts)

- The zygote never reads a request or an output: each run starts from a fork of a process that
  holds no data of any earlier run, so nothing of one run can be found in the memory of the next.
- The zygote is not dumpable, so the program can neither ptrace it nor open `/proc/1/fd/*`.
- After each run the zygote kills every other process of the namespace (`kill(-1)`, which also
  reaches processes that left the program's session), reaps them, and removes every file the run
  left in the writable places (a forked cleaner does that, for the same memory reason).
- If the program stops or kills its supervisor, the zygote's own deadline still ends the run.

Streams: the host writes commands and requests to stdin; the supervisor writes one result frame
to stdout; the zygote writes control frames (ready, taken, done) to stderr. `taken` goes out as
soon as the zygote has read a run command, before anything of the run happens: a worker that
dies before saying it never had the run, which the host may then give to a fresh worker. A frame is
`b"RLVR" + 4-byte big-endian header length + JSON header + blobs`, blob sizes listed in the
header under "blobs".
"""

import base64
import contextlib
import errno
import gc
import itertools
import json
import os
import select
import signal
import stat
import struct
import sys
import time

MAGIC = b"RLVR"
PROTOCOL_VERSION = 2
RUN_COMMAND = b"R"
COMMAND_SIZE = 9  # b"R" + 8-byte deadline in milliseconds
MAX_HEADER = 1 << 20
# Seconds a cleaner may spend emptying the writable places after a run. A run that left more
# (millions of files) gets its worker replaced instead: the host must never wait on a cleanup.
CLEAN_BUDGET = 1.0
# Bounds of a run's changes to its working directory (`return_changes`): names looked at, and
# characters of path names sent back (they travel in the result's header, which the host caps).
MAX_CHANGE_ENTRIES = 20000
MAX_CHANGE_NAMES = 256 * 1024
MAX_SKIPPED_SHOWN = 20
# A program that writes its output a few bytes at a time would keep its supervisor waking up:
# past this many wakes that moved less than a page, each such wake waits a millisecond first
# (output then comes in larger reads), so a supervisor spends a few percent of a CPU at most.
TRICKLE_WAKES = 100
# CPU seconds above the run's CPU limit at which a supervisor that started its program with
# posix_spawn (and so carries the program's limits) is killed (`Run.spawn_program`).
SUPERVISOR_CPU_GRACE = 10
TRICKLE_BYTES = 4096

# --- framing (imported by the host too) -------------------------------------------------------


class FrameError(Exception):
    """Bytes that are not a frame of this protocol."""


def encode_frame(header, blobs=()):
    header = dict(header)
    header["blobs"] = [len(blob) for blob in blobs]
    data = json.dumps(header, separators=(",", ":")).encode("utf-8")
    return b"".join([MAGIC, struct.pack(">I", len(data)), data, *blobs])


class FrameReader:
    """Incremental parser: feed bytes, pop complete `(header, blobs)` frames."""

    def __init__(self, max_frame=1 << 30):
        self.buffer = bytearray()
        self.max_frame = max_frame

    def feed(self, data):
        self.buffer += data

    def pop(self):
        buffer = self.buffer
        if len(buffer) < 8:
            if buffer and not MAGIC.startswith(bytes(buffer[:4])):
                raise FrameError(bytes(buffer))
            return None
        if buffer[:4] != MAGIC:
            raise FrameError(bytes(buffer))
        (size,) = struct.unpack(">I", buffer[4:8])
        if size > MAX_HEADER:
            raise FrameError(b"header too large")
        if len(buffer) < 8 + size:
            return None
        try:
            header = json.loads(bytes(buffer[8 : 8 + size]).decode("utf-8"))
            sizes = header["blobs"]
            if not isinstance(header, dict) or not all(
                isinstance(n, int) and n >= 0 for n in sizes
            ):
                raise ValueError
        except (ValueError, KeyError, TypeError):
            raise FrameError(bytes(buffer[: 8 + size])) from None
        total = 8 + size + sum(sizes)
        if total > self.max_frame:
            raise FrameError(b"frame too large")
        if len(buffer) < total:
            return None
        blobs, offset = [], 8 + size
        for n in sizes:
            blobs.append(bytes(buffer[offset : offset + n]))
            offset += n
        del buffer[:total]
        return header, blobs


def read_exact(fd, size):
    chunks, remaining = [], size
    while remaining:
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def write_all(fd, data):
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def read_frame(fd):
    head = read_exact(fd, 8)
    if head is None or head[:4] != MAGIC:
        raise FrameError(head or b"")
    (size,) = struct.unpack(">I", head[4:])
    if size > MAX_HEADER:
        raise FrameError(b"header too large")
    header = json.loads(read_exact(fd, size).decode("utf-8"))
    blobs = [read_exact(fd, n) if n else b"" for n in header["blobs"]]
    if any(blob is None for blob in blobs):
        raise FrameError(b"truncated frame")
    return header, blobs


# --- small helpers ------------------------------------------------------------------------------


_LIBC: list = []


def _libc():
    """The C library, loaded once in the zygote so that forked processes share the handle."""
    if not _LIBC:
        import ctypes

        _LIBC.append(ctypes.CDLL(None, use_errno=True))
    return _LIBC[0]


def set_dumpable(flag):
    with contextlib.suppress(OSError):
        _libc().prctl(4, 1 if flag else 0, 0, 0, 0)  # PR_SET_DUMPABLE


def install_seccomp(program):
    """Add the classic-BPF syscall filter `program` (see `rlvr.sandboxes.seccomp`) to this process
    and everything it starts. Filters stack: in a container it narrows the engine's profile."""
    import ctypes

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    libc = _libc()
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS, needed without CAP_SYS_ADMIN
        raise OSError(ctypes.get_errno(), "cannot set no_new_privs")
    if libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0:  # PR_SET_SECCOMP, MODE_FILTER
        raise OSError(ctypes.get_errno(), "cannot install the seccomp filter")


def set_oom_score_adj(value, pid="self"):
    try:
        with open(f"/proc/{pid}/oom_score_adj", "w") as handle:
            handle.write(str(value))
    except OSError:
        pass


def read_oom_kills(path):
    """The `oom_kill` counter of our memory cgroup (v1 memory.oom_control or v2 memory.events)."""
    if not path:
        return 0
    try:
        with open(path) as handle:
            for line in handle:
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
    except (OSError, ValueError):
        pass
    return 0


class HostGone(Exception):
    """Our stdin was closed: the host process exited or died."""


def wait_with_deadline(pid, timeout, host_fd=None):
    """Wait for child `pid` up to `timeout` seconds: its wait status, or None on timeout.

    Raises HostGone if `host_fd` (our stdin) hangs up meanwhile. Polling it for POLLHUP alone
    never consumes the request bytes the supervisor is about to read.
    """
    deadline = time.monotonic() + timeout
    pidfd = None
    with contextlib.suppress(AttributeError, OSError):
        pidfd = os.pidfd_open(pid)
    poller = select.poll()
    if pidfd is not None:
        poller.register(pidfd, select.POLLIN)
    if host_fd is not None:
        poller.register(host_fd, 0)  # POLLHUP and POLLERR are always reported
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            wait_ms = remaining if pidfd is not None else min(0.005, remaining)
            for fd, events in poller.poll(max(int(wait_ms * 1000), 1)):
                if fd == host_fd and events & (select.POLLHUP | select.POLLERR):
                    raise HostGone
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return status
    finally:
        if pidfd is not None:
            os.close(pidfd)


def decode_status(status):
    """(exit_code, signal) from a wait status."""
    if os.WIFSIGNALED(status):
        return None, os.WTERMSIG(status)
    return os.WEXITSTATUS(status), None


# --- the zygote ---------------------------------------------------------------------------------


class Zygote:
    def __init__(self, config):
        self.next_supervisor = None  # (pid, go pipe) of the supervisor forked for the next run
        if not config.get("oom_file"):  # containers: take whichever cgroup file exists
            found = [path for path in config.get("oom_files", ()) if os.path.exists(path)]
            config["oom_file"] = found[0] if found else None
        self.config = config
        self.control_fd = config.get("control_fd", 2)
        self.pid_namespace = config.get("pid_namespace", True)

    def send_control(self, header):
        write_all(self.control_fd, encode_frame(header))

    def serve(self):
        # `-c` put our working directory (/tmp, writable by programs) first on the import path: a
        # module a program leaves there must never be imported by us or by a later supervisor.
        sys.path[:] = [path for path in sys.path if path not in ("", ".")]
        for signum in (
            signal.SIGINT,
            signal.SIGTERM,
            signal.SIGHUP,
            signal.SIGUSR1,
            signal.SIGUSR2,
            signal.SIGQUIT,
            signal.SIGALRM,
        ):
            signal.signal(signum, signal.SIG_DFL)
        set_dumpable(False)
        if self.config.get("seccomp_filter"):
            install_seccomp(base64.b64decode(self.config["seccomp_filter"]))
        # The writable roots are the sandbox user's own in bubblewrap: a program can chmod them or
        # tag them with extended attributes. Cleaning puts back the modes they start with.
        self.config["clean_modes"] = {
            root: os.stat(root).st_mode & 0o7777
            for root in self.config.get("clean", ())
            if os.path.isdir(root)
        }
        preload(self.config.get("preload", COMMON_MODULES))
        keep_descriptors_private()
        # Forked runs then never touch (and so never copy) the zygote's objects when they collect.
        gc.collect()
        gc.freeze()
        if not self.pid_namespace:
            _libc().prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans come back to us
        workdir = self.config["workdir"]
        os.makedirs(os.path.dirname(workdir), exist_ok=True)
        self.fork_supervisor()
        self.send_control(
            {
                "op": "ready",
                "version": PROTOCOL_VERSION,
                "pid": os.getpid(),
                "uid": os.getuid(),
                "python": sys.version.split()[0],
            }
        )
        while True:
            command = read_exact(0, COMMAND_SIZE)
            if command is None:
                return 0
            if command[:1] != RUN_COMMAND:
                return 3
            (deadline_ms,) = struct.unpack(">Q", command[1:])
            self.send_control({"op": "taken"})
            try:
                self.run_one(deadline_ms / 1000.0)
            except HostGone:
                self.kill_everything()
                return 0
            self.fork_supervisor()  # off the next run's path: the host has its answer already

    def fork_supervisor(self):
        """Fork the next run's supervisor now, while idle; it waits for a byte on its go pipe.

        Forked only after the last run's processes are dead and its files removed, from a zygote
        that holds nothing of any run: it is the same process a fork at the run's start gives.
        """
        go_r, go_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(go_w)
            supervise(self.config, go_r)  # never returns
        os.close(go_r)
        self.next_supervisor = (pid, go_w)

    def start_supervisor(self):
        """The pid of this run's supervisor, told to go (forked now if the waiting one is gone)."""
        for _ in range(2):
            if self.next_supervisor is None:
                self.fork_supervisor()
            pid, go_w = self.next_supervisor
            self.next_supervisor = None
            try:
                write_all(go_w, b"G")
                return pid
            except OSError:  # it died while waiting (killed by the OOM killer, say)
                self.kill_everything()
            finally:
                os.close(go_w)
        raise OSError("the run's supervisor died before it started")

    def run_one(self, deadline):
        oom_before = read_oom_kills(self.config.get("oom_file"))
        pid = self.start_supervisor()
        status = wait_with_deadline(pid, deadline, host_fd=0)
        backstop = status is None
        self.kill_everything()
        if backstop:
            status = os.waitpid(pid, 0)[1] if _is_child(pid) else signal.SIGKILL
        # The supervisor cleans up after a normal run (exit code 0); otherwise a cleaner does.
        clean_ok = status == 0 or self.clean()
        exit_code, signum = decode_status(status)
        self.send_control(
            {
                "op": "done",
                "exit": exit_code,
                "signal": signum,
                "backstop": backstop,
                "oom": read_oom_kills(self.config.get("oom_file")) > oom_before,
                "clean": clean_ok,
            }
        )

    def kill_everything(self):
        """Kill and reap every process of the sandbox but ourselves."""
        if self.pid_namespace:
            while True:
                with contextlib.suppress(OSError):
                    os.kill(-1, signal.SIGKILL)
                try:
                    os.waitpid(-1, 0)
                except ChildProcessError:
                    return
        # Without a pid namespace we are a child subreaper: orphans become our children.
        while True:
            children = _children()
            for child in children:
                with contextlib.suppress(OSError):
                    os.kill(child, signal.SIGKILL)
            try:
                reaped, _ = os.waitpid(-1, 0 if children else os.WNOHANG)
            except ChildProcessError:
                return
            if not children and not reaped:
                return

    def clean(self):
        """Remove every file the run left, in a forked process (names of files never reach us)."""
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = 0 if clean_files(self.config) else 1
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        return status == 0


# Modules every run needs (imported once here, not once per run in the forked child).
_RUNTIME_MODULES = (
    "atexit",
    "builtins",
    "io",
    "linecache",
    "resource",
    "threading",
    "traceback",
    "types",
)


# Modules that model-written programs import most often; preloading them makes runs faster.
COMMON_MODULES = (
    "bisect",
    "collections",
    "functools",
    "heapq",
    "itertools",
    "json",
    "math",
    "random",
    "re",
    "string",
    "typing",
)


def preload(extra):
    """Import modules in the zygote so that forked programs find them already loaded.

    `random` reseeds itself in every forked child (it registers an at-fork hook), so preloading
    it does not make runs share random numbers.
    """
    import importlib

    for name in _RUNTIME_MODULES + tuple(extra):
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


def keep_descriptors_private():
    """Mark every descriptor above 2 close-on-exec: a program started with `posix_spawn`
    (which closes nothing itself) then gets only its three standard streams."""
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return
    for name in names:
        fd = int(name)
        if fd > 2:
            with contextlib.suppress(OSError):
                os.set_inheritable(fd, False)


def close_other_fds():
    """Close every descriptor above 2 (cheaper than closerange over the whole fd table)."""
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        os.closerange(3, 65536)
        return
    for name in names:
        fd = int(name)
        if fd > 2:
            with contextlib.suppress(OSError):
                os.close(fd)


def _is_child(pid):
    try:
        return os.waitpid(pid, os.WNOHANG)[0] == 0
    except ChildProcessError:
        return False


def _children():
    pids = []
    try:
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/children") as handle:
                pids.extend(int(p) for p in handle.read().split())
    except OSError:
        pass
    return pids


def clean_up(config):
    """Called by the supervisor: wait for the run's other processes to die, then clean_files.

    Only with a pid namespace can the supervisor see every process of the run; otherwise it
    reports False and the zygote cleans after sweeping the orphans.
    """
    if not config.get("pid_namespace", True) or not _others_dead():
        return False
    return clean_files(config)


def clean_files(config, budget=CLEAN_BUDGET):
    deadline = time.monotonic() + budget
    ok = clean_paths(config.get("clean", ()), config.get("clean_modes", {}), deadline)
    if config.get("pid_namespace", True):
        clean_ipc()
    return ok


def _others_dead(timeout=2.0):
    """True once every process of the namespace but pid 1 and ourselves is dead (a zombie)."""
    me = os.getpid()
    deadline = time.monotonic() + timeout
    while True:
        alive = False
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) in (1, me):
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as handle:
                    state = handle.read().rpartition(b")")[2].split()[0]
            except (OSError, IndexError):
                continue
            if state not in (b"Z", b"X"):
                alive = True
                break
        if not alive:
            return True
        if time.monotonic() > deadline:
            return False
        with contextlib.suppress(OSError):
            os.kill(-1, signal.SIGKILL)
        time.sleep(0.001)


def restore_root(root, mode):
    """Give `root` back its starting mode, no user extended attributes and fresh times: the only
    state of a writable root that survives emptying it. False if some of it stayed."""
    ok = True
    if mode is not None:
        try:
            if os.stat(root).st_mode & 0o7777 != mode:
                os.chmod(root, mode)
        except FileNotFoundError:
            return True
        except OSError:
            ok = False
    try:
        for name in os.listxattr(root):
            if name.startswith("user."):
                os.removexattr(root, name)
    except OSError as exc:
        ok = ok and exc.errno in (errno.ENOTSUP, errno.ENOENT)
    with contextlib.suppress(OSError):
        os.utime(root)
    return ok


def clean_paths(roots, modes=None, deadline=None):
    """Empty each directory of `roots` (flattening deep trees so no path grows too long).

    `modes` maps roots to the mode to give them back (see `restore_root`). False if something
    stayed, or if the `deadline` (a time.monotonic() value) passed before the end.
    """
    ok = True
    modes = modes or {}
    for root in roots:
        if root in modes and not restore_root(root, modes[root]):
            ok = False
        try:
            while _empty_once(root, deadline):
                pass
        except FileNotFoundError:
            pass
        except (OSError, TimeoutError):
            ok = False
    return ok


def _empty_once(root, deadline):
    """Remove what one pass over `root` finds (subdirectories' own subdirectories move up to
    `root` for the next pass); True if the pass found anything."""
    found = False
    with os.scandir(root) as entries:  # lazily: a root may hold millions of names
        for entry in entries:
            found = True
            if entry.is_dir(follow_symlinks=False):
                os.chmod(entry.path, 0o700)
                with os.scandir(entry.path) as inner_entries:
                    for inner in inner_entries:
                        _check(deadline)
                        if inner.is_dir(follow_symlinks=False):
                            _move_up(inner.path, root, deadline)
                        else:
                            _unlink(inner.path)
                _rmdir(entry.path)
            else:
                _check(deadline)
                _unlink(entry.path)
    return found


_SERIALS = itertools.count()


def _move_up(path, root, deadline):
    while True:  # past names the program may have taken already
        _check(deadline)
        try:
            os.rename(path, os.path.join(root, f".rm{next(_SERIALS)}"))
            return
        except OSError as exc:
            if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                raise


def _check(deadline):
    if deadline is not None and time.monotonic() > deadline:
        raise TimeoutError


def _unlink(path):
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def _rmdir(path):
    with contextlib.suppress(FileNotFoundError):
        os.rmdir(path)


def clean_ipc():
    """Remove System V shared memory, semaphores and message queues left in our IPC namespace."""
    for kind in ("shm", "sem", "msg"):
        try:
            with open("/proc/sysvipc/" + kind) as handle:
                lines = handle.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 1:
                libc = _libc()
                ident = int(fields[1])
                if kind == "shm":
                    libc.shmctl(ident, 0, None)  # IPC_RMID
                elif kind == "sem":
                    libc.semctl(ident, 0, 0)
                else:
                    libc.msgctl(ident, 0, None)


# --- the supervisor (one per run) -------------------------------------------------------------


def supervise(config, go_fd):
    code = 0
    try:
        set_oom_score_adj(500)
        if os.read(go_fd, 1) != b"G":  # the zygote is gone
            os._exit(0)
        os.close(go_fd)
        header, blobs = read_frame(0)
        result, result_blobs = Run(config, header, blobs).execute()
        if not clean_up(config):
            code = 1
        write_all(config.get("result_fd", 1), encode_frame(result, result_blobs))
    except BaseException as exc:  # report our own failure as a sandbox error
        code = 70
        try:
            import traceback

            detail = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            write_all(config.get("result_fd", 1), encode_frame({"internal_error": detail[-4000:]}))
        except BaseException:
            pass
    finally:
        os._exit(code)


class Run:
    def __init__(self, config, header, blobs):
        self.config = config
        self.request = header
        self.blobs = blobs
        self.limits = header["limits"]
        self.workdir = config["workdir"]

    def blob(self, index):
        return b"" if index is None else self.blobs[index]

    def prepare_workdir(self):
        if os.path.exists(self.workdir):
            clean_paths([self.workdir])
        else:
            os.mkdir(self.workdir, 0o755)
        made = {self.workdir}
        for path, index, mode in self.request.get("files", ()):
            if path.startswith("/") or ".." in path.split("/"):
                raise ValueError(f"file path {path!r} leaves the working directory")
            full = os.path.join(self.workdir, path)
            parent = os.path.dirname(full)
            if parent not in made:  # most files share a directory with another
                os.makedirs(parent, exist_ok=True)
                made.add(parent)
            fd = os.open(full, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode)
            try:
                write_all(fd, self.blob(index))
            finally:
                os.close(fd)

    def environment(self):
        env = dict(self.config.get("env", {}))
        env.setdefault("HOME", self.workdir)
        env.update(self.request.get("env", {}))
        return env

    def execute(self):
        self.prepare_workdir()
        stdin_r, stdin_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        oom_file = self.config.get("oom_file")
        oom_before = read_oom_kills(oom_file)
        env = self.environment()
        started = time.monotonic()
        pid = self.spawn_program(env, stdin_r, out_w, err_w)
        if pid is None:
            pid = os.fork()
            if pid == 0:
                run_program(self, env, stdin_r, out_w, err_w)  # never returns
        for fd in (stdin_r, out_w, err_w):
            os.close(fd)
        watch = Watch(self.limits, pid, started, self.blob(self.request.get("stdin")))
        watch.loop(stdin_w, out_r, err_r)
        self.kill_others(pid)
        _, status, usage = os.wait4(pid, 0)
        duration = time.monotonic() - started
        watch.drain(out_r, err_r)
        for fd in (out_r, err_r):
            os.close(fd)
        files, file_blobs = self.collect_files(watch)
        blobs = [bytes(watch.stdout), bytes(watch.stderr), *file_blobs]
        changes = self.collect_changes(blobs) if self.request.get("return_changes") else None
        exit_code, signum = decode_status(status)
        cpu_time = usage.ru_utime + usage.ru_stime
        oom = read_oom_kills(oom_file) > oom_before
        result = {
            "status": classify(watch, exit_code, signum, cpu_time, self.limits, oom),
            "exit_code": exit_code,
            "signal": signum,
            "duration": duration,
            "cpu_time": cpu_time,
            "truncated": watch.truncated,
            "note": watch.note,
            "stdout": 0,
            "stderr": 1,
            "files": files,
        }
        if changes is not None:
            result["changes"] = changes
        return result, blobs

    def spawn_program(self, env, stdin_r, out_w, err_w):
        """Start a command with `posix_spawn` (no copy of this interpreter's memory, unlike a
        fork: about 1 ms less per run) set up as `run_program` sets up a forked one; None where
        that cannot be done the same way (Python code, weak isolation, a CPU limit below the
        wall time, a name not found or not runnable: the fork path then runs it, or reports why
        not as it always did).

        The program inherits the run's rlimits from us, set before it exists: nothing it starts
        escapes them. They bind us too from now on. We write no file and open few descriptors;
        the CPU limit, at least the wall time here, we stay far below (`Watch` reads a trickle
        of output at a bounded rate) and we ignore its warning signal, which the program gets
        back at its default.
        """
        request = self.request
        limits = self.limits
        if request["kind"] != "command" or self.config.get("weak", False):
            return None
        if not hasattr(os, "posix_spawn") or limits["cpu_time"] < limits["wall_time"]:
            return None
        os.chdir(self.workdir)  # a relative name is looked up from there, as by the program
        argv = request["argv"]
        path = find_program(argv[0], env.get("PATH", os.defpath))
        if path is None:
            return None
        # The CPU limit binds us too, and after the program we still walk its changes, wait
        # for its processes and empty the writable places (up to CLEAN_BUDGET): a hard limit of
        # the soft one plus a second could kill us there, and a lost result reads as the
        # sandbox's failure, not the program's. Here the wall time (<= the CPU time) ends the
        # program first, so the larger hard limit gives it nothing.
        apply_rlimits(limits, False, cpu_grace=SUPERVISOR_CPU_GRACE)
        os.umask(0o022)
        signal.signal(signal.SIGXCPU, signal.SIG_IGN)
        try:
            pid = os.posix_spawn(
                path,
                argv,
                env,
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, stdin_r, 0),
                    (os.POSIX_SPAWN_DUP2, out_w, 1),
                    (os.POSIX_SPAWN_DUP2, err_w, 2),
                ],
                setsid=True,
                setsigdef=(signal.SIGXCPU,),
            )
        except OSError:
            signal.signal(signal.SIGXCPU, signal.SIG_DFL)  # as the forked path expects
            return None
        # The OOM killer's first choice, as a forked program makes itself. We cannot pass it on:
        # a process that is not dumpable cannot write its own score, so ours stays at 0. A
        # process the program starts in the microseconds before this write keeps that 0.
        set_oom_score_adj(1000, pid)
        return pid

    def kill_others(self, pid):
        """Stop whatever the program left running before reading the pipes to their end."""
        if self.config.get("pid_namespace", True):
            with contextlib.suppress(OSError):
                os.kill(-1, signal.SIGKILL)  # everything but ourselves and the zygote (pid 1)
        else:
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)

    def collect_files(self, watch):
        names, blobs = [], []
        budget = self.limits["output"] - len(watch.stdout) - len(watch.stderr)
        for path in self.request.get("return_files", ()):
            full = os.path.join(self.workdir, path)
            # The program may have put a directory or a FIFO there: only regular files count,
            # and opening never blocks.
            try:
                fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                continue
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    continue
                data = os.read(fd, max(budget, 0) + 1)
            except OSError:
                continue
            finally:
                os.close(fd)
            if len(data) > budget:
                watch.truncated = True
                data = data[: max(budget, 0)]
            budget -= len(data)
            names.append([path, len(blobs) + 2])
            blobs.append(data)
        return names, blobs

    def collect_changes(self, blobs):
        """The working directory's regular files that differ from what the request wrote, and
        the request's files that are gone (every process of the run is dead by now). Their
        bytes are appended to `blobs` and count against the output limit with it."""
        budget = self.limits["output"] - sum(len(blob) for blob in blobs)
        written = {path: (index, mode) for path, index, mode in self.request.get("files", ())}
        walk = ChangeWalk(budget)
        pending = [""]
        while pending and walk.complete:
            relative = pending.pop()
            try:
                with os.scandir(os.path.join(self.workdir, relative)) as entries:
                    for entry in entries:
                        path = relative + "/" + entry.name if relative else entry.name
                        if not walk.admit(path):
                            break
                        if entry.is_dir(follow_symlinks=False):
                            pending.append(path)
                        elif entry.is_symlink() or not entry.is_file(follow_symlinks=False):
                            walk.skip(path)
                        else:
                            walk.compare(path, entry.path, written.get(path), self, blobs)
            except OSError:  # a directory the program made unreadable
                walk.complete = False
        return {
            "files": walk.changed,
            "deleted": [path for path in written if path not in walk.seen],
            "skipped": walk.skipped,
            "complete": walk.complete,
        }


class ChangeWalk:
    """Bookkeeping of one walk over a working directory (see `Run.collect_changes`)."""

    def __init__(self, budget):
        self.budget = budget
        self.names = MAX_CHANGE_NAMES
        self.entries = 0
        self.changed = []
        self.seen = set()
        self.skipped = []
        self.complete = True

    def admit(self, path):
        """Whether the walk may look at `path` (False, and incomplete, past its bounds)."""
        self.entries += 1
        self.names -= len(json.dumps(path))
        if self.entries > MAX_CHANGE_ENTRIES or self.names < 0:
            self.complete = False
            return False
        return True

    def skip(self, path):
        if len(self.skipped) < MAX_SKIPPED_SHOWN:
            self.skipped.append(path[:200])

    def compare(self, path, full, written, run, blobs):
        try:
            path.encode("utf-8")
        except UnicodeEncodeError:  # a name that is not text cannot travel as one
            self.skip(path.encode("utf-8", "replace").decode("utf-8"))
            return
        data, executable = read_regular(full, self.budget)
        if data is None:
            self.complete = False  # unreadable, or replaced by something else meanwhile
            return
        self.seen.add(path)
        if written is not None:
            index, mode = written
            if data == run.blob(index) and executable == bool(mode & 0o111):
                return
        self.budget -= len(data)
        if self.budget < 0:
            self.complete = False
            return
        self.changed.append([path, len(blobs), executable])
        blobs.append(data)


def read_regular(path, limit):
    """(bytes, executable) of the regular file at `path`, at most `limit` + 1 bytes of it, or
    (None, False) if it is not one or cannot be read. Opening never follows a link nor blocks."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None, False
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None, False
        chunks, size, cap = [], 0, max(limit, 0) + 1
        while size < cap:
            chunk = os.read(fd, min(cap - size, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks), bool(info.st_mode & 0o111)
    except OSError:
        return None, False
    finally:
        os.close(fd)


def classify(watch, exit_code, signum, cpu_time, limits, oom):
    if watch.killed_for == "output":
        return "output_limit"
    if watch.killed_for == "timeout":
        return "timeout"
    if oom and exit_code != 0:
        return "oom"
    if signum == signal.SIGXCPU or (
        signum == signal.SIGKILL and cpu_time >= limits["cpu_time"] - 0.05
    ):
        return "timeout"
    if exit_code == 0:
        return "finished"
    return "failed"


class Watch:
    """Feeds stdin, collects capped output and enforces the wall time of one program."""

    def __init__(self, limits, pid, started, stdin):
        self.limits = limits
        self.pid = pid
        self.deadline = started + limits["wall_time"]
        self.stdin = memoryview(stdin)
        self.stdout = bytearray()
        self.stderr = bytearray()
        self.total = 0
        self.truncated = False
        self.killed_for = None
        self.note = ""
        self.small_wakes = 0

    def take(self, fd, buffer):
        try:
            data = os.read(fd, 1 << 16)
        except OSError:
            return False
        if not data:
            return False
        self.total += len(data)
        room = self.limits["output"] - len(buffer)
        if room > 0:
            buffer += data[:room]
        if self.total > self.limits["output"]:
            self.truncated = True
        return True

    def loop(self, stdin_w, out_r, err_r):
        pidfd = None
        with contextlib.suppress(AttributeError, OSError):
            pidfd = os.pidfd_open(self.pid)
        readers = {out_r: self.stdout, err_r: self.stderr}
        if self.stdin:
            os.set_blocking(stdin_w, False)
        else:
            os.close(stdin_w)
            stdin_w = None
        try:
            while True:
                remaining = self.deadline - time.monotonic()
                if remaining <= 0:
                    self.kill("timeout")
                    return
                watched = list(readers) + ([pidfd] if pidfd is not None else [])
                wait = remaining if pidfd is not None else min(remaining, 0.005)
                ready_r, ready_w, _ = select.select(
                    watched, [stdin_w] if stdin_w is not None else [], [], wait
                )
                self.pace(ready_r, ready_w)
                for fd in ready_r:
                    if fd in readers and not self.take(fd, readers[fd]):
                        del readers[fd]
                if self.truncated:
                    self.kill("output")
                    return
                if ready_w:
                    stdin_w = self.feed(stdin_w)
                if pidfd in ready_r or (pidfd is None and _exited(self.pid)):
                    return
        finally:
            if stdin_w is not None:
                os.close(stdin_w)
            if pidfd is not None:
                os.close(pidfd)

    def pace(self, ready_r, ready_w):
        """Wait a millisecond before serving a trickle (see TRICKLE_WAKES)."""
        if self.small_wakes < TRICKLE_WAKES:
            self.small_wakes += 1
            return
        sizes = [_pending(fd) for fd in ready_r]
        if ready_w or (sizes and max(sizes) < TRICKLE_BYTES):
            time.sleep(0.001)

    def feed(self, stdin_w):
        try:
            written = os.write(stdin_w, self.stdin[: 1 << 16])
        except BlockingIOError:
            return stdin_w
        except OSError:
            written = len(self.stdin)
        self.stdin = self.stdin[written:]
        if not self.stdin:
            os.close(stdin_w)
            return None
        return stdin_w

    def kill(self, reason):
        self.killed_for = reason
        if reason == "timeout":
            self.note = "killed after {:.3g}s of wall time".format(self.limits["wall_time"])
        else:
            limit = self.limits["output"]
            self.note = f"killed after writing more than {limit} bytes of output"
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)

    def drain(self, out_r, err_r):
        """Read what is left in the pipes (every writer has been killed)."""
        deadline = time.monotonic() + 2.0
        readers = {out_r: self.stdout, err_r: self.stderr}
        while readers and time.monotonic() < deadline:
            ready, _, _ = select.select(list(readers), [], [], max(deadline - time.monotonic(), 0))
            for fd in ready:
                if not self.take(fd, readers[fd]):
                    del readers[fd]
        if self.truncated and self.killed_for is None:
            self.killed_for = "output"
            self.note = "wrote more than {} bytes of output".format(self.limits["output"])


def _pending(fd):
    """Bytes waiting in pipe `fd` (a page's worth for anything that is not a pipe)."""
    import fcntl
    import termios

    try:
        return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]
    except OSError:
        return TRICKLE_BYTES


def _exited(pid):
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


# --- the program (forked from the supervisor) ---------------------------------------------------


def run_program(run, env, stdin_r, out_w, err_w):
    """Set up the program's process and run it; never returns."""
    try:
        os.setsid()
        os.dup2(stdin_r, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        close_other_fds()
        set_dumpable(True)  # like any process; the zygote and the supervisor stay non-dumpable
        set_oom_score_adj(1000)
        apply_rlimits(run.limits, run.config.get("weak", False))
        os.chdir(run.workdir)
        os.umask(0o022)
        request = run.request
        if request["kind"] == "command":
            argv = request["argv"]
            try:
                os.execvpe(argv[0], argv, env)
            except OSError as exc:
                os.write(2, (f"cannot run {argv[0]!r}: {exc.strerror}\n").encode())
                os._exit(127)
        code = run.blob(request["code"]).decode("utf-8")
        run_python(code, run.workdir, list(request.get("args", ())), env)
    except BaseException as exc:
        try:
            os.write(2, (f"sandbox: cannot start the program: {exc!r}\n").encode())
        finally:
            os._exit(126)


def find_program(name, path):
    """Where `execvpe` would find `name` on `path`: the first executable regular file, or None."""
    if "/" in name:
        candidates = [name]
    else:
        candidates = [os.path.join(directory or ".", name) for directory in path.split(":")]
    for candidate in candidates:
        try:
            info = os.stat(candidate)
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode) and os.access(candidate, os.X_OK):
            return candidate
    return None


def apply_rlimits(limits, weak, cpu_grace=1):
    import resource

    cpu = int(limits["cpu_time"] + 0.999)
    settings = [
        (resource.RLIMIT_CPU, cpu, cpu + cpu_grace),
        (resource.RLIMIT_FSIZE, limits["file_size"], limits["file_size"]),
        (resource.RLIMIT_CORE, 0, 0),
        (resource.RLIMIT_NOFILE, 1024, 1024),
        (resource.RLIMIT_MSGQUEUE, 0, 0),  # POSIX message queues would outlive the run
    ]
    if weak:  # no cgroups: fall back on per-process limits
        settings.append((resource.RLIMIT_AS, limits["memory"], limits["memory"]))
        settings.append((resource.RLIMIT_NPROC, limits["processes"], limits["processes"]))
    for which, soft, hard in settings:
        _, current_hard = resource.getrlimit(which)
        if current_hard != resource.RLIM_INFINITY:
            hard = min(hard, current_hard)
            soft = min(soft, hard)
        resource.setrlimit(which, (soft, hard))


def run_python(code, workdir, args, env):
    """Run `code` as `__main__` in this (freshly forked) interpreter, like `python3 main.py`."""
    import builtins
    import linecache
    import types

    filename = os.path.join(workdir, "__main__.py")
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.environ.clear()
    os.environ.update(env)
    sys.argv = [filename, *args]
    sys.path[:] = [workdir] + [p for p in sys.path if p not in ("", ".")]
    # The zygote's own stream objects now sit on the program's pipes; it never used them, so
    # their buffers are empty. They are UTF-8 like those of any `python3` started here.
    sys.stdin, sys.stdout, sys.stderr = sys.__stdin__, sys.__stdout__, sys.__stderr__
    module = types.ModuleType("__main__")
    module.__file__ = filename
    module.__builtins__ = builtins
    sys.modules["__main__"] = module
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    exit_code = 0
    try:
        exec(compile(code, filename, "exec"), module.__dict__)
    except SystemExit as exc:
        exit_code = _exit_code(exc)
    except BaseException as exc:
        exit_code = 1
        _print_exception(exc)
    exit_code = _finish_python(exit_code)
    os._exit(exit_code)


def _exit_code(exc):
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    with contextlib.suppress(BaseException):
        print(code, file=sys.stderr)
    return 1


def _print_exception(exc):
    import traceback

    try:
        tb = exc.__traceback__.tb_next if exc.__traceback__ is not None else None
        traceback.print_exception(type(exc), exc, tb)
    except BaseException:
        pass


def _finish_python(exit_code):
    """What the interpreter does at exit: join threads, run atexit, flush the streams."""
    import atexit
    import threading

    try:
        threading._shutdown()
        atexit._run_exitfuncs()
    except SystemExit as exc:
        exit_code = _exit_code(exc)
    except BaseException as exc:
        _print_exception(exc)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            exit_code = exit_code or 120
    return exit_code


if __name__ == "__main__":
    sys.exit(Zygote(json.loads(sys.argv[1])).serve())
