"""Every limit and every escape attempt, on both backends (local bubblewrap pool and Docker)."""

from __future__ import annotations

import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from rlvr.sandboxes import ExecRequest, Limits, ProgramStatus
from rlvr.sandboxes.types import MiB


def run(executor, code, **kwargs):
    result = executor.run(ExecRequest(code=code, **kwargs))
    assert not result.infra_error, result.error
    return result


# --- the basics ---------------------------------------------------------------------------------


def test_runs_code_with_stdin_args_files_and_returned_files(executor):
    code = (
        "import sys\n"
        "data = open('data/in.txt').read()\n"
        "open('out.txt', 'w').write(data.upper())\n"
        "print(sys.argv[1:], sys.stdin.read())\n"
    )
    result = run(
        executor,
        code,
        args=["a", "b"],
        stdin="from stdin",
        files={"data/in.txt": "hello"},
        return_files=["out.txt"],
    )
    assert result.ok
    assert result.stdout_text == "['a', 'b'] from stdin\n"
    assert result.files == {"out.txt": b"HELLO"}
    assert result.duration > 0 and result.queued >= 0


def test_text_is_utf8_both_ways(executor):
    code = (
        "import sys\ntext = sys.stdin.read()\n"
        "print(text[::-1], len(text))\nprint('é', file=sys.stderr)"
    )
    result = run(executor, code, stdin="héllo wörld ✓")
    assert result.stdout_text == "✓ dlröw olléh 13\n" and result.stderr_text == "é\n"


def test_runs_a_command(executor):
    result = executor.run(
        ExecRequest(
            command=["python3", "-c", "import sys; print(sys.stdin.read()[::-1])"], stdin="olleh"
        )
    )
    assert result.ok and result.stdout_text == "hello\n"


def test_reports_exit_codes_and_exceptions_as_program_failures(executor):
    exited = run(executor, "import sys; sys.exit(3)")
    assert (exited.status, exited.exit_code, exited.ok) == (ProgramStatus.FAILED, 3, False)
    raised = run(executor, "def f():\n    raise ValueError('bad')\nf()")
    assert raised.status is ProgramStatus.FAILED and raised.exit_code == 1
    assert "ValueError: bad" in raised.stderr_text and "line 2, in f" in raised.stderr_text
    missing = executor.run(ExecRequest(command=["no-such-program"]))
    assert missing.status is ProgramStatus.FAILED and missing.exit_code == 127


# What a program's process starts with. A command is started with `posix_spawn` and Python code
# from a fork of the supervisor: both must start the same, with the run's limits.
PROCESS_FACTS = (
    "import ctypes, os, resource\n"
    "names = ['RLIMIT_CPU', 'RLIMIT_FSIZE', 'RLIMIT_NOFILE', 'RLIMIT_CORE', 'RLIMIT_MSGQUEUE']\n"
    "limits = [(name, resource.getrlimit(getattr(resource, name))) for name in names]\n"
    "mask = os.umask(0)\n"
    "status = dict(line.split(':\\t') for line in open('/proc/self/status').read().splitlines())\n"
    "print(limits, sorted(os.listdir('/proc/self/fd')), os.getcwd(), oct(mask),"
    " open('/proc/self/oom_score_adj').read().strip(), os.getsid(0) == os.getpid(),"
    " ctypes.CDLL(None).prctl(3, 0, 0, 0, 0), int(status['SigIgn'], 16) & 0x7FFFFFFF,"
    " int(status['SigBlk'], 16), status['NoNewPrivs'])\n"
)


def test_a_command_starts_like_python_code_with_the_runs_limits(executor):
    limits = Limits(wall_time=7, cpu_time=3, file_size=123 * 1024)
    forked = run(executor, PROCESS_FACTS, limits=limits)
    spawned = executor.run(ExecRequest(command=["python3", "-c", PROCESS_FACTS], limits=limits))
    assert forked.ok and spawned.ok, (forked.stderr_text, spawned.stderr_text)
    assert spawned.stdout_text == forked.stdout_text
    facts = forked.stdout_text
    assert "('RLIMIT_CPU', (3, 4))" in facts and "('RLIMIT_FSIZE', (125952, 125952))" in facts
    assert "('RLIMIT_NOFILE', (1024, 1024))" in facts and "['0', '1', '2', '3']" in facts
    assert "/tmp/work 0o22 1000 True 1 " in facts  # own session, dumpable, OOM's first choice


