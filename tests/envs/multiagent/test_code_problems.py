"""Reading a proposer's Python task on the host (rlvr/CodeProposerSolver-v0): the format, tests
that do not constrain, a spec that gives the reference away; nothing is ever run here."""

from __future__ import annotations

import pytest

from rlvr.envs.multiagent.code_problems import MAX_TESTS, read_proposal
from rlvr.verifiers.code.spec import CodeTests

SPEC = "Return the number of vowels (a, e, i, o, u, either case) in the string s."
REFERENCE = 'def count_vowels(s):\n    return sum(1 for c in s.lower() if c in "aeiou")\n'
TESTS = 'count_vowels("hello") == 2\ncount_vowels("") == 0\nassert count_vowels("AEIOU xyz") == 5'


def proposal(spec: str = SPEC, reference: str = REFERENCE, tests: str = TESTS) -> str:
    return f"<spec>{spec}</spec>\n<reference>\n{reference}</reference>\n<tests>\n{tests}\n</tests>"


def test_a_task_reads_into_a_prompt_with_the_spec_and_signature_only():
    reading = read_proposal("Here it is.\n" + proposal(reference=f"```python\n{REFERENCE}```\n"))
    assert reading.proposal is not None, reading.why
    task = reading.proposal.task()
    assert reading.proposal.signature == "def count_vowels(s):"
    assert SPEC in task.prompt and "def count_vowels(s):" in task.prompt
    assert "sum(1" not in task.prompt and "hello" not in task.prompt and "AEIOU" not in task.prompt
    tests = CodeTests.from_answer(task.answer, task.id)
    assert tests.entry_point == "count_vowels" and tests.reference.startswith("def count_vowels")
    assert [(case.args, case.expected) for case in tests.cases] == [
        (("hello",), 2),
        (("",), 0),
        (("AEIOU xyz",), 5),
    ]
    assert read_proposal(proposal()).proposal.task() == task  # the same task, the same id


def test_literal_arguments_of_every_kind_and_keywords_are_read_with_their_types():
    tests = "\n".join(
        [
            "f([1, 2], key=(3, 'a')) == {'n': 1.5}",
            "f({1, 2}, key=None) == b'xy'",
            "f(-4, key=True) == [(1, 2)]",
        ]
    )
    reading = read_proposal(
        proposal("Say something.", "def f(x, key=None):\n    return x\n", tests)
    )
    assert reading.proposal is not None, reading.why
    first, second, third = reading.proposal.cases
    assert first.args == ([1, 2],) and first.kwargs == {"key": (3, "a")}
    assert first.expected == {"n": 1.5} and second.expected == b"xy" and third.args == (-4,)
    assert reading.proposal.signature == "def f(x, key=None):"


@pytest.mark.parametrize(
    ("reply", "outcome"),
    [
        ("def count_vowels(s): ...", "unreadable"),
        (proposal().replace("<spec>", "<problem>"), "unreadable"),
        (proposal().replace("</tests>", ""), "unreadable"),
        (proposal(spec=" "), "outside_family"),
        (proposal(spec="x" * 2001), "outside_family"),
        (proposal(tests='count_vowels("a") == 1\ncount_vowels("b") == 0'), "outside_family"),
        (proposal(tests=TESTS + '\ncount_vowels("e") > 0'), "outside_family"),
        (proposal(tests=TESTS + '\ncount_vowels("e") == 1 == 1'), "outside_family"),
        (proposal(tests=TESTS + "\nx = count_vowels('e')"), "outside_family"),
        (proposal(tests=TESTS + "\ncount_vowels(*['e']) == 1"), "outside_family"),
        (proposal(tests=TESTS + "\ncount_vowels(**{'s': 'e'}) == 1"), "outside_family"),
        (proposal(tests=TESTS + "\ncount_vowels(str(1)) == 0"), "outside_family"),
        (proposal(tests=TESTS + "\ncount_vowels('e') == len('e')"), "outside_family"),
        (proposal(tests=TESTS + "\ncount_vowels(__import__('os')) == 0"), "outside_family"),
        (proposal(tests=TESTS + "\nother('e') == 1"), "outside_family"),
        (proposal(tests=TESTS + "\ncount_vowels('e') == " + "[" * 5000), "outside_family"),
        (proposal(tests=TESTS + "\ncount_vowels('e') == 1" + "0" * 5000), "outside_family"),
        (proposal(reference="count_vowels = len\n"), "outside_family"),
        (proposal(reference="def count_vowels(s):\n    return (\n"), "outside_family"),
        (proposal(reference="class count_vowels:\n    pass\n"), "outside_family"),
        (proposal(reference="def helper(s):\n    return 0\n"), "outside_family"),
    ],
)
def test_a_task_outside_the_format_is_refused_unrun(reply, outcome):
    reading = read_proposal(reply)
    assert reading.proposal is None
    assert reading.outcome == outcome and reading.why


