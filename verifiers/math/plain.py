"""A strict parser from plain-text math (`3*x**2 + 1`, `sqrt(2)/2`, `pi/4`) to sympy.

This is the sympy fallback for answers math-verify's LaTeX grammar cannot read. It builds sympy
objects directly from a whitelist of tokens: numbers, one-letter variables, a few named
functions and constants, `+ - * / ^ **`, parentheses and implicit multiplication. There is no
`sympify`, `parse_expr` or `eval` anywhere on this path, so text can never run as Python.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

import sympy

_TOKEN = re.compile(r"\s*(?:(\d+\.?\d*|\.\d+)|([A-Za-z]+)|(\*\*|[-+*/^(),|]))")

# Each level of nesting (a sign, a power, a bracket, a function) is a few Python frames; a
# chain of a few hundred signs fits the answer's 1000 characters and would exhaust the stack.
MAX_DEPTH = 100
_FUNCTIONS = ("sqrt", "sin", "cos", "tan", "log", "ln", "exp", "abs")
_CONSTANTS = ("pi", "e", "oo", "inf", "infinity")


class PlainSyntaxError(ValueError):
    """The text is not plain-text math this parser accepts."""


def parse_plain(text: str) -> Any:
    """A sympy expression for `text`, or raise `PlainSyntaxError`."""
    return _Parser(_tokenize(text)).parse()


def _tokenize(text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    position = 0
    text = text.strip()
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise PlainSyntaxError(f"unexpected character {text[position]!r}")
        number, name, operator = match.groups()
        if number is not None:
            tokens.append(("number", number))
        elif name is not None:
            tokens.extend(_names(name))
        else:
            tokens.append(("op", "^" if operator == "**" else operator))
        position = match.end()
    return tokens


def _names(word: str) -> list[tuple[str, str]]:
    lowered = word.lower()
    if lowered in _FUNCTIONS:
        return [("function", lowered)]
    if lowered in _CONSTANTS:
        return [("constant", lowered)]
    if len(word) == 1:
        return [("symbol", word)]
    raise PlainSyntaxError(f"unknown name {word!r}")


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens = tokens
        self.index = 0
        self.depth = 0

    def parse(self) -> Any:
        if not self.tokens:
            raise PlainSyntaxError("empty expression")
        value = self.expression()
        if self.index != len(self.tokens):
            raise PlainSyntaxError(f"unexpected {self.tokens[self.index][1]!r}")
        return value

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def take(self, operator: str) -> bool:
        if self.peek() == ("op", operator):
            self.index += 1
            return True
        return False

    def expect(self, operator: str) -> None:
        if not self.take(operator):
            raise PlainSyntaxError(f"expected {operator!r}")

    def expression(self) -> Any:
        value = self.term()
        while True:
            if self.take("+"):
                value = value + self.term()
            elif self.take("-"):
                value = value - self.term()
            else:
                return value

    def term(self) -> Any:
        value = self.unary()
        while True:
            if self.take("*"):
                value = value * self.unary()
            elif self.take("/"):
                value = value / self.unary()
            elif self._starts_factor():
                value = value * self.power()  # implicit multiplication: 2x, 3(x+1)
            else:
                return value

    def _starts_factor(self) -> bool:
        token = self.peek()
        if token is None:
            return False
        kind, text = token
        return kind != "op" or text == "("

    def unary(self) -> Any:
        self.depth += 1  # every nesting (signs, powers, brackets, functions) passes here
        if self.depth > MAX_DEPTH:
            raise PlainSyntaxError(f"the expression nests deeper than {MAX_DEPTH}")
        try:
            if self.take("-"):
                return -self.unary()
            if self.take("+"):
                return self.unary()
            return self.power()
        finally:
            self.depth -= 1

    def power(self) -> Any:
        base = self.atom()
        if self.take("^"):
            return base ** self.unary()  # right-associative: 2^3^2 = 2^9
        return base

    def atom(self) -> Any:
        token = self.peek()
        if token is None:
            raise PlainSyntaxError("unexpected end of expression")
        kind, text = token
        self.index += 1
        if kind == "number":
            exact = Fraction(text)
            return sympy.Rational(exact.numerator, exact.denominator)
        if kind == "symbol":
            return sympy.Symbol(text)
        if kind == "constant":
            return {"pi": sympy.pi, "e": sympy.E}.get(text, sympy.oo)
        if kind == "function":
            self.expect("(")
            argument = self.expression()
            self.expect(")")
            return _FUNCTION_BUILDERS[text](argument)
        if text == "(":
            value = self.expression()
            self.expect(")")
            return value
        if text == "|":
            value = self.expression()
            self.expect("|")
            return sympy.Abs(value)
        raise PlainSyntaxError(f"unexpected {text!r}")


_FUNCTION_BUILDERS = {
    "sqrt": sympy.sqrt,
    "sin": sympy.sin,
    "cos": sympy.cos,
    "tan": sympy.tan,
    "log": sympy.log,
    "ln": sympy.log,
    "exp": sympy.exp,
    "abs": sympy.Abs,
}
