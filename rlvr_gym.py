"""verifiers' plugin module for rlvr-gym: `vf-eval rlvr-gym --env.taskset.env-id rlvr/Math-v0`.

verifiers resolves a taskset id to a top-level module exporting its `Taskset` (and here its `Env`
and harness); this one re-exports `rlvr.integrations.verifiers` (extra `verifiers-env`).
"""

from rlvr.integrations.verifiers import (
    RlvrChatHarness,
    RlvrEnv,
    RlvrEnvConfig,
    RlvrTaskset,
    RlvrTasksetConfig,
    load_environment,
)

__all__ = [
    "RlvrChatHarness",
    "RlvrEnv",
    "RlvrEnvConfig",
    "RlvrTaskset",
    "RlvrTasksetConfig",
    "load_environment",
]
