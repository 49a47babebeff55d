"""`rlvr serve build-image`: an image built offline starts, answers /health and serves sessions."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.conftest import require_extra, require_service
from tests.integrations.served import free_port
from tests.sandboxes.conftest import docker_available

pytestmark = [pytest.mark.slow, pytest.mark.docker]

TAG = "rlvr-serve-test-math:latest"


@pytest.fixture(scope="module")
def image():
    require_extra("openenv", "serve")
    available, why = docker_available()
    require_service("docker", available, why)
    from rlvr.integrations.serve_image import build_serve_image

    build_serve_image("math", tag=TAG, log=lambda _: None)
    yield TAG
    subprocess.run(["docker", "rmi", "-f", TAG], capture_output=True)


def docker(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)


def test_the_image_follows_openenvs_packaging(image):
    result = docker(
        "run", "--rm", image, "/usr/bin/python3", "-c", "print(open('/app/openenv.yaml').read())"
    )
    assert result.returncode == 0, result.stderr
    manifest = result.stdout
    assert "spec_version: 1" in manifest and "runtime: fastapi" in manifest
    assert "port: 8000" in manifest
    labels = json.loads(docker("inspect", "-f", "{{json .Config}}", image).stdout)
    assert labels["ExposedPorts"] == {"8000/tcp": {}}
    assert labels["User"] == "61000:61000"  # not root
    assert labels["Labels"]["rlvr.serve.family"] == "math"


def test_the_image_starts_answers_health_and_serves_a_session(image):
    port = free_port()
    # This machine's Docker runs without a bridge network (`-p` publishes nothing here), so the
    # container shares the host's network and binds loopback on a free port.
    started = docker(
        "run", "-d", "--rm", "--network", "host",
        "-e", "RLVR_HOST=127.0.0.1", "-e", f"RLVR_PORT={port}", "-e", "RLVR_ORACLE=1",
        image,
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    container = started.stdout.strip()
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 240
        health = None
        while time.monotonic() < deadline and health is None:
            try:
                with urllib.request.urlopen(url + "/health", timeout=2) as answer:
                    health = json.loads(answer.read())
            except OSError:
                time.sleep(0.5)
        assert health == {"status": "healthy"}, docker("logs", container).stdout[-3000:]
        code = (
            "from openenv.core.generic_client import GenericEnvClient\n"
            f"with GenericEnvClient(base_url={url!r}).sync() as env:\n"
            "    env.reset(seed=4)\n"
            "    result = env.step({'text': env.state()['oracle_reply']})\n"
            "    print(result.reward, result.done, result.observation['verdict']['status'])\n"
        )
        session = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=300
        )
        assert session.stdout.split() == ["1.0", "True", "correct"], session.stderr[-3000:]
    finally:
        docker("stop", "-t", "10", container)


def test_the_code_and_repo_families_are_refused_without_their_sandbox():
    require_extra("openenv", "serve")
    from rlvr.integrations.serve import ServeConfigError
    from rlvr.integrations.serve_image import build_serve_image

    with pytest.raises(ServeConfigError, match="sandbox.*rlvr serve rlvr/Code-v0"):
        build_serve_image("code")
    with pytest.raises(ServeConfigError, match="sandbox.*rlvr serve rlvr/Repo-v0"):
        build_serve_image("repo")
    with pytest.raises(ServeConfigError, match="unknown family 'nope'"):
        build_serve_image("nope")


def test_every_family_names_registered_envs():
    require_extra("openenv", "serve")
    import gymnasium as gym

    import rlvr  # noqa: F401  (registers the envs)
    from rlvr.envs.multiagent import registry as multiagent_registry
    from rlvr.integrations.serve_image import FAMILIES

    for family, envs in FAMILIES.items():
        unknown = [e for e in envs if e not in gym.registry and e not in multiagent_registry]
        assert not unknown, f"{family}: {unknown}"
