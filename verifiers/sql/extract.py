"""Reading the SQL out of a model's reply."""

from __future__ import annotations

import re

# A fenced block: ```sql ... ``` (any info string, or none). The closing fence may be missing at
# the very end of a reply that was cut off.
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
_SQL_LANGS = {"sql", "sqlite", "sqlite3", "postgres", "postgresql", "psql", "pgsql", "mysql"}


def extract_sql(reply: str) -> str | None:
    """The SQL in `reply`: the last ```sql fenced block, else the last fenced block of any
    language, else the whole reply. None when nothing but whitespace is left.

    The last block wins because models revise: a reply that shows a draft and then a fix means
    the fix. Only one query is ever judged, so offering several does not help a policy.
    """
    if not isinstance(reply, str):
        return None
    blocks = [(lang.lower(), body) for lang, body in _FENCE.findall(reply)]
    sql_blocks = [body for lang, body in blocks if lang in _SQL_LANGS]
    if sql_blocks:
        text = sql_blocks[-1]
    elif blocks:
        text = blocks[-1][1]
    else:
        text = reply
    text = text.strip()
    return text or None
