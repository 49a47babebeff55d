"""Moved to `rlvr.envs.sql.interactive` (envs/sql/interactive.py); this old path names it."""

from rlvr.envs.moved import alias

alias(__name__, "rlvr.envs.sql.interactive")
