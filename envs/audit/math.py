"""Moved to `rlvr.envs.math.audit` (envs/math/audit.py); this old path names it."""

from rlvr.envs.moved import alias

alias(__name__, "rlvr.envs.math.audit")
