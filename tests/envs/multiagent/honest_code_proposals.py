"""Honest proposals for rlvr/CodeProposerSolver-v1: plain-English specs, references a person
would write, natural tests. The well-posedness rules must accept every one (the false-refusal
rate on them is reported in docs/multiagent.md); `test_code_problems.py` reads them on the host
and `test_code_proposer_solver_redteam.py` plays them through the env, sandbox included."""

from __future__ import annotations

# (spec, reference, tests)
HONEST: list[tuple[str, str, str]] = [
    (
        "Return the number of vowels (a, e, i, o, u, either case) in the string s.",
        'def count_vowels(s):\n    return sum(1 for c in s.lower() if c in "aeiou")\n',
        'count_vowels("hello") == 2\ncount_vowels("") == 0\ncount_vowels("AEIOU xyz") == 5',
    ),
    (
        "Return the sum of the integers in the list xs.",
        "def total(xs):\n    return sum(xs)\n",
        "total([1, 2, 3]) == 6\ntotal([]) == 0\ntotal([-5, 5, 10]) == 10",
    ),
    (
        "Return True if the string s reads the same forwards and backwards, ignoring case.",
        "def is_palindrome(s):\n    t = s.lower()\n    return t == t[::-1]\n",
        'is_palindrome("Level") == True\nis_palindrome("abc") == False\nis_palindrome("") == True',
    ),
    (
        "Return the largest of a, b and c.",
        "def largest(a, b, c):\n    return max(a, b, c)\n",
        "largest(1, 2, 3) == 3\nlargest(9, -1, 4) == 9\nlargest(5, 8, 7) == 8",
    ),
    (
        "Return n factorial (the product 1 * 2 * ... * n; 1 for n = 0).",
        "def factorial(n):\n    result = 1\n    for k in range(2, n + 1):\n"
        "        result *= k\n    return result\n",
        "factorial(0) == 1\nfactorial(5) == 120\nfactorial(3) == 6",
    ),
    (
        "Return the list of the even numbers of xs, in their order.",
        "def evens(xs):\n    return [x for x in xs if x % 2 == 0]\n",
        "evens([1, 2, 3, 4]) == [2, 4]\nevens([]) == []\nevens([7, 10, 12, 13]) == [10, 12]",
    ),
    (
        "Reverse the order of the words in the sentence s (words are separated by single spaces).",
        'def reverse_words(s):\n    return " ".join(s.split(" ")[::-1])\n',
        'reverse_words("hello world") == "world hello"\nreverse_words("a") == "a"\n'
        'reverse_words("one two three") == "three two one"',
    ),
    (
        "Return a dict counting how many times each character occurs in s.",
        "def char_counts(s):\n    counts = {}\n    for c in s:\n"
        "        counts[c] = counts.get(c, 0) + 1\n    return counts\n",
        "char_counts('aab') == {'a': 2, 'b': 1}\nchar_counts('') == {}\n"
        "char_counts('xyx') == {'x': 2, 'y': 1}",
    ),
    (
        "Return the n-th Fibonacci number, with fib(0) = 0 and fib(1) = 1.",
        "def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n"
        "    return a\n",
        "fib(0) == 0\nfib(1) == 1\nfib(10) == 55\nfib(7) == 13",
    ),
    (
        "Return True if n is a prime number.",
        "def is_prime(n):\n    if n < 2:\n        return False\n    d = 2\n    while d * d <= n:\n"
        "        if n % d == 0:\n            return False\n        d += 1\n    return True\n",
        "is_prime(2) == True\nis_prime(15) == False\nis_prime(1) == False\nis_prime(97) == True",
    ),
    (
        "Return the list xs without duplicates, keeping the first occurrence of each value.",
        "def dedupe(xs):\n    seen = set()\n    out = []\n    for x in xs:\n"
        "        if x not in seen:\n            seen.add(x)\n            out.append(x)\n"
        "    return out\n",
        "dedupe([1, 2, 1, 3, 2]) == [1, 2, 3]\ndedupe([]) == []\ndedupe([5, 5, 5]) == [5]",
    ),
    (
        "Capitalise the first letter of every word of s; words are separated by spaces.",
        "def title_words(s):\n    return ' '.join(w[:1].upper() + w[1:] for w in s.split(' '))\n",
        "title_words('hello world') == 'Hello World'\ntitle_words('a b') == 'A B'\n"
        "title_words('x') == 'X'",
    ),
    (
        "Return the number of distinct values in xs.",
        "def distinct(xs):\n    return len(set(xs))\n",
        "distinct([1, 1, 2]) == 2\ndistinct([]) == 0\ndistinct(['a', 'b', 'a', 'c']) == 3",
    ),
    (
        "Given a temperature in degrees Celsius, return it in degrees Fahrenheit as a float.",
        "def to_fahrenheit(c):\n    return c * 9 / 5 + 32\n",
        "to_fahrenheit(0) == 32.0\nto_fahrenheit(100) == 212.0\nto_fahrenheit(-40) == -40.0",
    ),
    (
        "Return the second largest distinct value of xs, or None if there is none.",
        "def second_largest(xs):\n    values = sorted(set(xs))\n"
        "    return values[-2] if len(values) >= 2 else None\n",
        "second_largest([1, 3, 2]) == 2\nsecond_largest([4, 4]) == None\n"
        "second_largest([10, 9, 10, 8]) == 9",
    ),
    (
        "Return the sum of the digits of the non-negative integer n.",
        "def digit_sum(n):\n    return sum(int(d) for d in str(n))\n",
        "digit_sum(0) == 0\ndigit_sum(1234) == 10\ndigit_sum(99) == 18",
    ),
    (
        "Split the list xs into consecutive chunks of size k (the last one may be shorter).",
        "def chunks(xs, k):\n    return [xs[i:i + k] for i in range(0, len(xs), k)]\n",
        "chunks([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]\nchunks([], 3) == []\n"
        "chunks([1, 2], 5) == [[1, 2]]",
    ),
    (
        "Return the index of target in the sorted list xs, or -1 if it is absent.",
        "def find(xs, target):\n    lo, hi = 0, len(xs) - 1\n    while lo <= hi:\n"
        "        mid = (lo + hi) // 2\n        if xs[mid] == target:\n            return mid\n"
        "        if xs[mid] < target:\n            lo = mid + 1\n        else:\n"
        "            hi = mid - 1\n    return -1\n",
        "find([1, 3, 5, 7], 5) == 2\nfind([1, 3, 5, 7], 4) == -1\nfind([], 1) == -1\n"
        "find([2, 4], 2) == 0",
    ),
    (
        "Return the string s with every run of repeated characters collapsed to one character.",
        "def squeeze(s):\n    out = ''\n    for c in s:\n        if not out or out[-1] != c:\n"
        "            out += c\n    return out\n",
        "squeeze('aaabccd') == 'abcd'\nsqueeze('') == ''\nsqueeze('abab') == 'abab'",
    ),
    (
        "Return the greatest common divisor of the positive integers a and b.",
        "def gcd(a, b):\n    while b:\n        a, b = b, a % b\n    return a\n",
        "gcd(12, 18) == 6\ngcd(7, 5) == 1\ngcd(10, 10) == 10",
    ),
    (
        "Return the words of the sentence s that are longer than n characters, in order.",
        "def long_words(s, n=3):\n    return [w for w in s.split() if len(w) > n]\n",
        "long_words('the quick brown fox') == ['quick', 'brown']\n"
        "long_words('a bb ccc', n=1) == ['bb', 'ccc']\nlong_words('') == []",
    ),
    (
        "Return a tuple (minimum, maximum) of the non-empty list xs.",
        "def min_max(xs):\n    return (min(xs), max(xs))\n",
        "min_max([3, 1, 2]) == (1, 3)\nmin_max([5]) == (5, 5)\nmin_max([-1, -7, 4]) == (-7, 4)",
    ),
    (
        "Merge two sorted lists a and b into one sorted list.",
        "def merge(a, b):\n    out, i, j = [], 0, 0\n    while i < len(a) and j < len(b):\n"
        "        if a[i] <= b[j]:\n            out.append(a[i])\n            i += 1\n"
        "        else:\n            out.append(b[j])\n            j += 1\n"
        "    return out + a[i:] + b[j:]\n",
        "merge([1, 4], [2, 3]) == [1, 2, 3, 4]\nmerge([], [1]) == [1]\nmerge([5], []) == [5]\n"
        "merge([1, 1], [1]) == [1, 1, 1]",
    ),
    (
        "Return True when the brackets (), [] and {} of s are balanced and properly nested.",
        "def balanced(s):\n    pairs = {')': '(', ']': '[', '}': '{'}\n    stack = []\n"
        "    for c in s:\n        if c in '([{':\n            stack.append(c)\n"
        "        elif c in pairs:\n            if not stack or stack.pop() != pairs[c]:\n"
        "                return False\n    return not stack\n",
        "balanced('([]{})') == True\nbalanced('(]') == False\nbalanced('') == True\n"
        "balanced('((') == False",
    ),
    (
        "Return the run-length encoding of s as a list of (character, count) pairs.",
        "def rle(s):\n    out = []\n    for c in s:\n        if out and out[-1][0] == c:\n"
        "            out[-1] = (c, out[-1][1] + 1)\n        else:\n            out.append((c, 1))\n"
        "    return out\n",
        "rle('aaab') == [('a', 3), ('b', 1)]\nrle('') == []\nrle('abb') == [('a', 1), ('b', 2)]",
    ),
    (
        "Rotate the list xs to the right by k positions.",
        "def rotate(xs, k):\n    if not xs:\n        return []\n    k %= len(xs)\n"
        "    return xs[-k:] + xs[:-k]\n",
        "rotate([1, 2, 3, 4], 1) == [4, 1, 2, 3]\nrotate([1, 2, 3], 3) == [1, 2, 3]\n"
        "rotate([], 2) == []",
    ),
    (
        "Return the mean of the numbers in xs, or None for an empty list.",
        "def mean(xs):\n    if not xs:\n        return None\n    return sum(xs) / len(xs)\n",
        "mean([1, 2, 3]) == 2.0\nmean([]) == None\nmean([1, 2]) == 1.5",
    ),
    (
        "Return the keys of the dict d sorted by their values, smallest first (ties by key).",
        "def keys_by_value(d):\n    return sorted(d, key=lambda k: (d[k], k))\n",
        "keys_by_value({'a': 3, 'b': 1, 'c': 2}) == ['b', 'c', 'a']\nkeys_by_value({}) == []\n"
        "keys_by_value({'x': 1, 'w': 1}) == ['w', 'x']",
    ),
    (
        "Convert the non-negative integer n to its binary representation as a string, "
        "without prefix.",
        "def to_binary(n):\n    return bin(n)[2:]\n",
        "to_binary(5) == '101'\nto_binary(0) == '0'\nto_binary(8) == '1000'",
    ),
    (
        "Return the characters that appear in both strings a and b, sorted and without "
        "repeats, as a string.",
        "def common(a, b):\n    return ''.join(sorted(set(a) & set(b)))\n",
        "common('hello', 'world') == 'lo'\ncommon('abc', 'xyz') == ''\ncommon('aab', 'ba') == 'ab'",
    ),
    (
        "Return True if the year is a leap year in the Gregorian calendar.",
        "def is_leap(year):\n    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)\n",
        "is_leap(2000) == True\nis_leap(1900) == False\nis_leap(2024) == True\n"
        "is_leap(2023) == False",
    ),
    (
        "Return the list of the first n square numbers, starting from 1.",
        "def squares(n):\n    return [k * k for k in range(1, n + 1)]\n",
        "squares(3) == [1, 4, 9]\nsquares(0) == []\nsquares(1) == [1]",
    ),
]
