"""Fixtures of the rlvr/Repo-v0 tests: the sandbox tests' local pool (two warm workers; skips
without bubblewrap) as `executor`, and their Docker image for the Docker episodes."""

import pytest

from tests.sandboxes.conftest import docker_image, local_executor  # noqa: F401  (fixtures)


@pytest.fixture
def executor(local_executor):  # noqa: F811  (the fixture imported above)
    return local_executor
