"""Query results as plain data, and their text form for prompts and exploration feedback."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Union

Cell = Union[None, int, float, str, bytes]  # noqa: UP007 (a runtime alias on 3.10)


@dataclass(frozen=True)
class QueryResult:
    """Column names and rows of one executed query, every cell normalized by `normalize_cell`."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def shape(self) -> str:
        """E.g. "3 rows x 2 columns" (for feedback)."""
        rows = f"{len(self.rows)} row{'s' if len(self.rows) != 1 else ''}"
        return f"{rows} x {len(self.columns)} column{'s' if len(self.columns) != 1 else ''}"


def normalize_cell(value: Any) -> Cell:
    """One engine value as plain data, so SQLite and PostgreSQL results compare alike.

    Booleans become ints, decimals become floats, dates and times ISO text (PostgreSQL returns
    `date` objects where SQLite stores the same value as 'YYYY-MM-DD' text), binary becomes bytes.
    """
    if value is None or isinstance(value, (str, float)) or type(value) is int:
        return value
    if isinstance(value, int):  # bool and other int subclasses
        return int(value)
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, (list, dict)):
        return json.dumps(value, sort_keys=True, default=str)
    return str(value)


def cell_size(value: Cell) -> int:
    """Approximate bytes a cell holds (for the result-size cap)."""
    if isinstance(value, (str, bytes)):
        return len(value) + 8
    return 8


def format_cell(value: Cell, max_width: int) -> str:
    if value is None:
        text = "NULL"
    elif isinstance(value, bytes):
        text = f"<{len(value)} bytes>"
    elif isinstance(value, float):
        text = repr(round(value, 6)) if abs(value) < 1e15 else repr(value)
    else:
        text = str(value)
    text = text.replace("\n", " ")
    return text if len(text) <= max_width else text[: max_width - 3] + "..."


def format_table(
    columns: Sequence[str],
    rows: Iterable[Sequence[Cell]],
    *,
    max_rows: int = 20,
    max_width: int = 40,
    total: int | None = None,
) -> str:
    """Rows as a pipe-separated table, at most `max_rows` of them, with a line saying how many
    were left out (`total` is the full row count when `rows` is already cut)."""
    shown: list[Sequence[Cell]] = []
    count = 0
    for row in rows:
        count += 1
        if len(shown) < max_rows:
            shown.append(row)
    total = count if total is None else total
    lines = [" | ".join(format_cell(name, max_width) for name in columns)]
    lines += [" | ".join(format_cell(cell, max_width) for cell in row) for row in shown]
    if total > len(shown):
        lines.append(f"... ({total - len(shown)} more rows, {total} in all)")
    elif total == 0:
        lines.append("(no rows)")
    return "\n".join(lines)
