"""Databases a verifier runs queries against.

Two kinds:

- `Database`: a whole database as data (tables, typed columns, keys, rows). Procedural task
  generators build these; any backend can load one (SQLite in memory, a PostgreSQL schema).
- `SQLiteFile`: a SQLite file from a dataset (Spider, BIRD). SQLite opens it read-only; for
  PostgreSQL it is read into a `Database` first.

Both describe themselves for a prompt (`describe`: CREATE statements, optionally sample rows) and
carry a `fingerprint` of their content, under which backends and the gold cache file them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import hashlib
import re
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Union

from rlvr.verifiers.sql.errors import BackendError, VerifierConfigError
from rlvr.verifiers.sql.results import Cell, format_table, normalize_cell

COLUMN_TYPES = ("INTEGER", "REAL", "TEXT", "DATE")
_ENGINE_TYPES = {
    "sqlite": {"INTEGER": "INTEGER", "REAL": "REAL", "TEXT": "TEXT", "DATE": "DATE"},
    "postgres": {"INTEGER": "BIGINT", "REAL": "DOUBLE PRECISION", "TEXT": "TEXT", "DATE": "DATE"},
}
_SIMPLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_FILE_HASHES: dict[tuple[str, int, int], str] = {}  # (path, size, mtime) -> content hash
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
# Words that cannot stand unquoted as a table or column name in SQLite or PostgreSQL.
_RESERVED_WORDS = """
    all analyse analyze and any array as asc asymmetric both case cast check collate column
    constraint create current_date current_role current_time current_timestamp current_user default
    deferrable desc distinct do else end except false fetch for foreign from grant group having in
    initially intersect into lateral leading limit localtime localtimestamp not null offset on only
    or order placing primary references returning select session_user some symmetric table then to
    trailing true union unique user using variadic when where window with index key values"""
_RESERVED = frozenset(_RESERVED_WORDS.split())


def quote_identifier(name: str) -> str:
    """`name` as SQL: bare when it is a plain, non-reserved word (PostgreSQL folds it to lower
    case on both sides, as a model writing `student` for `Student` expects), else double-quoted."""
    if _SIMPLE_NAME.fullmatch(name) and name.lower() not in _RESERVED:
        return name
    return '"' + name.replace('"', '""') + '"'


@dataclass(frozen=True)
class Column:
    """One column: `type` is one of INTEGER, REAL, TEXT, DATE (dates are 'YYYY-MM-DD' text)."""

    name: str
    type: str
    primary_key: bool = False
    not_null: bool = False
    references: tuple[str, str] | None = None
    """(table, column) this column is a foreign key to, or None."""

    def __post_init__(self) -> None:
        if self.type not in COLUMN_TYPES:
            raise VerifierConfigError(
                f"column {self.name!r}: type must be one of {COLUMN_TYPES}, got {self.type!r}"
            )


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    rows: tuple[tuple[Cell, ...], ...] = ()

    def __post_init__(self) -> None:
        width = len(self.columns)
        for number, row in enumerate(self.rows):
            if len(row) != width:
                raise VerifierConfigError(
                    f"table {self.name!r}: row {number} has {len(row)} values for {width} columns"
                )

    def create_statement(
        self, dialect: str = "sqlite", *, constraints: bool = True, primary_key: bool | None = None
    ) -> str:
        """CREATE TABLE for `dialect`; `constraints=False` leaves out keys (to load messy data),
        except the primary key when `primary_key` is True."""
        types = _ENGINE_TYPES[_engine(dialect)]
        with_key = constraints if primary_key is None else primary_key
        keys = [column for column in self.columns if column.primary_key and with_key]
        lines = []
        for column in self.columns:
            line = f"  {quote_identifier(column.name)} {types[column.type]}"
            if column.primary_key and len(keys) == 1:
                line += " PRIMARY KEY"
            elif column.not_null and constraints:
                line += " NOT NULL"
            lines.append(line)
        if len(keys) > 1:
            lines.append(f"  PRIMARY KEY ({', '.join(quote_identifier(c.name) for c in keys)})")
        for column in self.columns:
            if column.references is not None and constraints:
                table, target = column.references
                lines.append(
                    f"  FOREIGN KEY ({quote_identifier(column.name)}) REFERENCES "
                    f"{quote_identifier(table)} ({quote_identifier(target)})"
                )
        return f"CREATE TABLE {quote_identifier(self.name)} (\n" + ",\n".join(lines) + "\n)"

    def key_holds(self) -> bool:
        """True when the rows satisfy the primary key (unique, no NULLs), or there is none."""
        positions = [i for i, column in enumerate(self.columns) if column.primary_key]
        keys = [tuple(row[i] for i in positions) for row in self.rows]
        return not any(None in key for key in keys) and len(set(keys)) == len(keys)


@dataclass(frozen=True)
class Database:
    """A database as data. `id` names it in task metadata; its content decides `fingerprint`."""

    id: str
    tables: tuple[Table, ...]
    enforce_constraints: bool = True
    """False for data read from a dataset file, whose keys SQLite never checked."""

    def __post_init__(self) -> None:
        names = [table.name.lower() for table in self.tables]
        if not self.tables or len(set(names)) != len(names):
            raise VerifierConfigError(f"database {self.id!r} needs tables with distinct names")

    @cached_property
    def fingerprint(self) -> str:
        digest = hashlib.blake2b(digest_size=16)
        for table in self.tables:
            digest.update(repr((table.name, table.columns, table.rows)).encode("utf-8"))
        return digest.hexdigest()

    def table(self, name: str) -> Table:
        for table in self.tables:
            if table.name == name:
                return table
        raise KeyError(f"database {self.id!r} has no table {name!r}")

    def create_statements(self, dialect: str = "sqlite") -> list[str]:
        # A dataset's primary keys are kept where its rows satisfy them: PostgreSQL then allows
        # `GROUP BY t.id` with t's other columns selected, as SQLite (and Spider's gold) does.
        return [
            t.create_statement(
                dialect,
                constraints=self.enforce_constraints,
                primary_key=self.enforce_constraints or t.key_holds(),
            )
            for t in self.tables
        ]

    def describe(self, sample_rows: int = 0) -> str:
        samples = [(t.name, [c.name for c in t.columns], t.rows[:sample_rows]) for t in self.tables]
        return _describe(self.create_statements(), samples if sample_rows > 0 else [])

    def to_database(self) -> Database:
        return self


@dataclass(frozen=True)
class SQLiteFile:
    """A SQLite database file from a dataset, opened read-only."""

    id: str
    path: Path
    _structure: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", Path(self.path))

    @property
    def fingerprint(self) -> str:
        """A hash of the file's bytes, computed again when its path, size or modification time
        changes: a file edited in place gets a new fingerprint, and copies of a dataset share
        one (so a PostgreSQL server keeps one schema per database, not one per copy)."""
        try:
            stat = self.path.stat()
            key = (str(self.path.resolve()), stat.st_size, stat.st_mtime_ns)
            if key not in _FILE_HASHES:
                digest = hashlib.blake2b(digest_size=16)
                with open(self.path, "rb") as file:
                    while chunk := file.read(1 << 20):
                        digest.update(chunk)
                _FILE_HASHES[key] = digest.hexdigest()
        except OSError as exc:
            raise BackendError(f"database {self.id!r}: cannot read {self.path}: {exc}") from None
        return _FILE_HASHES[key]

    @property
    def uri(self) -> str:
        """The SQLite URI that opens the file read-only."""
        return f"{self.path.resolve().as_uri().replace('file://', 'file:', 1)}?mode=ro"

    def connect(self) -> sqlite3.Connection:
        """A read-only connection to the file (no authorizer: for our own trusted reads)."""
        if not self.path.is_file():
            raise BackendError(f"database {self.id!r}: no such file {self.path}")
        try:
            connection = sqlite3.connect(self.uri, uri=True, check_same_thread=False)
            connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.Error as exc:
            raise BackendError(f"database {self.id!r}: cannot open {self.path}: {exc}") from None
        return connection

    @contextlib.contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """A read-only connection; a file that breaks while being read is a `BackendError`."""
        connection = self.connect()
        try:
            yield connection
        except sqlite3.Error as exc:
            raise BackendError(f"database {self.id!r}: cannot read {self.path}: {exc}") from None
        finally:
            connection.close()

    def describe(self, sample_rows: int = 0) -> str:
        with self._reading() as connection:
            tables = _user_tables(connection)
            statements = [sql for _, sql in tables]
            samples = []
            if sample_rows > 0:
                for name, _ in tables:
                    cursor = connection.execute(
                        f"SELECT * FROM {quote_identifier(name)} LIMIT {int(sample_rows)}"
                    )
                    columns = [d[0] for d in cursor.description]
                    rows = [tuple(normalize_cell(v) for v in row) for row in cursor.fetchall()]
                    samples.append((name, columns, rows))
        return _describe(statements, samples)

    def to_database(self) -> Database:
        """The whole file as a `Database` (to load it into another engine). A column whose values
        do not all fit its declared type is loaded as TEXT, as SQLite itself would have allowed."""
        with self._reading() as connection:
            tables = [_read_table(connection, name) for name, _ in _user_tables(connection)]
        return Database(self.id, _reconcile_keys(tables), enforce_constraints=False)


DatabaseSource = Union[Database, SQLiteFile]  # noqa: UP007 (a runtime alias on 3.10)


# --- helpers ----------------------------------------------------------------------------------


def _engine(dialect: str) -> str:
    engine = "postgres" if dialect in ("postgres", "postgresql") else dialect
    if engine not in _ENGINE_TYPES:
        raise VerifierConfigError(f"unknown engine dialect {dialect!r}; use 'sqlite' or 'postgres'")
    return engine


def _describe(statements: Sequence[str], samples: Sequence[tuple[str, list[str], Sequence]]) -> str:
    parts = [statement.rstrip(";") + ";" for statement in statements]
    for name, columns, rows in samples:
        if rows:
            table = format_table(columns, rows, max_rows=len(rows), max_width=30, total=len(rows))
            parts.append(f"/* {len(rows)} example rows from {name}:\n{table}\n*/")
    return "\n\n".join(parts)


def _user_tables(connection: sqlite3.Connection) -> list[tuple[str, str]]:
    return connection.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND sql IS NOT NULL "
        "AND name NOT LIKE 'sqlite_%' ORDER BY rowid"
    ).fetchall()


def _affinity(declared: str) -> str:
    """SQLite's type affinity of a declared column type: INTEGER, TEXT, BLOB, REAL or NUMERIC."""
    declared = declared.upper()
    if "INT" in declared:
        return "INTEGER"
    if any(word in declared for word in ("CHAR", "CLOB", "TEXT")):
        return "TEXT"
    if "BLOB" in declared or not declared:
        return "BLOB"
    if any(word in declared for word in ("REAL", "FLOA", "DOUB")):
        return "REAL"
    return "NUMERIC"


