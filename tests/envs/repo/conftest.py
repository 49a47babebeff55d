"""Fixtures of the rlvr/Repo-v0 tests: a local sandbox pool per module, and the sandbox tests'
Docker image for the Docker episodes."""

import pytest

from rlvr.sandboxes import get_executor
from tests.sandboxes.conftest import (
    docker_image,  # noqa: F401  (a fixture)
    require_local_sandbox,
)


@pytest.fixture(scope="module")
def executor():
    """A local pool of two warm workers, shared by a module's tests (skips without bubblewrap)."""
    require_local_sandbox()
    with get_executor("local", workers=2, shared=False) as executor:
        executor.warm_up()
        yield executor
