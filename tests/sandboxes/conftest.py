"""Executors shared by the sandbox tests: one local pool and one Docker pool per session.

`executor` is parametrized over both backends, so every limit and escape test runs on each.
Docker tests need a running engine: locally they skip without one, in CI they fail.
"""

from __future__ import annotations

import shutil
import time

import pytest

from rlvr.sandboxes import SandboxUnavailable, get_executor
from tests.conftest import require_service


def local_available() -> tuple[bool, str]:
    from rlvr.sandboxes.local import LocalConfig, probe

    isolation = probe(LocalConfig())
    return isolation.complete, "; ".join(isolation.problems)


def require_local_sandbox() -> None:
    """Skip locally, fail in CI (.ci/setup-system.sh installs it) without the local sandbox."""
    available, why = local_available()
    require_service("bubblewrap + cgroups", available and shutil.which("bwrap") is not None, why)


def docker_available() -> tuple[bool, str]:
    try:
        from rlvr.sandboxes.image import docker_client
    except ImportError as exc:
        return False, str(exc)
    try:
        docker_client(timeout=10).close()
    except (SandboxUnavailable, ImportError) as exc:
        return False, str(exc)
    return True, ""


def settled(executor, timeout: float = 10.0) -> None:
    """Wait until every worker of `executor` has ended its last run: a result comes back before
    the worker's own sweep after it, which the pool then waits for."""
    deadline = time.monotonic() + timeout
    while any(worker.owes_done for worker in list(executor._pool._workers)):
        assert time.monotonic() < deadline, "a worker never ended its run"
        time.sleep(0.005)


@pytest.fixture(scope="session")
def local_executor():
    require_local_sandbox()
    executor = get_executor("local", workers=2, shared=False)
    executor.warm_up()
    yield executor
    executor.close()


@pytest.fixture(scope="session")
def docker_image():
    available, why = docker_available()
    require_service("docker", available, why)
    from rlvr.sandboxes.image import DEFAULT_IMAGE, build_image, docker_client

    client = docker_client()
    try:
        present = any(DEFAULT_IMAGE in image.tags for image in client.images.list())
    finally:
        client.close()
    if not present:  # CI builds it in .ci/test.sh; build it here too so the tests stand alone
        build_image("host", DEFAULT_IMAGE, log=lambda _: None)
    return DEFAULT_IMAGE


@pytest.fixture(scope="session")
def docker_executor(docker_image):
    executor = get_executor("docker", workers=2, shared=False, image=docker_image)
    executor.warm_up()
    yield executor
    executor.close()


@pytest.fixture(params=["local", pytest.param("docker", marks=pytest.mark.docker)])
def executor(request):
    return request.getfixturevalue(f"{request.param}_executor")
