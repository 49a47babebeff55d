"""The Python function tasks a proposer may pose in `rlvr/CodeProposerSolver-v1`, read on the host
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

The task must be well-posed, else the proposer earns 0 (`outcome` says which rule failed; the
rules, with examples accepted and refused, are in docs/multiagent.md, "What a proposer is paid
for"). Read here, on the host, without running anything:

- `ambiguous_tests`: two tests make the same call but expect different results;
- `vacuous_tests`: a trivial function passes every test (`code_mutants`: a constant or a
  parameter returned unchanged always refuses them; a simple transform such as `len(s)` is a
  *suspect* the env refuses unless the reference agrees with it next to the tests);
- `answer_in_problem`: the spec (or the signature's defaults and annotations) gives the
  reference's code away, compared on a normalised form (`code_leaks`).

What needs the sandbox (the reference passes its tests, every time: `code_replays`) is the env's.
Reading never raises, whatever the text: too deep or too long a text is refused as
`outside_family`, before or after parsing (`MAX_NESTING`, `MAX_AST_DEPTH`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from rlvr.envs.code import function_prompt
from rlvr.envs.multiagent import code_leaks
from rlvr.envs.multiagent.code_mutants import (
    Candidate,
    Parameters,
    neighbours,
    passing_candidates,
)
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
FAMILY = "code"
SOURCE = "proposer"
# Parsing and every walk of a tree are recursive (ast.unparse, ast.literal_eval, the compiler):
# refuse text nested deeper than this before parsing (brackets) and after (any chain: `-----1`,
# `a.a.a`, `1+1+1`, whose trees nest as deep as they are long).
MAX_NESTING = 50
MAX_AST_DEPTH = 80


@dataclass(frozen=True)
class CodeProposal:
    """A readable proposal whose tests constrain and whose spec does not give the reference."""

    spec: str
    entry_point: str
    signature: str
    reference: str
    cases: tuple[CallCase, ...]
    parameters: Parameters
    suspects: tuple[Candidate, ...] = ()
    """Transforms that pass every test (`code_mutants`): vacuous unless the reference's own."""
    neighbours: tuple[CallCase, ...] = ()
    """Calls next to the tests, to tell the suspects from the reference (empty without one)."""

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
    "ambiguous_tests", "vacuous_tests", "answer_in_problem") and `why`, a sentence for the
    proposer."""

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
    except (RecursionError, MemoryError):  # past every bound above: still a verdict
        return Reading(outcome="outside_family", why="the proposal is nested too deeply to read")


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
    arguments = ast.unparse(function.args)  # safe: the tree's depth is bounded
    parameters = Parameters.of(function.args)
    _check_unambiguous(entry_point, parameters, cases)
    suspects = _check_constraining(parameters, cases)
    _check_not_given_away(spec + "\n" + arguments, reference, function, entry_point)
    return CodeProposal(
        spec,
        entry_point,
        f"def {entry_point}({arguments}):",
        reference,
        cases,
        parameters,
        suspects,
        neighbours(parameters, cases) if suspects else (),
    )


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
    if _bracket_nesting(text) > MAX_NESTING:
        raise _IllPosed("outside_family", f"{where} nests brackets too deeply")
    try:
        tree = ast.parse(text, mode=mode)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        raise _IllPosed("outside_family", f"{where} does not parse as Python") from None
    if _depth(tree) > MAX_AST_DEPTH:
        raise _IllPosed("outside_family", f"{where} nests too deeply (a chain too long?)")
    return tree


def _bracket_nesting(text: str) -> int:
    """The deepest nesting of brackets in `text` (strings not excluded: an upper bound)."""
    depth = deepest = 0
    for char in text:
        if char in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in ")]}":
            depth = max(depth - 1, 0)
    return deepest


def _depth(tree: ast.AST) -> int:
    """The depth of a syntax tree, walked without recursion."""
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > MAX_AST_DEPTH:
            break
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


# --- the anti-hacking rules ---------------------------------------------------------------------


def _check_unambiguous(
    entry_point: str, parameters: Parameters, cases: tuple[CallCase, ...]
) -> None:
    """Refuse two tests making the same call (bound to the parameters as Python binds it:
    `f(1)` is `f(x=1)`) but expecting different results."""
    expected: dict[Any, Any] = {}
    for case in cases:
        bound = parameters.bind(case)
        call = canonical(sorted(bound.items()) if bound is not None else (case.args, case.kwargs))
        result = canonical(case.expected)
        if expected.setdefault(call, result) != result:
            raise _IllPosed(
                "ambiguous_tests",
                f"two tests call {entry_point} with the same arguments but expect different "
                "results",
            )


def _check_constraining(
    parameters: Parameters, cases: tuple[CallCase, ...]
) -> tuple[Candidate, ...]:
    """Refuse tests a stub passes; return the transforms that pass them (the suspects)."""
    passing = passing_candidates(parameters, cases)
    stubs = [candidate for candidate in passing if candidate.stub]
    if stubs:
        raise _IllPosed(
            "vacuous_tests",
            f"every test is passed by a function returning {stubs[0].name}, whatever the spec",
        )
    return tuple(passing)


def _check_not_given_away(
    shown: str, reference: str, function: ast.FunctionDef, entry_point: str
) -> None:
    """Refuse a spec that defines the function or writes out a run of its reference's code."""
    if code_leaks.defines_entry_point(shown, entry_point):
        raise _IllPosed("answer_in_problem", f"the spec defines `{entry_point}`")
    if code_leaks.leaked_code(shown, reference, _spans_left_aside(reference, function)):
        raise _IllPosed("answer_in_problem", "the spec writes out the reference's code")


def _spans_left_aside(reference: str, function: ast.FunctionDef) -> list[tuple[int, int, int, int]]:
    """Imports, docstrings (a spec may say what they say) and the entry point's header (the
    solvers see the signature anyway), as source spans."""
    tree = ast.parse(reference)  # parsed before, with its depth bounded
    spans = [
        _span(node) for node in ast.walk(tree) if isinstance(node, ast.stmt) and _plain_text(node)
    ]
    header_end = function.body[0]
    start = function.decorator_list[0] if function.decorator_list else function
    spans.append((start.lineno, start.col_offset, header_end.lineno, header_end.col_offset))
    return spans


def _span(node: ast.stmt) -> tuple[int, int, int, int]:
    end_line = node.end_lineno if node.end_lineno is not None else node.lineno
    end_column = node.end_col_offset if node.end_col_offset is not None else 1 << 30
    return (node.lineno, node.col_offset, end_line, end_column)


def _plain_text(node: ast.AST) -> bool:
    """An import or a bare string (a docstring): what a spec may say in its own words."""
    is_string = (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )
    return is_string or isinstance(node, (ast.Import, ast.ImportFrom))
