"""The static gate: exactly one read-only query, or a refusal.

`check_query` parses the text with sqlglot and accepts only one statement whose root is a query
(SELECT, a set operation, VALUES) and whose tree holds nothing that writes, changes the session or
reaches outside the database. It is the first of two gates: the engines enforce read-only access
again on their own (SQLite's authorizer, PostgreSQL's read-only role and transaction), so a parser
difference between sqlglot and the engine cannot open a hole on its own.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp

from rlvr.verifiers.sql.errors import SQLParseError, UnsafeQuery

MAX_SQL_CHARS = 100_000

# Node types that write data, change schema or session state, or reach the file system. Resolved
# by name so a sqlglot release without one of them still imports.
_FORBIDDEN_NODE_NAMES = (
    "Insert", "Update", "Delete", "Merge", "Create", "Drop", "Alter", "AlterTable", "TruncateTable",
    "Command", "Pragma", "Attach", "Detach", "Set", "SetItem", "Transaction", "Commit", "Rollback",
    "Copy", "Use", "LoadData", "Into", "Lock", "Analyze", "Grant", "Revoke", "Comment", "Cache",
    "Uncache", "Refresh", "Kill", "Export",
)  # fmt: skip
_FORBIDDEN_NODES = tuple(
    getattr(exp, name)
    for name in _FORBIDDEN_NODE_NAMES
    if isinstance(getattr(exp, name, None), type)
)
_QUERY_ROOTS = (exp.Select, exp.SetOperation, exp.Values, exp.Subquery)
# Functions sqlglot knows under another name than the one denied below (LPAD and RPAD parse to
# Pad, SPACE(n) is written REPEAT(' ', n) for PostgreSQL, CURRENT_VERSION() becomes VERSION()).
_DENIED_FUNCTION_NODES = tuple(
    getattr(exp, name)
    for name in ("Repeat", "Pad", "Space", "CurrentVersion")
    if isinstance(getattr(exp, name, None), type)
)

# Functions with side effects or that read outside the database (files, settings, other
# sessions, sequences), and string builders that turn a tiny query into a huge value.
_DENIED_FUNCTIONS = frozenset({
    "load_extension", "readfile", "writefile", "edit", "fts3_tokenizer", "zipfile",
    "set_config", "current_setting", "nextval", "setval", "currval", "lastval", "dblink",
    "version", "repeat", "lpad", "rpad", "zeroblob", "randomblob", "ts_stat",
})  # fmt: skip
_DENIED_PREFIXES = (
    "pg_", "lo_", "dblink_", "query_to_", "table_to_", "cursor_to_", "schema_to_", "database_to_",
    "txid_", "sqlite_", "inet_", "has_", "binary_upgrade_",
)  # fmt: skip
# A query reads its own database only: on PostgreSQL every loaded database is a schema the
# reader may use, so a qualified name could read another task's rows (or the test-suite twins).
_OWN_SCHEMAS = frozenset({"", "main"})


class _DropCommandFallbackWarning(logging.Filter):
    """sqlglot logs a warning each time it meets a statement it does not know (VACUUM, EXPLAIN);
    adversarial replies make that a flood. The refusal itself carries the information."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Falling back to parsing as a 'Command'" not in record.getMessage()


_sqlglot_logger = logging.getLogger("sqlglot")
if not any(isinstance(f, _DropCommandFallbackWarning) for f in _sqlglot_logger.filters):
    _sqlglot_logger.addFilter(_DropCommandFallbackWarning())


@dataclass(frozen=True)
class CheckedQuery:
    """A query that passed the gate: its text as written, the dialect it was read in, its tree."""

    text: str
    dialect: str
    expression: exp.Expression
    _written: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    @property
    def ordered(self) -> bool:
        """True when the query has a top-level ORDER BY (then row order is part of the answer)."""
        return has_top_level_order(self.expression)

    def transpile(self, dialect: str) -> str:
        """The query written for `dialect`, generated from the checked tree (once per dialect)."""
        if dialect not in self._written:
            try:
                self._written[dialect] = self.expression.sql(dialect=dialect)
            except Exception as exc:  # sqlglot raising on an odd tree is the query's problem
                raise SQLParseError(f"cannot translate the query to {dialect}: {exc}") from None
        return self._written[dialect]


