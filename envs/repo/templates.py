"""The code the generated repositories are made of: six domains of small, pure functions.

Each domain has a helper module and three modules of public functions that use it (through
relative imports, so the package can take any name). Every function takes and returns plain
data, and each public function has a sampler of inputs (`Draw` -> argument tuple) and a few
fixed edge cases. The generator (`rlvr.envs.repo.generator`) picks domains, modules and a
package name, runs the functions on sampled inputs to write the tests, and injects bugs by AST
mutations of these sources.

Rules the generator relies on (checked by tests): ASCII only; no `while` loops, no recursion and
no `**` (so every mutant of these functions ends quickly on small inputs); only relative
imports of the package's own modules and standard-library imports.

Task data (~960 lines): the domains' source text, which the generator reads as data.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

VOCABULARY = (
    "apple", "river", "stone", "cloud", "tiger", "lemon", "paper", "glass", "north", "ember",
    "maple", "orbit", "pixel", "quill", "delta", "sugar", "ocean", "amber", "cedar", "frost",
    "a", "an", "the", "of", "and", "to", "in", "on", "big", "red",
)  # fmt: skip


class Draw:
    """Random inputs for the samplers, from the generator's `np.random.Generator`."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def integer(self, low: int, high: int) -> int:
        """A uniform int in [low, high]."""
        return int(self.rng.integers(low, high + 1))

    def choice(self, items: Any) -> Any:
        return items[self.integer(0, len(items) - 1)]

    def ints(self, low: int, high: int, size_low: int, size_high: int) -> list[int]:
        return [self.integer(low, high) for _ in range(self.integer(size_low, size_high))]

    def word(self) -> str:
        return self.choice(VOCABULARY)

    def sentence(self, low: int = 1, high: int = 6) -> str:
        """Words with uneven spaces, some capitals and punctuation."""
        parts = []
        for _ in range(self.integer(low, high)):
            word = self.word()
            if self.integer(0, 3) == 0:
                word = word.capitalize()
            if self.integer(0, 5) == 0:
                word += self.choice([",", ".", "!", "?"])
            parts.append(word)
        spaces = [self.choice([" ", " ", " ", "  ", "\t"]) for _ in parts]
        return "".join(space + part for space, part in zip(spaces, parts)).strip(" ")


Sampler = Callable[[Draw], tuple]


@dataclass(frozen=True)
class Domain:
    key: str
    packages: tuple[str, ...]
    helper: tuple[str, str]  # (module name, source)
    modules: Mapping[str, str]  # module name -> source
    samplers: Mapping[str, Sampler]  # public function -> inputs
    edges: Mapping[str, tuple[tuple, ...]] = field(default_factory=dict)
    summary: str = ""


# --- text ----------------------------------------------------------------------------------------

TEXTUTIL = '''"""Small text helpers shared by the package's modules."""

import re

_SPACES = re.compile(r"\\s+")
_PUNCTUATION = ".,;:!?\\"'()"


def squash(text):
    """Collapse runs of whitespace into one space and trim both ends."""
    return _SPACES.sub(" ", text).strip()


def words(text):
    """The words of `text`, lower-cased, without punctuation at either end."""
    found = []
    for raw in squash(text).split(" "):
        word = raw.strip(_PUNCTUATION).lower()
        if word:
            found.append(word)
    return found
'''

SLUG = '''"""Slugs, initials and shortened text."""

from .textutil import squash, words


def slugify(text, sep="-"):
    """A URL slug: the lower-case words of `text` joined by `sep`."""
    return sep.join(words(text))


def initials(name):
    """The upper-case initials of a name: "ada lovelace" gives "AL"."""
    return "".join(part[0].upper() for part in squash(name).split(" ") if part)


def truncate(text, width, suffix="..."):
    """`text` (whitespace squashed) cut to at most `width` characters, ending with `suffix`
    when it was cut."""
    text = squash(text)
    if len(text) <= width:
        return text
    if width <= len(suffix):
        return suffix[:width]
    return text[: width - len(suffix)] + suffix
'''

