"""Families: every built-in family's descriptor is valid and owns its envs, one registry finds
them, and a bad descriptor is refused in one line naming the file and the key.
(CONTRIBUTING.md's "Adding a family", run by tests/test_docs.py, adds one end to end.)"""

from __future__ import annotations

import ast
import importlib
import inspect
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
    SELF_CORRECT_ENTRY_POINT,
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


# --- a family's files sit in its folder ----------------------------------------------------------
# The rule: every module a descriptor names (entry points, audits) is defined in that family's
# folder; outside the family folders, no module of envs/ imports a family's module when it loads,
# unless it is an old import path kept as an alias (`rlvr.envs.moved.alias`) of a module in the
# family's folder; and nothing at the top of envs/ carries a family's name but such an alias.

MOVED = {
    "rlvr.envs.sql_interactive": "rlvr.envs.sql.interactive",
    "rlvr.envs.sqltasks": "rlvr.envs.sql.tasks",
    "rlvr.envs.sqltasks.domains": "rlvr.envs.sql.tasks.domains",
    "rlvr.envs.sqltasks.generate": "rlvr.envs.sql.tasks.generate",
    "rlvr.envs.sqltasks.loaders": "rlvr.envs.sql.tasks.loaders",
    "rlvr.envs.sqltasks.questions": "rlvr.envs.sql.tasks.questions",
    "rlvr.envs.code_tasks": "rlvr.envs.code.tasks",
    "rlvr.envs.audit.math": "rlvr.envs.math.audit",
    "rlvr.envs.audit.sql": "rlvr.envs.sql.audit",
    "rlvr.envs.audit.code": "rlvr.envs.code.audit",
}


def _inside(path: str | Path, folder: Path) -> bool:
    return Path(path).resolve().is_relative_to(folder.resolve())


def _family_folders() -> dict[str, Path]:
    return {family.name: family.folder for family in builtin_families()}


def _outside_family_folders() -> list[Path]:
    folders = _family_folders().values()
    return [
        path
        for path in sorted(ENVS_FOLDER.resolve().rglob("*.py"))
        if not any(_inside(path, folder) for folder in folders)
    ]


def _module_name(path: Path) -> str:
    parts = path.relative_to(ENVS_FOLDER.resolve()).with_suffix("").parts
    return ".".join(("rlvr.envs", *(parts[:-1] if parts[-1] == "__init__" else parts)))


def _load_time_imports(tree: ast.Module) -> list[str]:
    """The modules a file imports when it loads (not in functions, not under TYPE_CHECKING)."""
    names, todo = [], list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
        elif isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.unparse(node.test):
            todo += [*node.body, *node.orelse]
        elif isinstance(node, ast.Try):
            todo += [*node.body, *node.orelse, *node.finalbody]
    return names


def _aliased(tree: ast.Module) -> list[str]:
    """The new paths a shim's `alias(__name__, "new.path")` calls name."""
    return [
        node.args[1].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and getattr(node.func, "id", None) == "alias"
        and len(node.args) == 2
        and isinstance(node.args[1], ast.Constant)
    ]


def _family_of_module(name: str) -> str | None:
    parts = name.split(".")
    if parts[:2] != ["rlvr", "envs"] or len(parts) < 3:
        return None
    return parts[2] if parts[2] in _family_folders() else None


def test_every_module_a_descriptor_names_is_defined_in_its_family_folder():
    for family in builtin_families():
        targets = [
            entry.entry_point
            for entry in (*family.envs, *family.multiagent_envs)
            if entry.entry_point != SELF_CORRECT_ENTRY_POINT  # shared by every family, on purpose
        ]
        for target in [*targets, *family.audits.values()]:
            module, _, attribute = target.partition(":")
            assert _family_of_module(module) == family.name, f"{family.name}: {target}"
            defined_in = inspect.getfile(getattr(importlib.import_module(module), attribute))
            assert _inside(defined_in, family.folder), (
                f"{family.name}: {target} is defined in {defined_in}, outside {family.folder}"
            )


def test_no_module_outside_the_family_folders_loads_a_family_but_an_old_path_alias():
    for path in _outside_family_folders():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        loaded = [name for name in _load_time_imports(tree) if _family_of_module(name)]
        assert not loaded, (
            f"{path} imports {loaded} when it loads: move it into the family's folder, or make "
            "it an old path's alias (rlvr.envs.moved.alias)"
        )
        for new in _aliased(tree):
            family = _family_of_module(new)
            assert family, f"{path}: an alias of {new}, which is in no family's folder"
            old = importlib.import_module(_module_name(path))
            assert old is importlib.import_module(new)
            assert _inside(old.__file__ or "", _family_folders()[family])


def test_nothing_at_the_top_of_envs_carries_a_family_name_but_an_old_path_alias():
    folders = _family_folders()
    for path in sorted(ENVS_FOLDER.iterdir()):
        owner = next((n for n in folders if path.name.startswith(n) and path.name != n), None)
        if owner is None or path.name == "__pycache__":
            continue
        shim = path / "__init__.py" if path.is_dir() else path
        contents = sorted(p.name for p in path.iterdir()) if path.is_dir() else []
        others = [name for name in contents if name not in ("__init__.py", "__pycache__")]
        assert shim.suffix == ".py" and not others, (
            f"{path.name} belongs in envs/{owner}/ (an old import path stays as one alias module)"
        )
        assert _aliased(ast.parse(shim.read_text(encoding="utf-8"))), (
            f"{path.name}: move its code into envs/{owner}/ and leave an alias here"
        )


def test_the_moved_modules_keep_their_old_import_paths_as_the_same_modules():
    # a fresh interpreter, the old paths imported first, as a program written before the move does
    run_python(
        "import importlib, pickle\n"
        f"moved = {MOVED!r}\n"
        "for old, new in moved.items():\n"
        "    module = importlib.import_module(old)\n"
        "    assert module is importlib.import_module(new), old\n"
        "from rlvr.envs.sqltasks.generate import SQLTasks as Old\n"
        "from rlvr.envs.sql.tasks import SQLTasks, procedural_tasks\n"
        "tasks = procedural_tasks(split='train', difficulty=1, seed=0)\n"
        "assert Old is SQLTasks and isinstance(tasks, Old)\n"
        # a pickle written before the move names the class by its old module
        "assert pickle.loads(b'crlvr.envs.sqltasks.generate\\nSQLTasks\\n.') is SQLTasks\n"
        "from rlvr.envs.code_tasks import PROBLEMS\n"  # a module attribute read on first use
        "from rlvr.envs.code.tasks import builtin_tasks\n"
        "assert [p.task().id for p in PROBLEMS] == [t.id for t in builtin_tasks()]\n"
    )
