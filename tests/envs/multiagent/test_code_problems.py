"""Reading a proposer's Python task on the host (rlvr/CodeProposerSolver-v1): the format, tests
that do not constrain or contradict each other, a spec that gives the reference away, and text
of any depth or shape read into a verdict; nothing is ever run here."""

from __future__ import annotations

import ast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlvr.envs.multiagent import code_leaks
from rlvr.envs.multiagent.code_mutants import (
    MAX_NEIGHBOURS,
    Parameters,
    neighbours,
    passing_candidates,
)
from rlvr.envs.multiagent.code_problems import MAX_TESTS, read_proposal
from rlvr.verifiers.code.spec import CallCase, CodeTests
from tests.envs.multiagent.honest_code_proposals import HONEST

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


def test_honest_proposals_read_without_a_refusal():
    refused = {}
    for spec, reference, tests in HONEST:
        reading = read_proposal(proposal(spec, reference, tests))
        if reading.proposal is None:
            refused[spec] = reading.why
    assert refused == {}


def test_two_tests_of_the_same_call_with_different_results_are_ambiguous():
    for tests in ("f(1) == 2\nf(2) == 3\nf(1) == 3", "f(1) == 2\nf(2) == 3\nf(x=1) == 3"):
        reading = read_proposal(proposal("Add one.", "def f(x):\n    return x + 1\n", tests))
        assert reading.outcome == "ambiguous_tests", reading.why
    same = "f(1) == 2\nf(1) == 2\nf(2) == 3"  # the same test twice is no contradiction
    assert read_proposal(proposal("Add one.", "def f(x):\n    return x + 1\n", same)).proposal


# --- vacuity: the trivial functions the tests must reject ----------------------------------------


def parameters(signature: str) -> Parameters:
    function = ast.parse(f"def f({signature}):\n    pass").body[0]
    assert isinstance(function, ast.FunctionDef)
    return Parameters.of(function.args)


@pytest.mark.parametrize(
    ("signature", "args", "kwargs", "bound"),
    [
        ("a, b=2", (1,), {}, {"a": 1, "b": 2}),
        ("a, b=2", (1,), {"b": 5}, {"a": 1, "b": 5}),
        ("a, /, b", (1, 2), {}, {"a": 1, "b": 2}),
        ("a, *rest, key=None", (1, 2, 3), {}, {"a": 1, "rest": (2, 3), "key": None}),
        ("a, **options", (1,), {"x": 2}, {"a": 1, "options": {"x": 2}}),
        ("a, /, b", (1,), {"a": 2}, None),  # a is positional-only
        ("a", (1, 2), {}, None),  # too many arguments
        ("a, b", (1,), {}, None),  # b missing
    ],
)
def test_calls_bind_to_the_parameters_as_python_binds_them(signature, args, kwargs, bound):
    assert parameters(signature).bind(CallCase(args, kwargs)) == bound


def test_a_default_that_is_not_a_literal_is_used_by_no_candidate():
    values = parameters("a, b=len").bind(CallCase((1,), {}))
    assert values is not None and values["a"] == 1 and type(values["b"]) is object
    cases = [CallCase((n,), {}, n + 1) for n in range(3)]
    assert [candidate.name for candidate in passing_candidates(parameters("a, b=len"), cases)] == [
        "a + 1"
    ]


def test_every_parameter_returned_unchanged_is_a_stub_that_refuses_the_tests():
    tests = "f(1, 2, key=7) == 7\nf(0, 5, key=3) == 3\nf(4, 4, key=-1) == -1"
    reference = "def f(a, b, key=0):\n    return key\n"
    reading = read_proposal(proposal("Return key.", reference, tests))
    assert reading.outcome == "vacuous_tests" and "returning key" in reading.why


