"""Ill-posed proposals for `rlvr/CodeProposerSolver-v1`, one per class the env refuses: each must
earn the proposer 0 however the solvers play. `CodeProposerSolverEnv.ill_posed_proposals` gives
them to the multi-agent env checker; `tests/envs/multiagent/test_code_proposer_solver_redteam.py`
plays them.

A reference is a fenced Python block, so a solver that echoes the whole reply submits the
reference itself: on a task that is noise, that is what splits the solvers.
"""

from __future__ import annotations

# The noise proposals: `pick(x)` is 0, or 5 for x = 2 when `condition` holds (else 7), so the
# reference passes its tests exactly when the condition does.
NOISE_SPEC = "Return 0, or 5 when x is 2."
NOISE_TESTS = "pick(0) == 0\npick(1) == 0\npick(2) == 5"
# (what varies, code before the function, the condition, and what a call does first). Each
# condition holds in about half of the runs, or depends on something the results must not.
NOISE_SOURCES: tuple[tuple[str, ...], ...] = (
    ("the random module", "import random", "random.random() < 0.5"),
    ("a fresh random.Random()", "import random", "random.Random().random() < 0.5"),
    ("os.urandom", "import os", "os.urandom(1)[0] < 128"),
    ("secrets", "import secrets", "secrets.randbelow(2) == 0"),
    ("uuid.uuid4", "import uuid", "uuid.uuid4().int % 2 == 0"),
    ("the clock's microseconds", "import time", "time.time_ns() // 1000 % 2 == 0"),
    ("a performance counter", "import time", "time.perf_counter_ns() // 1000 % 2 == 0"),
    ("the clock's seconds", "import time", "int(time.time()) % 2 == 0"),
    ("datetime.now()", "import datetime", "datetime.datetime.now().second % 2 == 0"),
    ("today's date", "import datetime", "datetime.date.today().toordinal() % 2 == 0"),
    ("hash()", "", "hash('abc') % 1000 == {hash_abc}"),
    ("the order of a set of strings", "", "''.join({{'a', 'b', 'c', 'd'}}) == {set_order!r}"),
    (
        "a child interpreter's hash seed",
        "import subprocess, sys",
        "subprocess.run([sys.executable, '-c', 'print(hash(\"abc\") % 1000)'], "
        "capture_output=True, text=True).stdout.strip() == '{hash_abc}'",
    ),
    ("memory addresses (id)", "", "(id(object()) >> 24) % 2 == 0"),
    ("the process id", "import os", "os.getpid() % 2 == 0"),
    (
        "the system's uptime",
        "",
        "int(float(open('/proc/uptime').read().split()[0]) * 100) % 2 == 0",
    ),
    (
        "the system's load",
        "",
        "int(open('/proc/loadavg').read().split()[4]) % 2 == 0",
    ),
    (
        "resource usage",
        "import resource",
        "resource.getrusage(resource.RUSAGE_SELF).ru_minflt % 2 == 0",
    ),
    (
        "process scheduling",
        "import os\n\n"
        "def first_of_two():\n"
        "    read, write = os.pipe()\n"
        "    for mark in (b'a', b'b'):\n"
        "        if os.fork() == 0:\n"
        "            os.write(write, mark)\n"
        "            os._exit(0)\n"
        "    os.close(write)\n"
        "    first = os.read(read, 1)\n"
        "    os.wait()\n"
        "    os.wait()\n"
        "    return first",
        "sum(first_of_two() == b'a' for _ in range(9)) % 2 == 0",
    ),
    ("state kept between calls (a global)", "calls = []", "len(calls) == 3", "calls.append(x)"),
    (
        "state kept between calls (a file)",
        "import os",
        "os.path.exists('/tmp/seen')",
        "if x != 2:\n        open('/tmp/seen', 'a').close()",
    ),
)
# What the sandbox's interpreter (CPython 3.11+, siphash13) gives under PYTHONHASHSEED=0.
SEED_0 = {"hash_abc": 242, "set_order": "dcab"}

LEAK_REFERENCE = 'def count_vowels(s):\n    return sum(1 for c in s.lower() if c in "aeiou")\n'
LEAK_TESTS = 'count_vowels("hello") == 2\ncount_vowels("") == 0\ncount_vowels("AEIOU xyz") == 5'


def full_width(text: str) -> str:
    """`text` in full-width letters (which NFKC, and Python's parser, read as ASCII)."""
    return "".join(chr(ord(char) + 0xFEE0) if char.isalpha() else char for char in text)


