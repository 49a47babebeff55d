"""Moved to `rlvr.envs.sql.audit` (envs/sql/audit.py); this old path names it."""

from rlvr.envs.moved import alias

alias(__name__, "rlvr.envs.sql.audit")
