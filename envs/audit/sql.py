"""The sql family's audit, moved to its folder: `rlvr.envs.sql.audit` (this import path keeps
working)."""

from rlvr.envs.sql.audit import *  # noqa: F403
from rlvr.envs.sql.audit import SQLAudit as SQLAudit

__all__ = ["SQLAudit"]