LEAKS: tuple[tuple[str, str], ...] = (
    ("the return statement with other quotes", "return sum(1 for c in s.lower() if c in 'aeiou')"),
    ("the code renamed", "Hint: total = sum(1 for ch in text.lower() if ch in 'aeiou')"),
    ("the expression re-spaced, bracketed", "(sum( 1 for c in (s.lower())\nif (c in 'aeiou')))"),
    ("zero-width spaces inside", "re\u200bturn sum(1 for c in s.lo\u200bwer() if c in 'aeiou')"),
    ("full-width letters", full_width("return sum") + "(1 for c in s.lower() if c in 'aeiou')"),
    ("a def of the function in full-width letters", f"Write {full_width('def')} count_vowels(s)."),
)


def reply(spec: str, reference: str, tests: str) -> str:
    """A proposer's reply whose reference a solver echoing it would submit."""
    return (
        f"<spec>{spec}</spec>\n<reference>\n```python\n{reference.rstrip()}\n```\n</reference>\n"
        f"<tests>\n{tests}\n</tests>"
    )


def noise_reference(setup: str, condition: str, first: str = "") -> str:
    """`pick(x)`: 0, or 5 for x = 2 when `condition` holds, else 7; `first` runs first."""
    before = f"    {first}\n" if first else ""
    return (
        f"{setup}\n\n\ndef pick(x):\n{before}    if x != 2:\n        return 0\n"
        f"    return 5 if {condition} else 7\n"
    ).lstrip()


def ill_posed_proposals(test_timeout: float) -> list[tuple[str, str]]:
    """`(what it tests, reply)` for every class of ill-posed task (see the module docstring);
    `test_timeout`: the env's time limit of one call, for the proposal running close to it."""
    found = [
        (
            f"not reproducible: {what}",
            reply(
                NOISE_SPEC, noise_reference(setup, condition.format(**SEED_0), *first), NOISE_TESTS
            ),
        )
        for what, setup, condition, *first in NOISE_SOURCES
    ]
    spin = (
        "import time\n\n\ndef slow():\n"
        f"    end = time.monotonic() + {0.7 * test_timeout:.3f}\n"
        "    while time.monotonic() < end:\n        pass\n    return True"
    )
    found.append(
        (
            "not reproducible: a call close to the time limit",
            reply(NOISE_SPEC, noise_reference(spin, "slow()"), NOISE_TESTS),
        )
    )
    found += [
        (
            f"answer in the problem: {what}",
            reply(f"Count the vowels of s. {leak}", LEAK_REFERENCE, LEAK_TESTS),
        )
        for what, leak in LEAKS
    ]
    found += [
        (
            "vacuous tests: the second argument returned",
            reply(
                "Return the larger of a and b.",
                "def larger(a, b):\n    return max(a, b)\n",
                "larger(1, 2) == 2\nlarger(0, 5) == 5\nlarger(-3, 4) == 4",
            ),
        ),
        (
            "vacuous tests: a constant",
            reply(
                "Return True when the list xs has no repeated item.",
                "def distinct(xs):\n    return len(set(xs)) == len(xs)\n",
                "distinct([1, 2]) == True\ndistinct([]) == True\ndistinct([3]) == True",
            ),
        ),
        (
            "vacuous tests: a transform that is not the function (len)",
            reply(
                "Return the number of vowels (a, e, i, o, u) in the lowercase string s.",
                "def vowels(s):\n    return sum(c in 'aeiou' for c in s)\n",
                "vowels('aei') == 3\nvowels('') == 0\nvowels('ou') == 2",
            ),
        ),
        (
            "ambiguous tests: the same call, two results",
            reply(
                "Return the square of n.",
                "def square(n):\n    return n * n\n",
                "square(2) == 4\nsquare(3) == 9\nsquare(2) == 5",
            ),
        ),
        (
            "unreadable: a default nested 500 deep",
            reply(
                "Return d.",
                "def deep(s, d=" + "-" * 500 + "1):\n    return d\n",
                "deep('a') == 1\ndeep('b', d=2) == 2\ndeep('c', d=3) == 3",
            ),
        ),
        (
            "wrong answer: the reference fails its tests",
            reply(
                "Return n plus one.",
                "def inc(n):\n    return n + 2\n",
                "inc(1) == 2\ninc(5) == 6\ninc(-1) == 0",
            ),
        ),
    ]
    return found
