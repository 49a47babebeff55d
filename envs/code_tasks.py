"""Moved to `rlvr.envs.code.tasks` (envs/code/tasks.py); this old path names it."""

from rlvr.envs.moved import alias

alias(__name__, "rlvr.envs.code.tasks")
