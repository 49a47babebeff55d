"""Shared test helpers.

Tests that need a service (Docker engine, PostgreSQL, Chromium, bubblewrap) call
`require_service(...)`: locally a missing service skips the test with the reason; in CI
(`CI=true`) it fails it, because CI installs every service and a skip there would hide a breakage.
Tests that need an optional extra (`datasets`, `postgres`, ...) call `require_extra(...)` for the
same reason instead of `pytest.importorskip`. `run_python(code)` runs code in a fresh interpreter
(for what a process imports).
"""

from __future__ import annotations

import importlib
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from types import ModuleType

import pytest

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

# A shell without job control starts background commands with SIGINT ignored, and an ignored
# signal stays ignored across exec: the Ctrl-C tests' child processes would never see theirs.
# Python's own handler here makes every child start with the default again.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def require_service(name: str, available: bool, why: str = "") -> None:
    """Skip (locally) or fail (in CI) the calling test when `name` is not available."""
    if available:
        return
    message = f"{name} is not available{': ' + why if why else ''}"
    if IN_CI:
        pytest.fail(f"{message} (CI=true: .ci/setup-system.sh should have provided it)")
    pytest.skip(message)


def require_extra(module: str, extra: str) -> ModuleType:
    """`import module` from the optional dependency group `extra`; without it, skip (locally) or
    fail (in CI, where .ci/setup-venv.sh installs every extra) the calling test."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        message = f"needs the {extra!r} extra (pip install 'rlvr-gym[{extra}]'): {exc}"
        if IN_CI:
            pytest.fail(f"{message} (CI=true: .ci/setup-venv.sh should have installed it)")
        pytest.skip(message)


def run_python(code: str) -> str:
    """Run `code` in a fresh interpreter and return what it printed; fail the calling test with
    its error output (an assertion's message shows there) if it exits non-zero."""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout


RAY_OBJECT_STORE_BYTES = 200 * 1024**2


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[ModuleType]:
    """A Ray instance on this machine for a test module's Ray tests (2 CPUs, a small object
    store, no dashboard), shut down after the module, so that no idle Ray processes sit beside
    the rest of the suite. Without the ray extra: skipped locally, failed in CI."""
    ray = require_extra("ray", "ray")
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        object_store_memory=RAY_OBJECT_STORE_BYTES,
        logging_level=logging.WARNING,
    )
    yield ray
    ray.shutdown()
