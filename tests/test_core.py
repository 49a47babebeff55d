"""The ground layer, `rlvr.core`: it imports nothing else of rlvr, what moved into it is the same
object under its former names (pickles of either name load), and `RlvrError` is the root of the
packages' exceptions without changing what code catches or the messages it reads."""

from __future__ import annotations

import importlib
import pickle
import pkgutil

import pytest

import rlvr.core
from rlvr.core.episode import Outcome, Start
from rlvr.core.errors import RlvrError, TaskFormatError, VerifierError
from rlvr.core.types import Status, Task, Verdict
from tests.conftest import run_python

CORE_MODULES = sorted(f"rlvr.core.{m.name}" for m in pkgutil.iter_modules(rlvr.core.__path__))


def test_the_ground_package_imports_nothing_else_of_rlvr():
    # `import rlvr.core` runs rlvr/__init__.py first, which loads these two (and nothing else):
    # the rest is what importing every module of rlvr.core adds
    root = {"rlvr", "rlvr._import_hook", "rlvr.builtin_envs"}
    output = run_python(
        f"import sys, rlvr, {', '.join(CORE_MODULES)}\n"
        "print(sorted(m for m in sys.modules if m.startswith('rlvr')))\n"
        "heavy = [m for m in ('gymnasium', 'numpy', 'torch') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    loaded = set(eval(output))
    assert set(CORE_MODULES) <= loaded
    outside = {m for m in loaded - root if m != "rlvr.core" and not m.startswith("rlvr.core.")}
    assert not outside, outside


FORMER_NAMES = [
    ("rlvr.verifiers.types", "Task", "rlvr.core.types"),
    ("rlvr.verifiers.types", "Verdict", "rlvr.core.types"),
    ("rlvr.verifiers.types", "Status", "rlvr.core.types"),
    ("rlvr.verifiers.types", "content_id", "rlvr.core.types"),
    ("rlvr.verifiers.types", "TaskFormatError", "rlvr.core.errors"),
    ("rlvr.verifiers", "Task", "rlvr.core.types"),
    ("rlvr.verifiers", "Verdict", "rlvr.core.types"),
    ("rlvr.verifiers", "Status", "rlvr.core.types"),
    ("rlvr.verifiers", "content_id", "rlvr.core.types"),
    ("rlvr.verifiers", "TaskFormatError", "rlvr.core.errors"),
    ("rlvr.verifiers", "VerifierError", "rlvr.core.errors"),
    ("rlvr.verifiers.errors", "TaskFormatError", "rlvr.core.errors"),
    ("rlvr.verifiers.errors", "VerifierError", "rlvr.core.errors"),
    ("rlvr.envs.core", "Outcome", "rlvr.core.episode"),
    ("rlvr.envs.core", "Start", "rlvr.core.episode"),
    ("rlvr.envs", "Outcome", "rlvr.core.episode"),
    ("rlvr.envs", "Start", "rlvr.core.episode"),
    ("rlvr._shared", "SharedResources", "rlvr.core.resources"),
    ("rlvr._shared", "Handle", "rlvr.core.resources"),
    ("rlvr._shared", "HandleClosed", "rlvr.core.resources"),
    ("rlvr._shared", "Owner", "rlvr.core.resources"),
    ("rlvr._shared", "close_all", "rlvr.core.resources"),
    ("rlvr._shared", "_TABLES", "rlvr.core.resources"),  # one set of tables: one fork/exit rule
]


@pytest.mark.parametrize(("former", "name", "home"), FORMER_NAMES)
def test_every_former_name_is_the_same_object(former, name, home):
    moved = getattr(importlib.import_module(home), name)
    assert getattr(importlib.import_module(former), name) is moved
    if isinstance(moved, type):
        assert moved.__module__ == home  # defined once, where it now lives


def test_a_table_made_under_the_former_name_is_closed_by_the_grounds_close_all():
    from rlvr._shared import SharedResources as FormerSharedResources
    from rlvr.core.resources import close_all

    closed: list[str] = []
    table = FormerSharedResources("former-name test", closed.append)
    table.acquire("key", lambda: "resource")
    close_all()
    assert closed == ["resource"]


def moved_objects() -> list[object]:
    task = Task("t1", "What is 2+2?", "4", {"family": "arith"})
    return [
        task,
        Verdict.incorrect("5", "off by one", score=0.25, steps=3),
        Verdict.error("the sandbox died"),
        Status.UNPARSABLE,
        Start("prompt", "t1", {"seed": 3}),
        Outcome("feedback", 1.0, True, Verdict.correct("4"), {"total": 1.0}, False, "user", {}),
    ]


@pytest.mark.parametrize("obj", moved_objects(), ids=lambda obj: type(obj).__name__)
def test_moved_objects_pickle_under_both_names(obj):
    data = pickle.dumps(obj, protocol=2)  # protocol 2 names classes as text: "module\nname\n"
    home = type(obj).__module__.encode()
    assert home.startswith(b"rlvr.core.") and home in data
    assert pickle.loads(data) == obj
    # a pickle made before the move names the former module, and loads to the same class
    former = {b"rlvr.core.types": b"rlvr.verifiers.types", b"rlvr.core.episode": b"rlvr.envs.core"}
    old = data.replace(home, former[home])
    assert home not in old
    loaded = pickle.loads(old)
    assert type(loaded) is type(obj) and loaded == obj


def test_a_bad_task_raises_what_callers_catch_with_the_same_message():
    with pytest.raises(TaskFormatError) as raised:
        Task("", "prompt", "answer")
    error = raised.value
    assert isinstance(error, VerifierError) and isinstance(error, ValueError)
    assert isinstance(error, RlvrError)
    assert str(error) == "Task.id must be a non-empty str, got ''"
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is TaskFormatError and str(again) == str(error)


@pytest.mark.parametrize(
    ("module", "name", "builtin"),
    [
        ("rlvr.sandboxes.errors", "SandboxError", Exception),
        ("rlvr.verifiers.errors", "VerifierError", Exception),
        ("rlvr.verifiers.errors", "VerifierConfigError", ValueError),
        ("rlvr.envs.errors", "EnvError", Exception),
        ("rlvr.envs.errors", "NotTextError", TypeError),
        ("rlvr.agents.errors", "AgentError", Exception),
        ("rlvr.agents.errors", "PolicyError", RuntimeError),
        ("rlvr.leaderboards.errors", "LeaderboardError", Exception),
        ("rlvr.leaderboards.errors", "SuiteError", ValueError),
        ("rlvr.integrations.errors", "IntegrationError", Exception),
        ("rlvr.config", "ConfigError", ValueError),
        ("rlvr.core.jsonfiles", "JSONReadError", ValueError),
        ("rlvr.core.tomlfiles", "TOMLReadError", ValueError),
        ("rlvr.core.resources", "HandleClosed", RuntimeError),
        ("rlvr.families", "FamilyError", ValueError),
    ],
)
def test_every_packages_errors_derive_from_the_root_and_keep_their_bases(module, name, builtin):
    error_class = getattr(importlib.import_module(module), name)
    assert issubclass(error_class, RlvrError) and issubclass(error_class, builtin)
    error = error_class("what to do about it")
    assert str(error) == "what to do about it"
    with pytest.raises(builtin, match="^what to do about it$"):
        raise error