def test_the_cpu_limit_holds_for_a_command_and_what_it_starts(executor):
    script = "bash -c 'while :; do :; done'; echo after $?"
    result = executor.run(
        ExecRequest(command=["bash", "-c", script], limits=Limits(wall_time=20, cpu_time=1))
    )
    assert result.ok and result.stdout_text.startswith("after "), result.describe()
    assert result.duration < 10  # RLIMIT_CPU ended the child, long before the wall clock


def test_a_commands_cpu_limit_is_the_runs_and_its_supervisor_keeps_time_to_report(executor):
    """A command started with posix_spawn inherits its supervisor's limits, so the supervisor
    carries the command's CPU limit while it walks the changes and empties the writable places
    after the command: its hard limit must leave it time for that (a supervisor killed there
    loses the result, which reads as a sandbox failure: a reply could forge an infra error).
    The command's own soft limit, the one that stops it, is the run's CPU time either way."""
    spawned = executor.run(
        ExecRequest(command=["bash", "-c", "ulimit -St; ulimit -Ht"], limits=Limits(wall_time=2))
    )
    forked = executor.run(
        ExecRequest(
            command=["bash", "-c", "ulimit -St; ulimit -Ht"],
            limits=Limits(wall_time=5, cpu_time=2),
        )
    )
    assert spawned.ok and forked.ok, (spawned.describe(), forked.describe())
    soft, hard = map(int, spawned.stdout_text.split())
    assert soft == 2 and hard >= soft + 5
    assert forked.stdout_text.split() == ["2", "3"]


def test_a_file_that_cannot_be_run_is_reported_as_before(executor):
    # Found on PATH but not runnable (no #! line): the spawn fails and the forked path says why.
    result = executor.run(
        ExecRequest(command=["./script"], files={"script": "echo hi\n"}, executable=["script"])
    )
    assert result.status is ProgramStatus.FAILED and result.exit_code == 127
    assert "cannot run './script': Exec format error" in result.stderr_text
    elsewhere = executor.run(ExecRequest(command=["bash", "-c", "true"], env={"PATH": "/nowhere"}))
    assert elsewhere.exit_code == 127 and "No such file" in elsewhere.stderr_text


# --- the same sandbox for every run ---------------------------------------------------------------

# What a program can read of its sandbox that a result could depend on: the hash seed (its own,
# a child interpreter's, set order), the environment, the host name, the files it starts with,
# its uid and working directory. It must be the same in every run, on every worker (docs/
# sandboxes.md, "The same sandbox for every run"), or two runs of the same code could disagree.
SANDBOX_FACTS = (
    "import os, socket, subprocess, sys\n"
    'child = subprocess.run([sys.executable, \'-c\', \'print(hash("abc"), list({"x", "y"}))\'],'
    " capture_output=True, text=True).stdout\n"
    "print(hash('abc'), list({'p', 'q', 'r', 's'}), child, sorted(os.environ.items()),"
    " socket.gethostname(), sorted(os.listdir('.')), os.listdir('/tmp'), os.getuid(),"
    " os.getcwd())\n"
)


def sandbox_facts(executor, runs: int = 6) -> set[str]:
    with ThreadPoolExecutor(runs) as threads:  # concurrent: every worker of the pool serves some
        results = list(
            threads.map(lambda _: run(executor, SANDBOX_FACTS, files={"a.txt": "x"}), range(runs))
        )
    assert all(result.ok for result in results), results[0].stderr_text
    return {result.stdout_text for result in results}


def test_every_run_on_every_worker_sees_the_same_sandbox(executor):
    facts = sandbox_facts(executor)
    assert len(facts) == 1, facts
    assert "PYTHONHASHSEED" in facts.pop()


@pytest.mark.docker
def test_both_backends_show_programs_the_same_sandbox(local_executor, docker_executor):
    assert sandbox_facts(local_executor) == sandbox_facts(docker_executor)


