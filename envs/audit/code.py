"""The code family's audit, moved to its folder: `rlvr.envs.code.audit` (this import path keeps
working)."""

from rlvr.envs.code.audit import *  # noqa: F403
from rlvr.envs.code.audit import CodeAudit as CodeAudit

__all__ = ["CodeAudit"]