def check_query(sql: str, dialect: str = "sqlite") -> CheckedQuery:
    """Parse `sql` and return it if it is exactly one read-only query.

    Raises `SQLParseError` (empty, unparsable, several statements) or `UnsafeQuery` (anything that
    is not a read-only query, or that calls a forbidden function or catalog).
    """
    text = (sql or "").strip()
    while text.endswith(";"):  # "SELECT 1;;" is one statement, but sqlite3 would refuse the text
        text = text[:-1].rstrip()
    if not text:
        raise SQLParseError("the reply contains no SQL")
    if len(text) > MAX_SQL_CHARS:
        raise SQLParseError(f"the SQL is {len(text)} characters long; the limit is {MAX_SQL_CHARS}")
    if "\x00" in text:
        raise SQLParseError("the SQL contains a NUL character")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise SQLParseError("the SQL contains characters that are not valid Unicode") from None
    statements = _parse(text, dialect)
    if len(statements) != 1:
        raise SQLParseError(
            f"expected exactly one SQL statement, found {len(statements)}; submit a single query"
        )
    root = statements[0]
    if not isinstance(root, _QUERY_ROOTS) or (
        isinstance(root, exp.Subquery) and not isinstance(root.unnest(), _QUERY_ROOTS)
    ):
        raise UnsafeQuery(f"only a read-only query (SELECT) is allowed, not {_describe(root)}")
    for node in root.walk():
        _check_node(node)
    return CheckedQuery(text=text, dialect=dialect, expression=root)


def has_top_level_order(expression: exp.Expr) -> bool:
    inner = expression.unnest() if isinstance(expression, exp.Subquery) else expression
    return bool(expression.args.get("order") or inner.args.get("order"))


def _parse(text: str, dialect: str) -> list[exp.Expr]:
    try:
        parsed = sqlglot.parse(text, read=dialect)
    except sqlglot.errors.SqlglotError as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SQLParseError(f"the SQL does not parse: {first_line}") from None
    except RecursionError:
        raise SQLParseError("the SQL is nested too deeply to parse") from None
    except Exception as exc:  # a third-party parser fed adversarial text: never let it escape
        raise SQLParseError(f"the SQL does not parse ({type(exc).__name__})") from None
    return [statement for statement in parsed if statement is not None]


def _check_node(node: exp.Expr) -> None:
    if isinstance(node, _FORBIDDEN_NODES):
        raise UnsafeQuery(f"{_describe(node)} is not allowed in a read-only query")
    if isinstance(node, exp.Select):
        if node.args.get("into"):
            raise UnsafeQuery("SELECT ... INTO creates a table; it is not allowed")
        if node.args.get("locks"):
            raise UnsafeQuery("locking clauses (FOR UPDATE/SHARE) are not allowed")
    if isinstance(node, exp.Func):
        name = function_name(node)
        if (
            name in _DENIED_FUNCTIONS
            or name.startswith(_DENIED_PREFIXES)
            or isinstance(node, _DENIED_FUNCTION_NODES)
        ):
            raise UnsafeQuery(f"the function {name}() is not allowed")
    if isinstance(node, exp.Table):
        schema = (node.db or "").lower()
        table = (node.name or "").lower()
        if schema == "temp" or schema.startswith("pg_") or table.startswith("pg_"):
            raise UnsafeQuery(f"the system catalog {node.sql()} is not allowed")
        if schema not in _OWN_SCHEMAS or node.catalog:
            raise UnsafeQuery(
                f"{node.sql()}: name tables without a schema; a query reads its own database only"
            )


def function_name(node: exp.Func) -> str:
    """The lower-case SQL name of a function call node (as written for unknown functions)."""
    if isinstance(node, exp.Anonymous):
        return str(node.name).lower()
    return node.sql_name().lower()


def _describe(node: exp.Expr) -> str:
    if isinstance(node, exp.Command):
        return f"the {str(node.this).upper()} command"
    if isinstance(node, exp.Column):
        return f"the bare word {node.sql()!r}"
    return f"{node.key.upper()}"
