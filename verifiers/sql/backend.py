"""What a backend is: an engine that runs one read-only query on a pristine database."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from rlvr.verifiers.sql.database import DatabaseSource
from rlvr.verifiers.sql.errors import VerifierConfigError
from rlvr.verifiers.sql.guard import CheckedQuery
from rlvr.verifiers.sql.results import QueryResult


@dataclass(frozen=True)
class Limits:
    """Bounds of one execution."""

    timeout_s: float = 2.0
    """Wall-clock limit of the query, fetching included; past it the query is interrupted."""
    max_rows: int = 10_000
    """Results with more rows are refused (`ResultTooLarge`) instead of being fetched."""
    max_result_bytes: int = 32 << 20
    """Same for the approximate size of the result."""

    def __post_init__(self) -> None:
        if not self.timeout_s > 0:
            raise VerifierConfigError(f"timeout_s must be > 0 seconds, got {self.timeout_s!r}")
        if self.max_rows < 1 or self.max_result_bytes < 1:
            raise VerifierConfigError("max_rows and max_result_bytes must be positive")


@runtime_checkable
class Backend(Protocol):
    """Runs queries for the verifier.

    `execute` runs one checked query on a pristine copy of `database` under `limits`, on a
    connection that cannot write, and returns its rows. It raises `QueryError` (or a subclass)
    when the query fails, and `BackendError` when the engine itself is unusable.
    """

    name: str
    dialect: str

    def execute(
        self, database: DatabaseSource, query: CheckedQuery, limits: Limits
    ) -> QueryResult: ...

    def run_sql(self, database: DatabaseSource, sql: str, limits: Limits) -> QueryResult:
        """Run SQL text already in the engine's dialect (the engine's own gates still apply)."""
        ...

    def close(self) -> None: ...