# --- limits -------------------------------------------------------------------------------------


def test_infinite_loop_is_timed_out(executor):
    result = run(executor, "while True: pass", limits=Limits(wall_time=1))
    assert result.status is ProgramStatus.TIMEOUT
    assert 0.9 < result.duration < 3


def test_sleeping_program_is_timed_out_by_wall_time(executor):
    result = run(executor, "import time; time.sleep(60)", limits=Limits(wall_time=0.5))
    assert result.status is ProgramStatus.TIMEOUT and result.duration < 2


def test_cpu_time_limit_kills_a_busy_program(executor):
    result = run(executor, "while True: pass", limits=Limits(wall_time=20, cpu_time=1))
    assert result.status is ProgramStatus.TIMEOUT
    assert result.signal in (signal.SIGXCPU, signal.SIGKILL)  # RLIMIT_CPU, not the wall clock
    # RLIMIT_CPU fired (the signal says so), long before the wall clock; the CPU time rusage
    # reports for it reads up to ~15% low on a loaded machine.
    assert result.duration < 20 and result.cpu_time >= 0.8


def test_memory_bomb_is_killed(executor):
    code = "chunks = []\nwhile True:\n    chunks.append(bytearray(10 * 2**20))"
    result = run(executor, code, limits=Limits(memory=64 * MiB))
    assert result.status is ProgramStatus.OOM
    after = run(executor, "print('fine')")  # the worker survives (or is replaced)
    assert after.ok


def test_fork_bomb_is_contained(executor):
    code = (
        "import os, time\n"
        "n = 0\n"
        "try:\n"
        "    while True:\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(60)\n"
        "            os._exit(0)\n"
        "        n += 1\n"
        "except OSError as exc:\n"
        "    print('stopped after', n)\n"
    )
    result = run(executor, code, limits=Limits(wall_time=10, processes=16))
    assert result.ok, result.stderr_text
    assert result.stdout_text == "stopped after 15\n"  # 16 processes with the program itself
    # the sleepers were killed with the run: the next run is alone in its namespace
    alone = run(executor, "import os\nprint(len([p for p in os.listdir('/proc') if p.isdigit()]))")
    assert int(alone.stdout_text) <= 4  # zygote, supervisor, program (+ cleaner at most)


def test_100_mb_of_output_is_capped(executor):
    code = "import sys\nfor _ in range(100):\n    sys.stdout.write('x' * 2**20)\n"
    result = run(executor, code)
    assert result.status is ProgramStatus.OUTPUT_LIMIT
    assert result.truncated and len(result.stdout) == Limits().output
    assert result.duration < 5


def test_file_size_limit(executor):
    code = "open('big', 'wb').write(b'x' * 4 * 2**20)"
    result = run(executor, code, limits=Limits(file_size=1 * MiB))
    assert result.status is ProgramStatus.FAILED


# --- escapes ------------------------------------------------------------------------------------


def test_network_is_blocked(executor):
    code = (
        "import socket\n"
        "s = socket.socket()\n"
        "s.settimeout(3)\n"
        "try:\n"
        "    s.connect(('1.1.1.1', 80))\n"
        "    print('connected')\n"
        "except OSError as exc:\n"
        "    print('blocked')\n"
    )
    assert run(executor, code).stdout_text == "blocked\n"


def test_environment_secrets_are_not_visible(executor, monkeypatch):
    monkeypatch.setenv("RLVR_TEST_SECRET", "hunter2")
    result = run(
        executor, "import os\nprint(sorted(os.environ))\nprint(os.environ)", env={"X": "1"}
    )
    assert "hunter2" not in result.stdout_text and "RLVR_TEST_SECRET" not in result.stdout_text
    names = eval(result.stdout_text.splitlines()[0])
    assert set(names) <= {"PATH", "HOME", "LANG", "TMPDIR", "X", "HOSTNAME", "PYTHONHASHSEED"}


