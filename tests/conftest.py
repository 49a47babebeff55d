"""Shared test helpers.

Tests that need a service (Docker engine, PostgreSQL, Chromium, bubblewrap) call
`require_service(...)`: locally a missing service skips the test with the reason; in CI
(`CI=true`) it fails it, because CI installs every service and a skip there would hide a breakage.
Tests that need an optional extra (`datasets`, `postgres`, ...) call `require_extra(...)` for the
same reason instead of `pytest.importorskip`. `run_python(code)` runs code in a fresh interpreter
(for what a process imports).

`-m quick` selects the quick check, the fast tests of every area listed in `QUICK` (under 3
minutes on 2 cores; CONTRIBUTING.md says when to run what).

The suite writes nothing into the checkout (tests/checkout.py): the end of a session names every
file it left, changed or removed there, and under CI=true that fails the session (locally it is a
warning, as files someone edits during the run show too). `repository` is the project's files as
git counts them (not the working tree, which may hold a demo's outputs); `built_wheel` is the
project's wheel, built once from a copy.
"""

from __future__ import annotations

import importlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

from tests.checkout import (
    ROOT,
    NotACheckout,
    Repository,
    Snapshot,
    changes,
    read_repository,
    snapshot,
)

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


# --- the quick check ------------------------------------------------------------------------------

QUICK = (
    "tests/test_checkout.py",
    "tests/test_cli.py",
    "tests/test_config.py",
    "tests/test_families.py",
    "tests/test_core.py",
    "tests/test_layers.py::test_the_project_keeps_every_import_contract",
    "tests/test_docs.py::test_rlvr_command_lines_parse",
    "tests/test_docs.py::test_relative_links_resolve",
    "tests/test_docs.py::test_named_repository_files_exist",
    "tests/test_docs.py::test_the_checkers_judge_the_repository",
    "tests/verifiers/test_types.py",
    "tests/verifiers/test_math_extract.py",
    "tests/verifiers/test_math_verifier.py",
    "tests/verifiers/test_math_safety.py",
    "tests/verifiers/test_code_verifier.py",
    "tests/envs/test_text_env.py",
    "tests/envs/test_judge.py",
    "tests/envs/test_replies.py",
    "tests/envs/test_options.py",
    "tests/envs/test_validation.py",
    "tests/envs/test_tools.py",
    "tests/envs/test_vector_and_spaces.py",
    "tests/envs/test_math_env.py",
    "tests/envs/test_tasks.py",
    "tests/envs/test_code_task_files.py",
    "tests/envs/test_self_correct.py",
    "tests/envs/multiagent/test_base.py",
    "tests/envs/multiagent/test_connect4.py",
    "tests/envs/multiagent/test_debate.py",
    "tests/envs/multiagent/test_problems.py",
    "tests/envs/multiagent/test_nim.py",
    "tests/envs/multiagent/test_tictactoe.py",
    "tests/envs/multiagent/test_negotiation.py",
    "tests/envs/multiagent/test_proposer_solver.py",
    "tests/envs/multiagent/test_code_problems.py",
    "tests/envs/web/test_wikiqa.py",
    "tests/envs/web/test_web_infra_redteam.py",
    "tests/envs/web/test_webshop.py",
    "tests/sql/test_sql_guard.py",
    "tests/sql/test_sql_compare.py",
    "tests/sql/test_sql_verifier.py",
    "tests/sql/test_sql_loaders.py",
    "tests/sandboxes/test_config.py",
    "tests/sandboxes/test_cleanup.py",
    "tests/sandboxes/test_isolation.py",
    "tests/agents/test_policy_protocol.py",
    "tests/agents/test_agent_kinds.py",
    "tests/agents/test_evaluate.py",
    "tests/agents/test_learner_math.py",
    "tests/agents/test_train_config.py",
    "tests/leaderboards/test_leaderboard_suites.py",
    "tests/leaderboards/test_leaderboard_replay.py",
    "tests/leaderboards/test_leaderboard_imports.py",
    "tests/leaderboards/test_leaderboard_store.py",
    "tests/integrations/test_trl_rewards.py",
    "tests/integrations/test_export.py",
    "tests/benchmarks/test_learning_suite.py",
)
"""The quick check (`pytest -m quick`): tests whose node id starts with one of these, unless
marked slow or needing Docker, PostgreSQL or Chromium. Fast modules of every area, so that a
change anywhere meets some of its tests; tests/test_quick_check.py keeps every area in it."""

