"""Moved to `rlvr.envs.code.audit` (envs/code/audit.py); this old path names it."""

from rlvr.envs.moved import alias

alias(__name__, "rlvr.envs.code.audit")
