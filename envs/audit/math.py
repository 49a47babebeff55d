"""The math family's audit, moved to its folder: `rlvr.envs.math.audit` (this import path keeps
working)."""

from rlvr.envs.math.audit import *  # noqa: F403
from rlvr.envs.math.audit import MathAudit as MathAudit

__all__ = ["MathAudit"]
