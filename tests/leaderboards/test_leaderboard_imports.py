"""The leaderboards depend on the envs, `rlvr.rollout` and the agents' Policy protocol only
(docs/design.md): no evaluation code, policy or torch of `rlvr.agents` comes with them."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from tests.conftest import run_python

ROOT = Path(__file__).resolve().parents[2]
PROTOCOL = {"rlvr.agents.policy", "rlvr.agents.kinds"}
"""The protocol layer: the Policy protocol and the table of agent kinds (lazy builders)."""


def test_importing_every_leaderboards_module_loads_only_the_protocol_of_agents():
    code = (
        "import importlib, json, pkgutil, sys\n"
        "import rlvr.leaderboards, rlvr.rollout\n"
        "for module in pkgutil.iter_modules(rlvr.leaderboards.__path__):\n"
        "    importlib.import_module('rlvr.leaderboards.' + module.name)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('rlvr', 'torch', 'transformers'))))\n"
    )
    loaded = json.loads(run_python(code))
    assert "rlvr.leaderboards.webpage" in loaded and "rlvr.rollout" in loaded  # all were imported
    agents = {m for m in loaded if m.startswith("rlvr.agents.")}
    assert agents <= PROTOCOL, agents - PROTOCOL
    assert not [m for m in loaded if m.split(".")[0] in ("torch", "transformers")]


def test_no_leaderboards_or_rollout_code_imports_other_agents_modules_even_inside_a_function():
    files = [*sorted((ROOT / "leaderboards").glob("*.py")), ROOT / "rlvr" / "rollout.py"]
    imported = {
        (path.relative_to(ROOT).as_posix(), name)
        for path in files
        for name in _imported_modules(ast.parse(path.read_text()))
        if name == "rlvr.agents" or name.startswith("rlvr.agents.")
    }
    assert {name for _, name in imported} <= PROTOCOL, sorted(imported)
    assert ("leaderboards/runner.py", "rlvr.agents.kinds") in imported  # the check sees them


def _imported_modules(tree: ast.AST) -> list[str]:
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            names.append(node.module)
    return names
