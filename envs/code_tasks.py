"""The built-in Python tasks of `rlvr/Code-v0`, written for this project.

Each task is a function to write: a signature, a description that fixes every edge case the
tests check, a reference solution (the oracle) and hidden test cases with hand-written expected
values. Levels: 1 (one idea, a few lines), 2 (a small algorithm or careful parsing), 3 (dynamic
programming, graphs, search). Expected values are compared with exact types: a function that
must return an int fails if it returns 5.0 or True.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rlvr.envs import options
from rlvr.envs.code import LEVELS, function_prompt
from rlvr.verifiers.code.spec import CallCase, CodeTests
from rlvr.verifiers.types import Task

FAMILY = "code"
SOURCE = "rlvr-builtin"


@dataclass(frozen=True)
class CodeProblem:
    name: str
    difficulty: int
    signature: str
    description: str
    reference: str
    cases: tuple[CallCase, ...] = field(default_factory=tuple)

    def prompt(self) -> str:
        return function_prompt(self.name, self.description, self.signature)

    def task(self) -> Task:
        tests = CodeTests(entry_point=self.name, cases=self.cases, reference=self.reference)
        return Task(
            id=f"code/{self.name}",
            prompt=self.prompt(),
            answer=tests.to_answer(),
            metadata={"family": FAMILY, "difficulty": self.difficulty, "source": SOURCE},
        )


PROBLEMS: list[CodeProblem] = []


def _problem(
    name: str,
    difficulty: int,
    signature: str,
    description: str,
    reference: str,
    cases: list[tuple[tuple, Any]],
    *,
    raises: Sequence[tuple[tuple, str]] = (),
    kwargs_cases: Sequence[tuple[tuple, dict, Any]] = (),
    compare: str = "exact",
) -> None:
    calls = [CallCase(args, expected=expected, compare=compare) for args, expected in cases]
    calls += [
        CallCase(args, kwargs, expected, compare=compare) for args, kwargs, expected in kwargs_cases
    ]
    calls += [CallCase(args, raises=error) for args, error in raises]
    PROBLEMS.append(
        CodeProblem(
            name=name,
            difficulty=difficulty,
            signature=signature,
            description=" ".join(description.split()),
            reference=textwrap.dedent(reference).strip() + "\n",
            cases=tuple(calls),
        )
    )


# --- level 1 ------------------------------------------------------------------------------------

_problem(
    "sum_of_squares",
    1,
    "def sum_of_squares(n: int) -> int:",
    "Return 1*1 + 2*2 + ... + n*n. For n <= 0 return 0.",
    """
    def sum_of_squares(n):
        return sum(k * k for k in range(1, n + 1))
    """,
    [((0,), 0), ((1,), 1), ((3,), 14), ((10,), 385), ((-5,), 0), ((100,), 338350)],
)
_problem(
    "count_vowels",
    1,
    "def count_vowels(text: str) -> int:",
    "Count the vowels a, e, i, o, u in `text`, upper or lower case ('y' is not a vowel).",
    """
    def count_vowels(text):
        return sum(1 for ch in text.lower() if ch in "aeiou")
    """,
    [
        (("",), 0),
        (("hello",), 2),
        (("AEIOU xyz",), 5),
        (("rhythm",), 0),
        (("Programming Language",), 7),
    ],
)
_problem(
    "reverse_words",
    1,
    "def reverse_words(sentence: str) -> str:",
    "Return the words of `sentence` (separated by any whitespace) in reverse order, joined by "
    "single spaces. Leading and trailing whitespace is dropped; an empty sentence gives ''.",
    """
    def reverse_words(sentence):
        return " ".join(reversed(sentence.split()))
    """,
    [
        (("hello world",), "world hello"),
        (("  a  b   c ",), "c b a"),
        (("",), ""),
        (("alone",), "alone"),
    ],
)
_problem(
    "is_palindrome",
    1,
    "def is_palindrome(text: str) -> bool:",
    "Return True if `text` reads the same forwards and backwards when only its letters and "
    "digits are kept and case is ignored. The empty string is a palindrome.",
    """
    def is_palindrome(text):
        kept = [ch.lower() for ch in text if ch.isalnum()]
        return kept == kept[::-1]
    """,
    [
        (("A man, a plan, a canal: Panama",), True),
        (("race a car",), False),
        (("",), True),
        (("No 'x' in Nixon",), True),
        (("ab2a",), False),
    ],
)
_problem(
    "fizzbuzz",
    1,
    "def fizzbuzz(n: int) -> list[str]:",
    "Return a list with one string for each i from 1 to n: 'FizzBuzz' if i is divisible by 15, "
    "'Fizz' if by 3, 'Buzz' if by 5, otherwise str(i). For n <= 0 return [].",
    """
    def fizzbuzz(n):
        out = []
        for i in range(1, n + 1):
            if i % 15 == 0:
                out.append("FizzBuzz")
            elif i % 3 == 0:
                out.append("Fizz")
            elif i % 5 == 0:
                out.append("Buzz")
            else:
                out.append(str(i))
        return out
    """,
    [
        ((1,), ["1"]),
        ((5,), ["1", "2", "Fizz", "4", "Buzz"]),
        ((0,), []),
        (
            (15,),
            [
                "1",
                "2",
                "Fizz",
                "4",
                "Buzz",
                "Fizz",
                "7",
                "8",
                "Fizz",
                "Buzz",
                "11",
                "Fizz",
                "13",
                "14",
                "FizzBuzz",
            ],
        ),
    ],
)
_problem(
    "running_max",
    1,
    "def running_max(values: list[int]) -> list[int]:",
    "Return a list whose i-th element is the largest of values[0], ..., values[i]. An empty "
    "list gives an empty list.",
    """
    def running_max(values):
        out = []
        for value in values:
            out.append(value if not out else max(out[-1], value))
        return out
    """,
    [
        (([],), []),
        (([3, 1, 4, 1, 5],), [3, 3, 4, 4, 5]),
        (([-2, -5, -1],), [-2, -2, -1]),
        (([7],), [7]),
    ],
)
_problem(
    "second_largest",
    1,
    "def second_largest(values: list[int]) -> int | None:",
    "Return the second largest distinct value of `values`, or None if there are fewer than two "
    "distinct values.",
    """
    def second_largest(values):
        distinct = sorted(set(values))
        return distinct[-2] if len(distinct) >= 2 else None
    """,
    [
        (([1, 2, 3],), 2),
        (([5, 5, 4],), 4),
        (([5, 5],), None),
        (([],), None),
        (([-1, -2, -3, -1],), -2),
    ],
)
_problem(
    "celsius_to_fahrenheit",
    1,
    "def celsius_to_fahrenheit(celsius: float) -> float:",
    "Convert a temperature from degrees Celsius to degrees Fahrenheit (F = C * 9 / 5 + 32) and "
    "return it as a float.",
    """
    def celsius_to_fahrenheit(celsius):
        return celsius * 9 / 5 + 32
    """,
    [((0.0,), 32.0), ((100.0,), 212.0), ((-40.0,), -40.0), ((37.5,), 99.5), ((-273.15,), -459.67)],
    compare="approx",
)
_problem(
    "digit_sum",
    1,
    "def digit_sum(n: int) -> int:",
    "Return the sum of the decimal digits of n, ignoring its sign.",
    """
    def digit_sum(n):
        return sum(int(d) for d in str(abs(n)))
    """,
    [((0,), 0), ((123,), 6), ((-4096,), 19), ((99999,), 45), ((10**18,), 1)],
)
_problem(
    "count_occurrences",
    1,
    "def count_occurrences(items: list[str], target: str) -> int:",
    "Return how many elements of `items` are equal to `target` (case-sensitive).",
    """
    def count_occurrences(items, target):
        return sum(1 for item in items if item == target)
    """,
    [
        ((["a", "b", "a"], "a"), 2),
        (([], "x"), 0),
        ((["A", "a"], "a"), 1),
        ((["ab", "abc", "ab"], "ab"), 2),
    ],
)
_problem(
    "capitalize_words",
    1,
    "def capitalize_words(text: str) -> str:",
    "Split `text` on single spaces, make the first character of each part upper case and the "
    "rest lower case (like str.capitalize), and join the parts back with single spaces, so that "
    "runs of spaces are kept.",
    """
    def capitalize_words(text):
        return " ".join(word.capitalize() for word in text.split(" "))
    """,
    [
        (("hello world",), "Hello World"),
        (("hELLO   wORLD",), "Hello   World"),
        (("",), ""),
        (("a b c",), "A B C"),
        (("123abc x",), "123abc X"),
    ],
)
_problem(
    "flatten_once",
    1,
    "def flatten_once(nested: list[list[int]]) -> list[int]:",
    "Concatenate the inner lists of `nested`, in order, into one list.",
    """
    def flatten_once(nested):
        return [item for inner in nested for item in inner]
    """,
    [
        (([[1, 2], [3], []],), [1, 2, 3]),
        (([],), []),
        (([[], []],), []),
        (([[5], [6, 7]],), [5, 6, 7]),
    ],
)
_problem(
    "chunk",
    1,
    "def chunk(items: list[int], size: int) -> list[list[int]]:",
    "Split `items` into consecutive lists of `size` elements; the last one may be shorter. "
    "Raise ValueError if size < 1.",
    """
    def chunk(items, size):
        if size < 1:
            raise ValueError("size must be at least 1")
        return [items[i:i + size] for i in range(0, len(items), size)]
    """,
    [
        (([1, 2, 3, 4, 5], 2), [[1, 2], [3, 4], [5]]),
        (([], 3), []),
        (([1, 2], 5), [[1, 2]]),
        (([1, 2, 3], 1), [[1], [2], [3]]),
    ],
    raises=[(([1], 0), "ValueError")],
)
_problem(
    "dedupe",
    1,
    "def dedupe(items: list[int]) -> list[int]:",
    "Return `items` without repeated values, keeping the first occurrence of each value and "
    "the original order.",
    """
    def dedupe(items):
        seen, out = set(), []
        for item in items:
            if item not in seen:
                seen.add(item)
                out.append(item)
        return out
    """,
    [
        (([3, 1, 3, 2, 1],), [3, 1, 2]),
        (([],), []),
        (([1, 1, 1],), [1]),
        (([5, -5, 5, 0],), [5, -5, 0]),
    ],
)
_problem(
    "max_gap",
    1,
    "def max_gap(values: list[int]) -> int:",
    "Return the largest absolute difference between two consecutive elements of `values`, or 0 "
    "if it has fewer than two elements.",
    """
    def max_gap(values):
        return max((abs(a - b) for a, b in zip(values, values[1:])), default=0)
    """,
    [(([1, 5, 2],), 4), (([10],), 0), (([],), 0), (([3, 3, 3],), 0), (([-5, 5, 0],), 10)],
)
_problem(
    "factorial",
    1,
    "def factorial(n: int) -> int:",
    "Return n! (the product 1 * 2 * ... * n, with 0! = 1). Raise ValueError if n is negative.",
    """
    def factorial(n):
        if n < 0:
            raise ValueError("n must be non-negative")
        result = 1
        for k in range(2, n + 1):
            result *= k
        return result
    """,
    [((0,), 1), ((5,), 120), ((20,), 2432902008176640000), ((25,), 15511210043330985984000000)],
    raises=[((-1,), "ValueError")],
)
_problem(
    "gcd_list",
    1,
    "def gcd_list(values: list[int]) -> int:",
    "Return the greatest common divisor of all the values (of their absolute values). The gcd "
    "of an empty list, or of zeros only, is 0.",
    """
    import math

    def gcd_list(values):
        result = 0
        for value in values:
            result = math.gcd(result, value)
        return result
    """,
    [
        (([12, 18, 24],), 6),
        (([7],), 7),
        (([],), 0),
        (([0, 0],), 0),
        (([-4, 6],), 2),
        (([17, 34, 51],), 17),
    ],
)
_problem(
    "is_leap_year",
    1,
    "def is_leap_year(year: int) -> bool:",
    "Return True if `year` is a leap year of the Gregorian calendar: divisible by 4, except "
    "years divisible by 100 unless they are also divisible by 400.",
    """
    def is_leap_year(year):
        return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    """,
    [((2000,), True), ((1900,), False), ((2024,), True), ((2023,), False), ((2400,), True)],
)
_problem(
    "char_histogram",
    1,
    "def char_histogram(text: str) -> dict[str, int]:",
    "Return a dict mapping each character of `text` except the space ' ' to the number of times "
    "it occurs.",
    """
    def char_histogram(text):
        counts = {}
        for ch in text:
            if ch != " ":
                counts[ch] = counts.get(ch, 0) + 1
        return counts
    """,
    [
        (("hello",), {"h": 1, "e": 1, "l": 2, "o": 1}),
        (("",), {}),
        (("a a",), {"a": 2}),
        (("Aa!",), {"A": 1, "a": 1, "!": 1}),
    ],
)
_problem(
    "mean",
    1,
    "def mean(values: list[float]) -> float:",
    "Return the arithmetic mean of `values` as a float. Raise ValueError for an empty list.",
    """
    def mean(values):
        if not values:
            raise ValueError("mean of an empty list")
        return sum(values) / len(values)
    """,
    [
        (([1.0, 2.0, 3.0, 4.0],), 2.5),
        (([5.0],), 5.0),
        (([-1.5, 1.5],), 0.0),
        (([0.1, 0.2, 0.3],), 0.2),
    ],
    raises=[(([],), "ValueError")],
    compare="approx",
)
_problem(
    "rotate_left",
    1,
    "def rotate_left(items: list[int], k: int) -> list[int]:",
    "Return `items` rotated left by k positions: rotate_left([1, 2, 3, 4], 1) == [2, 3, 4, 1]. "
    "k may be larger than the length, or negative (a negative k rotates right). An empty list "
    "gives [].",
    """
    def rotate_left(items, k):
        if not items:
            return []
        k %= len(items)
        return items[k:] + items[:k]
    """,
    [
        (([1, 2, 3, 4, 5], 2), [3, 4, 5, 1, 2]),
        (([1, 2, 3], 4), [2, 3, 1]),
        (([1, 2, 3], -1), [3, 1, 2]),
        (([], 3), []),
        (([9], 100), [9]),
    ],
)
_problem(
    "clamp",
    1,
    "def clamp(value: int, low: int, high: int) -> int:",
    "Return `value` limited to the range [low, high]. Raise ValueError if low > high.",
    """
    def clamp(value, low, high):
        if low > high:
            raise ValueError("low must not exceed high")
        return max(low, min(value, high))
    """,
    [((5, 0, 10), 5), ((-3, 0, 10), 0), ((42, 0, 10), 10), ((7, 7, 7), 7)],
    raises=[((1, 5, 2), "ValueError")],
)
_problem(
    "count_words",
    1,
    "def count_words(text: str) -> dict[str, int]:",
    "Split `text` on whitespace, strip the characters . , ! ? ; : from both ends of each word, "
    "lower-case it, skip words that become empty, and return a dict from word to count.",
    """
    def count_words(text):
        counts = {}
        for raw in text.split():
            word = raw.strip(".,!?;:").lower()
            if word:
                counts[word] = counts.get(word, 0) + 1
        return counts
    """,
    [
        (("The cat and the hat.",), {"the": 2, "cat": 1, "and": 1, "hat": 1}),
        (("",), {}),
        (("Hi! hi? HI",), {"hi": 3}),
        (("... wait ...",), {"wait": 1}),
    ],
)
_problem(
    "to_binary",
    1,
    "def to_binary(n: int) -> str:",
    "Return the binary representation of n without a '0b' prefix; a negative number gets a "
    "leading '-'.",
    """
    def to_binary(n):
        return ("-" if n < 0 else "") + format(abs(n), "b")
    """,
    [((0,), "0"), ((5,), "101"), ((255,), "11111111"), ((-6,), "-110")],
)
_problem(
    "index_of_min",
    1,
    "def index_of_min(values: list[int]) -> int:",
    "Return the index of the smallest value (the first one if it occurs several times). Raise "
    "ValueError for an empty list.",
    """
    def index_of_min(values):
        if not values:
            raise ValueError("empty list")
        return min(range(len(values)), key=lambda i: values[i])
    """,
    [(([3, 1, 2, 1],), 1), (([5],), 0), (([-1, -1],), 0), (([4, 3, 2, 1],), 3)],
    raises=[(([],), "ValueError")],
)
_problem(
    "merge_counts",
    1,
    "def merge_counts(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:",
    "Return a new dict with every key of a and b, where each value is the sum of the values "
    "the key has in a and b (a missing key counts as 0). Do not modify a or b.",
    """
    def merge_counts(a, b):
        merged = dict(a)
        for key, value in b.items():
            merged[key] = merged.get(key, 0) + value
        return merged
    """,
    [
        (({"x": 1, "y": 2}, {"y": 3, "z": 4}), {"x": 1, "y": 5, "z": 4}),
        (({}, {}), {}),
        (({"a": 1}, {}), {"a": 1}),
    ],
)

# --- level 2 ------------------------------------------------------------------------------------

_problem(
    "balanced_brackets",
    2,
    "def balanced_brackets(text: str) -> bool:",
    "Return True if the brackets (), [] and {} in `text` are balanced and properly nested. "
    "Other characters are ignored.",
    """
    def balanced_brackets(text):
        pairs = {")": "(", "]": "[", "}": "{"}
        stack = []
        for ch in text:
            if ch in "([{":
                stack.append(ch)
            elif ch in pairs:
                if not stack or stack.pop() != pairs[ch]:
                    return False
        return not stack
    """,
    [
        (("([]{})",), True),
        (("([)]",), False),
        (("",), True),
        (("((",), False),
        (("a(b[c]d)e",), True),
        (("}{",), False),
    ],
)
_problem(
    "roman_to_int",
    2,
    "def roman_to_int(numeral: str) -> int:",
    "Convert a valid Roman numeral (I, V, X, L, C, D, M with the usual subtractive pairs such "
    "as IV and CM) between 1 and 3999 to an int.",
    """
    def roman_to_int(numeral):
        values = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}
        total = 0
        for i, ch in enumerate(numeral):
            value = values[ch]
            if i + 1 < len(numeral) and values[numeral[i + 1]] > value:
                total -= value
            else:
                total += value
        return total
    """,
    [
        (("III",), 3),
        (("IV",), 4),
        (("IX",), 9),
        (("LVIII",), 58),
        (("MCMXCIV",), 1994),
        (("MMMCMXCIX",), 3999),
    ],
)
_problem(
    "int_to_roman",
    2,
    "def int_to_roman(number: int) -> str:",
    "Convert an int from 1 to 3999 to a Roman numeral using subtractive pairs (4 is 'IV', 900 "
    "is 'CM'). Raise ValueError outside that range.",
    """
    def int_to_roman(number):
        if not 1 <= number <= 3999:
            raise ValueError("out of range")
        table = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
                 (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]
        out = []
        for value, symbol in table:
            while number >= value:
                out.append(symbol)
                number -= value
        return "".join(out)
    """,
    [((1,), "I"), ((4,), "IV"), ((58,), "LVIII"), ((1994,), "MCMXCIV"), ((3999,), "MMMCMXCIX")],
    raises=[((0,), "ValueError"), ((4000,), "ValueError")],
)
_problem(
    "run_length_encode",
    2,
    "def run_length_encode(text: str) -> str:",
    "Encode each run of a repeated character as the character followed by the run's length in "
    "decimal: 'xxyzzz' becomes 'x2y1z3'. The empty string encodes to ''.",
    """
    def run_length_encode(text):
        out, i = [], 0
        while i < len(text):
            j = i
            while j < len(text) and text[j] == text[i]:
                j += 1
            out.append(f"{text[i]}{j - i}")
            i = j
        return "".join(out)
    """,
    [
        (("aaabcc",), "a3b1c2"),
        (("",), ""),
        (("a",), "a1"),
        (("aaaaaaaaaaaa",), "a12"),
        (("abab",), "a1b1a1b1"),
    ],
)
_problem(
    "run_length_decode",
    2,
    "def run_length_decode(encoded: str) -> str:",
    "Decode a run-length encoding where each letter is followed by its count in decimal (the "
    "count may have several digits): 'x2y1z3' becomes 'xxyzzz'.",
    """
    import re

    def run_length_decode(encoded):
        return "".join(ch * int(count) for ch, count in re.findall(r"(\\D)(\\d+)", encoded))
    """,
    [(("a3b1c2",), "aaabcc"), (("",), ""), (("x12",), "xxxxxxxxxxxx"), (("a1b1a1b1",), "abab")],
)
_problem(
    "merge_intervals",
    2,
    "def merge_intervals(intervals: list[list[int]]) -> list[list[int]]:",
    "Each interval is [start, end] with start <= end. Merge intervals that overlap or touch "
    "([1, 2] and [2, 3] become [1, 3]) and return the merged intervals sorted by start.",
    """
    def merge_intervals(intervals):
        merged = []
        for start, end in sorted(intervals):
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        return merged
    """,
    [
        (([[1, 3], [2, 6], [8, 10], [15, 18]],), [[1, 6], [8, 10], [15, 18]]),
        (([[1, 4], [4, 5]],), [[1, 5]]),
        (([],), []),
        (([[5, 7], [1, 2]],), [[1, 2], [5, 7]]),
        (([[1, 10], [2, 3], [4, 5]],), [[1, 10]]),
    ],
)
_problem(
    "two_sum",
    2,
    "def two_sum(nums: list[int], target: int) -> tuple[int, int] | None:",
    "Return a tuple (i, j) with i < j and nums[i] + nums[j] == target. If several pairs work, "
    "return the one with the smallest j, and among those the smallest i. Return None if no "
    "pair works.",
    """
    def two_sum(nums, target):
        first = {}
        for j, value in enumerate(nums):
            if target - value in first:
                return (first[target - value], j)
            first.setdefault(value, j)
        return None
    """,
    [
        (([2, 7, 11, 15], 9), (0, 1)),
        (([3, 2, 4], 6), (1, 2)),
        (([3, 3], 6), (0, 1)),
        (([1, 2], 7), None),
        (([0, 4, 3, 0], 0), (0, 3)),
        (([1, 5, 1, 5], 6), (0, 1)),
    ],
)
_problem(
    "group_anagrams",
    2,
    "def group_anagrams(words: list[str]) -> list[list[str]]:",
    "Group the words that are anagrams of each other. Sort the words inside each group, and "
    "sort the groups by their first word. Repeated words stay repeated.",
    """
    def group_anagrams(words):
        groups = {}
        for word in words:
            groups.setdefault("".join(sorted(word)), []).append(word)
        return sorted(sorted(group) for group in groups.values())
    """,
    [
        (
            (["eat", "tea", "tan", "ate", "nat", "bat"],),
            [["ate", "eat", "tea"], ["bat"], ["nat", "tan"]],
        ),
        (([],), []),
        ((["a"],), [["a"]]),
        ((["ab", "ba", "ab"],), [["ab", "ab", "ba"]]),
    ],
)
_problem(
    "spiral_order",
    2,
    "def spiral_order(matrix: list[list[int]]) -> list[int]:",
    "Return the elements of a rectangular matrix in clockwise spiral order, starting at the top "
    "left and going right first.",
    """
    def spiral_order(matrix):
        out = []
        rows = [list(row) for row in matrix]
        while rows:
            out.extend(rows.pop(0))
            rows = [list(col) for col in zip(*rows)][::-1]
        return out
    """,
    [
        (([[1, 2, 3], [4, 5, 6], [7, 8, 9]],), [1, 2, 3, 6, 9, 8, 7, 4, 5]),
        (([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]],), [1, 2, 3, 4, 8, 12, 11, 10, 9, 5, 6, 7]),
        (([],), []),
        (([[1]],), [1]),
        (([[1], [2], [3]],), [1, 2, 3]),
    ],
)
_problem(
    "transpose",
    2,
    "def transpose(matrix: list[list[int]]) -> list[list[int]]:",
    "Return the transpose of a rectangular matrix given as a list of rows (an empty matrix "
    "gives []).",
    """
    def transpose(matrix):
        return [list(column) for column in zip(*matrix)]
    """,
    [
        (([[1, 2, 3], [4, 5, 6]],), [[1, 4], [2, 5], [3, 6]]),
        (([],), []),
        (([[1]],), [[1]]),
        (([[1, 2]],), [[1], [2]]),
    ],
)
_problem(
    "primes_up_to",
    2,
    "def primes_up_to(n: int) -> list[int]:",
    "Return all prime numbers p with 2 <= p <= n, in increasing order.",
    """
    def primes_up_to(n):
        if n < 2:
            return []
        sieve = [True] * (n + 1)
        sieve[0] = sieve[1] = False
        for p in range(2, int(n ** 0.5) + 1):
            if sieve[p]:
                sieve[p * p::p] = [False] * len(range(p * p, n + 1, p))
        return [p for p, prime in enumerate(sieve) if prime]
    """,
    [
        ((1,), []),
        ((2,), [2]),
        ((10,), [2, 3, 5, 7]),
        ((30,), [2, 3, 5, 7, 11, 13, 17, 19, 23, 29]),
        ((0,), []),
    ],
)
_problem(
    "caesar_cipher",
    2,
    "def caesar_cipher(text: str, shift: int) -> str:",
    "Shift every ASCII letter of `text` by `shift` positions in the alphabet, wrapping around "
    "and keeping its case; other characters are unchanged. The shift may be negative or larger "
    "than 26.",
    """
    def caesar_cipher(text, shift):
        out = []
        for ch in text:
            if "a" <= ch <= "z":
                out.append(chr((ord(ch) - 97 + shift) % 26 + 97))
            elif "A" <= ch <= "Z":
                out.append(chr((ord(ch) - 65 + shift) % 26 + 65))
            else:
                out.append(ch)
        return "".join(out)
    """,
    [
        (("abc", 1), "bcd"),
        (("xyz", 3), "abc"),
        (("Hello, World!", 13), "Uryyb, Jbeyq!"),
        (("abc", -1), "zab"),
        (("abc", 27), "bcd"),
    ],
)
_problem(
    "matrix_multiply",
    2,
    "def matrix_multiply(a: list[list[int]], b: list[list[int]]) -> list[list[int]]:",
    "Return the matrix product a x b of two matrices given as lists of rows. Raise ValueError if "
    "the number of columns of a differs from the number of rows of b.",
    """
    def matrix_multiply(a, b):
        if any(len(row) != len(b) for row in a):
            raise ValueError("shapes do not match")
        columns = list(zip(*b))
        return [[sum(x * y for x, y in zip(row, column)) for column in columns] for row in a]
    """,
    [
        (([[1, 2], [3, 4]], [[5, 6], [7, 8]]), [[19, 22], [43, 50]]),
        (([[1, 2, 3]], [[1], [2], [3]]), [[14]]),
        (([[2]], [[3]]), [[6]]),
    ],
    raises=[(([[1, 2]], [[1, 2]]), "ValueError")],
)
_problem(
    "longest_common_prefix",
    2,
    "def longest_common_prefix(words: list[str]) -> str:",
    "Return the longest string that is a prefix of every word ('' for an empty list).",
    """
    def longest_common_prefix(words):
        if not words:
            return ""
        prefix = words[0]
        for word in words[1:]:
            while not word.startswith(prefix):
                prefix = prefix[:-1]
        return prefix
    """,
    [
        ((["flower", "flow", "flight"],), "fl"),
        ((["dog", "racecar", "car"],), ""),
        (([],), ""),
        ((["same", "same"],), "same"),
        ((["a"],), "a"),
    ],
)
_problem(
    "top_k_frequent",
    2,
    "def top_k_frequent(words: list[str], k: int) -> list[str]:",
    "Return the k most frequent distinct words, most frequent first; words with equal counts "
    "are ordered alphabetically. If there are fewer than k distinct words, return them all.",
    """
    from collections import Counter

    def top_k_frequent(words, k):
        counts = Counter(words)
        return sorted(counts, key=lambda word: (-counts[word], word))[:k]
    """,
    [
        ((["i", "love", "leetcode", "i", "love", "coding"], 2), ["i", "love"]),
        (
            (["the", "day", "is", "sunny", "the", "the", "the", "sunny", "is", "is"], 4),
            ["the", "is", "sunny", "day"],
        ),
        ((["b", "a"], 5), ["a", "b"]),
        (([], 1), []),
    ],
)
_problem(
    "pascal_row",
    2,
    "def pascal_row(n: int) -> list[int]:",
    "Return row n of Pascal's triangle as a list, counting rows from 0 (the top row, which "
    "holds a single 1).",
    """
    def pascal_row(n):
        row = [1]
        for _ in range(n):
            row = [a + b for a, b in zip([0] + row, row + [0])]
        return row
    """,
    [
        ((0,), [1]),
        ((1,), [1, 1]),
        ((4,), [1, 4, 6, 4, 1]),
        ((10,), [1, 10, 45, 120, 210, 252, 210, 120, 45, 10, 1]),
    ],
)
_problem(
    "word_wrap",
    2,
    "def word_wrap(text: str, width: int) -> list[str]:",
    "Wrap the words of `text` (split on whitespace) greedily into lines of at most `width` "
    "characters, words separated by single spaces: each line takes as many words as fit. A word "
    "longer than `width` gets a line of its own, unbroken. A text without words gives [].",
    """
    def word_wrap(text, width):
        lines, current = [], ""
        for word in text.split():
            if current and len(current) + 1 + len(word) <= width:
                current += " " + word
            else:
                if current:
                    lines.append(current)
                current = word
        if current:
            lines.append(current)
        return lines
    """,
    [
        (("the quick brown fox", 10), ["the quick", "brown fox"]),
        (("", 5), []),
        (("a verylongword b", 4), ["a", "verylongword", "b"]),
        (("one two", 7), ["one two"]),
    ],
)
_problem(
    "valid_ipv4",
    2,
    "def valid_ipv4(address: str) -> bool:",
    "Return True if `address` is four decimal numbers from 0 to 255 separated by dots, with "
    "digits only, no sign, no spaces, and no leading zeros ('0' itself is fine, '01' is not).",
    """
    def valid_ipv4(address):
        parts = address.split(".")
        if len(parts) != 4:
            return False
        for part in parts:
            if not part or not all("0" <= ch <= "9" for ch in part):
                return False
            if len(part) > 1 and part[0] == "0" or int(part) > 255:
                return False
        return True
    """,
    [
        (("192.168.0.1",), True),
        (("255.255.255.255",), True),
        (("256.1.1.1",), False),
        (("1.2.3",), False),
        (("01.2.3.4",), False),
        (("1.2.3.4 ",), False),
        (("a.b.c.d",), False),
        (("0.0.0.0",), True),
    ],
)
_problem(
    "moving_average",
    2,
    "def moving_average(values: list[float], window: int) -> list[float]:",
    "Return the mean of every run of `window` consecutive values, in order (an empty list if "
    "there are fewer values than `window`). Raise ValueError if window < 1.",
    """
    def moving_average(values, window):
        if window < 1:
            raise ValueError("window must be at least 1")
        return [sum(values[i:i + window]) / window for i in range(len(values) - window + 1)]
    """,
    [(([1.0, 2.0, 3.0, 4.0], 2), [1.5, 2.5, 3.5]), (([1.0, 2.0], 3), []), (([5.0], 1), [5.0])],
    raises=[(([1.0], 0), "ValueError")],
    compare="approx",
)
_problem(
    "parse_duration",
    2,
    "def parse_duration(text: str) -> int:",
    "Parse a duration such as '1h30m', '45s' or '1h2m3s' into seconds. It is one or more parts, "
    "each a non-negative integer followed by a unit h, m or s; each unit appears at most once "
    "and in the order h, m, s. Raise ValueError for anything else (including '').",
    """
    import re

    def parse_duration(text):
        match = re.fullmatch(r"(?:(\\d+)h)?(?:(\\d+)m)?(?:(\\d+)s)?", text)
        if not text or match is None:
            raise ValueError(f"invalid duration {text!r}")
        hours, minutes, seconds = (int(g) if g else 0 for g in match.groups())
        return hours * 3600 + minutes * 60 + seconds
    """,
    [(("1h30m",), 5400), (("45s",), 45), (("2h5s",), 7205), (("1h2m3s",), 3723), (("0s",), 0)],
    raises=[(("",), "ValueError"), (("5x",), "ValueError"), (("3m1h",), "ValueError")],
)
_problem(
    "binary_search",
    2,
    "def binary_search(sorted_values: list[int], target: int) -> int:",
    "`sorted_values` is sorted and has no duplicates. Return the index of `target` in it, or "
    "-1 if it is absent.",
    """
    def binary_search(sorted_values, target):
        low, high = 0, len(sorted_values) - 1
        while low <= high:
            middle = (low + high) // 2
            if sorted_values[middle] == target:
                return middle
            if sorted_values[middle] < target:
                low = middle + 1
            else:
                high = middle - 1
        return -1
    """,
    [
        (([1, 3, 5, 7, 9], 7), 3),
        (([1, 3, 5, 7, 9], 4), -1),
        (([], 1), -1),
        (([2], 2), 0),
        ((list(range(0, 2000, 2)), 1998), 999),
    ],
)
_problem(
    "prime_factors",
    2,
    "def prime_factors(n: int) -> list[int]:",
    "Return the prime factors of n in increasing order, each repeated as often as it divides n "
    "(18 gives [2, 3, 3]). Raise ValueError if n < 2.",
    """
    def prime_factors(n):
        if n < 2:
            raise ValueError("n must be at least 2")
        factors, p = [], 2
        while p * p <= n:
            while n % p == 0:
                factors.append(p)
                n //= p
            p += 1
        if n > 1:
            factors.append(n)
        return factors
    """,
    [((12,), [2, 2, 3]), ((13,), [13]), ((360,), [2, 2, 2, 3, 3, 5]), ((8633,), [89, 97])],
    raises=[((1,), "ValueError")],
)
_problem(
    "max_subarray_sum",
    2,
    "def max_subarray_sum(values: list[int]) -> int:",
    "Return the largest sum of a non-empty run of consecutive elements. Raise ValueError for an "
    "empty list.",
    """
    def max_subarray_sum(values):
        if not values:
            raise ValueError("empty list")
        best = current = values[0]
        for value in values[1:]:
            current = max(value, current + value)
            best = max(best, current)
        return best
    """,
    [
        (([-2, 1, -3, 4, -1, 2, 1, -5, 4],), 6),
        (([-3, -1, -2],), -1),
        (([5],), 5),
        (([1, 2, 3],), 6),
    ],
    raises=[(([],), "ValueError")],
)
_problem(
    "flatten_dict",
    2,
    "def flatten_dict(data: dict, separator: str = '.') -> dict:",
    "Flatten nested dicts: the value at data['a']['b'] becomes the entry 'a.b' (joined with "
    "`separator`). Values that are not dicts are kept as they are; an empty nested dict adds "
    "nothing. Keys are strings.",
    """
    def flatten_dict(data, separator="."):
        flat = {}
        for key, value in data.items():
            if isinstance(value, dict):
                for inner, item in flatten_dict(value, separator).items():
                    flat[f"{key}{separator}{inner}"] = item
            else:
                flat[key] = value
        return flat
    """,
    [
        (({"a": 1, "b": {"c": 2, "d": {"e": 3}}},), {"a": 1, "b.c": 2, "b.d.e": 3}),
        (({},), {}),
        (({"x": {}},), {}),
        (({"k": [1, {"n": 2}]},), {"k": [1, {"n": 2}]}),
    ],
    kwargs_cases=[(({"a": {"b": 1}},), {"separator": "/"}, {"a/b": 1})],
)

# --- level 3 ------------------------------------------------------------------------------------

_problem(
    "longest_increasing_subsequence",
    3,
    "def longest_increasing_subsequence(values: list[int]) -> int:",
    "Return the length of the longest strictly increasing subsequence of `values` (elements in "
    "their original order, not necessarily adjacent).",
    """
    import bisect

    def longest_increasing_subsequence(values):
        tails = []
        for value in values:
            i = bisect.bisect_left(tails, value)
            if i == len(tails):
                tails.append(value)
            else:
                tails[i] = value
        return len(tails)
    """,
    [
        (([10, 9, 2, 5, 3, 7, 101, 18],), 4),
        (([],), 0),
        (([0, 1, 0, 3, 2, 3],), 4),
        (([7, 7, 7],), 1),
        ((list(range(2000)),), 2000),
    ],
)
_problem(
    "edit_distance",
    3,
    "def edit_distance(a: str, b: str) -> int:",
    "Return the Levenshtein distance between a and b: the fewest single-character insertions, "
    "deletions and substitutions that turn a into b.",
    """
    def edit_distance(a, b):
        previous = list(range(len(b) + 1))
        for i, ca in enumerate(a, 1):
            current = [i]
            for j, cb in enumerate(b, 1):
                current.append(min(previous[j] + 1, current[j - 1] + 1,
                                   previous[j - 1] + (ca != cb)))
            previous = current
        return previous[-1]
    """,
    [
        (("kitten", "sitting"), 3),
        (("", "abc"), 3),
        (("flaw", "lawn"), 2),
        (("same", "same"), 0),
        (("intention", "execution"), 5),
    ],
)
_problem(
    "coin_change",
    3,
    "def coin_change(coins: list[int], amount: int) -> int:",
    "Return the fewest coins (each denomination usable any number of times) that add up to "
    "`amount`, or -1 if no combination does. An amount of 0 needs 0 coins.",
    """
    def coin_change(coins, amount):
        best = [0] + [amount + 1] * amount
        for total in range(1, amount + 1):
            for coin in coins:
                if coin <= total:
                    best[total] = min(best[total], best[total - coin] + 1)
        return best[amount] if best[amount] <= amount else -1
    """,
    [
        (([1, 2, 5], 11), 3),
        (([2], 3), -1),
        (([1], 0), 0),
        (([186, 419, 83, 408], 6249), 20),
        (([3, 7], 5), -1),
    ],
)
_problem(
    "knapsack",
    3,
    "def knapsack(weights: list[int], values: list[int], capacity: int) -> int:",
    "Item i has weight weights[i] and value values[i]. Return the largest total value of a set "
    "of items (each used at most once) whose total weight is at most `capacity`.",
    """
    def knapsack(weights, values, capacity):
        best = [0] * (capacity + 1)
        for weight, value in zip(weights, values):
            for room in range(capacity, weight - 1, -1):
                best[room] = max(best[room], best[room - weight] + value)
        return best[capacity]
    """,
    [
        (([1, 3, 4, 5], [1, 4, 5, 7], 7), 9),
        (([], [], 10), 0),
        (([5], [10], 4), 0),
        (([2, 3, 4], [3, 4, 5], 5), 7),
    ],
)
_problem(
    "evaluate",
    3,
    "def evaluate(expression: str) -> int:",
    "Evaluate an arithmetic expression of non-negative integer literals, + - * /, parentheses, "
    "unary minus and spaces, with the usual precedence and left-to-right evaluation of equal "
    "precedence. / is integer division rounding toward zero (-7 / 2 is -3). Division by zero "
    "raises ZeroDivisionError. Do not use eval.",
    """
    def evaluate(expression):
        tokens = []
        i = 0
        while i < len(expression):
            ch = expression[i]
            if ch.isdigit():
                j = i
                while j < len(expression) and expression[j].isdigit():
                    j += 1
                tokens.append(int(expression[i:j]))
                i = j
                continue
            if ch in "+-*/()":
                tokens.append(ch)
            i += 1
        position = 0

        def peek():
            return tokens[position] if position < len(tokens) else None

        def take():
            nonlocal position
            position += 1
            return tokens[position - 1]

        def expr():
            value = term()
            while peek() in ("+", "-"):
                value = value + term() if take() == "+" else value - term()
            return value

        def term():
            value = factor()
            while peek() in ("*", "/"):
                if take() == "*":
                    value *= factor()
                else:
                    divisor = factor()
                    if divisor == 0:
                        raise ZeroDivisionError("division by zero")
                    quotient = abs(value) // abs(divisor)
                    value = quotient if (value < 0) == (divisor < 0) else -quotient
            return value

        def factor():
            token = take()
            if token == "-":
                return -factor()
            if token == "(":
                value = expr()
                take()
                return value
            return token

        return expr()
    """,
    [
        (("1 + 2 * 3",), 7),
        (("(1 + 2) * 3",), 9),
        (("-4 / 3",), -1),
        (("7 / -2",), -3),
        (("2 * (3 + 4) - -5",), 19),
        (("10",), 10),
        (("((2))",), 2),
        (("8 - 3 - 2",), 3),
        (("2*3/4",), 1),
    ],
    raises=[(("1/0",), "ZeroDivisionError")],
)
_problem(
    "shortest_path_grid",
    3,
    "def shortest_path_grid(grid: list[str]) -> int:",
    "`grid` is a list of equal-length strings of '.' (open) and '#' (wall). Return the fewest "
    "steps from the top-left cell to the bottom-right cell moving up, down, left or right "
    "through open cells, or -1 if there is no path (or either end is a wall).",
    """
    from collections import deque

    def shortest_path_grid(grid):
        rows, cols = len(grid), len(grid[0])
        if grid[0][0] == "#" or grid[-1][-1] == "#":
            return -1
        distance = {(0, 0): 0}
        queue = deque([(0, 0)])
        while queue:
            r, c = queue.popleft()
            if (r, c) == (rows - 1, cols - 1):
                return distance[(r, c)]
            for nr, nc in ((r + 1, c), (r - 1, c), (r, c + 1), (r, c - 1)):
                if 0 <= nr < rows and 0 <= nc < cols and grid[nr][nc] == "." \\
                        and (nr, nc) not in distance:
                    distance[(nr, nc)] = distance[(r, c)] + 1
                    queue.append((nr, nc))
        return -1
    """,
    [
        (([".."] * 2,), 2),
        ((["...", ".#.", "..."],), 4),
        (([".#", "#."],), -1),
        ((["."],), 0),
        ((["#"],), -1),
        (([".....", "####.", ".....", ".####", "....."],), 16),
    ],
)
_problem(
    "topological_order",
    3,
    "def topological_order(n: int, edges: list[list[int]]) -> list[int] | None:",
    "Nodes are 0 .. n-1 and each edge [a, b] means a must come before b. Return the "
    "lexicographically smallest ordering of all nodes that respects every edge, or None if the "
    "edges contain a cycle.",
    """
    import heapq

    def topological_order(n, edges):
        successors = [[] for _ in range(n)]
        indegree = [0] * n
        for a, b in edges:
            successors[a].append(b)
            indegree[b] += 1
        ready = [node for node in range(n) if indegree[node] == 0]
        heapq.heapify(ready)
        order = []
        while ready:
            node = heapq.heappop(ready)
            order.append(node)
            for nxt in successors[node]:
                indegree[nxt] -= 1
                if indegree[nxt] == 0:
                    heapq.heappush(ready, nxt)
        return order if len(order) == n else None
    """,
    [
        ((4, [[0, 1], [0, 2], [1, 3], [2, 3]]), [0, 1, 2, 3]),
        ((3, [[2, 0], [2, 1]]), [2, 0, 1]),
        ((2, [[0, 1], [1, 0]]), None),
        ((3, []), [0, 1, 2]),
        ((5, [[4, 0], [3, 0], [1, 2]]), [1, 2, 3, 4, 0]),
    ],
)
_problem(
    "dijkstra",
    3,
    "def dijkstra(n: int, edges: list[list[int]], source: int) -> list[int | None]:",
    "Nodes are 0 .. n-1; each edge [u, v, w] is a directed edge from u to v of weight w >= 0. "
    "Return the list of shortest distances from `source` to every node, with None for nodes "
    "that cannot be reached.",
    """
    import heapq

    def dijkstra(n, edges, source):
        graph = [[] for _ in range(n)]
        for u, v, w in edges:
            graph[u].append((v, w))
        distance = [None] * n
        queue = [(0, source)]
        while queue:
            d, node = heapq.heappop(queue)
            if distance[node] is not None:
                continue
            distance[node] = d
            for nxt, w in graph[node]:
                if distance[nxt] is None:
                    heapq.heappush(queue, (d + w, nxt))
        return distance
    """,
    [
        ((4, [[0, 1, 4], [0, 2, 1], [2, 1, 2], [1, 3, 1]], 0), [0, 3, 1, 4]),
        ((3, [[0, 1, 5]], 0), [0, 5, None]),
        ((1, [], 0), [0]),
        ((3, [[1, 0, 1]], 2), [None, None, 0]),
    ],
)
_problem(
    "count_islands",
    3,
    "def count_islands(grid: list[str]) -> int:",
    "`grid` is a list of equal-length strings of '1' (land) and '0' (water). Count the islands: "
    "groups of land cells connected up, down, left or right. An empty grid has 0 islands.",
    """
    def count_islands(grid):
        seen, islands = set(), 0
        for r, row in enumerate(grid):
            for c, cell in enumerate(row):
                if cell != "1" or (r, c) in seen:
                    continue
                islands += 1
                stack = [(r, c)]
                seen.add((r, c))
                while stack:
                    y, x = stack.pop()
                    for ny, nx in ((y + 1, x), (y - 1, x), (y, x + 1), (y, x - 1)):
                        if 0 <= ny < len(grid) and 0 <= nx < len(row) \\
                                and grid[ny][nx] == "1" and (ny, nx) not in seen:
                            seen.add((ny, nx))
                            stack.append((ny, nx))
        return islands
    """,
    [
        ((["11000", "11000", "00100", "00011"],), 3),
        (([],), 0),
        ((["0"],), 0),
        ((["111", "010", "111"],), 1),
        ((["101", "010", "101"],), 5),
    ],
)
_problem(
    "longest_palindrome",
    3,
    "def longest_palindrome(text: str) -> str:",
    "Return the longest substring of `text` that is a palindrome; if several have the greatest "
    "length, return the one that starts first. The empty string gives ''.",
    """
    def longest_palindrome(text):
        best = ""
        for center in range(2 * len(text) - 1):
            left, right = center // 2, (center + 1) // 2
            while left >= 0 and right < len(text) and text[left] == text[right]:
                left -= 1
                right += 1
            candidate = text[left + 1:right]
            if len(candidate) > len(best) or (
                len(candidate) == len(best) and text.find(candidate) < text.find(best)
            ):
                best = candidate
        return best
    """,
    [
        (("babad",), "bab"),
        (("cbbd",), "bb"),
        (("",), ""),
        (("a",), "a"),
        (("forgeeksskeegfor",), "geeksskeeg"),
        (("abcd",), "a"),
    ],
)
_problem(
    "unique_permutations",
    3,
    "def unique_permutations(items: list[int]) -> list[list[int]]:",
    "Return every distinct ordering of `items` exactly once, as lists, sorted in lexicographic "
    "order. An empty list has exactly one ordering, the empty one.",
    """
    def unique_permutations(items):
        out = []
        counts = {}
        for item in items:
            counts[item] = counts.get(item, 0) + 1
        keys = sorted(counts)

        def build(prefix):
            if len(prefix) == len(items):
                out.append(list(prefix))
                return
            for key in keys:
                if counts[key]:
                    counts[key] -= 1
                    prefix.append(key)
                    build(prefix)
                    prefix.pop()
                    counts[key] += 1

        build([])
        return out
    """,
    [
        (([1, 1, 2],), [[1, 1, 2], [1, 2, 1], [2, 1, 1]]),
        (([],), [[]]),
        (([3, 1],), [[1, 3], [3, 1]]),
        (([1, 2, 3],), [[1, 2, 3], [1, 3, 2], [2, 1, 3], [2, 3, 1], [3, 1, 2], [3, 2, 1]]),
    ],
)
_problem(
    "n_queens",
    3,
    "def n_queens(n: int) -> int:",
    "Return the number of ways to place n queens on an n x n chessboard so that no two attack "
    "each other (same row, column or diagonal).",
    """
    def n_queens(n):
        def place(row, columns, diagonals, anti):
            if row == n:
                return 1
            total = 0
            for col in range(n):
                if col in columns or row - col in diagonals or row + col in anti:
                    continue
                total += place(
                    row + 1, columns | {col}, diagonals | {row - col}, anti | {row + col}
                )
            return total

        return place(0, frozenset(), frozenset(), frozenset())
    """,
    [((1,), 1), ((2,), 0), ((4,), 2), ((6,), 4), ((8,), 92)],
)
_problem(
    "lru_cache_ops",
    3,
    "def lru_cache_ops(capacity: int, operations: list[list]) -> list[int]:",
    "Simulate a least-recently-used cache holding at most `capacity` keys. Each operation is "
    "['put', key, value] or ['get', key]. A get returns the value (or -1 if the key is absent) "
    "and makes the key most recently used; a put inserts or updates the key, makes it most "
    "recently used, and if the cache then holds too many keys evicts the least recently used "
    "one. Return the results of the gets, in order.",
    """
    from collections import OrderedDict

    def lru_cache_ops(capacity, operations):
        cache, results = OrderedDict(), []
        for operation in operations:
            if operation[0] == "get":
                key = operation[1]
                if key in cache:
                    cache.move_to_end(key)
                    results.append(cache[key])
                else:
                    results.append(-1)
            else:
                _, key, value = operation
                cache[key] = value
                cache.move_to_end(key)
                if len(cache) > capacity:
                    cache.popitem(last=False)
        return results
    """,
    [
        (
            (
                2,
                [
                    ["put", 1, 1],
                    ["put", 2, 2],
                    ["get", 1],
                    ["put", 3, 3],
                    ["get", 2],
                    ["put", 4, 4],
                    ["get", 1],
                    ["get", 3],
                    ["get", 4],
                ],
            ),
            [1, -1, -1, 3, 4],
        ),
        ((1, [["get", 5]]), [-1]),
        ((1, [["put", 1, 10], ["put", 1, 20], ["get", 1]]), [20]),
    ],
)
_SUDOKU = [
    "53..7....",
    "6..195...",
    ".98....6.",
    "8...6...3",
    "4..8.3..1",
    "7...2...6",
    ".6....28.",
    "...419..5",
    "....8..79",
]
_problem(
    "valid_sudoku",
    3,
    "def valid_sudoku(board: list[str]) -> bool:",
    "`board` is 9 strings of 9 characters, each a digit 1-9 or '.' for an empty cell. Return "
    "True if no digit repeats within a row, a column or one of the nine 3x3 boxes (the board "
    "need not be solvable).",
    """
    def valid_sudoku(board):
        seen = set()
        for r in range(9):
            for c in range(9):
                digit = board[r][c]
                if digit == ".":
                    continue
                keys = [("row", r, digit), ("col", c, digit), ("box", r // 3, c // 3, digit)]
                if any(key in seen for key in keys):
                    return False
                seen.update(keys)
        return True
    """,
    [
        ((_SUDOKU,), True),
        ((["8" + _SUDOKU[0][1:], *_SUDOKU[1:]],), False),
        ((["." * 9] * 9,), True),
        ((["11" + "." * 7] + ["." * 9] * 8,), False),
    ],
)
_problem(
    "min_window",
    3,
    "def min_window(s: str, t: str) -> str:",
    "Return the shortest substring of s that contains every character of t, counting repeats "
    "(t = 'aa' needs two a's). If several are shortest, return the one that starts first; if "
    "none exists, return ''.",
    """
    from collections import Counter

    def min_window(s, t):
        need, missing = Counter(t), len(t)
        if not t:
            return ""
        best, left = (0, 0), 0
        for right, ch in enumerate(s, 1):
            if need[ch] > 0:
                missing -= 1
            need[ch] -= 1
            if missing == 0:
                while need[s[left]] < 0:
                    need[s[left]] += 1
                    left += 1
                if best == (0, 0) or right - left < best[1] - best[0]:
                    best = (left, right)
                need[s[left]] += 1
                missing += 1
                left += 1
        return s[best[0]:best[1]]
    """,
    [
        (("ADOBECODEBANC", "ABC"), "BANC"),
        (("a", "a"), "a"),
        (("a", "aa"), ""),
        (("ab", "b"), "b"),
        (("", "a"), ""),
    ],
)
_problem(
    "count_inversions",
    3,
    "def count_inversions(values: list[int]) -> int:",
    "Return the number of pairs (i, j) with i < j and values[i] > values[j]. It must handle "
    "lists of 20000 elements within a second.",
    """
    def count_inversions(values):
        def sort(items):
            if len(items) <= 1:
                return items, 0
            middle = len(items) // 2
            left, a = sort(items[:middle])
            right, b = sort(items[middle:])
            merged, count, i, j = [], a + b, 0, 0
            while i < len(left) and j < len(right):
                if left[i] <= right[j]:
                    merged.append(left[i])
                    i += 1
                else:
                    merged.append(right[j])
                    count += len(left) - i
                    j += 1
            merged += left[i:] + right[j:]
            return merged, count

        return sort(list(values))[1]
    """,
    [
        (([2, 4, 1, 3, 5],), 3),
        (([],), 0),
        (([5, 4, 3, 2, 1],), 10),
        (([1, 1, 1],), 0),
        ((list(range(20000, 0, -1)),), 199990000),
    ],
)
_problem(
    "word_break",
    3,
    "def word_break(text: str, words: list[str]) -> bool:",
    "Return True if `text` can be split into a sequence of one or more words from `words` "
    "(each word may be used any number of times). The empty text can always be split.",
    """
    def word_break(text, words):
        vocabulary = set(words)
        ok = [True] + [False] * len(text)
        for end in range(1, len(text) + 1):
            ok[end] = any(ok[start] and text[start:end] in vocabulary for start in range(end))
        return ok[-1]
    """,
    [
        (("leetcode", ["leet", "code"]), True),
        (("applepenapple", ["apple", "pen"]), True),
        (("catsandog", ["cats", "dog", "sand", "and", "cat"]), False),
        (("", ["a"]), True),
        (("a" * 40 + "b", ["a", "aa", "aaa"]), False),
    ],
)
_problem(
    "decode_ways",
    3,
    "def decode_ways(digits: str) -> int:",
    "Letters are encoded as 'A' -> '1', ..., 'Z' -> '26'. Return how many letter strings "
    "encode to the non-empty digit string `digits` ('123' can be 'ABC', 'AW' or 'LC').",
    """
    def decode_ways(digits):
        previous, current = 1, 1 if digits[0] != "0" else 0
        for i in range(1, len(digits)):
            ways = current if digits[i] != "0" else 0
            if 10 <= int(digits[i - 1:i + 1]) <= 26:
                ways += previous
            previous, current = current, ways
        return current
    """,
    [
        (("12",), 2),
        (("226",), 3),
        (("06",), 0),
        (("0",), 0),
        (("11106",), 2),
        (("10",), 1),
        (("27",), 1),
    ],
)
_problem(
    "largest_rectangle",
    3,
    "def largest_rectangle(heights: list[int]) -> int:",
    "`heights` are the heights of adjacent bars of width 1 in a histogram. Return the area of "
    "the largest rectangle that fits inside the histogram (0 for no bars).",
    """
    def largest_rectangle(heights):
        stack, best = [], 0
        for i, height in enumerate(heights + [0]):
            start = i
            while stack and stack[-1][1] >= height:
                start, top = stack.pop()
                best = max(best, top * (i - start))
            stack.append((start, height))
        return best
    """,
    [
        (([2, 1, 5, 6, 2, 3],), 10),
        (([2, 4],), 4),
        (([],), 0),
        (([1, 1, 1, 1],), 4),
        (([6, 2, 5, 4, 5, 1, 6],), 12),
    ],
)


def builtin_tasks(difficulty: int | list[int] | tuple[int, ...] | None = None) -> list[Task]:
    """The built-in tasks, optionally only those of the given difficulty level(s) 1-3."""
    levels = LEVELS if difficulty is None else options.levels(difficulty, LEVELS)
    return [problem.task() for problem in PROBLEMS if problem.difficulty in levels]
