"""Does a proposal's spec give its reference away? (`rlvr/CodeProposerSolver-v1`)

The reference and the text the solvers see (the spec, and the signature's defaults and
annotations) are compared as streams of Python tokens in a normal form, so that no rewrite that
keeps the code the same code hides it:

- the text is NFKC-normalised (look-alike letters read as the letters they stand for) and
  invisible format characters (zero-width spaces and joiners) are dropped;
- whitespace, line breaks, indentation, comments and round brackets are ignored;
- strings and numbers are compared by value: quote style, string prefixes and escapes,
  `1_000` or `1e3` against `1000.0` make no difference (exact types: `1` is not `1.0`);
- names are compared up to a consistent renaming (`total += x` is `acc += item`), keywords
  exactly;
- a string in the spec is also read as code (a statement in quotes is still a statement).

The spec gives the reference away when it writes a `def` of the entry point, or contains any
run of `MIN_LEAK_TOKENS` consecutive tokens of the reference's code (imports, docstrings and the
entry point's own header aside: the header is shown anyway), up to renaming, unless the run
is only names and `,` `.` `:` `;` (a list of words is prose, whatever its words are named): it
needs a keyword, another operator, a square or curly bracket, a number or a string.
"""

from __future__ import annotations

import ast
import io
import keyword
import re
import tokenize
import unicodedata
from collections.abc import Iterable, Iterator

MIN_LEAK_TOKENS = 8

Token = tuple[str, str]  # (kind, normal text): kind "name", "keyword", "number", "string", "op"
_PROSE = {",", ".", ":", ";"}
_IGNORED = {"(", ")"}
# Python's operators, longest first.
_OPERATOR = r"\*\*=?|//=?|>>=?|<<=?|->|:=|[-+*/%@&|^=<>!]=|[-+*/%@&|^~<>=.,:;\[\]{}()]"
_SPEC_TOKEN = re.compile(
    r"(?P<string>(?:[rRbBuUfF]{1,2})?(?:'[^'\n]*'|\"[^\"\n]*\"))"
    r"|(?P<number>(?:\d[\d_]*(?:\.\d[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d+)?[jJ]?)"
    r"|(?P<name>[^\W\d]\w*)"
    r"|(?P<op>" + _OPERATOR + r")"
    r"|(?P<other>\S)"
)


def normal_text(text: str) -> str:
    """NFKC, without format characters (category Cf: zero-width spaces, joiners, marks)."""
    text = unicodedata.normalize("NFKC", text)
    return "".join(char for char in text if unicodedata.category(char) != "Cf")


def defines_entry_point(shown: str, entry_point: str) -> bool:
    """Does the shown text write `def <entry_point>`, however spaced or spelt?"""
    return any(
        _contains(stream, [("keyword", "def"), ("name", entry_point)])
        for stream in shown_streams(shown)
    )


def leaked_code(shown: str, reference: str, hidden: Iterable[tuple[int, int, int, int]]) -> bool:
    """Does the shown text contain a run of the reference's code (see the module docstring)?

    `hidden` are the source spans `(line, column, end line, end column)` of the reference the
    rule leaves aside (imports, docstrings, the entry point's header).
    """
    code = _python_tokens(reference, list(hidden)) or []
    wanted = {shingle for shingle in _shingles(code) if _is_code(shingle)}
    if not wanted:
        return False
    return any(not wanted.isdisjoint(_shingles(stream)) for stream in shown_streams(shown))


def code_tokens(code: str) -> list[Token] | None:
    """The normal-form tokens of Python code (layout, comments, brackets and quote style
    aside), names kept: the same list for the same code, however written; None for text that
    does not tokenize as Python."""
    return _python_tokens(code, [])


def shown_streams(shown: str) -> list[list[Token]]:
    """The token streams of the shown text: the text itself, and the inside of each string."""
    tokens, strings = _spec_tokens(normal_text(shown))
    return [tokens, *(_spec_tokens(inside)[0] for inside in strings)]


# --- tokens -------------------------------------------------------------------------------------


def _spec_tokens(text: str) -> tuple[list[Token], list[str]]:
    """Lenient tokens of any text (prose included), and the inside of its quoted strings."""
    raw = [(match.lastgroup or "other", match.group()) for match in _SPEC_TOKEN.finditer(text)]
    strings = [value[value.index(value[-1]) + 1 : -1] for kind, value in raw if kind == "string"]
    return _normal(raw), strings


def _python_tokens(code: str, hidden: list[tuple[int, int, int, int]]) -> list[Token] | None:
    kinds = {
        tokenize.NAME: "name",
        tokenize.NUMBER: "number",
        tokenize.STRING: "string",
        tokenize.OP: "op",
    }
    raw = []
    try:
        for found in tokenize.generate_tokens(io.StringIO(normal_text(code)).readline):
            kind = kinds.get(found.type)
            if kind is not None and not any(_inside(found.start, span) for span in hidden):
                raw.append((kind, found.string))
    except (tokenize.TokenError, SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    return _normal(raw)


def _normal(raw: list[tuple[str, str]]) -> list[Token]:
    """Raw `(kind, text)` tokens in normal form; adjacent strings joined into one, as Python
    joins them (`'ae' 'iou'` is `'aeiou'`)."""
    joined: list[tuple[str, str]] = []
    for kind, text in raw:
        if kind == "string" and joined and joined[-1][0] == "string":
            joined[-1] = ("string", f"{joined[-1][1]} {text}")
        else:
            joined.append((kind, text))
    return [token for kind, text in joined if (token := _token(kind, text)) is not None]


def _token(kind: str, text: str) -> Token | None:
    if kind == "op":
        return None if text in _IGNORED else ("op", text)
    if kind == "name":
        return ("keyword", text) if keyword.iskeyword(text) else ("name", text)
    if kind in ("number", "string"):
        return (kind, _literal_value(text))
    return ("op", text)  # a character that is nothing else: compared as itself


def _literal_value(text: str) -> str:
    """A literal's value with its exact type (`'a'` and `"a"` alike; `1` not `1.0`)."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return text  # an f-string, or a number too large to convert: its text
    try:
        return f"{type(value).__name__}:{value!r}"
    except ValueError:  # an int too long to print in decimal
        return text


def _inside(position: tuple[int, int], span: tuple[int, int, int, int]) -> bool:
    return (span[0], span[1]) <= position < (span[2], span[3])


# --- shingles -----------------------------------------------------------------------------------


def _shingles(tokens: list[Token]) -> Iterator[tuple[Token, ...]]:
    """Every run of MIN_LEAK_TOKENS tokens, its names renamed by order of first appearance."""
    for start in range(len(tokens) - MIN_LEAK_TOKENS + 1):
        yield _renamed(tokens[start : start + MIN_LEAK_TOKENS])


def _renamed(tokens: list[Token]) -> tuple[Token, ...]:
    names: dict[str, str] = {}
    return tuple(
        ("name", names.setdefault(text, str(len(names)))) if kind == "name" else (kind, text)
        for kind, text in tokens
    )


def _is_code(tokens: tuple[Token, ...]) -> bool:
    return any(
        kind in ("keyword", "number", "string") or (kind == "op" and text not in _PROSE)
        for kind, text in tokens
    )


def _contains(tokens: list[Token], run: list[Token]) -> bool:
    return any(tokens[i : i + len(run)] == run for i in range(len(tokens) - len(run) + 1))
