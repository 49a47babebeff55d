"""The import contracts ([tool.importlinter] in pyproject.toml: the layers, the ground package
rlvr.core on nothing else of rlvr, the envs without torch, the leaderboards on the agents'
protocol layer) hold, and `.ci/lint_imports.py`, which CI runs,
fails when one is broken.

Each test checks a copy of the project's files (a test writes only under its tmp_path), into
which the breaking tests write modules that break a rule.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.checkout import ROOT, Repository
from tests.conftest import require_extra


@pytest.fixture
def checkout(tmp_path: Path, repository: Repository) -> Path:
    """The packages, pyproject.toml and .ci/ of the project, copied under tmp_path."""
    require_extra("importlinter", "dev")
    copy = tmp_path / "checkout"
    for name in repository.files:
        # rlvr/envs, rlvr/agents, ... are links to the top-level folders: copied as links
        if name.endswith(".py") or name == "pyproject.toml" or (ROOT / name).is_symlink():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name, follow_symlinks=False)
    return copy


def lint_imports(checkout: Path) -> subprocess.CompletedProcess[str]:
    script = checkout / ".ci" / "lint_imports.py"
    command = [sys.executable, str(script), "--no-cache"]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


def test_the_project_keeps_every_import_contract(checkout):
    result = lint_imports(checkout)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 4 kept, 0 broken." in result.stdout, result.stdout
    analyzed = int(result.stdout.split("Analyzed ")[1].split(" files")[0])
    assert analyzed > 250  # the whole tree: every linked folder was followed


def test_an_import_against_the_layers_fails_the_check_naming_the_import(checkout):
    # an import inside a function counts: it runs whenever the function does
    probe = "def probe():\n    from rlvr.agents import policy\n\n    return policy\n"
    (checkout / "sandboxes" / "_layer_probe.py").write_text(probe)
    result = lint_imports(checkout)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "rlvr.sandboxes is not allowed to import rlvr.agents" in result.stdout, result.stdout
    assert "rlvr.sandboxes._layer_probe -> rlvr.agents.policy (l.2)" in result.stdout


def test_a_root_module_outside_every_layer_fails_the_check(checkout):
    (checkout / "rlvr" / "unplaced.py").write_text('"""A module no layer names."""\n')
    result = lint_imports(checkout)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "rlvr.unplaced" in result.stdout, result.stdout  # exhaustive: every module is placed


@pytest.mark.parametrize(
    ("probe", "chain"),
    [
        # an import of the layer just above, inside a function
        (
            "def probe():\n    from rlvr.sandboxes import errors\n\n    return errors\n",
            "rlvr.sandboxes.errors (l.2)",
        ),
        # a sibling of the ground (the layers contract lets ground modules import each other)
        ("from rlvr.config import ConfigError\n", "rlvr.config (l.1)"),
        # the root package, whose __init__ imports rlvr.builtin_envs
        ("import rlvr\n", "rlvr (l.1)"),
    ],
)
def test_the_ground_package_importing_any_other_rlvr_module_fails_the_check(checkout, probe, chain):
    (checkout / "rlvr" / "core" / "_ground_probe.py").write_text(probe)
    result = lint_imports(checkout)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "The ground package rlvr.core imports nothing of rlvr outside itself BROKEN" in (
        " ".join(result.stdout.split())  # the report wraps long contract names
    )
    assert "rlvr.core is not allowed to import" in result.stdout, result.stdout
    assert f"rlvr.core._ground_probe -> {chain}" in result.stdout, result.stdout


def test_the_ground_contract_forbids_every_other_module_of_the_root_package():
    # a module added to the root package must be added to the contract's forbidden list too
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    ground = next(c for c in contracts["contracts"] if c["id"] == "core-imports-nothing")
    assert ground["source_modules"] == ["rlvr.core"]
    root = ROOT / "rlvr"
    modules = {p.stem for p in root.glob("*.py") if p.stem != "__init__"}
    modules |= {p.name for p in root.iterdir() if (p / "__init__.py").is_file()}
    assert {f"rlvr.{m}" for m in modules - {"core"}} == set(ground["forbidden_modules"])


def test_torch_in_the_envs_fails_the_check_even_through_another_module(checkout):
    (checkout / "envs" / "_torch_probe.py").write_text("import rlvr.verifiers._torch_probe\n")
    (checkout / "verifiers" / "_torch_probe.py").write_text("import torch\n")
    result = lint_imports(checkout)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "rlvr.envs is not allowed to import torch" in result.stdout, result.stdout
    assert "rlvr.envs._torch_probe -> rlvr.verifiers._torch_probe" in result.stdout
    assert "rlvr.verifiers is not allowed to import torch" in result.stdout


def test_leaderboards_importing_the_trainer_fails_the_check(checkout):
    probe = "def probe():\n    from rlvr.agents.train import Trainer\n\n    return Trainer\n"
    (checkout / "leaderboards" / "_agents_probe.py").write_text(probe)
    result = lint_imports(checkout)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "rlvr.leaderboards is not allowed to import rlvr.agents.train" in result.stdout
    assert "rlvr.leaderboards._agents_probe -> rlvr.agents.train (l.2)" in result.stdout


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("train.py", "rlvr.agents.train"),  # the trainer's loop
        ("held_out.py", "rlvr.agents.held_out"),  # held-out evaluation, once the one exception
        ("cli.py", "rlvr.agents.cli"),  # `rlvr train`: rlvr.cli passes it the suite evaluator
    ],
)
def test_an_agents_module_importing_the_leaderboards_fails_the_check(checkout, module, name):
    # training on a leaderboard suite is given the leaderboards' evaluator (`SuiteEvaluator`):
    # no module of the agents may import them, not even on use
    source = checkout / "agents" / module
    probe = "\n\ndef _probe():\n    from rlvr.leaderboards import run_suite\n\n"
    probe += "    return run_suite\n"
    source.write_text(source.read_text() + probe)
    result = lint_imports(checkout)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "rlvr.agents is not allowed to import rlvr.leaderboards" in result.stdout
    assert f"{name} -> rlvr.leaderboards" in result.stdout, result.stdout


def test_the_layers_contract_declares_no_exception():
    # an excepted import (`ignore_imports`) is a debt of the layering: none is left
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c for c in contracts["contracts"] if c["id"] == "layers")
    assert "ignore_imports" not in layers