def test_transforms_that_pass_are_suspects_with_neighbours_to_tell_them_apart():
    cases = [CallCase(("aei",), {}, 3), CallCase(("",), {}, 0), CallCase(("ou",), {}, 2)]
    found = passing_candidates(parameters("s"), cases)
    assert [candidate.name for candidate in found] == ["len(s)"]
    near = neighbours(parameters("s"), cases)
    assert 0 < len(near) <= MAX_NEIGHBOURS
    assert any(not set(case.args[0]) <= set("aeiou") for case in near)  # a consonant appears
    assert not {case.args for case in near} & {case.args for case in cases}


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(
    st.lists(
        st.tuples(
            st.lists(
                st.recursive(
                    st.none()
                    | st.booleans()
                    | st.integers()
                    | st.text(max_size=5)
                    | st.floats(allow_nan=False),
                    lambda inner: (
                        st.lists(inner, max_size=3)
                        | st.tuples(inner, inner)
                        | st.dictionaries(st.text(max_size=3), inner, max_size=3)
                    ),
                    max_leaves=6,
                ),
                max_size=3,
            ),
            st.none() | st.integers() | st.text(max_size=4),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_candidates_and_neighbours_never_raise_on_any_plain_data(calls):
    cases = [CallCase(tuple(args), {}, expected) for args, expected in calls]
    for signature in ("a", "a, b", "a, b=1, *rest, **options"):
        passing_candidates(parameters(signature), cases)
        assert len(neighbours(parameters(signature), cases)) <= MAX_NEIGHBOURS


# --- leaks on a normal form ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "same"),
    [
        ("x = 'aeiou'  # vowels", 'x = "aeiou"'),
        ("x = 'ae' 'iou'", "x = 'aeiou'"),
        ("x = (a + (b))", "x=a+b"),
        ("y = 1_000 + 0x10", "y = 1000 + 16"),
        ("z = [1,\n     2]", "z = [1, 2]"),
        ("\uff52\uff45\uff54\uff55\uff52\uff4e x", "return x"),  # full-width letters
        ("ret\u200burn x", "return x"),  # a zero-width space
    ],
)
def test_the_normal_form_ignores_what_does_not_change_the_code(code, same):
    assert code_leaks.code_tokens(code) == code_leaks.code_tokens(same)


@pytest.mark.parametrize(
    ("code", "other"),
    [("x = 1", "x = 1.0"), ("x = 'a'", "x = b'a'"), ("x = a", "x = b"), ("x = a - b", "x = b - a")],
)
def test_the_normal_form_keeps_what_changes_the_code(code, other):
    assert code_leaks.code_tokens(code) != code_leaks.code_tokens(other)


@pytest.mark.parametrize(
    "spec",
    [
        "Hint: return sum(1 for c in s.lower() if c in 'aeiou')",  # other quotes
        "Hint: n = sum(1 for ch in word.lower() if ch in 'aeiou')",  # renamed, no return
        'It is (sum(1 for c in (s.lower()) if (c in "aeiou")))',  # brackets and spaces
        "sum(1\nfor c\nin s.lower()\nif c\nin 'aeiou')",  # one token a line
        "sum(1 for c in s.lower() if c in 'ae' 'iou')",  # a string split in two
        "Do `return sum(1 for c in s.lower() if c in 'aeiou')` please",
        "re\u200bturn sum(1 for c in s.low\u200cer() if c in 'aeiou')",  # zero-width characters
        "\uff52\uff45\uff54\uff55\uff52\uff4e sum(1 for c in s.lower() if c in 'aeiou')",
        "'return sum(1 for c in s.lower() if c in \"aeiou\")' is the code",  # in a string
    ],
)
def test_a_rewrite_of_the_reference_still_gives_it_away(spec):
    assert read_proposal(proposal(spec=spec)).outcome == "answer_in_problem"


@pytest.mark.parametrize(
    "spec",
    [
        "Return how many characters of s are vowels: a, e, i, o or u, in either case.",
        "Count the vowels of s. For example count_vowels('hello') is 2, and 'sky' has none.",
        "Given a string s, return the count of the letters a, e, i, o, u (ignore case). "
        "Return 0 for the empty string; other characters, digits and spaces do not count.",
        "Return sum over the characters c of s of 1 if c is a vowel, else 0.",
    ],
)
def test_a_spec_in_prose_is_no_leak(spec):
    reading = read_proposal(proposal(spec=spec))
    assert reading.proposal is not None, reading.why


# --- any text: a verdict, never an exception ----------------------------------------------------

CHAINS = {
    "unary": lambda n: "-" * n + "1",
    "not": lambda n: "not " * n + "1",
    "attributes": lambda n: ".".join(["a"] * (n + 1)),
    "operators": lambda n: "+".join(["1"] * (n + 1)),
    "powers": lambda n: "**".join(["2"] * (n + 1)),
    "calls": lambda n: "f" + "()" * n,
    "subscripts": lambda n: "a" + "[0]" * n,
    "brackets": lambda n: "[" * n + "]" * n,
    "conditionals": lambda n: "1 if a else " * n + "1",
    "lambdas": lambda n: "lambda: " * n + "1",
}


@settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    chain=st.sampled_from(sorted(CHAINS)),
    length=st.integers(1, 1500),
    where=st.sampled_from(["default", "annotation", "return", "body", "argument", "expected"]),
)
def test_a_chain_of_any_depth_anywhere_is_a_verdict(chain, length, where):
    text = CHAINS[chain](length)
    reference, tests = "def f(s, d=1):\n    return s\n", "f('a') == 'a'\nf('b') == 'b'\nf('') == ''"
    if where == "default":
        reference = f"def f(s, d={text}):\n    return s\n"
    elif where == "annotation":
        reference = f"def f(s, d: {text} = 1):\n    return s\n"
    elif where == "return":
        reference = f"def f(s, d=1):\n    return {text}\n"
    elif where == "body":
        reference = f"def f(s, d=1):\n    x = {text}\n    return s\n"
    elif where == "argument":
        tests = f"f({text}) == 'a'\nf('b') == 'b'\nf('') == ''"
    else:
        tests = f"f('a') == {text}\nf('b') == 'b'\nf('') == ''"
    reading = read_proposal(proposal("Return s.", reference, tests))
    assert reading.proposal is not None or reading.outcome in (
        "outside_family",
        "vacuous_tests",
    )
    if length > 100 and where in ("default", "annotation", "return", "body"):
        assert reading.outcome == "outside_family", (chain, length, where, reading)


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(st.text(max_size=300), st.text(max_size=300), st.text(max_size=300))
def test_any_text_in_the_blocks_is_a_verdict(spec, reference, tests):
    reading = read_proposal(proposal(spec, reference, tests))
    assert (reading.proposal is None) == bool(reading.outcome)
