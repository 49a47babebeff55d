"""Procedural math problem families for `rlvr/Math-v0`, each with difficulty levels 1..5.

A family is `generate(rng, level) -> Problem`; all randomness comes from `rng` (a
`numpy.random.Generator`), so item i of a `ProceduralSource` is reproducible on its own. Answers
are exact: ints and `Fraction`s rendered canonically (`85`, `-\\frac{3}{4}`, `\\{-2, 3\\}`,
`(1, 2)`), plus exact radicals and polynomials at the top levels; never floats.

Questions whose answer is a number ask for a number, so the verifier's "plain number" rule turns
away a copied question (`\\boxed{47 + 38}`). Level 1 of `arithmetic` is two-digit addition
("What is 47 + 38?"): the easy level a tiny model can learn.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from fractions import Fraction
from math import comb, factorial, gcd
from typing import Any

import numpy as np

from rlvr.envs.tasks import Problem
from rlvr.verifiers.math.literals import format_fraction

LEVELS = (1, 2, 3, 4, 5)
FamilyGenerator = Callable[[np.random.Generator, int], Problem]


# --- drawing and formatting helpers ---------------------------------------------------------------


def _int(rng: np.random.Generator, low: int, high: int) -> int:
    """Uniform int in [low, high] (both included)."""
    return int(rng.integers(low, high + 1))


def _nonzero(rng: np.random.Generator, low: int, high: int) -> int:
    while True:
        value = _int(rng, low, high)
        if value != 0:
            return value


def _pick(rng: np.random.Generator, options: Sequence[Any]) -> Any:
    return options[int(rng.integers(len(options)))]


def _number(value: Fraction | int) -> str:
    return format_fraction(Fraction(value))


def _plain(value: Fraction | int) -> str:
    """A number as it appears in a question: `7`, `-3/4`."""
    value = Fraction(value)
    return (
        str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"
    )


def _decimal(value: Fraction) -> str:
    """A terminating decimal exactly (`59.5`, `12`); only for values with such an expansion."""
    if value.denominator == 1:
        return str(value.numerator)
    scaled = value * 100
    if scaled.denominator != 1:
        return _number(value)
    whole, cents = divmod(abs(scaled.numerator), 100)
    sign = "-" if value < 0 else ""
    return f"{sign}{whole}.{cents:02d}".rstrip("0")


def _terms(pairs: Sequence[tuple[int, str]]) -> str:
    """`[(2, "x"), (-3, "y"), (5, "")]` -> `2x - 3y + 5` (zero terms dropped)."""
    text = ""
    for coefficient, name in pairs:
        if coefficient == 0:
            continue
        size = abs(coefficient)
        body = f"{'' if size == 1 and name else size}{name}"
        if not text:
            text = f"-{body}" if coefficient < 0 else body
        else:
            text += f" {'-' if coefficient < 0 else '+'} {body}"
    return text or "0"


def _polynomial(coefficients: Sequence[int], variable: str = "x", latex: bool = False) -> str:
    """Coefficients from the highest power down -> `2x^2 - 3x + 1` (or `2x^{2} - 3x + 1`)."""
    degree = len(coefficients) - 1
    pairs = []
    for index, coefficient in enumerate(coefficients):
        power = degree - index
        if power == 0:
            name = ""
        elif power == 1:
            name = variable
        else:
            name = f"{variable}^{{{power}}}" if latex else f"{variable}^{power}"
        pairs.append((coefficient, name))
    return _terms(pairs)


def _answer_set(values: Sequence[Fraction | int]) -> str:
    return "\\{" + ", ".join(_number(value) for value in sorted(set(values))) + "\\}"


def _answer_tuple(values: Sequence[Fraction | int]) -> str:
    return "(" + ", ".join(_number(value) for value in values) + ")"


def _problem(prompt: str, answer: str, **metadata: Any) -> Problem:
    return Problem(prompt=prompt, answer=answer, metadata=metadata)


# --- arithmetic -----------------------------------------------------------------------------------


def arithmetic(rng: np.random.Generator, level: int) -> Problem:
    if level == 1:
        a, b = _int(rng, 10, 99), _int(rng, 10, 99)
        return _problem(f"What is {a} + {b}?", str(a + b))
    if level == 2:
        a, b = _int(rng, 100, 999), _int(rng, 100, 999)
        if rng.integers(2):
            return _problem(f"What is {a} + {b}?", str(a + b))
        return _problem(f"What is {a} - {b}?", str(a - b))
    if level == 3:
        a, b = _int(rng, 12, 99), _int(rng, 12, 99)
        return _problem(f"What is {a} * {b}?", str(a * b))
    if level == 4:
        a, b, c, d = (_int(rng, 2, 30) for _ in range(4))
        expression, value = _pick(
            rng,
            (
                (f"({a} + {b}) * {c} - {d}", (a + b) * c - d),
                (f"{a} * {b} - {c} * {d}", a * b - c * d),
                (f"({a} - {b}) * ({c} + {d})", (a - b) * (c + d)),
                (f"{a} + {b} * {c} - {d}", a + b * c - d),
            ),
        )
        return _problem(f"What is {expression}?", str(value))
    divisor, quotient = _int(rng, 2, 12), _int(rng, -20, 20)
    a, b = _int(rng, 2, 15), _int(rng, 2, 15)
    c = a * b - quotient * divisor
    power_base, power = _int(rng, -5, 5), _int(rng, 2, 3)
    expression = f"({a} * {b} - {_signed(c)}) / {divisor} + ({power_base})^{power}"
    return _problem(f"What is {expression}?", str(quotient + power_base**power))


CHOICES = 3
"""How many options `arithmetic_choice` offers, the answer among them."""
SLIPS = (*range(1, 10), 10, 100)
"""How far a slip lands from the answer (either way): a digit, a carry, a column."""


def arithmetic_choice(rng: np.random.Generator, level: int) -> Problem:
    """`arithmetic`'s question with three options to choose from: the answer and two slips
    (off by 1-9, 10 or 100), in a random order. Few candidates make a second attempt that
    only avoids the rejected answer worth a lot, so self-correction has something RL can
    learn. The question alone decides the split: the same sum with its options in another
    order never lands in both."""
    question = arithmetic(rng, level)
    answer = int(question.answer)
    options = {answer}
    while len(options) < CHOICES:
        slip = int(_pick(rng, SLIPS))
        options.add(answer + slip * int(_pick(rng, (-1, 1))))
    shown = [str(value) for value in rng.permutation(sorted(options)).tolist()]
    prompt = f"{question.prompt} Choose from {', '.join(shown[:-1])} and {shown[-1]}."
    return Problem(prompt, question.answer, {"options": shown}, split_keys=(question.prompt,))


def _signed(value: int) -> str:
    return f"({value})" if value < 0 else str(value)


# --- fractions ------------------------------------------------------------------------------------


def _fraction(rng: np.random.Generator, max_denominator: int) -> Fraction:
    denominator = _int(rng, 2, max_denominator)
    return Fraction(_int(rng, 1, denominator - 1), denominator)


def fractions(rng: np.random.Generator, level: int) -> Problem:
    if level == 1:
        denominator = _int(rng, 3, 12)
        a, b = _int(rng, 1, denominator - 1), _int(rng, 1, denominator - 1)
        expression = f"{a}/{denominator} + {b}/{denominator}"
        value = Fraction(a + b, denominator)
    elif level == 2:
        x, y = _fraction(rng, 12), _fraction(rng, 12)
        operator = _pick(rng, ("+", "-"))
        expression = f"{_plain(x)} {operator} {_plain(y)}"
        value = x + y if operator == "+" else x - y
    elif level == 3:
        x, y = _fraction(rng, 12), _fraction(rng, 12)
        operator = _pick(rng, ("*", "/"))
        expression = f"{_plain(x)} {operator} {_plain(y)}"
        value = x * y if operator == "*" else x / y
    elif level == 4:
        x, y, z = (_fraction(rng, 10) for _ in range(3))
        expression = f"{_plain(x)} + {_plain(y)} * {_plain(z)}"
        value = x + y * z
    else:
        x, y, z = (_fraction(rng, 12) for _ in range(3))
        expression = f"({_plain(x)} + {_plain(y)}) / {_plain(z)}"
        value = (x + y) / z
    prompt = f"What is {expression}? Give the answer as a fraction in lowest terms."
    return _problem(prompt, _number(value))


# --- linear equations -----------------------------------------------------------------------------


def linear(rng: np.random.Generator, level: int) -> Problem:
    if level == 1:
        x, a = _int(rng, -10, 20), _int(rng, 1, 20)
        left, right, solution = f"x + {a}", str(x + a), Fraction(x)
    elif level == 2:
        x, a, b = _int(rng, -10, 10), _int(rng, 2, 9), _nonzero(rng, -15, 15)
        left, right, solution = _terms([(a, "x"), (b, "")]), str(a * x + b), Fraction(x)
    elif level == 3:
        x, a, c = _int(rng, -10, 10), _nonzero(rng, -9, 9), _nonzero(rng, -9, 9)
        while c == a:
            c = _nonzero(rng, -9, 9)
        b = _int(rng, -20, 20)
        d = (a - c) * x + b
        left, right, solution = (
            _terms([(a, "x"), (b, "")]),
            _terms([(c, "x"), (d, "")]),
            Fraction(x),
        )
    elif level == 4:
        a, b = _int(rng, 2, 12), _nonzero(rng, -20, 20)
        c = _int(rng, -30, 30)
        while (c - b) % a == 0:
            c += 1
        left, right, solution = _terms([(a, "x"), (b, "")]), str(c), Fraction(c - b, a)
    else:
        a, b, c, d = _int(rng, 2, 7), _nonzero(rng, -9, 9), _int(rng, 1, 7), _nonzero(rng, -9, 9)
        while c == a:
            c = _int(rng, 1, 7)
        e = _int(rng, -30, 30)
        left = f"{a}(x {'+' if b > 0 else '-'} {abs(b)}) - {c}(x {'+' if d > 0 else '-'} {abs(d)})"
        right, solution = str(e), Fraction(e - a * b + c * d, a - c)
    return _problem(f"Solve for x: {left} = {right}.", _number(solution))


# --- quadratic equations --------------------------------------------------------------------------

_SQUAREFREE = (2, 3, 5, 6, 7, 10, 11, 13, 14, 15, 17, 19, 21, 22, 23)


def quadratic(rng: np.random.Generator, level: int) -> Problem:
    if level == 1:
        k = _int(rng, 1, 30)
        equation = _pick(rng, (f"x^2 = {k * k}", f"x^2 - {k * k} = 0", f"{k * k} = x^2"))
        return _problem(f"Find all real solutions of {equation}.", _answer_set([-k, k]))
    if level == 5:
        p, q = _int(rng, -6, 6), _pick(rng, _SQUAREFREE)
        equation = _polynomial([1, -2 * p, p * p - q])
        root = f"\\sqrt{{{q}}}"
        answer = f"\\{{-{root}, {root}\\}}" if p == 0 else f"\\{{{p} - {root}, {p} + {root}\\}}"
        return _problem(f"Find all real solutions of {equation} = 0.", answer)
    if level in (2, 3):
        r, s = _int(rng, -9, 9), _int(rng, -9, 9)
        while s == r:
            s = _int(rng, -9, 9)
        a = 1 if level == 2 else _int(rng, 2, 5)
        roots = [Fraction(r), Fraction(s)]
        coefficients = [a, -a * (r + s), a * r * s]
    else:  # (p x - q)(u x - v) with at least one root a proper fraction
        p, u = _int(rng, 2, 5), _int(rng, 1, 5)
        q, v = _nonzero(rng, -9, 9), _nonzero(rng, -9, 9)
        while q % p == 0:
            q += 1
        roots = [Fraction(q, p), Fraction(v, u)]
        if roots[0] == roots[1]:
            v += 1
            roots[1] = Fraction(v, u)
        coefficients = [p * u, -(p * v + q * u), q * v]
    if level == 4:
        divisor = gcd(*coefficients)
        coefficients = [value // divisor for value in coefficients]
    return _problem(
        f"Find all real solutions of {_polynomial(coefficients)} = 0.", _answer_set(roots)
    )


# --- systems of linear equations ------------------------------------------------------------------


def systems(rng: np.random.Generator, level: int) -> Problem:
    if level == 5:
        return _system_3x3(rng)
    if level == 1:
        x, y = _int(rng, -10, 10), _int(rng, -10, 10)
        rows = [(1, 1), (1, -1)]
        solution = [Fraction(x), Fraction(y)]
    else:
        bound = 5 if level == 2 else 9
        while True:
            rows = [(_nonzero(rng, -bound, bound), _nonzero(rng, -bound, bound)) for _ in range(2)]
            # |det| > 1 leaves room for a fractional solution at level 4
            if abs(rows[0][0] * rows[1][1] - rows[0][1] * rows[1][0]) > 1:
                break
        if level == 4:
            rights = [_int(rng, -20, 20), _int(rng, -20, 20)]
            solution = _solve_2x2(rows, rights)
            step = 0  # moving both right sides reaches a fractional solution within two steps
            while all(value.denominator == 1 for value in solution):
                rights[step % 2] += 1
                step += 1
                solution = _solve_2x2(rows, rights)
        else:
            solution = [Fraction(_int(rng, -10, 10)), Fraction(_int(rng, -10, 10))]
    equations = []
    for a, b in rows:
        right = a * solution[0] + b * solution[1]
        equations.append(f"{_terms([(a, 'x'), (b, 'y')])} = {_plain(right)}")
    prompt = f"Solve the system {equations[0]} and {equations[1]}. Give the answer as (x, y)."
    return _problem(prompt, _answer_tuple(solution))


def _solve_2x2(rows: list[tuple[int, int]], rights: list[int]) -> list[Fraction]:
    (a, b), (c, d) = rows
    determinant = a * d - b * c
    return [
        Fraction(rights[0] * d - b * rights[1], determinant),
        Fraction(a * rights[1] - rights[0] * c, determinant),
    ]


def _system_3x3(rng: np.random.Generator) -> Problem:
    while True:
        rows = [[_int(rng, -5, 5) for _ in range(3)] for _ in range(3)]
        if _determinant_3x3(rows) != 0:
            break
    solution = [_int(rng, -8, 8) for _ in range(3)]
    equations = []
    for row in rows:
        right = sum(coefficient * value for coefficient, value in zip(row, solution))
        equations.append(f"{_terms(list(zip(row, ('x', 'y', 'z'))))} = {right}")
    prompt = (
        f"Solve the system {equations[0]}, {equations[1]} and {equations[2]}. "
        "Give the answer as (x, y, z)."
    )
    return _problem(prompt, _answer_tuple(solution))


def _determinant_3x3(rows: list[list[int]]) -> int:
    (a, b, c), (d, e, f), (g, h, i) = rows
    return a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g)


# --- polynomials ----------------------------------------------------------------------------------


def polynomials(rng: np.random.Generator, level: int) -> Problem:
    if level in (1, 2):
        degree = 2 if level == 1 else 3
        coefficients = [
            _nonzero(rng, -5, 5) if i == 0 else _int(rng, -9, 9) for i in range(degree + 1)
        ]
        if level == 1:
            coefficients[0] = _int(rng, 1, 5)
        point = _int(rng, -5, 5)
        value = sum(c * point ** (degree - i) for i, c in enumerate(coefficients))
        prompt = f"Let p(x) = {_polynomial(coefficients)}. What is p({point})?"
        return _problem(prompt, str(value))
    if level == 3:
        a, b, n = _nonzero(rng, -3, 3), _nonzero(rng, -4, 4), _int(rng, 3, 6)
        k = _int(rng, 1, n - 1)
        binomial = _terms([(a, "x"), (b, "")])
        prompt = f"What is the coefficient of x^{k} in the expansion of ({binomial})^{n}?"
        return _problem(prompt, str(comb(n, k) * a**k * b ** (n - k)))
    if level == 4:
        coefficients = [_nonzero(rng, -4, 4)] + [_int(rng, -9, 9) for _ in range(_int(rng, 3, 4))]
        a = _nonzero(rng, -4, 4)
        degree = len(coefficients) - 1
        remainder = sum(c * a ** (degree - i) for i, c in enumerate(coefficients))
        divisor = _terms([(1, "x"), (-a, "")])
        prompt = f"What is the remainder when {_polynomial(coefficients)} is divided by {divisor}?"
        return _problem(prompt, str(remainder))
    roots = sorted({_int(rng, -6, 6) for _ in range(3)})
    while len(roots) < 3:
        roots = sorted(set(roots) | {_int(rng, -6, 6)})
    coefficients = [1]
    for root in roots:  # multiply by (x - root)
        coefficients = [a - root * b for a, b in zip([*coefficients, 0], [0, *coefficients])]
    listed = f"{roots[0]}, {roots[1]} and {roots[2]}"
    prompt = f"Find the monic cubic polynomial in x whose roots are {listed}. Write it expanded."
    return _problem(prompt, _polynomial(coefficients, latex=True))


# --- number theory --------------------------------------------------------------------------------


def number_theory(rng: np.random.Generator, level: int) -> Problem:
    if level == 1:
        factor = _int(rng, 2, 12)
        a, b = factor * _int(rng, 2, 8), factor * _int(rng, 2, 8)
        return _problem(f"What is the greatest common divisor of {a} and {b}?", str(gcd(a, b)))
    if level == 2:
        a, b = _int(rng, 4, 30), _int(rng, 4, 30)
        return _problem(
            f"What is the least common multiple of {a} and {b}?", str(a * b // gcd(a, b))
        )
    if level == 3:
        a, m = _int(rng, 100, 9999), _int(rng, 3, 19)
        return _problem(f"What is the remainder when {a} is divided by {m}?", str(a % m))
    if level == 4:
        if rng.integers(2):
            base, power, modulus = _int(rng, 2, 9), _int(rng, 10, 99), _int(rng, 5, 23)
            prompt = f"What is the remainder when {base}^{power} is divided by {modulus}?"
            return _problem(prompt, str(pow(base, power, modulus)))
        n = _int(rng, 24, 500)
        count = sum(1 for d in range(1, n + 1) if n % d == 0)
        return _problem(f"How many positive divisors does {n} have?", str(count))
    if rng.integers(2):
        modulus = _pick(rng, (11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47))
        a = _int(rng, 2, modulus - 1)
        prompt = (
            f"Find the integer x with 0 <= x < {modulus} such that {a}x leaves remainder 1 "
            f"when divided by {modulus}."
        )
        return _problem(prompt, str(pow(a, -1, modulus)))
    m1, m2 = _pick(rng, ((3, 5), (4, 7), (5, 6), (5, 7), (7, 9), (8, 9), (7, 11), (9, 10)))
    r1, r2 = _int(rng, 0, m1 - 1), _int(rng, 0, m2 - 1)
    n = next(n for n in range(1, m1 * m2 + 1) if n % m1 == r1 and n % m2 == r2)
    prompt = (
        f"What is the smallest positive integer that leaves remainder {r1} when divided by {m1} "
        f"and remainder {r2} when divided by {m2}?"
    )
    return _problem(prompt, str(n))


# --- combinatorics and probability ----------------------------------------------------------------

_WORDS = ("BANANA", "LETTER", "COOKIE", "PEPPER", "BALLOON", "MISSISSIPPI", "ASSESS", "COFFEE")


_THINGS = ("books", "flags", "toys", "cups", "photos", "plants", "hats", "coins")
_DICE_EVENTS = (("is", lambda total, target: total == target),
                ("is at least", lambda total, target: total >= target),
                ("is at most", lambda total, target: total <= target))  # fmt: skip


def combinatorics(rng: np.random.Generator, level: int) -> Problem:
    if level == 1:
        name, things, n = _pick(rng, _NAMES), _pick(rng, _THINGS), _int(rng, 3, 8)
        prompt = f"{name} has {n} different {things}. In how many ways can they be put in a row?"
        return _problem(prompt, str(factorial(n)))
    if level == 2:
        things, n = _pick(rng, _THINGS), _int(rng, 5, 15)
        k = _int(rng, 2, n - 2)
        prompt = f"In how many ways can {k} {things} be chosen from {n} different {things}?"
        return _problem(prompt, str(comb(n, k)))
    if level == 3:
        dice = _int(rng, 2, 3)
        target = _int(rng, dice + 1, 6 * dice - 1)
        wording, holds = _pick(rng, _DICE_EVENTS)
        rolls = [sum(faces) for faces in itertools.product(range(1, 7), repeat=dice)]
        ways = sum(1 for total in rolls if holds(total, target))
        prompt = (
            f"{dice} fair six-sided dice are rolled. What is the probability that the sum "
            f"{wording} {target}? Give a fraction in lowest terms."
        )
        return _problem(prompt, _number(Fraction(ways, len(rolls))))
    if level == 4:
        red, blue = _int(rng, 2, 9), _int(rng, 2, 9)
        total = red + blue
        event, ways = _pick(
            rng,
            (
                ("both are red", red * (red - 1)),
                ("both are blue", blue * (blue - 1)),
                ("they have different colors", 2 * red * blue),
            ),
        )
        prompt = (
            f"A bag holds {red} red and {blue} blue marbles. Two are drawn without replacement. "
            f"What is the probability that {event}? Give a fraction in lowest terms."
        )
        return _problem(prompt, _number(Fraction(ways, total * (total - 1))))
    if rng.integers(3):
        n = _int(rng, 3, 12)
        k = _int(rng, 0, n)
        prompt = (
            f"A fair coin is flipped {n} times. What is the probability of exactly {k} heads? "
            "Give a fraction in lowest terms."
        )
        return _problem(prompt, _number(Fraction(comb(n, k), 2**n)))
    word = _pick(rng, _WORDS)
    arrangements = factorial(len(word))
    for letter in set(word):
        arrangements //= factorial(word.count(letter))
    return _problem(
        f"How many distinct arrangements of the letters of {word} are there?", str(arrangements)
    )


# --- word problems --------------------------------------------------------------------------------

_NAMES = (
    "Ava",
    "Ben",
    "Chloe",
    "Diego",
    "Emma",
    "Farid",
    "Grace",
    "Hiro",
    "Ines",
    "Jamal",
    "Kira",
    "Liam",
    "Mei",
    "Noah",
    "Olga",
    "Priya",
    "Quinn",
    "Rosa",
    "Sam",
    "Tariq",
)
_ITEMS = ("apples", "stickers", "marbles", "pencils", "cards", "books", "shells", "coins")
_GOODS = (
    ("notebook", "notebooks"),
    ("pen", "pens"),
    ("sandwich", "sandwiches"),
    ("ticket", "tickets"),
)


def word_problems(rng: np.random.Generator, level: int) -> Problem:
    name, item = _pick(rng, _NAMES), _pick(rng, _ITEMS)
    if level == 1:
        a, b = _int(rng, 2, 50), _int(rng, 2, 50)
        prompt = f"{name} has {a} {item} and gets {b} more. How many {item} does {name} have now?"
        return _problem(prompt, str(a + b))
    if level == 2:
        share, friends = _int(rng, 2, 9), _int(rng, 2, 6)
        start = share * friends + _int(rng, 0, 30)
        prompt = (
            f"{name} has {start} {item} and gives {share} to each of {friends} friends. "
            f"How many {item} does {name} have left?"
        )
        return _problem(prompt, str(start - share * friends))
    if level == 3:
        (one, many), count, price = _pick(rng, _GOODS), _int(rng, 2, 9), _int(rng, 2, 12)
        bill = _pick(rng, tuple(b for b in (20, 50, 100, 200) if b >= count * price))
        prompt = (
            f"Each {one} costs ${price}. {name} buys {count} {many} and pays with a ${bill} bill. "
            f"How many dollars of change does {name} get?"
        )
        return _problem(prompt, str(bill - count * price))
    if level == 4:
        price, discount = _int(rng, 10, 200), 5 * _int(rng, 1, 15)
        prompt = (
            f"A jacket costs ${price}. It is on sale for {discount}% off. "
            "What is the sale price in dollars?"
        )
        return _problem(prompt, _decimal(Fraction(price * (100 - discount), 100)))
    a, b = _int(rng, 2, 12), _int(rng, 2, 12)
    prompt = (
        f"One pipe fills a tank in {a} hours and another fills it in {b} hours. Working together, "
        "how many hours do they take to fill the tank? Give a fraction in lowest terms."
    )
    return _problem(prompt, _number(Fraction(a * b, a + b)))


FAMILIES: dict[str, FamilyGenerator] = {
    "arithmetic": arithmetic,
    "arithmetic_choice": arithmetic_choice,
    "fractions": fractions,
    "linear": linear,
    "quadratic": quadratic,
    "systems": systems,
    "polynomials": polynomials,
    "number_theory": number_theory,
    "combinatorics": combinatorics,
    "word_problems": word_problems,
}
# The families drawn from when none are named: rlvr/Math-v0's task distribution. Families added
# after v0 (`arithmetic_choice`) are drawn only when named, so v0's episodes stay as they were.
DEFAULT_FAMILIES = tuple(name for name in FAMILIES if name != "arithmetic_choice")


def generate(rng: np.random.Generator, level: int, families: tuple[str, ...]) -> Problem:
    """One problem from a family drawn with `rng` among `families`, at difficulty `level`."""
    family = families[int(rng.integers(len(families)))] if len(families) > 1 else families[0]
    problem = FAMILIES[family](rng, level)
    return Problem(
        problem.prompt,
        problem.answer,
        {"family": family, **problem.metadata},
        split_keys=problem.split_keys,
    )
