"""`TrainablePolicy`: HFPolicy satisfies it, and it lists exactly what the rollout collector, the
learners and the trainer call on a policy (read from their source)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from rlvr.agents import FixedPolicy
from rlvr.agents.policy import Policy, TrainablePolicy
from tests.conftest import require_extra

AGENTS = Path(__file__).resolve().parents[2] / "agents"
USERS = [
    "rollouts.py",
    "learners/common.py",
    "learners/grpo.py",
    "learners/ppo.py",
    "train.py",
    "checkpoints.py",
    "held_out.py",
]


def members(protocol: type) -> set[str]:
    return {name for name in vars(protocol) if not name.startswith("_")}


def used_on_policies(source: str) -> set[str]:
    """`x` of every `policy.x` and `<anything>.policy.x` in `source`."""
    used = set()
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute):
            continue
        owner = node.value
        if (isinstance(owner, ast.Name) and owner.id == "policy") or (
            isinstance(owner, ast.Attribute) and owner.attr == "policy"
        ):
            used.add(node.attr)
    return used


def test_the_protocol_lists_exactly_what_the_learners_and_the_collector_use():
    used = set().union(*(used_on_policies((AGENTS / name).read_text()) for name in USERS))
    # The trainer also evaluates the policy (`evaluate(env_id, policy)` in its held-out
    # evaluation), which calls `generate`: that part is the `Policy` protocol, which
    # `TrainablePolicy` extends.
    assert "evaluate(" in (AGENTS / "held_out.py").read_text()
    assert issubclass(TrainablePolicy, Policy)
    assert members(TrainablePolicy) == used
    assert members(Policy) == {"generate"}


def test_every_member_is_documented():
    for name in members(TrainablePolicy):
        assert inspect.getdoc(getattr(TrainablePolicy, name)), name


def test_hf_policy_is_a_trainable_policy_and_a_scripted_one_is_not(tiny_path):
    require_extra("torch", "agents")
    from rlvr.agents.hf import HFPolicy

    assert isinstance(HFPolicy(tiny_path), TrainablePolicy)
    assert not isinstance(FixedPolicy("42"), TrainablePolicy)  # generates text only
    assert isinstance(FixedPolicy("42"), Policy)
