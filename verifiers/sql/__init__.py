"""Text-to-SQL verification by execution: `SQLVerifier` with SQLite and PostgreSQL backends.

    from rlvr.verifiers.sql import Database, SQLVerifier
    verifier = SQLVerifier({"shop": database})            # SQLite in memory by default
    verdict = verifier.verify(reply, task)                # task.answer = gold SQL,
                                                          # task.metadata["db_id"] = "shop"

The PostgreSQL backend (`rlvr.verifiers.sql.postgres.PostgresBackend`) needs the `postgres`
extra and is imported only when used. See docs/sql.md.
"""

from typing import Any

from rlvr.verifiers.sql.backend import Backend, Limits
from rlvr.verifiers.sql.catalog import Catalog, FolderCatalog
from rlvr.verifiers.sql.compare import Comparison, Tolerance, compare_results
from rlvr.verifiers.sql.database import Column, Database, DatabaseSource, SQLiteFile, Table
from rlvr.verifiers.sql.errors import (
    BackendError,
    QueryError,
    QueryRefused,
    QueryTimeout,
    ResultTooLarge,
    SQLError,
    SQLParseError,
    UnknownDatabase,
    UnsafeQuery,
    VerifierConfigError,
)
from rlvr.verifiers.sql.extract import extract_sql
from rlvr.verifiers.sql.guard import CheckedQuery, check_query
from rlvr.verifiers.sql.results import QueryResult, format_table
from rlvr.verifiers.sql.sqlite import SQLiteBackend
from rlvr.verifiers.sql.verifier import SQLVerifier, SQLVerifierConfig


def make_backend(name: str = "sqlite", **kwargs: Any) -> Backend:
    """A backend by name: "sqlite" (default) or "postgres" (kwargs go to its constructor)."""
    if name == "sqlite":
        return SQLiteBackend(**kwargs)
    if name in ("postgres", "postgresql"):
        from rlvr.verifiers.sql.postgres import PostgresBackend

        return PostgresBackend(**kwargs)
    raise VerifierConfigError(f"unknown SQL backend {name!r}; use 'sqlite' or 'postgres'")


__all__ = [
    "Backend",
    "BackendError",
    "Catalog",
    "CheckedQuery",
    "Column",
    "Comparison",
    "Database",
    "DatabaseSource",
    "FolderCatalog",
    "Limits",
    "QueryError",
    "QueryRefused",
    "QueryResult",
    "QueryTimeout",
    "ResultTooLarge",
    "SQLError",
    "SQLParseError",
    "SQLVerifier",
    "SQLVerifierConfig",
    "SQLiteBackend",
    "SQLiteFile",
    "Table",
    "Tolerance",
    "UnknownDatabase",
    "UnsafeQuery",
    "check_query",
    "compare_results",
    "extract_sql",
    "format_table",
    "make_backend",
]
