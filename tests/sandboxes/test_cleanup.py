"""No orphaned processes or containers: after a timeout, after interpreter exit, after SIGKILL."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from rlvr.sandboxes import ExecRequest, Limits

# Starts a pool, leaves a run going in the background, prints a marker, then ends as told.
SCRIPT = """
import os, sys, time
from rlvr.sandboxes import ExecRequest, Limits, get_executor
backend, ending = sys.argv[1], sys.argv[2]
executor = get_executor(backend, workers=2)
executor.warm_up()
code = "import os, time\\nif os.fork() == 0:\\n    os.setsid()\\ntime.sleep(120)"
job = executor.submit(ExecRequest(code=code, limits=Limits(wall_time=120)))
time.sleep(1.0)
print("running", flush=True)
sys.stdin.readline()  # the test counts our processes first
if ending == "exit":
    sys.exit(0)  # atexit closes the pool
time.sleep(120)  # waits for SIGKILL
"""


def sandbox_processes(owner: int) -> list[int]:
    """Host pids in cgroups of pools created by process `owner`."""
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cgroup") as handle:
                if f"/rlvr-sandbox/{owner}-" in handle.read():
                    pids.append(int(name))
        except OSError:
            continue
    return pids


def owned_containers(owner: int) -> list:
    from rlvr.sandboxes.image import docker_client

    client = docker_client()
    try:  # the low-level list: containers.list() fails if one vanishes while it looks
        prefix = f"{socket.gethostname()}-{owner}-"
        return [
            c["Id"]
            for c in client.api.containers(all=True, filters={"label": "rlvr.sandbox"})
            if (c.get("Labels") or {}).get("rlvr.sandbox.owner", "").startswith(prefix)
        ]
    finally:
        client.close()


def start_script(backend: str, ending: str) -> subprocess.Popen:
    process = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, backend, ending],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout.readline().strip() == "running"
    return process


def end(process: subprocess.Popen, ending: str) -> None:
    if ending == "sigkill":
        process.send_signal(signal.SIGKILL)
    else:
        process.stdin.write("exit\n")
        process.stdin.flush()


def wait_until(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


@pytest.mark.slow
@pytest.mark.parametrize("ending", ["exit", "sigkill"])
def test_no_orphan_processes_after_interpreter_exit(local_executor, ending):
    process = start_script("local", ending)
    assert len(sandbox_processes(process.pid)) >= 4  # two workers and the running program
    end(process, ending)
    process.wait(timeout=30)
    assert wait_until(lambda: not sandbox_processes(process.pid), 10), sandbox_processes(
        process.pid
    )


@pytest.mark.slow
@pytest.mark.docker
@pytest.mark.parametrize("ending", ["exit", "sigkill"])
def test_no_orphan_containers_after_interpreter_exit(docker_executor, ending):
    process = start_script("docker", ending)
    assert len(owned_containers(process.pid)) == 2
    end(process, ending)
    process.wait(timeout=60)
    # after SIGKILL the containers see their input close and remove themselves
    assert wait_until(lambda: not owned_containers(process.pid), 30)


def test_nothing_survives_a_timeout(local_executor):
    code = (
        "import os, time\n"
        "for _ in range(3):\n"
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"
        "        time.sleep(60)\n"
        "time.sleep(60)\n"
    )
    result = local_executor.run(ExecRequest(code=code, limits=Limits(wall_time=0.5)))
    assert result.status.value == "timeout"
    backend = local_executor._pool.backend
    # every worker is back to its three resident processes: bubblewrap, the zygote and the
    # supervisor it forked, after the run, for the next run
    assert wait_until(lambda: all(len(c.pids()) == 3 for c in backend.cgroups.values()), 5)


def test_cleaning_restores_the_roots_and_stops_at_its_deadline(tmp_path):
    from rlvr.sandboxes import worker

    root = tmp_path / "root"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "file").write_text("x")
    for index in range(50):
        (root / f"f{index}").touch()
    assert worker.clean_paths([str(root)], deadline=time.monotonic() - 1) is False
    assert any(root.iterdir())  # out of time: reported, so the worker is replaced
    os.chmod(root, 0)
    os.utime(root, (4e9, 4e9))
    os.setxattr(root, "user.kept", b"secret")
    assert worker.clean_paths([str(root)], {str(root): 0o750}) is True
    assert not any(root.iterdir()) and root.stat().st_mode & 0o7777 == 0o750
    assert os.listxattr(root) == [] and root.stat().st_atime < 4e9


@pytest.mark.slow
def test_a_run_leaving_millions_of_names_ends_on_time(local_executor):
    # Removing them all would take longer than the host waits: the cleaners give up after their
    # budget and the worker is replaced, so the run is still a timeout, not a sandbox error.
    code = (
        "import os, time\n"
        "start = time.monotonic()\n"
        "open('/tmp/0', 'w').close()\n"
        "n = 0\n"
        "while time.monotonic() - start < 2.5:\n"
        "    for _ in range(1000):\n"
        "        n += 1\n"
        "        os.link('/tmp/0', f'/tmp/{n}')\n"
        "time.sleep(60)\n"
    )
    started = time.monotonic()
    result = local_executor.run(ExecRequest(code=code, limits=Limits(wall_time=3)))
    assert result.status.value == "timeout" and not result.infra_error
    assert time.monotonic() - started < 3 + 4
    look = ExecRequest(code="import os\nprint(os.listdir('/tmp'))")
    for _ in range(2):
        assert local_executor.run(look).stdout_text == "['work']\n"
