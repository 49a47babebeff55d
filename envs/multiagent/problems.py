"""The problems a proposer may pose in `rlvr/ProposerSolver-v1`, solved exactly by us.

Two families, one small grammar, evaluated with `fractions.Fraction`, never `eval`:

- evaluate: an arithmetic expression, e.g. `(3 + 4/5) * 2^3 - 7`;
- solve: a linear equation in `x` with one solution, e.g. `3(x - 2) + 5 = x/2 + 14`.

```
problem  := expr | expr "=" expr
expr     := term (("+" | "-") term)*
term     := product ("/" factor)?               a divisor ends its term
product  := factor ("*" factor | juxtaposed)*   3x, 2(x + 1): a factor starting with x or "("
factor   := ("+" | "-") factor | power          a sign never applies to a power
power    := atom ("^" exponent)?                a whole exponent in 0..10
exponent := integer | "(" expr ")"
atom     := integer | "x" | "(" expr ")"
```

The grammar has no form whose reading depends on a convention (`AMBIGUOUS_FORMS`): where
conventions differ, parentheses are required. After a divisor nothing multiplies or divides
in the same term (ISO 80000-1's rule for the solidus: `6/2(1+2)`, `1/2x`, `6/2*3` and `8/4/2`
are refused; `(6/2)(1+2)`, `6/(2(1+2))`, `2x/3` and `x/2 + 1` are read one way). A sign never
applies to a power (`-2^2` is -4 in mathematics, 4 in a spreadsheet: write `-(2^2)` or
`(-2)^2`). A power is neither raised again (`2^3^2`: write `2^(3^2)` or `(2^3)^2`) nor followed
by a juxtaposed factor (`2^3x`: write `(2^3)x` or `2^(3x)`).

Every value is a linear form `a*x + b`; a product or power that is not linear, a division by
zero or by an expression in `x`, numbers beyond 10^30, more than 200 characters or nesting deeper
than 20 make the problem ill-posed (`Posed.problem` says why). The numbers a problem writes are
kept (`Posed.numerals`): `answer_in_problem` refuses a problem one of whose numbers is its answer.
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
AMBIGUOUS_FORMS = {
    "6/2(1+2)": "after a divisor, a product or a division in the same term is read two ways: "
    "put one of them in parentheses, e.g. (6/2)(1+2) or 6/(2(1+2))",
    "-2^2": "a sign before a power is read two ways: write -(2^2) or (-2)^2",
    "2^3^2": "a power raised again is read two ways: write (2^3)^2 or 2^(3^2)",
    "2^3x": "a factor right after a power is read two ways: write (2^3)x or 2^(3x)",
}
"""One example of each form whose reading depends on a convention, and the refusal's text."""
_AFTER_DIVISOR, _SIGNED_POWER, _POWER_OF_POWER, _AFTER_POWER = AMBIGUOUS_FORMS.values()


@dataclass(frozen=True)
class Posed:
    """A parsed problem: its family ("evaluate" or "solve"), its text with spaces normalised,
    the exact answer and the values of the numbers it writes (`numerals`, sign aside); or
    `problem` saying why it is not in the family (`ambiguous` when it is a form read two
    ways)."""

    family: str = ""
    text: str = ""
    answer: Fraction | None = None
    problem: str | None = None
    numerals: frozenset[Fraction] = frozenset()
    ambiguous: bool = False


class _IllPosed(Exception):
    pass


class _Ambiguous(_IllPosed):
    """A form that conventions read two ways."""


@dataclass(frozen=True)
class _Linear:
    """a*x + b."""

    a: Fraction
    b: Fraction

    @property
    def constant(self) -> bool:
        return self.a == 0


@dataclass(frozen=True)
class _Read:
    """A parsed piece: its value; `literal`, the value of the whole number it is when it is
    one (in parentheses or signed, sign aside); `power`, whether it is a power."""

    value: _Linear
    literal: Fraction | None = None
    power: bool = False


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
        return Posed(problem=str(exc), ambiguous=isinstance(exc, _Ambiguous))
    numerals = frozenset(parser.numerals)
    if len(sides) == 1:
        (value,) = sides
        if not value.constant:
            return Posed(problem="an expression in x is not a question; write an equation")
        return Posed("evaluate", normalised, value.b, numerals=numerals)
    left, right = sides
    slope, offset = left.a - right.a, right.b - left.b
    if slope == 0:
        return Posed(problem="the equation has no x, or no single solution")
    return Posed("solve", normalised, offset / slope, numerals=numerals)