def _column_type(declared: str, values: list[Any]) -> str:
    """One of our four types for a column of a SQLite file: the narrowest its values fit, in the
    direction its affinity leans. SQLite stores what it is given; a column declared `bool`,
    `year` or `numeric(10,2)` (NUMERIC affinity) holding numbers stays numeric, and a column
    holding anything else becomes TEXT."""
    affinity = _affinity(declared)
    if "DATE" in declared.upper() and all(_fits("DATE", value) for value in values):
        return "DATE"
    if affinity == "TEXT":
        return "TEXT"
    candidates = ("REAL",) if affinity == "REAL" else ("INTEGER", "REAL")
    for column_type in candidates:
        if all(_fits(column_type, value) for value in values):
            return column_type
    return "TEXT"


def _fits(column_type: str, value: Any) -> bool:
    if value is None:
        return True
    if column_type == "INTEGER":
        return isinstance(value, int) and -(2**63) <= value < 2**63
    if column_type == "REAL":
        return isinstance(value, (int, float))
    if column_type == "DATE":
        return isinstance(value, str) and _is_iso_date(value)
    return isinstance(value, str)


def _is_iso_date(text: str) -> bool:
    if not _ISO_DATE.fullmatch(text):  # fromisoformat also takes "20240105", "2024-W01-1"
        return False
    try:
        dt.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _read_table(connection: sqlite3.Connection, name: str) -> Table:
    quoted = quote_identifier(name)
    info = connection.execute(f"PRAGMA table_info({quoted})").fetchall()
    foreign = {
        row[3]: (row[2], row[4]) for row in connection.execute(f"PRAGMA foreign_key_list({quoted})")
    }
    rows = [
        tuple(normalize_cell(v) for v in row)
        for row in connection.execute(f"SELECT * FROM {quoted}")
    ]
    keys = [row for row in info if row[5]]
    columns = []
    for position, (_, column_name, declared, not_null, _, pk) in enumerate(info):
        column_type = _column_type(declared or "", [row[position] for row in rows])
        if not all(_fits(column_type, row[position]) for row in rows):
            rows = [
                (*row[:position], _as_text(row[position]), *row[position + 1 :]) for row in rows
            ]
        target = foreign.get(column_name)
        columns.append(
            Column(
                column_name,
                column_type,
                primary_key=bool(pk) and len(keys) >= 1,
                not_null=bool(not_null),
                references=(target[0], target[1] or column_name) if target else None,
            )
        )
    return Table(name, tuple(columns), tuple(rows))


