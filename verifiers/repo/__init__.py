"""Hidden-test verification of repositories (the verifier behind `rlvr/Repo-v0`).

`RepoTests` describes a repository's hidden tests (named tests of calls with expected results,
split into fail-to-pass and pass-to-pass); `RepoTestVerifier.grade(files, tests)` runs them over
a repository's files in a sandbox and compares the results on the host. `CommandTests` are the
named tests of SWE-bench-style tasks, run by pytest or unittest with weaker guarantees
(`rlvr.verifiers.repo.commands`).
"""

from rlvr.verifiers.repo.commands import CommandTests
from rlvr.verifiers.repo.spec import HiddenTest, RepoCall, RepoTests, score
from rlvr.verifiers.repo.verifier import RepoTestConfig, RepoTestVerifier

__all__ = [
    "CommandTests",
    "HiddenTest",
    "RepoCall",
    "RepoTestConfig",
    "RepoTestVerifier",
    "RepoTests",
    "score",
]