_NOT_QUICK = ("slow", "docker", "postgres", "browser")


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.nodeid.startswith(QUICK) and not any(
            item.get_closest_marker(name) for name in _NOT_QUICK
        ):
            item.add_marker(pytest.mark.quick)


# --- the checkout ---------------------------------------------------------------------------------

_BEFORE = pytest.StashKey[Snapshot]()
_WRITTEN = pytest.StashKey[list[str]]()


_HYPOTHESIS_FOLDER = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    """Hypothesis keeps its caches (and the explore profile's example database) in ./.hypothesis,
    the checkout: give it a folder of its own for the session, through the environment so that
    processes the tests start use it too, unless HYPOTHESIS_STORAGE_DIRECTORY names one (to keep
    a database across sessions). Set before collection: importing a test module may cache."""
    if not os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
        folder = tempfile.mkdtemp(prefix="rlvr-hypothesis-")
        os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = config.stash[_HYPOTHESIS_FOLDER] = folder


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = config.stash.get(_HYPOTHESIS_FOLDER, None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
        os.environ.pop("HYPOTHESIS_STORAGE_DIRECTORY", None)


def pytest_sessionstart(session: pytest.Session) -> None:
    if not hasattr(session.config, "workerinput"):  # pytest-xdist: its controller watches
        session.config.stash[_BEFORE] = snapshot(ROOT)


def pytest_sessionfinish(session: pytest.Session) -> None:
    before = session.config.stash.get(_BEFORE, None)
    if before is None:
        return
    written = changes(before, snapshot(ROOT))
    if written:
        session.config.stash[_WRITTEN] = written
        if IN_CI:  # locally the files someone edits while the tests run would show too
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    written = config.stash.get(_WRITTEN, None)
    if written:
        terminalreporter.section("the suite changed the checkout", red=True)
        terminalreporter.line(
            f"tests write only under their tmp_path; this session changed {ROOT}"
            + (":" if IN_CI else " (a failure under CI=true; here files you edited show too):")
        )
        for line in written[:30]:
            terminalreporter.line(f"  {line}")
        if len(written) > 30:
            terminalreporter.line(f"  ... and {len(written) - 30} more")


@pytest.fixture(scope="session")
def repository() -> Repository:
    """The project's files (git's tracked and new-but-not-ignored files). Outside a git checkout:
    skipped locally, failed in CI."""
    try:
        return read_repository(ROOT)
    except NotACheckout as exc:
        require_service("a git checkout", False, str(exc))
        raise


@dataclass(frozen=True)
class BuiltWheel:
    path: Path
    log: str
    """What `pip wheel` printed, the build backend's messages included."""


@pytest.fixture(scope="session")
def built_wheel(tmp_path_factory: pytest.TempPathFactory, repository: Repository) -> BuiltWheel:
    """The project's wheel, built once a session as `pip wheel .` builds it (in an isolated build
    environment), from a copy of the repository's files: a build in the checkout itself would
    leave build/ and an egg-info there."""
    source = tmp_path_factory.mktemp("source")
    for name in repository.files:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name, follow_symlinks=False)
    dist = tmp_path_factory.mktemp("dist")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(dist), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (wheel,) = dist.glob("rlvr_gym-*.whl")
    return BuiltWheel(wheel, built.stdout + built.stderr)