def _as_text(value: Cell) -> Cell:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


_INTEGER_TEXT = re.compile(r"[+-]?\d+")


def _reconcile_keys(tables: list[Table]) -> tuple[Table, ...]:
    """Give a TEXT column the INTEGER type of the key it references (or that references it) when
    all its values are integers written as text. Spider declares some foreign keys `text` against
    `int` keys; SQLite compares them as numbers, PostgreSQL would refuse the join."""
    by_name = {table.name.lower(): table for table in tables}
    retype: dict[tuple[str, str], bool] = {}
    for table in tables:
        for column in table.columns:
            if column.references is None:
                continue
            target_table = by_name.get(column.references[0].lower())
            target = _column_named(target_table, column.references[1]) if target_table else None
            if target_table is None or target is None:
                continue
            if {column.type, target.type} != {"TEXT", "INTEGER"}:
                continue
            text_table, text_column = (
                (table, column) if column.type == "TEXT" else (target_table, target)
            )
            retype[(text_table.name, text_column.name)] = True
    result = []
    for table in tables:
        positions = [
            i for i, c in enumerate(table.columns) if (table.name, c.name) in retype
            and all(v is None or (isinstance(v, str) and _INTEGER_TEXT.fullmatch(v)
                                  and _fits("INTEGER", int(v)))
                    for v in (row[i] for row in table.rows))
        ]  # fmt: skip
        if not positions:
            result.append(table)
            continue
        columns = tuple(
            dataclasses.replace(c, type="INTEGER") if i in positions else c
            for i, c in enumerate(table.columns)
        )
        rows = tuple(
            tuple(int(v) if i in positions and v is not None else v for i, v in enumerate(row))
            for row in table.rows
        )
        result.append(Table(table.name, columns, rows))
    return tuple(result)


def _column_named(table: Table, name: str) -> Column | None:
    return next((c for c in table.columns if c.name.lower() == name.lower()), None)