def question(posed: Posed) -> str:
    """The solver's prompt for a well-posed problem."""
    verb = "Evaluate" if posed.family == "evaluate" else "Solve for x"
    return f"{verb}: {posed.text}"


def answer_in_problem(posed: Posed) -> bool:
    """True when a number the problem writes is its answer, sign aside: a whole number (`007`
    is 7) or a fraction of two (`10/2` is 5, `(14)/(-6)` is 7/3), whatever its parentheses.

    Judged on values, not text, so no way of writing the answer passes. With this rule no
    number copied from a problem is ever its answer: copying earns a solver nothing, and
    a proposer nothing from solvers who copy.
    """
    assert posed.answer is not None
    return abs(posed.answer) in posed.numerals


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
        self.numerals: list[Fraction] = []

    def problem(self) -> list[_Linear]:
        sides = [self.expr().value]
        if self._peek() == "=":
            self.position += 1
            sides.append(self.expr().value)
        if self._peek() is not None:
            raise _IllPosed(f"unexpected {self._peek()!r}")
        if len(sides) == 2 and sides[0].constant and sides[1].constant:
            raise _IllPosed("the equation has no x")
        return sides

    def expr(self) -> _Read:
        read = self.term()
        if self._peek() not in ("+", "-"):
            return read
        value = read.value
        while self._peek() in ("+", "-"):
            sign = 1 if self._take() == "+" else -1
            right = self.term().value
            value = _checked(_Linear(value.a + sign * right.a, value.b + sign * right.b))
        return _Read(value)

    def term(self) -> _Read:
        read, last = self.product()
        if self._peek() != "/":
            return read
        self.position += 1
        divisor = self.factor()
        if self._peek() in ("*", "/", "x", "("):
            raise _Ambiguous(_AFTER_DIVISOR)
        if last.literal is not None and divisor.literal:
            # a*b/c is a*(b/c): b/c reads as a fraction written out
            self.numerals.append(last.literal / divisor.literal)
        return _Read(_divide(read.value, divisor.value))

    def product(self) -> tuple[_Read, _Read]:
        """The product, and its last factor."""
        read = self.factor()
        if self._peek() not in ("*", "x", "("):
            return read, read
        value, last = read.value, read
        while self._peek() in ("*", "x", "("):
            if self._peek() == "*":
                self.position += 1
            elif last.power:
                raise _Ambiguous(_AFTER_POWER)  # 2^3x
            last = self.factor()
            value = _multiply(value, last.value)
        return _Read(value), last

    def factor(self) -> _Read:
        self._enter()
        try:
            token = self._peek()
            if token not in ("+", "-"):
                return self.power()
            self.position += 1
            read = self.factor()
            if read.power:
                raise _Ambiguous(_SIGNED_POWER)
            if token == "+":
                return read
            return _Read(_Linear(-read.value.a, -read.value.b), read.literal)
        finally:
            self.depth -= 1

    def power(self) -> _Read:
        base = self.atom()
        if self._peek() != "^":
            return base
        self.position += 1
        token = self._peek()
        if token is None or not (token.isdigit() or token == "("):
            raise _IllPosed("an exponent is a whole number or an expression in parentheses")
        exponent = self.atom().value
        if self._peek() == "^":
            raise _Ambiguous(_POWER_OF_POWER)
        return _Read(_power(base.value, exponent), power=True)

    def atom(self) -> _Read:
        token = self._take()
        if token is None:
            raise _IllPosed("the problem ends too early")
        if token.isdigit():
            number = Fraction(int(token))
            self.numerals.append(number)
            return _Read(_checked(_Linear(Fraction(0), number)), number)
        if token == "x":
            return _Read(_Linear(Fraction(1), Fraction(0)))
        if token == "(":
            self._enter()
            read = self.expr()
            self.depth -= 1
            if self._take() != ")":
                raise _IllPosed("a parenthesis is not closed")
            return _Read(read.value, read.literal)  # (2^3)^2: a power in parentheses is a base
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
