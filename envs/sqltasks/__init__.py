"""Moved to `rlvr.envs.sql.tasks` (envs/sql/tasks/); this old path and its submodules name it."""

from rlvr.envs.moved import alias

alias(__name__, "rlvr.envs.sql.tasks")