COUNTING = '''"""Counting words."""

from .textutil import words


def word_count(text):
    """How many words `text` holds."""
    return len(words(text))


def word_frequencies(text):
    """How often each word occurs, as a dict."""
    counts = {}
    for word in words(text):
        counts[word] = counts.get(word, 0) + 1
    return counts


def longest_word(text):
    """The longest word (the first of several as long), or "" for no word."""
    best = ""
    for word in words(text):
        if len(word) > len(best):
            best = word
    return best
'''

CASING = '''"""Changing the case of text."""

from .textutil import words

SMALL_WORDS = ("a", "an", "and", "of", "the", "to", "in", "on")


def title_case(text):
    """Capitalise every word but small ones (a, of, the, ...) after the first."""
    result = []
    for index, word in enumerate(words(text)):
        if index > 0 and word in SMALL_WORDS:
            result.append(word)
        else:
            result.append(word[0].upper() + word[1:])
    return " ".join(result)


def snake_case(text):
    """The words of `text` joined by underscores."""
    return "_".join(words(text))


def is_palindrome(text):
    """Whether the letters and digits of `text` read the same both ways (case ignored)."""
    letters = [char for char in text.lower() if char.isalnum()]
    return len(letters) > 0 and letters == letters[::-1]
'''


def _palindrome(draw: Draw) -> tuple:
    word = draw.word()
    half = draw.choice([word, word + draw.word()])
    middle = draw.choice(["", "x", " "])
    text = half + middle + half[::-1]
    if draw.integer(0, 2) == 0:
        text = draw.sentence(1, 3)
    return (text.capitalize() if draw.integer(0, 1) else text,)


TEXT = Domain(
    key="text",
    packages=("textkit", "wordsmith", "strtools", "prose", "lettering", "phrasebook"),
    helper=("textutil", TEXTUTIL),
    modules={"slug": SLUG, "counting": COUNTING, "casing": CASING},
    samplers={
        "slugify": lambda d: (
            d.sentence(),
            *([d.choice(["_", "."])] if d.integer(0, 3) == 0 else []),
        ),
        "initials": lambda d: (d.sentence(1, 4),),
        "truncate": lambda d: (d.sentence(2, 8), d.integer(0, 30)),
        "word_count": lambda d: (d.sentence(0, 9),),
        "word_frequencies": lambda d: (d.sentence(1, 9) + " " + d.sentence(1, 4),),
        "longest_word": lambda d: (d.sentence(0, 7),),
        "title_case": lambda d: (d.sentence(1, 7),),
        "snake_case": lambda d: (d.sentence(1, 5),),
        "is_palindrome": _palindrome,
    },
    edges={
        "slugify": (("",), ("  Hello,  World!  ",)),
        "truncate": (("abcdef", 6), ("abcdefg", 6), ("abcdef", 2), ("a  b", 10)),
        "word_count": (("",), ("one",)),
        "longest_word": (("",), ("aa bb cc",)),
        "title_case": (("the end of the road",),),
        "is_palindrome": (("",), ("Abba",), ("ab",)),
    },
    summary="text utilities: slugs, word counts, title case",
)

# --- numbers -------------------------------------------------------------------------------------

NUMUTIL = '''"""Number helpers shared by the package's modules."""


def clamp(value, low, high):
    """`value` moved into [low, high]."""
    if value < low:
        return low
    if value > high:
        return high
    return value


def total(values):
    """The sum of `values`."""
    result = 0
    for value in values:
        result += value
    return result
'''