def test_the_number_of_tests_is_bounded():
    many = "\n".join(f"count_vowels('{'a' * n}') == {n}" for n in range(MAX_TESTS + 1))
    reading = read_proposal(proposal(tests=many))
    assert reading.outcome == "outside_family" and f"to {MAX_TESTS} tests" in reading.why
    assert read_proposal(proposal(tests=many.rpartition("\n")[0])).proposal is not None


@pytest.mark.parametrize(
    ("reference", "tests"),
    [
        ("def f(x):\n    return None\n", "f(1) == None\nf(2) == None\nf('a') == None"),
        ("def f(x):\n    return 7\n", "f(1) == 7\nf(2) == 7\nf([3]) == 7\nf(x=4) == 7"),
        ("def f(x):\n    return x\n", "f(1) == 1\nf('ab') == 'ab'\nf([2]) == [2]"),
        ("def f(x, y):\n    return x\n", "f(1, 5) == 1\nf(2, 6) == 2\nf(3, 1) == 3"),
    ],
)
def test_tests_a_constant_or_the_first_argument_passes_are_vacuous(reference, tests):
    reading = read_proposal(proposal("A function.", reference, tests))
    assert reading.outcome == "vacuous_tests", reading.why


def test_types_count_when_telling_expected_results_apart():
    # 1, 1.0 and True are equal in Python but not here: a constant function fails two of them.
    tests = "f(1) == 1\nf(2) == 1.0\nf(3) == True"
    assert read_proposal(proposal("A function.", "def f(x):\n    return 1\n", tests)).proposal


@pytest.mark.parametrize(
    "spec",
    [
        "Write this: def count_vowels(s): return sum(1 for c in s.lower() if c in 'aeiou')",
        "Implement `def  count_vowels (s)` please.",
        'Hint: return sum(1 for c in s.lower() if c in "aeiou")',
        'Hint:\n    return   sum(1 for c in s.lower()\n if c in "aeiou")',
    ],
)
def test_a_spec_that_gives_the_reference_away_is_refused(spec):
    reading = read_proposal(proposal(spec=spec))
    assert reading.outcome == "answer_in_problem", reading.why


def test_a_statement_hidden_in_the_signature_is_a_leak_too():
    reference = 'def rev(xs, note="return xs[::-1]"):\n    return xs[::-1]\n'
    tests = "rev([1, 2]) == [2, 1]\nrev([]) == []\nrev([3, 4, 5]) == [5, 4, 3]"
    reading = read_proposal(proposal("Reverse the list xs.", reference, tests))
    assert reading.outcome == "answer_in_problem"


@pytest.mark.parametrize(
    ("spec", "reference"),
    [
        (
            SPEC,
            f'def count_vowels(s):\n    """{SPEC}"""\n'
            '    return sum(c in "aeiouAEIOU" for c in s)\n',
        ),
        (
            "Count the vowels of s; you may import re.",
            "def count_vowels(s):\n    import re\n    return len(re.findall('[aeiou]', s, re.I))\n",
        ),
        (
            "Return x. Count vowels in s.",
            "def count_vowels(s):\n    x = 0\n"
            "    return len([c for c in s if c.lower() in 'aeiou']) + x\n",
        ),
    ],
)
def test_a_spec_in_its_own_words_is_no_leak(spec, reference):
    reading = read_proposal(proposal(spec=spec, reference=reference))
    assert reading.proposal is not None, reading.why


def test_reading_runs_nothing(tmp_path):
    marker = tmp_path / "ran"
    reference = f"open({str(marker)!r}, 'w').write('x')\n" + REFERENCE
    tests = TESTS.replace('"hello"', f"open({str(marker)!r}, 'w')")
    read_proposal(proposal(reference=reference))
    read_proposal(proposal(tests=tests))
    assert not marker.exists()
