"""Docker fixtures of the sandbox tests, for the Docker episodes of rlvr/Repo-v0."""

from tests.sandboxes.conftest import docker_image  # noqa: F401  (a fixture)
