"""Agents: the `Policy` protocol, scripted baselines, and (with the `agents` extra) LLM policies,
rollouts and learners. Importing this package does not import torch: the torch-backed names
below load their module on first use. (The functions `rlvr.agents.train.train` and
`rlvr.agents.evaluate.evaluate` live in modules of the same name; import them from there.)"""

from __future__ import annotations

import importlib
from typing import Any

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
from rlvr.agents.scripted import FixedPolicy, OraclePolicy, RandomPolicy

_LAZY = {
    "HFPolicy": "rlvr.agents.hf",
    "LoraSettings": "rlvr.agents.hf",
    "OpenAIChatPolicy": "rlvr.agents.openai_chat",
    "EnvSpec": "rlvr.agents.rollouts",
    "Episode": "rlvr.agents.rollouts",
    "RolloutCollector": "rlvr.agents.rollouts",
    "GRPOConfig": "rlvr.agents.learners.grpo",
    "PPOConfig": "rlvr.agents.learners.ppo",
    "TrainConfig": "rlvr.agents.train",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rlvr.agents' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "Completion",
    "Conversation",
    "EnvAware",
    "EnvSpec",
    "Episode",
    "FixedPolicy",
    "GRPOConfig",
    "HFPolicy",
    "LoraSettings",
    "Message",
    "OpenAIChatPolicy",
    "OraclePolicy",
    "PPOConfig",
    "Policy",
    "RandomPolicy",
    "RolloutCollector",
    "Sample",
    "SamplingParams",
    "TrainConfig",
    "TrainablePolicy",
]
