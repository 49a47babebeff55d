"""Reading parts of a model's reply, in time linear in its length.

A policy can send anything, including megabytes of newlines or thousands of unclosed tags; the
obvious regular expressions (`^\\s*answer...` with MULTILINE, `<answer>(.*?)</answer>`) rescan the
rest of the reply from every line or tag and take hours on such replies. These helpers scan once.
"""

from __future__ import annotations

import re

_ANSWER_LINE = re.compile(
    r"^[ \t]*(?:final[ \t]+)?answer[ \t]*[:=][ \t]*(.*)$", re.IGNORECASE | re.MULTILINE
)
_NON_SPACE = re.compile(r"\S")


def last_answer_line(reply: str) -> str | None:
    """What follows the last `Answer: ...` (or `Final answer = ...`) line, stripped; None when
    there is no such line. An empty `Answer:` line takes the next non-empty line ("Answer:\\n42")
    and gives "" when nothing follows."""
    line = _last_match(_ANSWER_LINE, reply, len(reply))
    if line is None:
        return None
    text = line.group(1).strip()
    if text:
        return text
    following = _NON_SPACE.search(reply, line.end())
    if following is None:
        return ""
    end = reply.find("\n", following.start())
    return reply[following.start() : end if end >= 0 else len(reply)].strip()


def last_tagged(reply: str, tag: str) -> str | None:
    """The body of the last `<tag>...</tag>` block (tags matched case-insensitively), or None.

    The block ends at the last closing tag and starts at the last opening tag before it.
    """
    closing = _last_match(re.compile(f"</{re.escape(tag)}>", re.IGNORECASE), reply, len(reply))
    if closing is None:
        return None
    opening = _last_match(re.compile(f"<{re.escape(tag)}>", re.IGNORECASE), reply, closing.start())
    if opening is None:
        return None
    return reply[opening.end() : closing.start()]


def shorten(text: str, limit: int = 300) -> str:
    """`text` cut to `limit` characters with a note, for echoing a reply back to the agent."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit} more characters]"


def _last_match(pattern: re.Pattern[str], text: str, end: int) -> re.Match[str] | None:
    last = None
    for match in pattern.finditer(text, 0, end):
        last = match
    return last
