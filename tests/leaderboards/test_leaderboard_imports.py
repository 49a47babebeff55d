"""The leaderboards depend on the envs, `rlvr.rollout` and the agents' Policy protocol only
(docs/design.md): no evaluation code, policy or torch of `rlvr.agents` comes with them.

This checks what importing them loads; the imports in their code, those inside functions too, are
import-linter's to check (the contract "leaderboards-use-the-policy-table" in pyproject.toml,
tests/test_layers.py)."""

from __future__ import annotations

import json

from tests.conftest import run_python

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
