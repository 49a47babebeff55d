"""Bugs injected by AST mutations: each a small edit of one operator, constant or name.

`mutations(source, module)` lists every mutation of the public and helper functions of a module:
comparison and arithmetic operators swapped (`<` for `<=`, `+` for `-`), an integer constant
off by one, `and` for `or`, a `not` dropped, `True` for `False`, `min` for `max`, a string method
for its sibling (`lstrip` for `strip`). The edit is made in the source text, at the node's
position, so the rest of the file keeps its formatting and comments, and the reference fix is
the same edit reversed. Whether a mutation is a bug, and which tests it breaks, is decided by
running it (`rlvr.envs.repo.generator`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

COMPARE_SWAPS: dict[type, tuple[str, tuple[str, ...]]] = {
    ast.Lt: ("<", ("<=", ">")),
    ast.LtE: ("<=", ("<",)),
    ast.Gt: (">", (">=", "<")),
    ast.GtE: (">=", (">",)),
    ast.Eq: ("==", ("!=",)),
    ast.NotEq: ("!=", ("==",)),
    ast.In: ("in", ("not in",)),
    ast.NotIn: ("not in", ("in",)),
}
BINARY_SWAPS: dict[type, tuple[str, tuple[str, ...]]] = {
    ast.Add: ("+", ("-",)),
    ast.Sub: ("-", ("+",)),
    ast.Mult: ("*", ("+",)),
    ast.FloorDiv: ("//", ("/", "%")),
    ast.Div: ("/", ("//",)),
    ast.Mod: ("%", ("//",)),
}
AUGMENTED_SWAPS: dict[type, tuple[str, tuple[str, ...]]] = {
    ast.Add: ("+=", ("-=",)),
    ast.Sub: ("-=", ("+=",)),
}
BOOLEAN_SWAPS: dict[type, tuple[str, tuple[str, ...]]] = {
    ast.And: ("and", ("or",)),
    ast.Or: ("or", ("and",)),
}
NAME_SWAPS = {"min": ("max",), "max": ("min",), "any": ("all",), "all": ("any",)}
METHOD_SWAPS = {
    "lower": ("upper",),
    "upper": ("lower",),
    "strip": ("lstrip", "rstrip"),
    "startswith": ("endswith",),
    "endswith": ("startswith",),
    "capitalize": ("lower",),
}


@dataclass(frozen=True)
class Mutation:
    """One edit of a module's source: `original` at `line`, columns `start`-`end`, becomes
    `replacement`."""

    module: str
    function: str
    line: int  # 1-based
    start: int
    end: int
    original: str
    replacement: str
    function_line: int

    @property
    def key(self) -> str:
        """The mutation's identity, the same in every repository holding the function (its
        position is relative to the function)."""
        offset = self.line - self.function_line
        return (
            f"{self.module}.{self.function}:+{offset}:{self.start}:"
            f"{self.original}->{self.replacement}"
        )

    def apply(self, source: str) -> str:
        lines = source.split("\n")
        text = lines[self.line - 1]
        if text[self.start : self.end] != self.original:
            raise ValueError(f"{self.key} does not match the source")
        lines[self.line - 1] = text[: self.start] + self.replacement + text[self.end :]
        return "\n".join(lines)

    def describe(self) -> str:
        return f"{self.function}: {self.original!r} -> {self.replacement!r} (line {self.line})"


def mutations(source: str, module: str) -> list[Mutation]:
    """Every mutation of the functions defined at the top level of `source`."""
    tree = ast.parse(source)
    lines = source.split("\n")
    found: list[Mutation] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            for site in _sites(node, lines):
                line, start, end, original, replacements = site
                found.extend(
                    Mutation(module, node.name, line, start, end, original, new, node.lineno)
                    for new in replacements
                )
    return found


Site = tuple[int, int, int, str, tuple[str, ...]]


def _sites(function: ast.FunctionDef, lines: list[str]) -> Iterator[Site]:
    for statement in function.body:
        for node in ast.walk(statement):
            yield from _node_sites(node, lines)


def _node_sites(node: ast.AST, lines: list[str]) -> Iterator[Site]:
    if isinstance(node, ast.Compare):
        operands = [node.left, *node.comparators]
        for index, op in enumerate(node.ops):
            yield from _operator(lines, operands[index], operands[index + 1], op, COMPARE_SWAPS)
    elif isinstance(node, ast.BinOp):
        yield from _operator(lines, node.left, node.right, node.op, BINARY_SWAPS)
    elif isinstance(node, ast.AugAssign):
        yield from _operator(lines, node.target, node.value, node.op, AUGMENTED_SWAPS)
    elif isinstance(node, ast.BoolOp):
        for left, right in zip(node.values, node.values[1:]):
            yield from _operator(lines, left, right, node.op, BOOLEAN_SWAPS)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        site = _between(lines, node, node.operand, at_start=True)
        if site is not None and site[3].rstrip() == "not":
            line, start, _, _ = site
            yield line, start, start + len(site[3]), site[3], ("",)
    elif isinstance(node, ast.Constant) and type(node.value) is bool:
        yield from _segment(lines, node, (str(not node.value),))
    elif isinstance(node, ast.Constant) and type(node.value) is int:
        yield from _segment(lines, node, (str(node.value + 1), str(node.value - 1)))
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        yield from _segment(lines, node.func, NAME_SWAPS.get(node.func.id, ()))
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        swaps = METHOD_SWAPS.get(node.func.attr, ())
        last, stop = node.func.end_lineno, node.func.end_col_offset
        if swaps and last is not None and stop is not None:
            yield last, stop - len(node.func.attr), stop, node.func.attr, swaps


def _operator(
    lines: list[str],
    left: ast.AST,
    right: ast.AST,
    op: ast.AST,
    table: dict[type, tuple[str, tuple[str, ...]]],
) -> Iterator[Site]:
    """The operator token written between `left` and `right` (on one line), if `table` has
    swaps for it."""
    entry = table.get(type(op))
    site = _between(lines, left, right)
    if entry is None or site is None:
        return
    token, swaps = entry
    line, start, _, region = site
    if region.strip(" ()") != token:
        return
    offset = start + region.index(token)
    yield line, offset, offset + len(token), token, swaps


def _between(
    lines: list[str], left: ast.AST, right: ast.AST, *, at_start: bool = False
) -> tuple[int, int, int, str] | None:
    """(line, start, end, text) between the end of `left` (its start if `at_start`) and the
    start of `right`, when both are on the same line."""
    line = left.lineno if at_start else left.end_lineno  # type: ignore[attr-defined]
    start = left.col_offset if at_start else left.end_col_offset  # type: ignore[attr-defined]
    end = right.col_offset  # type: ignore[attr-defined]
    if line is None or start is None or right.lineno != line:  # type: ignore[attr-defined]
        return None
    return line, start, end, lines[line - 1][start:end]


def _segment(lines: list[str], node: ast.AST, swaps: tuple[str, ...]) -> Iterator[Site]:
    line, end = node.end_lineno, node.end_col_offset  # type: ignore[attr-defined]
    if not swaps or line != node.lineno or end is None:  # type: ignore[attr-defined]
        return
    start = node.col_offset  # type: ignore[attr-defined]
    yield line, start, end, lines[line - 1][start:end], swaps
