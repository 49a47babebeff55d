"""The Python function tasks a proposer may pose in `rlvr/CodeProposerSolver-v0`, read on the host
without running anything (the reference runs later, in the sandbox).

A proposal is three tagged blocks (the last of each counts):

```
<spec>Return the number of vowels (a, e, i, o, u, either case) in the string s.</spec>
<reference>
def count_vowels(s):
    return sum(1 for c in s.lower() if c in "aeiou")
</reference>
<tests>
count_vowels("hello") == 2
count_vowels("") == 0
assert count_vowels("AEIOU xyz") == 5
</tests>
```

- `<spec>`: what the solvers read (with the signature), at most `MAX_SPEC_CHARS` characters.
- `<reference>`: Python code (bare or in a ```python block) defining the tested function at top
  level with `def`.
- `<tests>`: `MIN_TESTS` to `MAX_TESTS` lines `name(args) == expected`, `assert` optional, all
  calling the same function (the entry point), whose arguments and expected result are Python
  literals (numbers, strings, bytes, None, True/False, lists, tuples, dicts, sets).
  They become `cases` of the code family's `CodeTests`: plain data, never code, compared on the
  host with what the solution returns (exact types: 1 is not 1.0 nor True).

The tests must constrain the function (else `vacuous_tests`): their expected results must take
at least two different values (so no function returning a constant, None included, passes them
all), and at least one must differ from its call's first argument (so returning the input
unchanged does not pass either). The spec must not give the reference away (else
`answer_in_problem`): no `def` of the entry point, and no statement of the reference's
function of at least `MIN_LEAK_CHARS` non-space characters (imports and docstrings aside) written
out in the spec (or in the signature's defaults and annotations), spaces ignored.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from rlvr.envs.code import function_prompt
from rlvr.envs.replies import last_tagged
from rlvr.verifiers.code.extract import extract_code
from rlvr.verifiers.code.harness import canonical, encode_value
from rlvr.verifiers.code.spec import CallCase, CodeTests
from rlvr.verifiers.types import Task, content_id

MIN_TESTS = 3
MAX_TESTS = 20
MAX_SPEC_CHARS = 2000
MAX_REFERENCE_CHARS = 4000
MAX_TESTS_CHARS = 4000
MIN_LEAK_CHARS = 8
FAMILY = "code"
SOURCE = "proposer"
# Parsing is recursive: refuse deeply nested text before it reaches `ast` (a RecursionError, or
# a crash of the parser itself on some versions).
MAX_BRACKETS = 50


@dataclass(frozen=True)
class CodeProposal:
    """A readable proposal whose tests constrain and whose spec does not give the reference."""

    spec: str
    entry_point: str
    signature: str
    reference: str
    cases: tuple[CallCase, ...]

    def task(self) -> Task:
        """The solvers' task: the spec and signature as prompt, the tests as hidden answer."""
        tests = CodeTests(entry_point=self.entry_point, cases=self.cases, reference=self.reference)
        answer = tests.to_answer()
        return Task(
            id=content_id(FAMILY, SOURCE, self.spec, self.signature, answer),
            prompt=function_prompt(self.entry_point, self.spec, self.signature),
            answer=answer,
            metadata={"family": FAMILY, "source": SOURCE},
        )

    def reference_reply(self) -> str:
        """The reference as a reply the code verifier reads."""
        return f"```python\n{self.reference}\n```"


@dataclass(frozen=True)
class Reading:
    """`proposal`, or the `outcome` of an ill-posed one ("unreadable", "outside_family",
    "vacuous_tests", "answer_in_problem") and `why`, a sentence for the proposer."""

    proposal: CodeProposal | None = None
    outcome: str = ""
    why: str = ""


class _IllPosed(Exception):
    def __init__(self, outcome: str, why: str) -> None:
        super().__init__(why)
        self.outcome, self.why = outcome, why


def read_proposal(reply: str) -> Reading:
    """Read and check a proposer's reply; never raises on bad text, never runs it."""
    try:
        return Reading(_proposal(reply))
    except _IllPosed as exc:
        return Reading(outcome=exc.outcome, why=exc.why)


def _proposal(reply: str) -> CodeProposal:
    blocks = {tag: last_tagged(reply, tag) for tag in ("spec", "reference", "tests")}
    missing = [f"<{tag}>" for tag, block in blocks.items() if block is None]
    if missing:
        raise _IllPosed("unreadable", f"no {', '.join(missing)} block")
    spec, reference_text, tests_text = (str(block).strip() for block in blocks.values())
    for name, text, limit in (
        ("spec", spec, MAX_SPEC_CHARS),
        ("reference", reference_text, MAX_REFERENCE_CHARS),
        ("tests", tests_text, MAX_TESTS_CHARS),
    ):
        if not text or len(text) > limit:
            raise _IllPosed("outside_family", f"the {name} must have 1 to {limit} characters")
    entry_point, cases = _tests(tests_text)
    reference, function = _reference(reference_text, entry_point)
    arguments = ast.unparse(function.args)
    _check_constraining(cases)
    _check_not_given_away(spec + "\n" + arguments, reference, function, entry_point)
    return CodeProposal(spec, entry_point, f"def {entry_point}({arguments}):", reference, cases)


