"""Leaderboards: benchmark agents on pinned suites, store the results, publish a page.

    from rlvr.leaderboards import load_suite, run_suite, ResultStore
    result = run_suite(load_suite("math"), "oracle")
    with ResultStore("results.sqlite") as store:
        store.add(result)

Depends on the envs and the agents' `Policy` protocol only (never on torch).
"""

from rlvr.leaderboards.arena import ArenaResult, ArenaSuite, load_arena, run_arena
from rlvr.leaderboards.compare import check_comparable, differences, rank, stale_results
from rlvr.leaderboards.errors import (
    InvalidResultError,
    LeaderboardError,
    NotComparableError,
    ResultFileError,
    ReverifyError,
    StoreError,
    SuiteError,
)
from rlvr.leaderboards.results import BenchResult, EnvResult
from rlvr.leaderboards.runner import reverify, run_suite
from rlvr.leaderboards.store import ResultStore, default_db_path
from rlvr.leaderboards.suites import Suite, SuiteEnv, builtin_suite_names, load_suite, parse_suite

__all__ = [
    "ArenaResult",
    "ArenaSuite",
    "BenchResult",
    "EnvResult",
    "InvalidResultError",
    "LeaderboardError",
    "NotComparableError",
    "ResultFileError",
    "ResultStore",
    "ReverifyError",
    "StoreError",
    "Suite",
    "SuiteEnv",
    "SuiteError",
    "builtin_suite_names",
    "check_comparable",
    "default_db_path",
    "differences",
    "load_arena",
    "load_suite",
    "parse_suite",
    "rank",
    "reverify",
    "run_arena",
    "run_suite",
    "stale_results",
]