AVERAGES = '''"""Averages of lists of numbers."""

from .numutil import total


def mean(values):
    """The arithmetic mean; ValueError for an empty list."""
    if not values:
        raise ValueError("mean of an empty list")
    return total(values) / len(values)


def median(values):
    """The middle value (the mean of the two middle ones for an even count)."""
    if not values:
        raise ValueError("median of an empty list")
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2 == 1:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def mode(values):
    """The most frequent value (the smallest of several as frequent); None for no value."""
    counts = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    best, best_count = None, 0
    for value in sorted(counts):
        if counts[value] > best_count:
            best, best_count = value, counts[value]
    return best
'''

SCALING = '''"""Scaling and bucketing numbers."""

from .numutil import clamp, total


def percent(part, whole):
    """`part` as a percentage of `whole`, rounded to one decimal (0.0 when whole is 0)."""
    if whole == 0:
        return 0.0
    return round(100 * part / whole, 1)


def bucket(value, size):
    """The start of the bucket of width `size` that holds `value`."""
    if size <= 0:
        raise ValueError("size must be positive")
    return value // size * size


def shares(values):
    """Each value's share of the total in whole percent, each clamped to [0, 100]."""
    whole = total(values)
    if whole == 0:
        return [0 for _ in values]
    return [clamp(100 * value // whole, 0, 100) for value in values]
'''

RANGES = '''"""Running and windowed statistics."""

from .numutil import total


def running_total(values):
    """The sum of each prefix of `values`."""
    sums = []
    acc = 0
    for value in values:
        acc += value
        sums.append(acc)
    return sums


def window_sums(values, size):
    """The sum of every run of `size` consecutive values."""
    if size < 1:
        raise ValueError("size must be at least 1")
    return [total(values[start : start + size]) for start in range(len(values) - size + 1)]


def spread(values):
    """The largest value minus the smallest; ValueError for an empty list."""
    if not values:
        raise ValueError("spread of an empty list")
    return max(values) - min(values)
'''

NUMBERS = Domain(
    key="numbers",
    packages=("statkit", "numbers_lite", "figures", "tally", "abacus", "metrics_lite"),
    helper=("numutil", NUMUTIL),
    modules={"averages": AVERAGES, "scaling": SCALING, "ranges": RANGES},
    samplers={
        "mean": lambda d: (d.ints(-20, 50, 1, 7),),
        "median": lambda d: (d.ints(-20, 50, 1, 8),),
        "mode": lambda d: (d.ints(0, 6, 0, 9),),
        "percent": lambda d: (d.integer(0, 60), d.integer(0, 80)),
        "bucket": lambda d: (d.integer(-30, 99), d.integer(1, 12)),
        "shares": lambda d: (d.ints(0, 40, 1, 5),),
        "running_total": lambda d: (d.ints(-9, 20, 0, 7),),
        "window_sums": lambda d: (d.ints(-5, 20, 0, 8), d.integer(1, 4)),
        "spread": lambda d: (d.ints(-30, 30, 1, 7),),
    },
    edges={
        "mean": (([],), ([4],)),
        "median": (([],), ([3, 1],)),
        "mode": (([],), ([2, 2, 1, 1],)),
        "percent": ((1, 0), (1, 3)),
        "bucket": ((10, 5), (-1, 5), (3, 0)),
        "shares": (([0, 0],), ([1, 1, 1],)),
        "window_sums": (([1, 2, 3], 3), ([1, 2], 3), ([1], 0)),
        "spread": (([],), ([5],)),
    },
    summary="number utilities: averages, percentages, running totals",
)

# --- time ----------------------------------------------------------------------------------------

TIMEUTIL = '''"""Time helpers shared by the package's modules."""

MINUTES_PER_DAY = 24 * 60
UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1}


def two_digits(number):
    """`number` written with at least two digits."""
    return str(number).rjust(2, "0")


def split_seconds(seconds):
    """(hours, minutes, seconds) of a number of seconds."""
    return seconds // 3600, seconds % 3600 // 60, seconds % 60
'''