def test_files_outside_the_workdir_are_untouched(executor, tmp_path):
    sentinel = tmp_path / "sentinel.txt"
    sentinel.write_text("original")
    code = (
        "import os\n"
        f"target = {str(sentinel)!r}\n"
        "print('visible' if os.path.exists(target) else 'invisible')\n"
        "for path in [target, '/usr/rlvr-x', '/etc/rlvr-x', '/rlvr-x', '/dev/rlvr-x', '/proc/x']:\n"
        "    try:\n"
        "        open(path, 'w').write('hacked')\n"
        "        print('wrote', path)\n"
        "    except OSError:\n"
        "        pass\n"
        "for path in ['/root', '/home', '/work', os.path.expanduser('~root')]:\n"
        "    try:\n"
        "        print('listed', path, os.listdir(path)[:1])\n"
        "    except OSError:\n"
        "        pass\n"
    )
    result = run(executor, code)
    assert result.stdout_text == "invisible\n"
    assert sentinel.read_text() == "original"
    assert not os.path.exists("/usr/rlvr-x")


def test_state_of_one_run_is_invisible_to_the_next(executor):
    leave = (
        "import ctypes, os\n"
        "open('/tmp/left', 'w').write('x')\n"
        "open('/dev/shm/left', 'w').write('x')\n"
        "open('in-workdir', 'w').write('x')\n"
        "os.makedirs('/tmp/a/b/c')\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "print(libc.shmget(0x5EED, 4096, 0o1666))\n"  # IPC_CREAT | 0666
    )
    assert run(executor, leave).ok
    look = (
        "import ctypes, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "print(sorted(os.listdir('/tmp')), os.listdir('/dev/shm'), os.listdir('.'),\n"
        "      libc.shmget(0x5EED, 0, 0))\n"
    )
    for _ in range(4):  # whichever worker takes the run
        assert run(executor, look).stdout_text == "['work'] [] [] -1\n"


# Searches every readable byte of its own address space for a needle that exists only in a
# private mmap (built from a masked copy, so no other copy is ever made) and skips that mmap.
MEMORY_SCAN = """
import ctypes, mmap, sys
masked = bytes.fromhex(sys.argv[1])
box = mmap.mmap(-1, len(masked))
for i, byte in enumerate(masked):
    box[i] = byte ^ 0x5A
needle = memoryview(box)
skip = ctypes.addressof(ctypes.c_char.from_buffer(box))
found = []
with open('/proc/self/maps') as maps, open('/proc/self/mem', 'rb', 0) as mem:
    for line in maps.read().splitlines():
        span, perms = line.split()[:2]
        start, end = (int(x, 16) for x in span.split('-'))
        if 'r' not in perms or start <= skip < end or '[v' in line:
            continue
        try:
            mem.seek(start)
            if mem.read(end - start).find(needle) >= 0:
                found.append(line)
        except (OSError, ValueError, OverflowError):
            pass
print(found)
"""


def test_memory_of_earlier_runs_is_not_inherited(executor):
    secret = os.urandom(16)
    masked = bytes(byte ^ 0x5A for byte in secret).hex()
    keep = "import sys\ndata = sys.stdin.buffer.read()\nprint(data.count(data[:16]))"
    assert run(executor, keep, stdin=secret * 100).stdout_text == "100\n"
    for _ in range(3):  # the next runs, whichever worker takes them
        assert run(executor, MEMORY_SCAN, args=[masked]).stdout_text == "[]\n"
    # the scan does find data that is in memory (here: its own stdin)
    assert run(executor, MEMORY_SCAN, args=[masked], stdin=secret).stdout_text != "[]\n"


def test_the_program_is_not_root(executor):
    code = (
        "import os\n"
        "print(os.getuid(), os.geteuid(), os.getgid())\n"
        "print(open('/proc/self/status').read().split('CapEff:')[1].split()[0])\n"
    )
    ids, capabilities = run(executor, code).stdout_text.splitlines()
    assert "0" not in ids.split()
    assert int(capabilities, 16) == 0


def test_keyrings_io_uring_and_ptrace_are_denied(executor):
    code = (
        "import ctypes, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "key = libc.syscall(248, b'user', b'k', b'v', 1, -2)\n"  # add_key (x86_64)
        "print(key == -1)\n"
        "ring = libc.syscall(425, 4, ctypes.create_string_buffer(120))\n"  # io_uring_setup
        "print(ring == -1 and ctypes.get_errno() == 1)\n"
        "print(os.access('/proc/1/fd', os.R_OK), os.access('/proc/1/mem', os.R_OK))\n"
    )
    if os.uname().machine != "x86_64":
        pytest.skip("syscall numbers of this test are x86_64's")
    assert run(executor, code).stdout_text == "True\nTrue\nFalse False\n"


def test_processes_left_in_the_background_are_killed(executor):
    code = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"  # leaves the program's session: a process-group kill misses it
        "    if os.fork() == 0:\n"
        "        time.sleep(2)\n"
        "        open('/tmp/late', 'w').write('survived')\n"
        "    os._exit(0)\n"
        "print('done')\n"
    )
    assert run(executor, code).ok
    look = "import os, time\ntime.sleep(2.5)\nprint(os.listdir('/tmp'))"
    for _ in range(2):
        assert run(executor, look).stdout_text == "['work']\n"


