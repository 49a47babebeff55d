"""Agents: the `Policy` protocol, the table of agent kinds, scripted baselines, and (with the
`agents` extra) LLM policies, rollouts and learners. Importing this package imports the protocol
and the kinds' table only: every other name below loads its module on first use, so neither
torch nor a policy is imported until asked for. (The function `rlvr.agents.train.train` lives in
a module of the same name; evaluation, `rlvr.rollout.episodes.evaluate`, lives beside the episode
loop.)"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from rlvr.agents.kinds import AgentKind, make_policy, register_agent
from rlvr.agents.policy import (
    Completion,
    Conversation,
    EnvAware,
    Message,
    Policy,
    Sample,
    SamplingParams,
    TrainablePolicy,
)

if TYPE_CHECKING:
    from rlvr.agents.scripted import FixedPolicy, LegalMovePolicy, OraclePolicy, RandomPolicy

_LAZY = {
    "FixedPolicy": "rlvr.agents.scripted",
    "LegalMovePolicy": "rlvr.agents.scripted",
    "OraclePolicy": "rlvr.agents.scripted",
    "RandomPolicy": "rlvr.agents.scripted",
    "HFPolicy": "rlvr.agents.hf",
    "LoraSettings": "rlvr.agents.hf",
    "OpenAIChatPolicy": "rlvr.agents.openai_chat",
    "EnvSpec": "rlvr.agents.rollouts",
    "Episode": "rlvr.agents.rollouts",
    "RolloutCollector": "rlvr.agents.rollouts",
    "GameCollector": "rlvr.agents.selfplay",
    "SelfPlayConfig": "rlvr.agents.selfplay",
    "GRPOConfig": "rlvr.agents.learners.grpo",
    "PPOConfig": "rlvr.agents.learners.ppo",
    "RLOOConfig": "rlvr.agents.learners.rloo",
    "TrainConfig": "rlvr.agents.train_config",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rlvr.agents' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "AgentKind",
    "Completion",
    "Conversation",
    "EnvAware",
    "EnvSpec",
    "Episode",
    "FixedPolicy",
    "GRPOConfig",
    "GameCollector",
    "HFPolicy",
    "LegalMovePolicy",
    "LoraSettings",
    "Message",
    "OpenAIChatPolicy",
    "OraclePolicy",
    "PPOConfig",
    "Policy",
    "RLOOConfig",
    "RandomPolicy",
    "RolloutCollector",
    "Sample",
    "SamplingParams",
    "SelfPlayConfig",
    "TrainConfig",
    "TrainablePolicy",
    "make_policy",
    "register_agent",
]
