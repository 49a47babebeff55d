"""Families: every built-in family's descriptor is valid and owns its envs, one registry finds
them, and a bad descriptor is refused in one line naming the file and the key.
(CONTRIBUTING.md's "Adding a family", run by tests/test_docs.py, adds one end to end.)"""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import pytest

import rlvr.envs
from rlvr.builtin_envs import FAMILIES, MULTIAGENT_ENVS, SELF_CORRECT_VARIANTS
from rlvr.envs.audit import auditors
from rlvr.envs.registration import multiagent_env_ids
from rlvr.families import (
    DESCRIPTOR,
    ENVS_FOLDER,
    FamilyError,
    builtin_families,
    family_of,
    family_suites,
    load_family,
    register_family,
)
from rlvr.leaderboards import builtin_suite_names, load_suite
from tests.checkout import ROOT
from tests.conftest import run_python


@pytest.mark.parametrize("folder", FAMILIES)
def test_every_builtin_descriptor_is_valid(folder):
    family = load_family(ENVS_FOLDER / folder)
    assert family.name == folder  # the registry line, the folder and the suite share a name
    assert family.env_ids
    assert (ROOT / family.docs).is_file(), f"{folder}: docs page {family.docs} is missing"
    if family.suite is not None:
        suite = load_suite(family.name)
        assert suite.name == family.name
        assert {env.id for env in suite.envs} <= set(family.env_ids)
    for env_id, target in family.audits.items():
        assert auditors()[env_id].env_id == env_id, f"{target} audits another env"


def test_every_registered_env_belongs_to_exactly_one_family():
    ours = [i for i in gym.registry if gym.registry[i].namespace == "rlvr"]
    for env_id in [*ours, *multiagent_env_ids()]:
        owners = [family.name for family in builtin_families() if env_id in family.env_ids]
        assert len(owners) == 1, f"{env_id} belongs to {owners or 'no family'}"
    listed = [i for family in builtin_families() for i in family.env_ids]
    assert sorted(listed) == sorted({*rlvr.envs.rlvr_env_ids(), *multiagent_env_ids()})
    assert family_of("rlvr/MathSelfCorrect-v0").name == "math"


def test_the_tables_read_from_the_descriptors_keep_their_old_contents():
    assert SELF_CORRECT_VARIANTS == {
        "rlvr/Math-v0": ("rlvr/MathSelfCorrect-v0", {"feedback": "binary"}),
        "rlvr/SQL-v0": ("rlvr/SQLSelfCorrect-v0", {"feedback": "details"}),
        "rlvr/Code-v0": ("rlvr/CodeSelfCorrect-v0", {"feedback": "binary"}),
    }
    assert len(MULTIAGENT_ENVS) == 8
    spec = gym.spec("rlvr/SQLInteractive-v0")
    assert (spec.max_episode_steps, spec.kwargs) == (8, {"max_turns": 8})
    assert gym.spec("rlvr/CodeSelfCorrect-v0").kwargs == {
        "env": "rlvr/Code-v0", "max_attempts": 3, "feedback": "binary"
    }  # fmt: skip
    assert sorted(auditors()) == ["rlvr/Code-v0", "rlvr/Math-v0", "rlvr/SQL-v0"]
    assert set(family_suites()) == {"math", "sql", "code", "web", "repo"}
    assert builtin_suite_names() == ["all", "code", "demo", "math", "repo", "sql", "web"]


def test_import_rlvr_reads_no_descriptor():
    run_python(
        "import sys, rlvr\n"
        "assert 'rlvr.families' not in sys.modules and 'tomllib' not in sys.modules\n"
        "import gymnasium as gym\n"
        "assert 'rlvr/Math-v0' in gym.registry and 'rlvr.envs' not in sys.modules\n"
    )


GOOD = """
name = "coin"
suite = "suite.toml"

[[envs]]
id = "demo/Coin-v0"
entry_point = "coin.env:CoinEnv"
"""


def family_folder(tmp_path: Path, descriptor: str, suite: bool = True) -> Path:
    folder = tmp_path / "coin"
    folder.mkdir(exist_ok=True)
    (folder / DESCRIPTOR).write_text(descriptor, encoding="utf-8")
    if suite:
        (folder / "suite.toml").write_text('name = "coin"\n', encoding="utf-8")
    return folder


