"""The Docker backend: container settings, strict mode, a dead engine, vanished containers."""

from __future__ import annotations

import contextlib
import os
import signal
import time

import pytest

from rlvr.sandboxes import ExecRequest, Limits, get_executor
from rlvr.sandboxes.types import MiB
from tests.sandboxes.conftest import settled

pytestmark = pytest.mark.docker


def containers_of(executor):
    return [worker.transport.container for worker in list(executor._pool._workers)]


def test_containers_are_locked_down(docker_executor):
    docker_executor.run(ExecRequest(code="print(1)"))
    container = containers_of(docker_executor)[0]
    container.reload()
    host = container.attrs["HostConfig"]
    assert container.attrs["Config"]["User"] == "61000:61000"
    assert host["NetworkMode"] == "none"
    assert host["ReadonlyRootfs"] is True
    assert host["CapDrop"] == ["ALL"]
    assert "no-new-privileges" in host["SecurityOpt"]
    assert host["Memory"] > 0 and host["PidsLimit"] > 0 and host["CpuQuota"] > 0
    assert "/tmp" in host["Tmpfs"]
    assert container.attrs["Config"]["Env"] and not any(
        "SECRET" in item for item in container.attrs["Config"]["Env"]
    )


def test_per_run_memory_limit_is_applied(docker_executor):
    code = "chunks = []\nwhile True:\n    chunks.append(bytearray(10 * 2**20))"
    result = docker_executor.run(ExecRequest(code=code, limits=Limits(memory=48 * MiB)))
    assert result.status.value == "oom"
    assert docker_executor.run(ExecRequest(code="print(len(bytearray(200 * 2**20)))")).ok


def test_strict_mode_uses_a_fresh_container_per_run(docker_image):
    with get_executor("docker", workers=1, shared=False, image=docker_image, strict=True) as ex:
        code = "print(open('/proc/self/cgroup').read().split('/')[-1].strip())"
        first, second = (ex.run(ExecRequest(code=code)) for _ in range(2))
    assert first.ok and second.ok
    assert first.stdout_text != second.stdout_text  # different container ids


def test_a_dead_engine_is_a_sandbox_error_with_the_reason():
    with get_executor("docker", workers=1, shared=False, base_url="unix:///nonexistent.sock") as ex:
        result = ex.run(ExecRequest(code="print(1)"))
    assert result.infra_error and result.status is None
    assert "Docker engine unreachable at unix:///nonexistent.sock" in result.error


def test_a_missing_image_is_a_sandbox_error_naming_the_command(docker_image):
    with get_executor("docker", workers=1, shared=False, image="rlvr-no-such:image") as ex:
        result = ex.run(ExecRequest(code="print(1)"))
    assert result.infra_error and "rlvr sandbox build-image" in result.error


def test_a_vanished_container_is_replaced(docker_executor):
    assert docker_executor.run(ExecRequest(code="print(1)")).ok
    for container in containers_of(docker_executor):
        container.kill()  # gone between runs: the next run gets a fresh container
    time.sleep(0.5)
    result = docker_executor.run(ExecRequest(code="print(2)"))
    assert result.ok and result.stdout_text == "2\n"


def test_a_container_killed_while_idle_never_fails_the_next_run(docker_executor):
    # Killed from outside between runs (its pid 1 gets SIGKILL, as with `docker kill`), and the
    # next run comes at once, before the engine has closed the container's stream: that worker
    # never takes the run, so a fresh container runs it.
    from docker.errors import NotFound

    for _ in range(2):
        assert docker_executor.run(ExecRequest(code="print(1)")).ok
        settled(docker_executor)
        for container in containers_of(docker_executor):
            # A slot that has not had a run since the last round still holds the container
            # killed then, which Docker may have removed already: nothing left to kill.
            with contextlib.suppress(NotFound):
                container.reload()
                os.kill(container.attrs["State"]["Pid"], signal.SIGKILL)
        result = docker_executor.run(ExecRequest(code="print(2)"))
        assert result.ok and result.stdout_text == "2\n", result.describe()


def test_a_container_killed_mid_run_is_a_sandbox_error_and_the_pool_heals(docker_image):
    with get_executor("docker", workers=1, shared=False, image=docker_image) as ex:
        ex.warm_up()
        job = ex.submit(
            ExecRequest(code="import time; time.sleep(30)", limits=Limits(wall_time=30))
        )
        time.sleep(1.0)
        for container in containers_of(ex):
            container.kill()
        result = job.future.result(timeout=30)
        assert result.infra_error and "died" in result.error
        assert ex.run(ExecRequest(code="print('healed')")).stdout_text == "healed\n"