DURATIONS = '''"""Durations written like "1h30m"."""

from .timeutil import UNITS, split_seconds


def parse_duration(text):
    """Seconds in a duration such as "1h30m" or "45s" (units d, h, m, s)."""
    seconds = 0
    number = ""
    for char in text.strip().lower():
        if char.isdigit():
            number += char
        elif char in UNITS and number:
            seconds += int(number) * UNITS[char]
            number = ""
        else:
            raise ValueError("not a duration: " + repr(text))
    if number or not text.strip():
        raise ValueError("not a duration: " + repr(text))
    return seconds


def format_duration(seconds):
    """A number of seconds written as "1h 5m 3s" (zero parts left out; "0s" for 0)."""
    if seconds < 0:
        raise ValueError("negative duration")
    hours, minutes, rest = split_seconds(seconds)
    parts = []
    if hours:
        parts.append(str(hours) + "h")
    if minutes:
        parts.append(str(minutes) + "m")
    if rest or not parts:
        parts.append(str(rest) + "s")
    return " ".join(parts)
'''

CLOCK = '''"""Times of day written "HH:MM"."""

from .timeutil import MINUTES_PER_DAY, two_digits


def parse_clock(text):
    """Minutes since midnight of a time "HH:MM"."""
    hours, _, minutes = text.partition(":")
    if not (hours.isdigit() and minutes.isdigit()):
        raise ValueError("not a time: " + repr(text))
    if int(hours) > 23 or int(minutes) > 59:
        raise ValueError("not a time: " + repr(text))
    return int(hours) * 60 + int(minutes)


def format_clock(minutes):
    """"HH:MM" of a number of minutes since midnight (wrapping around midnight)."""
    minutes = minutes % MINUTES_PER_DAY
    return two_digits(minutes // 60) + ":" + two_digits(minutes % 60)


def minutes_between(start, end):
    """Minutes from `start` to the next `end` ("23:50" to "00:10" is 20)."""
    difference = parse_clock(end) - parse_clock(start)
    if difference < 0:
        difference += MINUTES_PER_DAY
    return difference
'''

CALENDAR = '''"""Calendar arithmetic."""

SHORT_MONTHS = (4, 6, 9, 11)


def is_leap_year(year):
    """Whether `year` has a 29 February (Gregorian rules)."""
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def days_in_month(year, month):
    """How many days month `month` (1-12) of `year` has."""
    if month < 1 or month > 12:
        raise ValueError("month must be 1 to 12")
    if month == 2:
        return 29 if is_leap_year(year) else 28
    if month in SHORT_MONTHS:
        return 30
    return 31


def day_of_year(year, month, day):
    """The day's number in its year (1 January is 1)."""
    if day < 1 or day > days_in_month(year, month):
        raise ValueError("no such day")
    number = day
    for earlier in range(1, month):
        number += days_in_month(year, earlier)
    return number
'''


def _duration_text(draw: Draw) -> tuple:
    parts = []
    for unit in "dhms":
        if draw.integer(0, 2) == 0:
            parts.append(f"{draw.integer(1, 40)}{unit}")
    if draw.integer(0, 6) == 0:
        parts.insert(draw.integer(0, len(parts)), draw.choice(["x", "5", "h"]))
    return ("".join(parts) or f"{draw.integer(0, 90)}m",)


def _clock(draw: Draw) -> str:
    return f"{draw.integer(0, 23):02d}:{draw.integer(0, 59):02d}"


