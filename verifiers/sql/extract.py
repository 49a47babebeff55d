"""Reading the SQL out of a model's reply."""

from __future__ import annotations

import re

_LANGUAGE = re.compile(r"[ \t]*([A-Za-z0-9_+-]*)")
_SQL_LANGS = {"sql", "sqlite", "sqlite3", "postgres", "postgresql", "psql", "pgsql", "mysql"}


def extract_sql(reply: str) -> str | None:
    """The SQL in `reply`: the last ```sql fenced block, else the last fenced block of any
    language, else the whole reply. None when nothing but whitespace is left.

    The last block wins because models revise: a reply that shows a draft and then a fix means
    the fix. Only one query is ever judged, so offering several does not help a policy.
    """
    if not isinstance(reply, str):
        return None
    blocks = fenced_blocks(reply)
    sql_blocks = [body for lang, body in blocks if lang in _SQL_LANGS]
    if sql_blocks:
        text = sql_blocks[-1]
    elif blocks:
        text = blocks[-1][1]
    else:
        text = reply
    text = text.strip()
    return text or None


def fenced_blocks(reply: str) -> list[tuple[str, str]]:
    """(language, body) of each ```fenced``` block, in order: the opening fence's line names the
    language, the body runs to the next ``` or, in a reply cut off, to the end.

    A scan with `str.find`, in time linear in the reply: a regular expression for the same blocks
    backtracks quadratically on a reply made of fences without newlines.
    """
    blocks = []
    position = 0
    while (start := reply.find("```", position)) >= 0:
        newline = reply.find("\n", start + 3)
        if newline < 0:
            break
        match = _LANGUAGE.match(reply, start + 3, newline)  # matches any text
        language = match.group(1).lower() if match else ""
        end = reply.find("```", newline + 1)
        if end < 0:
            blocks.append((language, reply[newline + 1 :]))
            break
        blocks.append((language, reply[newline + 1 : end]))
        position = end + 3
    return blocks