def test_the_program_cannot_kill_or_stop_the_sandbox(executor):
    code = (
        "import os, signal\n"
        "for sig in (signal.SIGKILL, signal.SIGSTOP, signal.SIGTERM):\n"
        "    os.kill(1, sig)\n"
        "print('ok')"
    )
    assert run(executor, code).ok
    assert run(executor, "print(1)").ok


def test_a_run_leaves_no_state_on_the_writable_roots(executor):
    # In bubblewrap /tmp and /dev/shm belong to the sandbox user: a run can chmod them (the next
    # run could not use them) or hide data in their extended attributes and times.
    look = (
        "import os\n"
        "for root in ('/tmp', '/dev/shm'):\n"
        "    info = os.stat(root)\n"
        "    print(root, oct(info.st_mode), os.listxattr(root), info.st_atime < 4e9,\n"
        "          sorted(os.listdir(root)))\n"
    )
    before = run(executor, look).stdout_text
    leave = (
        "import os\n"
        "open('/dev/shm/kept', 'w').write('secret')\n"
        "for root in ('/tmp', '/dev/shm'):\n"
        "    for attempt in (lambda: os.setxattr(root, 'user.kept', b'secret'),\n"
        "                    lambda: os.utime(root, (4e9, 4e9)), lambda: os.chmod(root, 0)):\n"
        "        try:\n"
        "            attempt()\n"
        "        except OSError:\n"  # Docker's roots belong to root: refused there
        "            pass\n"
    )
    assert run(executor, leave).ok
    for _ in range(3):  # whichever worker takes the run
        assert run(executor, look).stdout_text == before


def live_workers(executor) -> int:
    """Worker processes (local) or containers (docker) of the executor's pool still running."""
    backend = executor._pool.backend
    if backend.name == "docker":
        from rlvr.sandboxes.containers import OWNER_LABEL

        label = f"{OWNER_LABEL}={backend.tag}"
        return len(backend.client().api.containers(filters={"label": label}))
    names = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cgroup") as handle:
                cgroups = handle.read()
        except OSError:
            continue
        for line in cgroups.splitlines():
            name = line.rpartition("/")[2]
            if name.startswith(f"{backend.tag}-w"):
                names.add(name)
    return len(names)


def test_a_worker_that_cannot_be_reused_is_killed(executor):
    # Killing the supervisor leaves the worker unfit for another run: the pool must replace it
    # and kill it, not just forget it (a process or container per such run would pile up).
    for _ in range(3):
        result = run(executor, "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)")
        assert result.status is ProgramStatus.FAILED
    deadline = time.monotonic() + 15
    while live_workers(executor) > executor.workers and time.monotonic() < deadline:
        time.sleep(0.1)
    assert live_workers(executor) <= executor.workers


def test_returned_files_that_are_not_files_are_skipped(executor):
    code = "import os\nos.mkdir('out.txt')\nos.mkfifo('pipe.txt')\nopen('ok.txt', 'w').write('ok')"
    result = run(executor, code, return_files=["out.txt", "pipe.txt", "ok.txt"])
    assert result.ok and result.files == {"ok.txt": b"ok"}