TIME = Domain(
    key="time",
    packages=("timekit", "clockwork", "chrono_lite", "hours", "almanac", "sundial"),
    helper=("timeutil", TIMEUTIL),
    modules={"durations": DURATIONS, "clock": CLOCK, "calendar_math": CALENDAR},
    samplers={
        "parse_duration": _duration_text,
        "format_duration": lambda d: (
            d.choice([d.integer(0, 59), d.integer(60, 3599), d.integer(0, 90000)]),
        ),
        "parse_clock": lambda d: (
            d.choice([_clock(d), _clock(d), f"{d.integer(20, 30)}:{d.integer(50, 65)}"]),
        ),
        "format_clock": lambda d: (d.integer(-100, 3000),),
        "minutes_between": lambda d: (_clock(d), _clock(d)),
        "is_leap_year": lambda d: (
            d.choice([d.integer(1890, 2110), 4 * d.integer(400, 520), 100 * d.integer(15, 25)]),
        ),
        "days_in_month": lambda d: (d.integer(1896, 2104), d.integer(1, 12)),
        "day_of_year": lambda d: (d.integer(1896, 2104), d.integer(1, 12), d.integer(1, 31)),
    },
    edges={
        "parse_duration": (("",), ("1h30m",), ("90",), ("2d",)),
        "format_duration": ((0,), (3600,), (61,), (-1,)),
        "parse_clock": (("00:00",), ("23:59",), ("24:00",), ("7",)),
        "format_clock": ((0,), (1440,), (-1,)),
        "minutes_between": (("23:50", "00:10"), ("10:00", "10:00")),
        "is_leap_year": ((1900,), (2000,), (2024,), (2023,)),
        "days_in_month": ((2024, 2), (2023, 2), (2023, 4), (2023, 13)),
        "day_of_year": ((2023, 1, 1), (2024, 12, 31), (2023, 2, 29)),
    },
    summary="time utilities: durations, clock times, calendar arithmetic",
)

# --- shop ----------------------------------------------------------------------------------------

MONEY = '''"""Money as integer cents."""


def format_cents(cents):
    """Cents written as dollars: 1250 gives "$12.50", -5 gives "-$0.05"."""
    sign = "-" if cents < 0 else ""
    cents = abs(cents)
    return sign + "$" + str(cents // 100) + "." + str(cents % 100).rjust(2, "0")


def percent_of(cents, percent):
    """`percent` percent of an amount in cents, rounded down."""
    return cents * percent // 100
'''

PRICING = '''"""Prices, discounts and bulk rates."""

from .money import percent_of

BULK_TIERS = ((100, 20), (10, 10))  # (from this quantity, percent off)


def line_total(price_cents, quantity):
    """What `quantity` items at `price_cents` each cost."""
    if quantity < 0:
        raise ValueError("negative quantity")
    return price_cents * quantity


def apply_discount(cents, percent):
    """An amount after a discount of `percent` percent (0 to 100)."""
    if percent < 0 or percent > 100:
        raise ValueError("percent must be 0 to 100")
    return cents - percent_of(cents, percent)


def bulk_price(price_cents, quantity):
    """The cost of `quantity` items with the bulk discount of the highest tier reached."""
    cost = line_total(price_cents, quantity)
    for threshold, percent in BULK_TIERS:
        if quantity >= threshold:
            return cost - percent_of(cost, percent)
    return cost
'''

ORDERS = '''"""Orders: lists of [price_cents, quantity] lines."""

from .money import format_cents


def order_total(lines):
    """The sum of every line's price times quantity."""
    result = 0
    for price, quantity in lines:
        result += price * quantity
    return result


def receipt(lines):
    """One text line per order line, e.g. "2 x $1.50 = $3.00"."""
    rows = []
    for price, quantity in lines:
        cost = format_cents(price * quantity)
        rows.append(str(quantity) + " x " + format_cents(price) + " = " + cost)
    return rows


def priciest_line(lines):
    """The index of the line that costs most (the first of several); -1 for no line."""
    best, best_cost = -1, -1
    for index, (price, quantity) in enumerate(lines):
        if price * quantity > best_cost:
            best, best_cost = index, price * quantity
    return best
'''

