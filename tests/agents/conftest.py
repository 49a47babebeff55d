from __future__ import annotations

from pathlib import Path

import pytest

from tests.agents import support


@pytest.fixture(scope="session")
def tiny_path(tmp_path_factory) -> Path:
    """An untrained tiny model folder (needs the agents extra)."""
    pytest.importorskip("torch")
    return support.tiny_model(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture(scope="session", autouse=True)
def _test_envs() -> None:
    support.register()
