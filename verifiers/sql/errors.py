"""Exceptions of `rlvr.verifiers.sql`.

Inside the SQL verifier a query's own failure is an exception that `SQLVerifier.verify` turns into
a verdict: `QueryError` and its subclasses are the submission's fault (score 0), `BackendError` is
ours (a dead database or connection: verdict status `error`, never a silent 0).
"""

from __future__ import annotations

from rlvr.verifiers.errors import TaskFormatError, VerifierConfigError, VerifierError


class SQLError(VerifierError):
    """Base class of the SQL verifier's exceptions."""


class SQLParseError(SQLError):
    """The text is not exactly one SQL statement sqlglot can parse (empty, garbled, several)."""


class UnsafeQuery(SQLError):
    """The statement is not a read-only query, or uses something a query may not (a refusal)."""


class QueryError(SQLError):
    """The database rejected or failed the query (syntax, unknown column, runtime error)."""


class QueryRefused(QueryError, UnsafeQuery):
    """The engine's own gate (SQLite authorizer, PostgreSQL privileges) refused the query."""


class QueryTimeout(QueryError):
    """The query ran past its time limit and was interrupted."""


class ResultTooLarge(QueryError):
    """The result has more rows or bytes than the configured caps."""


class BackendError(SQLError):
    """Our machinery failed: the database could not be opened, the connection died, the server is
    down. The reply cannot be judged (an infrastructure error)."""


class UnknownDatabase(SQLError, TaskFormatError, KeyError):
    """A task names a database the catalog does not have."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


__all__ = [
    "BackendError",
    "QueryError",
    "QueryRefused",
    "QueryTimeout",
    "ResultTooLarge",
    "SQLError",
    "SQLParseError",
    "UnknownDatabase",
    "UnsafeQuery",
    "VerifierConfigError",
]