@pytest.mark.parametrize(
    ("descriptor", "key"),
    [
        (GOOD.replace('name = "coin"', ""), "name: missing"),
        ('colour = "red"\n' + GOOD, "the descriptor: unknown keys ['colour']"),
        (GOOD + 'colour = "red"\n', "envs[0]: unknown keys ['colour']"),
        (GOOD.replace('"demo/Coin-v0"', '"Coin"'), "envs[0].id: ids look like"),
        (GOOD.replace('"coin.env:CoinEnv"', '"coin.env"'), "envs[0].entry_point: must be"),
        (GOOD + "max_episode_steps = 0\n", "envs[0].max_episode_steps: must be an int >= 1"),
        (GOOD + "kwargs = 3\n", "envs[0].kwargs: must be a table"),
        (GOOD + 'self_correct = { id = "demo/C-v0", feedback = "loud" }\n', "feedback: must be"),
        (GOOD.replace('suite = "suite.toml"', 'suite = "none.toml"'), "suite: no file"),
        (GOOD + '[[envs]]\nid = "demo/Coin-v0"\nentry_point = "a:B"\n', "listed more than once"),
        ('name = "coin"\nenvs = 3\n', "envs: must be an array of tables"),
        ('name = "coin"\n', "envs: a family has at least one"),
        ("name = ", "cannot read it"),
        (b"\xff\xfe".decode("latin-1"), "cannot read it"),
    ],
)
def test_a_bad_descriptor_is_one_line_naming_the_file_and_the_key(tmp_path, descriptor, key):
    folder = family_folder(tmp_path, descriptor)
    with pytest.raises(FamilyError) as info:
        load_family(folder)
    message = str(info.value)
    assert message.startswith(f"{folder / DESCRIPTOR}: ") and key in message
    assert "\n" not in message


def test_a_folder_without_a_descriptor_is_named(tmp_path):
    with pytest.raises(FamilyError, match="no family descriptor"):
        load_family(tmp_path)


def test_a_registered_family_cannot_take_an_id_or_name_already_taken(tmp_path):
    taken = GOOD.replace("demo/Coin-v0", "rlvr/Math-v0")
    with pytest.raises(FamilyError, match=r"rlvr/Math-v0 is already taken by .*math"):
        register_family(family_folder(tmp_path, taken))
    with pytest.raises(FamilyError, match=r"name 'sql' is already taken"):
        register_family(family_folder(tmp_path, GOOD.replace('"coin"', '"sql"', 1)))
    assert family_of("demo/Coin-v0") is None  # nothing half-registered


def test_a_registered_family_cannot_take_a_shared_suite_name(tmp_path):
    with pytest.raises(FamilyError, match=r"name 'all' is the suite .*all.toml; rename it"):
        register_family(family_folder(tmp_path, GOOD.replace('"coin"', '"all"', 1)))
    assert load_suite("all").name == "all"


def test_a_registered_family_cannot_take_an_id_registered_another_way(tmp_path):
    from rlvr.envs import register_task_env
    from rlvr.envs.registration import _USER_ENV_IDS

    register_task_env("demo/Taken-v0", [{"prompt": "p", "answer": "a"}], lambda reply, task: True)
    try:
        descriptor = GOOD.replace("demo/Coin-v0", "demo/Taken-v0")
        with pytest.raises(FamilyError, match=r"\['demo/Taken-v0'\] already registered"):
            register_family(family_folder(tmp_path, descriptor))
        assert gym.spec("demo/Taken-v0").entry_point == "rlvr.envs.verifiable:VerifiableEnv"
        assert family_of("demo/Taken-v0") is None
    finally:  # the process's registry is shared with the other tests
        del gym.registry["demo/Taken-v0"]
        _USER_ENV_IDS.remove("demo/Taken-v0")


def test_the_audits_moved_into_their_families_keep_their_old_import_paths():
    import importlib

    moved = {"math": "rlvr/Math-v0", "sql": "rlvr/SQL-v0", "code": "rlvr/Code-v0"}
    for family, env_id in moved.items():
        target = load_family(ENVS_FOLDER / family).audits[env_id]
        module, _, name = target.partition(":")
        assert module == f"rlvr.envs.{family}.audit"
        old = importlib.import_module(f"rlvr.envs.audit.{family}")
        assert getattr(old, name) is auditors()[env_id]
