"""Agents tests. FutureWarnings are errors here: a forward argument or attribute that
transformers (or torch) deprecates fails the test that uses it, long before its removal breaks
training. The CI step against the newest transformers (.ci/test-newest-transformers.sh) sets
RLVR_FUTURE_WARNINGS=default: there a new deprecation shows in the summary, to fix, without
failing a build nobody changed."""

from __future__ import annotations

import os
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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    action = os.environ.get("RLVR_FUTURE_WARNINGS", "error")
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.path).parents:
            item.add_marker(pytest.mark.filterwarnings(f"{action}::FutureWarning"))
