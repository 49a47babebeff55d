"""Agents: the `Policy` protocol, scripted baselines, and (with the `agents` extra) LLM policies
and learners. Importing this package does not import torch."""

from rlvr.agents.policy import Completion, Conversation, EnvAware, Message, Policy, SamplingParams
from rlvr.agents.scripted import FixedPolicy, OraclePolicy, RandomPolicy

__all__ = [
    "Completion",
    "Conversation",
    "EnvAware",
    "FixedPolicy",
    "Message",
    "OraclePolicy",
    "Policy",
    "RandomPolicy",
    "SamplingParams",
]
