"""A safe calculator: arithmetic on exact numbers, never `eval`.

The expression is parsed with `ast` and walked node by node; only number literals, the operators
`+ - * / // % **` (and `^` as power), parentheses, the constants `pi` and `e`, and a fixed list of
functions are accepted, so untrusted text can never run code. Numbers are exact where they can
be (integers and fractions: `0.1 + 0.2` is exactly `0.3`, `(1 + 4.3/100)**17` is exact) and
floats only after an irrational function (`sqrt(2)`, `log`, `sin`). Sizes are bounded so that no
expression can exhaust memory or time (`9**9**9` is refused, not computed).
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from rlvr.envs.errors import ToolError
from rlvr.envs.tools.tool import Tool, object_schema

Number = int | Fraction | float

MAX_EXPRESSION_CHARS = 1000
MAX_NODES = 300
MAX_RESULT_BITS = 14_000  # about 4200 digits, below Python's 4300-digit str() limit
MAX_MODULUS_BITS = 2048  # for the modulus and the exponent of pow(a, b, m): ~30 ms at most
MAX_FACTORIAL = 1000
MAX_ROUND_PLACES = 100  # round(x, 10**9) would build 10**(10**9): unbounded time and memory


class CalculatorError(ToolError):
    """The expression is not allowed, or its value cannot be computed within the limits."""


def evaluate(expression: str) -> Number:
    """The value of `expression` (see the module docstring for what is allowed)."""
    if not isinstance(expression, str) or not expression.strip():
        raise CalculatorError("the expression is empty; write e.g. '12 * (3 + 4)'")
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise CalculatorError(f"the expression is longer than {MAX_EXPRESSION_CHARS} characters")
    text = expression.replace("^", "**").replace("×", "*").replace("÷", "/").strip()
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise CalculatorError(f"cannot parse {expression!r}: {_reason(exc)}") from None
    if sum(1 for _ in ast.walk(tree)) > MAX_NODES:
        raise CalculatorError(f"the expression has more than {MAX_NODES} parts; split it up")
    try:
        return _Evaluator(text).visit(tree.body)
    except (ZeroDivisionError, OverflowError, ValueError) as exc:
        raise CalculatorError(f"{type(exc).__name__}: {exc}") from None
    except RecursionError:
        raise CalculatorError("the expression is nested too deeply") from None


def format_number(value: Number) -> str:
    """An exact integer as is; a fraction as a decimal when it ends within 12 places, otherwise
    as a 15-digit decimal followed by the exact fraction; a float with 15 significant digits."""
    if isinstance(value, Fraction) and value.denominator == 1:
        value = value.numerator
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Fraction):
        exact = _exact_decimal(value)
        if exact is not None:
            return exact
        return f"{float(value):.15g} (exactly {value.numerator}/{value.denominator})"
    if math.isfinite(value) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.15g}"


def _exact_decimal(value: Fraction) -> str | None:
    for places in range(1, 13):
        scaled = value * 10**places
        if scaled.denominator == 1:
            sign = "-" if scaled < 0 else ""
            digits = str(abs(scaled.numerator)).rjust(places + 1, "0")
            return f"{sign}{digits[:-places]}.{digits[-places:]}"
    return None


def calculator_tool(timeout: float = 2.0) -> Tool:
    """The calculator as a tool for tool envs (`ToolUse`)."""

    def calculator(expression: str) -> str:
        return format_number(evaluate(expression))

    return Tool(
        name="calculator",
        description=(
            "Evaluate an arithmetic expression exactly. Operators: + - * / // % ** (or ^), "
            "parentheses. Functions: " + ", ".join(sorted(_FUNCTIONS)) + ". Constants: pi, e. "
            "No variables, no thousands separators."
        ),
        parameters=object_schema(
            {"expression": {"type": "string", "description": "e.g. '48213 * 376 - 1200'"}}
        ),
        function=calculator,
        timeout=timeout,
    )


def _reason(exc: BaseException) -> str:
    return getattr(exc, "msg", None) or type(exc).__name__


# --- evaluation --------------------------------------------------------------------------------


def _bits(value: Number) -> int:
    if isinstance(value, int):
        return value.bit_length()
    if isinstance(value, Fraction):
        return value.numerator.bit_length() + value.denominator.bit_length()
    return 64


def _check_size(value: Number) -> Number:
    if _bits(value) > MAX_RESULT_BITS:
        raise CalculatorError(f"a value has more than {MAX_RESULT_BITS} bits; that is too large")
    return value


def _as_int(value: Number, what: str) -> int:
    if isinstance(value, Fraction) and value.denominator == 1:
        return value.numerator
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise ValueError(f"{what} needs an integer, got {format_number(value)}")


def _power(base: Number, exponent: Number) -> Number:
    if isinstance(exponent, Fraction) and exponent.denominator == 1:
        exponent = exponent.numerator
    if isinstance(exponent, int) and not isinstance(base, float):
        if abs(exponent) * max(_bits(base), 1) > MAX_RESULT_BITS:
            raise CalculatorError(
                f"the power has more than {MAX_RESULT_BITS} bits; use pow(a, b, m) for remainders"
            )
        return Fraction(base) ** exponent if exponent < 0 else base**exponent
    result = float(base) ** float(exponent)
    if isinstance(result, complex):
        raise ValueError("a negative number to a fractional power is not a real number")
    return result


def _divide(a: Number, b: Number) -> Number:
    if isinstance(a, float) or isinstance(b, float):
        return a / b
    return Fraction(a) / Fraction(b)


def _sqrt(x: Number) -> Number:
    if x < 0:
        raise ValueError("sqrt of a negative number")
    if isinstance(x, int):
        root = math.isqrt(x)
        return root if root * root == x else math.sqrt(x)
    if isinstance(x, Fraction):
        num, den = math.isqrt(x.numerator), math.isqrt(x.denominator)
        if num * num == x.numerator and den * den == x.denominator:
            return Fraction(num, den)
    return math.sqrt(x)


def _round(x: Number, places: Number = 0) -> Number:
    digits = _as_int(places, "round's second argument")
    if abs(digits) > MAX_ROUND_PLACES:
        raise ValueError(f"round's second argument must be within +-{MAX_ROUND_PLACES}")
    if isinstance(x, float):
        return round(x, digits)
    # Round half away from zero, as people do (Python's round() rounds half to even).
    scale = Fraction(10) ** digits
    scaled = Fraction(x) * scale
    rounded = math.floor(abs(scaled) + Fraction(1, 2)) * (1 if scaled >= 0 else -1)
    return Fraction(rounded) / scale


def _factorial(n: Number) -> int:
    value = _as_int(n, "factorial")
    if not 0 <= value <= MAX_FACTORIAL:
        raise ValueError(f"factorial needs 0 <= n <= {MAX_FACTORIAL}")
    return math.factorial(value)


def _comb(n: Number, k: Number) -> int:
    n_, k_ = _as_int(n, "comb"), _as_int(k, "comb")
    if n_ > 100_000:
        raise ValueError("comb needs n <= 100000")
    if 0 <= k_ <= n_:
        _refuse_above(_log2_factorial(n_) - _log2_factorial(k_) - _log2_factorial(n_ - k_))
    return math.comb(n_, k_)


def _perm(n: Number, k: Number) -> int:
    n_, k_ = _as_int(n, "perm"), _as_int(k, "perm")
    if n_ > 100_000:
        raise ValueError("perm needs n <= 100000")
    if 0 <= k_ <= n_:
        _refuse_above(_log2_factorial(n_) - _log2_factorial(n_ - k_))
    return math.perm(n_, k_)


def _log2_factorial(n: int) -> float:
    return math.lgamma(n + 1) / math.log(2)


def _refuse_above(bits: float) -> None:
    """Refuse a result whose size is known in advance before spending time computing it."""
    if bits > MAX_RESULT_BITS + 1:
        raise CalculatorError(f"a value has more than {MAX_RESULT_BITS} bits; that is too large")


def _pow(base: Number, exponent: Number, modulus: Number | None = None) -> Number:
    if modulus is None:
        return _power(base, exponent)
    modulus_, exponent_ = _as_int(modulus, "pow"), _as_int(exponent, "pow")
    if max(modulus_.bit_length(), exponent_.bit_length()) > MAX_MODULUS_BITS:
        raise CalculatorError(f"pow(a, b, m) needs b and m below 2**{MAX_MODULUS_BITS}")
    return pow(_as_int(base, "pow"), exponent_, modulus_)


def _log(x: Number, base: Number | None = None) -> float:
    return math.log(x) if base is None else math.log(x, base)


_FUNCTIONS: dict[str, Callable[..., Number]] = {
    "abs": abs,
    "sqrt": _sqrt,
    "round": _round,
    "floor": lambda x: math.floor(x),
    "ceil": lambda x: math.ceil(x),
    "gcd": lambda *xs: math.gcd(*(_as_int(x, "gcd") for x in xs)),
    "lcm": lambda *xs: math.lcm(*(_as_int(x, "lcm") for x in xs)),
    "factorial": _factorial,
    "comb": _comb,
    "perm": _perm,
    "pow": _pow,
    "min": min,
    "max": max,
    "log": _log,
    "log10": lambda x: math.log10(x),
    "log2": lambda x: math.log2(x),
    "exp": lambda x: math.exp(x),
    "sin": lambda x: math.sin(x),
    "cos": lambda x: math.cos(x),
    "tan": lambda x: math.tan(x),
}
_CONSTANTS = {"pi": math.pi, "e": math.e}
_BINARY: dict[type, Callable[[Any, Any], Number]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: _divide,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: _power,
}


class _Evaluator(ast.NodeVisitor):
    def __init__(self, source: str) -> None:
        self.source = source

    def visit_Constant(self, node: ast.Constant) -> Number:
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise CalculatorError(f"only numbers are allowed, got {value!r}")
        if isinstance(value, int):
            return _check_size(value)
        if not math.isfinite(value):
            raise CalculatorError("a number in the expression is too large")
        if abs(value) < 1e-300:
            return 0  # also keeps Fraction('1e-99999999') from building a huge power of ten
        # The literal as written, exactly: 0.1 is 1/10, not the nearest float.
        try:
            return Fraction(ast.get_source_segment(self.source, node) or repr(value))
        except ValueError:
            return Fraction(value)

    def visit_Tuple(self, node: ast.Tuple) -> Number:
        raise CalculatorError(
            "write one expression, and numbers without thousands separators (48213, not 48,213)"
        )

    def visit_Name(self, node: ast.Name) -> Number:
        if node.id in _CONSTANTS:
            return _CONSTANTS[node.id]
        raise CalculatorError(f"unknown name {node.id!r}; only the constants pi and e exist")

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Number:
        operand = self.visit(node.operand)
        if isinstance(node.op, ast.USub):
            return -operand
        if isinstance(node.op, ast.UAdd):
            return operand
        raise CalculatorError("only + and - may precede a number")

    def visit_BinOp(self, node: ast.BinOp) -> Number:
        operator = _BINARY.get(type(node.op))
        if operator is None:
            raise CalculatorError(f"the operator {type(node.op).__name__} is not allowed")
        left, right = self.visit(node.left), self.visit(node.right)
        return _check_size(operator(left, right))

    def visit_Call(self, node: ast.Call) -> Number:
        if not isinstance(node.func, ast.Name):
            raise CalculatorError("only calls of named functions, like sqrt(2), are allowed")
        if node.func.id not in _FUNCTIONS:
            raise CalculatorError(
                f"unknown function {node.func.id!r}; use one of {sorted(_FUNCTIONS)}"
            )
        if node.keywords:
            raise CalculatorError("functions take positional arguments only")
        args = [self.visit(arg) for arg in node.args]
        try:
            return _check_size(_FUNCTIONS[node.func.id](*args))
        except TypeError:
            raise CalculatorError(f"wrong number of arguments for {node.func.id}()") from None

    def generic_visit(self, node: ast.AST) -> Number:
        raise CalculatorError(f"{type(node).__name__} is not allowed in a calculator expression")