SHIPPING = '''"""Shipping costs."""

BASE_RATES = ((500, 499), (2000, 899))  # (up to this many grams, cost in cents)
EXTRA_PER_KG = 150


def shipping_cost(grams):
    """What a parcel of `grams` costs to send: a rate by weight class, then 150 cents per
    started kilogram above 2 kg."""
    if grams <= 0:
        raise ValueError("weight must be positive")
    for limit, cost in BASE_RATES:
        if grams <= limit:
            return cost
    extra_kg = (grams - 2000 + 999) // 1000
    return 899 + extra_kg * EXTRA_PER_KG


def ships_free(total_cents, threshold=5000):
    """Whether an order of `total_cents` ships for free."""
    return total_cents >= threshold


def parcels(weights, limit):
    """How many parcels of at most `limit` grams the items need, packed in order."""
    count, load = 0, 0
    for weight in weights:
        if weight > limit:
            raise ValueError("an item is heavier than a parcel may be")
        if count == 0 or load + weight > limit:
            count += 1
            load = 0
        load += weight
    return count
'''


def _lines(draw: Draw) -> tuple:
    return ([[draw.integer(1, 2500), draw.integer(0, 6)] for _ in range(draw.integer(0, 4))],)


SHOP = Domain(
    key="shop",
    packages=("cartkit", "storefront", "checkout", "till", "ledger_lite", "pricebook"),
    helper=("money", MONEY),
    modules={"pricing": PRICING, "orders": ORDERS, "shipping": SHIPPING},
    samplers={
        "line_total": lambda d: (d.integer(0, 5000), d.integer(-1, 12)),
        "apply_discount": lambda d: (
            d.integer(0, 9999),
            d.choice([d.integer(0, 100), d.integer(0, 100), 101]),
        ),
        "bulk_price": lambda d: (
            d.integer(1, 999),
            d.choice([d.integer(1, 9), d.integer(10, 99), d.integer(100, 300)]),
        ),
        "order_total": _lines,
        "receipt": _lines,
        "priciest_line": _lines,
        "shipping_cost": lambda d: (
            d.choice([d.integer(1, 500), d.integer(501, 2000), d.integer(2001, 9000)]),
        ),
        "ships_free": lambda d: (
            d.integer(4000, 6000),
            *([d.integer(1000, 9000)] if d.integer(0, 1) else []),
        ),
        "parcels": lambda d: (d.ints(1, 900, 0, 8), d.integer(900, 2000)),
    },
    edges={
        "line_total": ((250, 0), (250, -1)),
        "apply_discount": ((1000, 0), (1000, 100), (999, 33), (100, -1)),
        "bulk_price": ((100, 10), (100, 100), (100, 9)),
        "order_total": (([],),),
        "priciest_line": (([],), ([[100, 1], [50, 2]],)),
        "shipping_cost": ((500,), (2000,), (2001,), (3000,), (0,)),
        "ships_free": ((5000,), (4999,)),
        "parcels": (([], 1000), ([1000, 1000], 1000), ([2000], 1000)),
    },
    summary="shop utilities: prices, order totals, shipping costs",
)

# --- lists ---------------------------------------------------------------------------------------

SEQUTIL = '''"""Sequence helpers shared by the package's modules."""


def last_index(items):
    """The index of the last item (-1 for an empty list)."""
    return len(items) - 1


def is_sorted(items):
    """Whether `items` never decrease."""
    for index in range(1, len(items)):
        if items[index - 1] > items[index]:
            return False
    return True
'''

GROUPING = '''"""Splitting lists into groups."""


def chunk(items, size):
    """`items` in consecutive lists of `size` (the last may be shorter)."""
    if size < 1:
        raise ValueError("size must be at least 1")
    return [items[start : start + size] for start in range(0, len(items), size)]


def group_by_length(words):
    """The words by their length: {length: [words in order]}."""
    groups = {}
    for word in words:
        groups.setdefault(len(word), []).append(word)
    return groups


def partition(items, pivot):
    """[items smaller than pivot, the others], each in order."""
    smaller, rest = [], []
    for item in items:
        if item < pivot:
            smaller.append(item)
        else:
            rest.append(item)
    return [smaller, rest]
'''