# --- the tests ----------------------------------------------------------------------------------


def _tests(text: str) -> tuple[str, tuple[CallCase, ...]]:
    lines = [line.strip() for line in text.splitlines()]
    lines = [line for line in lines if line and not line.startswith("#")]
    if not MIN_TESTS <= len(lines) <= MAX_TESTS:
        raise _IllPosed(
            "outside_family",
            f"give {MIN_TESTS} to {MAX_TESTS} tests, one `name(args) == result` per line",
        )
    calls = [_test(line, number) for number, line in enumerate(lines, start=1)]
    names = {name for name, _ in calls}
    if len(names) != 1:
        raise _IllPosed("outside_family", f"the tests call several functions: {sorted(names)}")
    return names.pop(), tuple(case for _, case in calls)


def _test(line: str, number: int) -> tuple[str, CallCase]:
    where = f"test {number}"
    text = line.removeprefix("assert ").strip()
    node = _parse(text, "eval", where)
    compare = node.body if isinstance(node, ast.Expression) else None
    if (
        not isinstance(compare, ast.Compare)
        or len(compare.ops) != 1
        or not isinstance(compare.ops[0], ast.Eq)
        or not isinstance(compare.left, ast.Call)
        or not isinstance(compare.left.func, ast.Name)
    ):
        raise _IllPosed("outside_family", f"{where} is not `name(args) == result`")
    call, name = compare.left, compare.left.func.id
    if any(isinstance(arg, ast.Starred) for arg in call.args) or any(
        keyword.arg is None for keyword in call.keywords
    ):
        raise _IllPosed("outside_family", f"{where}: write the arguments out, without * or **")
    args = [_literal(arg, where) for arg in call.args]
    kwargs = {str(keyword.arg): _literal(keyword.value, where) for keyword in call.keywords}
    expected = _literal(compare.comparators[0], where)
    return name, CallCase(tuple(args), kwargs, expected)


def _literal(node: ast.expr, where: str) -> Any:
    try:
        value = ast.literal_eval(node)
        encode_value(value)  # plain data the harness can send and compare
        canonical(value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise _IllPosed(
            "outside_family", f"{where}: arguments and results must be Python literals"
        ) from None
    return value


# --- the reference ------------------------------------------------------------------------------


def _reference(text: str, entry_point: str) -> tuple[str, ast.FunctionDef]:
    code = extract_code(text, entry_point)
    if code is None:
        raise _IllPosed(
            "outside_family", f"the reference is not Python code defining `{entry_point}`"
        )
    tree = _parse(code, "exec", "the reference")
    assert isinstance(tree, ast.Module)
    functions = [
        node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == entry_point
    ]
    if not functions:
        raise _IllPosed(
            "outside_family", f"the reference must define `{entry_point}` at top level with def"
        )
    return code, functions[-1]


def _parse(text: str, mode: str, where: str) -> ast.AST:
    if max(text.count(bracket) for bracket in "([{") > MAX_BRACKETS:
        raise _IllPosed("outside_family", f"{where} nests too many brackets")
    try:
        return ast.parse(text, mode=mode)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        raise _IllPosed("outside_family", f"{where} does not parse as Python") from None


# --- the anti-hacking rules ---------------------------------------------------------------------


def _check_constraining(cases: tuple[CallCase, ...]) -> None:
    """Refuse tests that a constant function, or one returning its first argument, passes."""
    if len({canonical(case.expected) for case in cases}) < 2:
        raise _IllPosed(
            "vacuous_tests",
            "every test expects the same result, so a function returning a constant passes",
        )
    if all(case.args and canonical(case.args[0]) == canonical(case.expected) for case in cases):
        raise _IllPosed(
            "vacuous_tests",
            "every test expects its first argument back, so returning it unchanged passes",
        )


def _check_not_given_away(
    shown: str, reference: str, function: ast.FunctionDef, entry_point: str
) -> None:
    """Refuse a spec that defines the function or writes out a statement of its reference."""
    squeezed = _squeeze(shown)
    if f"def{entry_point}(" in squeezed:
        raise _IllPosed("answer_in_problem", f"the spec defines `{entry_point}`")
    for node in ast.walk(function):
        if node is function or not isinstance(node, ast.stmt) or _plain_text(node):
            continue
        statement = _squeeze(ast.get_source_segment(reference, node) or "")
        if len(statement) >= MIN_LEAK_CHARS and statement in squeezed:
            raise _IllPosed("answer_in_problem", "the spec writes out the reference's code")


def _plain_text(node: ast.stmt) -> bool:
    """An import or a bare string (a docstring): what a spec may say in its own words."""
    is_string = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    return is_string or isinstance(node, (ast.Import, ast.ImportFrom))


def _squeeze(text: str) -> str:
    return "".join(text.split())
