"""`rlvr/Repo-v0`: an agentic coding environment (docs/repo.md).

A repository in a sandboxed workspace, an issue, tools (a shell, file edits, the repository's
tests, submit) and hidden tests that grade the final files. The pieces:

- `env` (`RepoEnv`, `RepoJudge`, `RepoSession`): the env, its judge and its interaction;
- `generator` and `templates`: procedural repositories with bugs injected by AST mutations
  (`mutations`), verified to break hidden tests that the reference fix restores;
- `workspace` (`Workspace`): an episode's files, run in a fresh sandbox run per command;
- `tools` (`RepoTools`), `patches` (unified diffs), `task` (`RepoTask`, the task format),
  `swebench` (a loader for SWE-bench-style JSONL).

The hidden-test verifier lives with the other verifiers: `rlvr.verifiers.repo`.
"""

from rlvr.envs.repo.env import RepoEnv, RepoJudge, RepoSession
from rlvr.envs.repo.generator import RepoGenerator
from rlvr.envs.repo.swebench import load_swebench_style
from rlvr.envs.repo.task import RepoTask
from rlvr.envs.repo.workspace import Workspace, WorkspaceLimits

__all__ = [
    "RepoEnv",
    "RepoGenerator",
    "RepoJudge",
    "RepoSession",
    "RepoTask",
    "Workspace",
    "WorkspaceLimits",
    "load_swebench_style",
]