ORDERING = '''"""Reordering lists."""

from .sequtil import is_sorted, last_index


def dedupe(items):
    """`items` without repeats, first occurrences kept in order."""
    seen = set()
    result = []
    for item in items:
        if item not in seen:
            seen.add(item)
            result.append(item)
    return result


def rotate(items, steps):
    """`items` rotated left by `steps` (right for a negative number)."""
    if not items:
        return []
    steps = steps % len(items)
    return items[steps:] + items[:steps]


def merge_sorted(left, right):
    """One sorted list of two sorted lists (ValueError if either is not sorted)."""
    if not (is_sorted(left) and is_sorted(right)):
        raise ValueError("both lists must be sorted")
    merged = []
    i, j = 0, 0
    for _ in range(len(left) + len(right)):
        if j > last_index(right) or (i <= last_index(left) and left[i] <= right[j]):
            merged.append(left[i])
            i += 1
        else:
            merged.append(right[j])
            j += 1
    return merged
'''

SEARCHING = '''"""Looking for things in lists."""

from .sequtil import last_index


def index_of(items, value):
    """The index of the first `value` in `items`, or -1."""
    for index, item in enumerate(items):
        if item == value:
            return index
    return -1


def longest_run(items):
    """The length of the longest run of equal neighbours (0 for an empty list)."""
    best, current = 0, 0
    for index, item in enumerate(items):
        if index > 0 and items[index - 1] == item:
            current += 1
        else:
            current = 1
        best = max(best, current)
    return best


def last_of(items, value):
    """The index of the last `value` in `items`, or -1."""
    found = -1
    for index in range(last_index(items) + 1):
        if items[index] == value:
            found = index
    return found
'''


def _sorted_ints(draw: Draw) -> list[int]:
    return sorted(draw.ints(0, 30, 0, 6))


LISTS = Domain(
    key="lists",
    packages=("listkit", "seqtools", "collate", "arrange", "sequencer", "itemize"),
    helper=("sequtil", SEQUTIL),
    modules={"grouping": GROUPING, "ordering": ORDERING, "searching": SEARCHING},
    samplers={
        "chunk": lambda d: (d.ints(0, 9, 0, 9), d.integer(1, 4)),
        "group_by_length": lambda d: ([d.word() for _ in range(d.integer(0, 6))],),
        "partition": lambda d: (d.ints(0, 20, 0, 8), d.integer(0, 20)),
        "dedupe": lambda d: (d.ints(0, 5, 0, 9),),
        "rotate": lambda d: (d.ints(0, 9, 0, 6), d.integer(-8, 8)),
        "merge_sorted": lambda d: (_sorted_ints(d), _sorted_ints(d)),
        "index_of": lambda d: (d.ints(0, 6, 0, 7), d.integer(0, 6)),
        "longest_run": lambda d: (d.ints(0, 2, 0, 9),),
        "last_of": lambda d: (d.ints(0, 4, 0, 8), d.integer(0, 4)),
    },
    edges={
        "chunk": (([], 3), ([1, 2, 3], 3), ([1], 0)),
        "partition": (([3, 1, 2], 2),),
        "rotate": (([], 3), ([1, 2, 3], 3), ([1, 2, 3], -1)),
        "merge_sorted": (([], [1]), ([2, 1], [])),
        "longest_run": (([],), ([7],)),
        "last_of": (([1, 2, 1], 1), ([], 1)),
    },
    summary="list utilities: chunks, deduplication, searching",
)

# --- grid ----------------------------------------------------------------------------------------

VEC = '''"""Points on a grid as [x, y] lists."""


def manhattan(a, b):
    """The number of grid steps between points `a` and `b`."""
    return abs(a[0] - b[0]) + abs(a[1] - b[1])


def offset(point, dx, dy):
    """`point` moved by (dx, dy)."""
    return [point[0] + dx, point[1] + dy]
'''

