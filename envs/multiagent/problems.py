"""The problems a proposer may pose in `rlvr/ProposerSolver-v0`, solved exactly by us.

Two families, one small grammar, evaluated with `fractions.Fraction`, never `eval`:

- evaluate: an arithmetic expression, e.g. `(3 + 4/5) * 2^3 - 7`;
- solve: a linear equation in `x` with one solution, e.g. `3(x - 2) + 5 = x/2 + 14`.

```
problem := expr | expr "=" expr
expr    := term (("+" | "-") term)*
term    := factor (("*" | "/") factor | factor-starting-with-x-or-"(")*   3x, 2(x + 1)
factor  := ("+" | "-") factor | atom ("^" factor)?            a whole exponent in 0..10
atom    := integer | "x" | "(" expr ")"
```

Every value is a linear form `a*x + b`; a product or power that is not linear, a division by
zero or by an expression in `x`, numbers beyond 10^30, more than 200 characters or nesting deeper
than 20 make the problem ill-posed (`Posed.problem` says why).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

MAX_CHARS = 200
MAX_DEPTH = 20
MAX_EXPONENT = 10
MAX_MAGNITUDE = 10**30
_TOKEN = re.compile(r"\s*(?:(\d+)|([-+*/^()=x]))")


@dataclass(frozen=True)
class Posed:
    """A parsed problem: its family ("evaluate" or "solve"), its text with spaces normalised,
    and the exact answer; or `problem` saying why it is not in the family."""

    family: str = ""
    text: str = ""
    answer: Fraction | None = None
    problem: str | None = None


class _IllPosed(Exception):
    pass


@dataclass(frozen=True)
class _Linear:
    """a*x + b."""

    a: Fraction
    b: Fraction

    @property
    def constant(self) -> bool:
        return self.a == 0


def pose(text: str) -> Posed:
    """Parse and solve `text`; never raises on bad text."""
    normalised = " ".join(text.split())
    if not normalised:
        return Posed(problem="the problem is empty")
    if len(normalised) > MAX_CHARS:
        return Posed(problem=f"the problem has more than {MAX_CHARS} characters")
    try:
        tokens = _tokens(normalised)
        parser = _Parser(tokens)
        sides = parser.problem()
    except _IllPosed as exc:
        return Posed(problem=str(exc))
    if len(sides) == 1:
        (value,) = sides
        if not value.constant:
            return Posed(problem="an expression in x is not a question; write an equation")
        return Posed("evaluate", normalised, value.b)
    left, right = sides
    slope, offset = left.a - right.a, right.b - left.b
    if slope == 0:
        return Posed(problem="the equation has no x, or no single solution")
    return Posed("solve", normalised, offset / slope)


def question(posed: Posed) -> str:
    """The solver's prompt for a well-posed problem."""
    verb = "Evaluate" if posed.family == "evaluate" else "Solve for x"
    return f"{verb}: {posed.text}"


def answer_in_problem(posed: Posed) -> bool:
    """True when the answer is written in the problem: a number literal equal to it (for a
    fraction p/q, the literals p / q side by side), whatever the sign."""
    assert posed.answer is not None
    value = abs(posed.answer)
    if value.denominator == 1:
        return str(value.numerator) in re.findall(r"\d+", posed.text)
    pattern = rf"(?<!\d){value.numerator}\s*/\s*{value.denominator}(?!\d)"
    return re.search(pattern, posed.text) is not None


def _tokens(text: str) -> list[str]:
    tokens, position = [], 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            if text[position:].strip() == "":
                break
            raise _IllPosed(
                f"{text[position]!r} is not allowed: use whole numbers, x, + - * / ^ ( ) and ="
            )
        tokens.append(match.group(1) or match.group(2))
        position = match.end()
    return tokens


class _Parser:
    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.position = 0
        self.depth = 0

    def problem(self) -> list[_Linear]:
        sides = [self.expr()]
        if self._peek() == "=":
            self.position += 1
            sides.append(self.expr())
        if self._peek() is not None:
            raise _IllPosed(f"unexpected {self._peek()!r}")
        if len(sides) == 2 and sides[0].constant and sides[1].constant:
            raise _IllPosed("the equation has no x")
        return sides

    def expr(self) -> _Linear:
        value = self.term()
        while self._peek() in ("+", "-"):
            sign = 1 if self._take() == "+" else -1
            right = self.term()
            value = _checked(_Linear(value.a + sign * right.a, value.b + sign * right.b))
        return value

    def term(self) -> _Linear:
        value = self.factor()
        while True:
            token = self._peek()
            if token in ("*", "/"):
                self.position += 1
                right = self.factor()
                value = _multiply(value, right) if token == "*" else _divide(value, right)
            elif token in ("x", "("):
                value = _multiply(value, self.factor())  # 3x, 2(x + 1), (x + 1)(2)
            else:
                return value

    def factor(self) -> _Linear:
        self._enter()
        try:
            token = self._peek()
            if token in ("+", "-"):
                self.position += 1
                value = self.factor()
                return value if token == "+" else _Linear(-value.a, -value.b)
            base = self.atom()
            if self._peek() != "^":
                return base
            self.position += 1
            return _power(base, self.factor())
        finally:
            self.depth -= 1

    def atom(self) -> _Linear:
        token = self._take()
        if token is None:
            raise _IllPosed("the problem ends too early")
        if token.isdigit():
            return _checked(_Linear(Fraction(0), Fraction(int(token))))
        if token == "x":
            return _Linear(Fraction(1), Fraction(0))
        if token == "(":
            self._enter()
            value = self.expr()
            self.depth -= 1
            if self._take() != ")":
                raise _IllPosed("a parenthesis is not closed")
            return value
        raise _IllPosed(f"unexpected {token!r}")

    def _peek(self) -> str | None:
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def _take(self) -> str | None:
        token = self._peek()
        self.position += token is not None
        return token

    def _enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _IllPosed(f"the problem nests deeper than {MAX_DEPTH}")


def _multiply(left: _Linear, right: _Linear) -> _Linear:
    if not left.constant and not right.constant:
        raise _IllPosed("x times x is not linear")
    return _checked(_Linear(left.a * right.b + right.a * left.b, left.b * right.b))


def _divide(left: _Linear, right: _Linear) -> _Linear:
    if not right.constant:
        raise _IllPosed("dividing by an expression in x is not allowed")
    if right.b == 0:
        raise _IllPosed("division by zero")
    return _checked(_Linear(left.a / right.b, left.b / right.b))


def _power(base: _Linear, exponent: _Linear) -> _Linear:
    power = exponent.b
    if not exponent.constant or power.denominator != 1 or not 0 <= power <= MAX_EXPONENT:
        raise _IllPosed(f"exponents must be whole numbers from 0 to {MAX_EXPONENT}")
    if base.constant:
        if base.b == 0 and power == 0:
            raise _IllPosed("0^0 is undefined")
        return _checked(_Linear(Fraction(0), base.b ** int(power)))
    if power == 1:
        return base
    if power == 0:
        return _Linear(Fraction(0), Fraction(1))
    raise _IllPosed("a power of x is not linear")


def _checked(value: _Linear) -> _Linear:
    for part in (value.a, value.b):
        if abs(part.numerator) > MAX_MAGNITUDE or part.denominator > MAX_MAGNITUDE:
            raise _IllPosed("the numbers grow beyond 10^30")
    return value
