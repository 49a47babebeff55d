"""LaTeX parse trees reused across answers of the same shape (worker-side).

math-verify reads LaTeX with latex2sympy2's ANTLR grammar. In ANTLR's Python runtime most of a
parse is adaptive prediction, and the grammar is ambiguous enough (sets, intervals, tuples,
polynomials) to need full-context prediction, which is never cached: such a parse costs 10-40 ms
every time, on strings math-verify's own cache (its last 20 strings) has not seen.

But the parser decides on token types alone: the grammar's only predicates are precedence
predicates, and it reads up to EOF. So texts with the same sequence of token types get the same
parse tree: `x^{3} + 5x^{2} - 2x - 24` and `x^{3} + 7x^{2} - 3x - 11` differ only in the text
of their NUMBER tokens. `reused_parse_trees()` keeps the tree of each shape (token types) it
parses; for a text of a known shape it lexes the text, points the kept tree's tokens at the new
text, and lets latex2sympy2 convert that tree as usual. The conversion (which reads the tokens'
text) is latex2sympy2's own, unchanged, so the sympy result is the one a fresh parse gives
(`tests/verifiers/test_math_shapes.py` checks it on thousands of answers). Texts the lexer
rejects take the unchanged path. Numbers' text -> sympy (latex2sympy2 calls `sympy.Number(text)`,
a string parse) is memoised too.

Single-threaded use, like `equivalence.exact_numbers` (a lock makes concurrent use correct, not
parallel).
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import math_verify.parser as _math_verify_parser
from antlr4 import CommonTokenStream, InputStream
from latex2sympy2_extended import latex2sympy2 as _latex2sympy2

try:
    from latex2sympy2_extended.antlr_parser import PSLexer, PSParser
except ImportError:  # pragma: no cover - another latex2sympy2 layout: parse as before
    PSLexer = PSParser = None

# Memory bound: a kept token costs about 1.2 KB (tree, token, sympy leftovers), so at most
# 1024 x 128 tokens (~160 MB) in a worker; answers are mostly under 40 tokens.
MAX_SHAPES = 1024
MAX_SHAPE_TOKENS = 128
# What a token holds of its text: all a parse tree's reader sees once the shape is fixed.
_TOKEN_TEXT_FIELDS = ("source", "start", "stop", "line", "column", "_text")
_ORIGINAL_LATEX2SYMPY = _latex2sympy2.latex2sympy
_Key = tuple[tuple[int, int], ...]


class _Shape:
    """A parse tree and the tokens it refers to, in stream order."""

    __slots__ = ("tokens", "tree")

    def __init__(self, tree: Any, tokens: list[Any]) -> None:
        self.tree = tree
        self.tokens = tokens

    def rebind(self, tokens: list[Any]) -> Any:
        """The tree, its tokens now holding `tokens`' text (same types, same positions)."""
        for kept, new in zip(self.tokens, tokens, strict=True):
            for field in _TOKEN_TEXT_FIELDS:
                setattr(kept, field, getattr(new, field))
        return self.tree


class _Shapes:
    """A bounded LRU of `_Shape`s by token types."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.items: OrderedDict[_Key, _Shape] = OrderedDict()
        self.hits = self.misses = 0

    def get(self, key: _Key) -> _Shape | None:
        shape = self.items.get(key)
        if shape is None:
            self.misses += 1
        else:
            self.hits += 1
            self.items.move_to_end(key)
        return shape

    def put(self, key: _Key, shape: _Shape) -> None:
        self.items[key] = shape
        while len(self.items) > self.size:
            self.items.popitem(last=False)


SHAPES = _Shapes(MAX_SHAPES)
_LOCK = threading.Lock()


class _KnownShape:
    """Stands in for a `PSParser` whose `math()` would build `tree`."""

    def __init__(self, tree: Any) -> None:
        self.tree = tree

    def math(self) -> Any:
        return self.tree


class _RecordingParser:
    """A real `PSParser` whose finished tree is kept for its shape."""

    def __init__(self, parser: Any, key: _Key, tokens: list[Any], used: set[_Key]) -> None:
        self.parser, self.key, self.tokens, self.used = parser, key, tokens, used

    def math(self) -> Any:
        tree = self.parser.math()  # raises on a syntax error: nothing is kept
        SHAPES.put(self.key, _Shape(tree, self.tokens))
        self.used.add(self.key)
        return tree


def _parser_for(converter: Any, used: set[_Key], latex: str) -> Any:
    """What `_Latex2Sympy.create_parser` returns, reusing a kept tree when the shape is known."""
    listener = converter.MathErrorListener(latex)
    lexer = PSLexer(InputStream(latex))
    lexer.removeErrorListeners()
    lexer.addErrorListener(listener)
    stream = CommonTokenStream(lexer)
    try:
        stream.fill()
    except Exception:  # a lexer error: let the unchanged path raise it where it would
        return _latex2sympy2._Latex2Sympy.create_parser(converter, latex)
    tokens = list(stream.tokens)
    key = tuple((token.type, token.channel) for token in tokens)
    # A shape already converting in this call (a nested parse) is never rebound under it.
    shape = None if key in used else SHAPES.get(key)
    if shape is not None:
        used.add(key)
        return _KnownShape(shape.rebind(tokens))
    parser = PSParser(stream)
    parser.removeErrorListeners()
    parser.addErrorListener(listener)
    if len(tokens) > MAX_SHAPE_TOKENS:
        return parser
    return _RecordingParser(parser, key, tokens, used)


@functools.lru_cache(maxsize=4096)
def _number(text: str) -> Any:
    return _latex2sympy2._Latex2Sympy().parse_number(text)


def latex2sympy(
    latex_str: str,
    variable_values: dict[str, Any] | None = None,
    is_real: bool | None = None,
    convert_degrees: bool = False,
    normalization_config: Any = None,
    conversion_config: Any = None,
) -> Any:
    """latex2sympy2's `latex2sympy`, reusing parse trees by shape (module docstring)."""
    if variable_values or normalization_config is not None:
        return _ORIGINAL_LATEX2SYMPY(
            latex_str,
            variable_values,
            is_real,
            convert_degrees,
            normalization_config,
            conversion_config or _latex2sympy2.ConversionConfig(),
        )
    converter = _latex2sympy2._Latex2Sympy(
        None, is_real, convert_degrees, config=conversion_config or _latex2sympy2.ConversionConfig()
    )
    used: set[_Key] = set()
    converter.create_parser = functools.partial(_parser_for, converter, used)
    converter.parse_number = _number
    with _LOCK:
        return converter.parse(latex_str)


def _hooks_present() -> bool:
    """Whether math-verify and latex2sympy2 still have the parts this module builds on (else
    parsing stays as it is: slower, never different)."""
    converter = getattr(_latex2sympy2, "_Latex2Sympy", None)
    if (
        PSParser is None
        or getattr(_math_verify_parser, "latex2sympy", None) is not _ORIGINAL_LATEX2SYMPY
    ):
        return False
    return all(
        callable(getattr(converter, name, None))
        for name in ("create_parser", "parse", "parse_number", "MathErrorListener")
    )


ACTIVE = _hooks_present()


@contextlib.contextmanager
def reused_parse_trees() -> Iterator[None]:
    """While the block runs, math-verify's LaTeX parsing goes through `latex2sympy` above."""
    if not ACTIVE:
        yield
        return
    original = _math_verify_parser.latex2sympy
    _math_verify_parser.latex2sympy = latex2sympy
    try:
        yield
    finally:
        _math_verify_parser.latex2sympy = original