SHAPES = '''"""Rectangles as [left, top, right, bottom] lists (right and bottom excluded)."""


def bounding_box(points):
    """The smallest rectangle holding every point; ValueError for no point."""
    if not points:
        raise ValueError("no points")
    xs = [point[0] for point in points]
    ys = [point[1] for point in points]
    return [min(xs), min(ys), max(xs) + 1, max(ys) + 1]


def area(rect):
    """The number of cells of a rectangle (0 for an empty one)."""
    width = rect[2] - rect[0]
    height = rect[3] - rect[1]
    if width <= 0 or height <= 0:
        return 0
    return width * height


def overlaps(a, b):
    """Whether two rectangles share a cell."""
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]
'''

PATHS = '''"""Walking on a grid."""

from .vec import manhattan, offset

MOVES = {"U": (0, -1), "D": (0, 1), "L": (-1, 0), "R": (1, 0)}


def walk(start, moves):
    """Where a walk of moves ("U", "D", "L", "R") from `start` ends."""
    point = start
    for move in moves:
        if move not in MOVES:
            raise ValueError("unknown move " + repr(move))
        point = offset(point, MOVES[move][0], MOVES[move][1])
    return point


def path_length(points):
    """The number of grid steps along a path through `points` in order."""
    steps = 0
    for index in range(1, len(points)):
        steps += manhattan(points[index - 1], points[index])
    return steps


def neighbours(point, width, height):
    """The points next to `point` (up, down, left, right) inside a width x height grid."""
    found = []
    for dx, dy in ((0, -1), (0, 1), (-1, 0), (1, 0)):
        x, y = point[0] + dx, point[1] + dy
        if 0 <= x < width and 0 <= y < height:
            found.append([x, y])
    return found
'''


def _point(draw: Draw, high: int = 9) -> list[int]:
    return [draw.integer(-3, high), draw.integer(-3, high)]


def _rect(draw: Draw) -> list[int]:
    left, top = draw.integer(0, 8), draw.integer(0, 8)
    return [left, top, left + draw.integer(-1, 6), top + draw.integer(-1, 6)]


GRID = Domain(
    key="grid",
    packages=("gridkit", "geom", "tiles", "planar", "lattice", "cartography"),
    helper=("vec", VEC),
    modules={"shapes": SHAPES, "paths": PATHS},
    samplers={
        "bounding_box": lambda d: ([_point(d) for _ in range(d.integer(1, 5))],),
        "area": lambda d: (_rect(d),),
        "overlaps": lambda d: (_rect(d), _rect(d)),
        "walk": lambda d: (
            _point(d),
            "".join(
                d.choice("UDLRUDLRX" if d.integer(0, 5) == 0 else "UDLR")
                for _ in range(d.integer(0, 9))
            ),
        ),
        "path_length": lambda d: ([_point(d) for _ in range(d.integer(0, 5))],),
        "neighbours": lambda d: (
            [d.integer(0, 5), d.integer(0, 5)],
            d.integer(1, 6),
            d.integer(1, 6),
        ),
    },
    edges={
        "bounding_box": (([],), ([[2, 3]],)),
        "area": (([0, 0, 2, 3],), ([5, 5, 5, 9],)),
        "overlaps": (([0, 0, 2, 2], [2, 0, 4, 2]), ([0, 0, 3, 3], [1, 1, 2, 2])),
        "walk": (([0, 0], ""), ([0, 0], "UURDL")),
        "path_length": (([],), ([[0, 0], [3, 4]],)),
        "neighbours": (([0, 0], 1, 1), ([0, 0], 3, 3), ([2, 2], 3, 3)),
    },
    summary="grid utilities: rectangles, walks, neighbours",
)

DOMAINS: tuple[Domain, ...] = (TEXT, NUMBERS, TIME, SHOP, LISTS, GRID)
MIXED_PACKAGES = ("toolbox", "utilkit", "common", "corelib", "helpers_lib")
