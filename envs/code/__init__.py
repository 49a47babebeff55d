"""`rlvr/Code-v0`: write a Python function that passes hidden unit tests, run in a sandbox.

Loaders for other task sets live here too: `load_humaneval` and `load_mbpp` read the JSON-lines
files of those benchmarks, `load_code_dataset` reads any of the three formats through
HuggingFace `datasets` with a field mapping.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from rlvr.core.jsonfiles import JSONReadError, parse_json
from rlvr.envs import options, services
from rlvr.envs.core import TextEnv
from rlvr.envs.errors import DatasetError, EnvConfigError
from rlvr.envs.judge import TaskJudge
from rlvr.envs.options import (
    declare,
    flag,
    level,
    mapping,
    of_type,
    one_of,
    optional,
    real,
    tasks_argument,
    text,
)
from rlvr.envs.tasks import (
    ListSource,
    TaskSource,
    load_hf_dataset,
    load_jsonl,
    lone_surrogate,
)
from rlvr.sandboxes import Executor
from rlvr.verifiers.code.extract import parse_python
from rlvr.verifiers.code.spec import CodeTests, compile_error
from rlvr.verifiers.code.verifier import UnitTestConfig, UnitTestVerifier
from rlvr.verifiers.types import Task, TaskFormatError

DEFAULT_SYSTEM_PROMPT = (
    "You are an expert Python programmer. Answer with the complete solution in a single "
    "```python code block."
)
STYLES = ("humaneval", "mbpp", "cases")
LEVELS = (1, 2, 3)


# The arguments of the sandbox that runs the code, shared with the envs that run code replies.
SANDBOX_ARGUMENTS = declare(
    backend=one_of("local", "docker"),
    backend_options=optional(mapping),
    executor=optional(of_type(Executor, what="an rlvr.sandboxes.Executor")),
    timeout=real(0.0, low_open=True),
    test_timeout=real(0.0, low_open=True),
)


def unit_test_verifier(
    *,
    scoring: str = "all",
    timeout: float = 20.0,
    test_timeout: float = 5.0,
    backend: str = "local",
    backend_options: dict[str, Any] | None = None,
    executor: Executor | None = None,
    reveal_expected: bool = False,
) -> UnitTestVerifier:
    """The verifier of code replies, its settings checked and, unless you give your own
    `executor`, the sandbox it will make checked to work here (`EnvConfigError` otherwise)."""
    try:
        config = UnitTestConfig(
            scoring=scoring,
            timeout=timeout,
            test_timeout=test_timeout,
            backend=backend,
            reveal_expected=reveal_expected,
        )
    except ValueError as exc:
        raise EnvConfigError(str(exc)) from None
    if executor is None:  # the sandbox it will make: a setting that cannot work stops here
        services.sandbox(backend, backend_options)
    elif backend_options:
        raise EnvConfigError(
            "backend_options configure the sandbox the env makes, but executor= gives "
            "your own: drop backend_options"
        )
    return UnitTestVerifier(config, executor=executor, backend_options=backend_options)


def function_prompt(name: str, description: str, signature: str) -> str:
    """The prompt of a task to write the Python function `name`."""
    return (
        f"Write a Python function `{name}`.\n\n{description}\n\n"
        f"Use this signature:\n```python\n{signature}\n```\n\n"
        "Reply with the complete function (and any imports or helpers it needs) in a "
        "```python code block. Only the Python standard library is available."
    )


class CodeEnv(TextEnv):
    """Write a Python function; it is run against hidden unit tests in a sandbox.

    ## Description
    Each episode poses one programming task: a description and the signature of the function to
    write. The agent replies with code (a ```python block, or bare code); the code runs in an
    isolated sandbox (`rlvr.sandboxes`: bubblewrap + cgroups by default, or Docker) against
    hidden tests. The verdict comes from values compared outside the submission's process: its
    return values travel back as plain data and are compared on the host with expected values
    that never enter the sandbox, so exiting early, faking equality, patching builtins or
    printing "PASSED" all score 0. Built-in tasks: 69 functions written for this project
    (26 at level 1, 24 at level 2, 19 at level 3); HumanEval/MBPP files and HuggingFace datasets
    load with `load_humaneval`, `load_mbpp`, `load_code_dataset`.

    ## Action Space
    `TextSpace`: the reply as a `str`.

    ## Observation Space
    `TextSpace`: the task prompt after `reset`; after the step, the verdict with the first
    failing test (its input and what the code returned; what was expected only with
    `reveal_expected=True`) and the tail of the code's own output.

    ## Rewards
    1.0 if every test passes, else 0.0 (`scoring="all"`, the default); with
    `scoring="fraction"`, the fraction of tests passed. A timeout, crash or exit before the tests
    is a failure. If the sandbox itself fails, the reply is not judged: `info["infra_error"]` is
    True, the verdict status is "error" and the reward 0.0 must be ignored by trainers.

    ## Starting State
    A task drawn uniformly with `self.np_random`, or pinned with `options={"task_index": i}` or
    `options={"task": {...}}` (a dict with `prompt` and an `answer` in the `CodeTests` form).

    ## Episode End
    Terminates after the first reply.

    ## Arguments
    `tasks` (None for the built-in set, a task source, or a list of tasks), `difficulty` (1, 2, 3
    or a list; built-in tasks only), `split` (None or "test": the built-in tasks are all a
    held-out evaluation set; bring training tasks with the loaders), `scoring` ("all" or
    "fraction"), `backend` ("local" or "docker"), `backend_options` (dict for the backend's
    config), `executor` (share an `rlvr.sandboxes.Executor` you manage), `timeout` (seconds per
    submission, default 20),
    `test_timeout` (seconds per test call, default 5), `reveal_expected` (show the expected
    value of the first failing test in the feedback; off by default), `system_prompt`.

    ## Version History
    - v0: initial version (69 built-in tasks, unit-test verifier with host-side comparison).
    """

    argument_checks = declare(
        **SANDBOX_ARGUMENTS,
        tasks=optional(tasks_argument),
        difficulty=optional(level(LEVELS)),
        split=optional(text),  # which split: checked in __init__, which says how to train
        scoring=one_of("all", "fraction"),
        reveal_expected=flag,
        system_prompt=optional(text),
    )

    def __init__(
        self,
        tasks: TaskSource | Iterable[Task | Mapping[str, Any]] | None = None,
        *,
        difficulty: int | list[int] | None = None,
        split: str | None = None,
        scoring: str = "all",
        backend: str = "local",
        backend_options: dict[str, Any] | None = None,
        executor: Executor | None = None,
        timeout: float = 20.0,
        test_timeout: float = 5.0,
        reveal_expected: bool = False,
        system_prompt: str | None = DEFAULT_SYSTEM_PROMPT,
        render_mode: str | None = None,
    ) -> None:
        from rlvr.envs.code.tasks import builtin_tasks

        builtin = tasks is None
        if tasks is None:
            if split not in (None, "test"):
                raise EnvConfigError(
                    f"split={split!r}: the built-in code tasks are all a held-out evaluation set "
                    "(split='test'); to train, pass tasks=load_mbpp(...), load_humaneval(...), "
                    "load_code_dataset(...) or your own list"
                )
            tasks = ListSource(builtin_tasks(difficulty), name="rlvr-code")
        else:
            options.refuse_replaced(
                {"difficulty": difficulty, "split": split}, what="built-in tasks"
            )
        verifier = unit_test_verifier(
            scoring=scoring,
            timeout=timeout,
            test_timeout=test_timeout,
            backend=backend,
            backend_options=backend_options,
            executor=executor,
            reveal_expected=reveal_expected,
        )
        # The built-in tasks pass CodeJudge.check (tests/envs/test_code_task_files.py): checking
        # them again, compiling every reference and decoding every case, was a sixth of a make.
        judge = CodeJudge(tasks, verifier, system_prompt=system_prompt, checked=builtin)
        super().__init__(judge, render_mode=render_mode)
        self.tasks = judge.tasks


class CodeJudge(TaskJudge):
    """Code tasks (answers in the `CodeTests` form) judged by a `UnitTestVerifier`, which the
    judge owns and closes; the oracle replies with the task's reference solution."""

    def __init__(
        self,
        tasks: TaskSource | Iterable[Task | Mapping[str, Any]],
        verifier: UnitTestVerifier,
        *,
        system_prompt: str | None = DEFAULT_SYSTEM_PROMPT,
        checked: bool = False,
    ) -> None:
        super().__init__(tasks, verifier, system_prompt=system_prompt, checked=checked)
        self.unit_tests = verifier

    def check(self, task: Task) -> None:
        CodeTests.from_answer(task.answer, task.id).check_syntax(task.id)

    def reference_reply(self, task: Task) -> str:
        reference = CodeTests.from_answer(task.answer, task.id).reference
        if not reference:
            raise RuntimeError(f"task {task.id!r} has no reference solution to act as the oracle")
        return f"```python\n{reference.rstrip()}\n```"

    def close(self) -> None:
        self.unit_tests.close()


# --- loaders ------------------------------------------------------------------------------------

INSTRUCTIONS = (
    "Reply with the complete function (and any imports it needs) in a ```python code block."
)


def humaneval_task(task: Task) -> Task:
    """A task read with HumanEval's fields (prompt, test, entry_point, canonical_solution)."""
    meta = dict(task.metadata)
    entry_point = meta.pop("entry_point", None)
    solution = meta.pop("canonical_solution", None)
    stub = task.prompt
    entry_point = _require(entry_point, task, "entry_point")
    # Like HumanEval's own harness, the solution and the test code see what the prompt defines:
    # its imports and helpers (`poly` of HumanEval/32, `encode_cyclic` of HumanEval/38).
    context = _prompt_context(stub, entry_point)
    tests = CodeTests(
        entry_point=entry_point,
        check=_require(task.answer, task, "test"),
        preamble=context,
        setup=context,
        reference=stub + solution if isinstance(solution, str) else None,
    )
    _check_syntax(tests, task)
    prompt = f"Complete this Python function:\n```python\n{stub.rstrip()}\n```\n\n{INSTRUCTIONS}"
    return Task(task.id, prompt, tests.to_answer(), {**meta, "family": "code"})


def mbpp_task(task: Task) -> Task:
    """A task read with MBPP's fields (text or prompt, code, test_list, test_setup_code)."""
    meta = dict(task.metadata)
    code = _require(meta.pop("code", None), task, "code")
    setup = meta.pop("test_setup_code", "") or ""
    imports = meta.pop("test_imports", None)  # sanitized MBPP: e.g. ["import math"]
    if isinstance(imports, list) and all(isinstance(line, str) for line in imports):
        setup = "\n".join([*imports, setup]).strip()
    asserts = task.answer
    if isinstance(asserts, str):
        asserts = [asserts]
    if not isinstance(asserts, list) or not asserts or not all(isinstance(a, str) for a in asserts):
        raise DatasetError(f"{task.id}: test_list must be a non-empty list of assert statements")
    entry_point, signature = _tested_function(code, asserts, task.id)
    tests = CodeTests(entry_point=entry_point, asserts=tuple(asserts), setup=setup, reference=code)
    _check_syntax(tests, task)
    prompt = (
        f"{task.prompt.strip()}\n\nUse this signature:\n```python\n{signature}\n```\n\n"
        f"{INSTRUCTIONS}"
    )
    return Task(task.id, prompt, tests.to_answer(), {**meta, "family": "code"})


def cases_task(task: Task) -> Task:
    """A task whose answer is already a `CodeTests` dict (or that dict as a JSON string)."""
    answer = task.answer
    if isinstance(answer, str):
        try:
            answer = parse_json(answer, multiline=True)
        except JSONReadError as exc:
            raise DatasetError(f"{task.id}: the answer is not JSON: {exc}") from None
        surrogate = lone_surrogate(answer)  # the row's check saw only the escapes' text
        if surrogate is not None:
            raise DatasetError(f"{task.id}: the answer holds a lone surrogate {surrogate}: no text")
    try:
        tests = CodeTests.from_answer(answer, task.id)
    except TaskFormatError as exc:
        raise DatasetError(str(exc)) from None
    _check_syntax(tests, task)
    return Task(task.id, task.prompt, answer, {**task.metadata, "family": "code"})


_CONVERTERS: dict[str, Callable[[Task], Task]] = {
    "humaneval": humaneval_task,
    "mbpp": mbpp_task,
    "cases": cases_task,
}
_FIELDS = {
    "humaneval": {"prompt": "prompt", "answer": "test", "id": "task_id"},
    "mbpp": {"prompt": "text", "answer": "test_list", "id": "task_id"},
    "cases": {"prompt": "prompt", "answer": "answer", "id": "id"},
}


def _convert(source: ListSource, style: str) -> ListSource:
    convert = _CONVERTERS[style]
    return ListSource([convert(task) for task in source.tasks], name=source.name)


def load_humaneval(path: str | os.PathLike[str], *, limit: int | None = None) -> ListSource:
    """Tasks from a HumanEval-format JSONL file (`HumanEval.jsonl`, HumanEval+ and the like)."""
    return load_jsonl(path, fields=_FIELDS["humaneval"], limit=limit, convert=humaneval_task)


def load_mbpp(
    path: str | os.PathLike[str],
    *,
    limit: int | None = None,
    fields: Mapping[str, str] | None = None,
) -> ListSource:
    """Tasks from an MBPP-format JSONL file. Sanitized MBPP calls the description "prompt":
    pass `fields={"prompt": "prompt"}`."""
    mapping = {**_FIELDS["mbpp"], **(fields or {})}
    return load_jsonl(path, fields=mapping, limit=limit, convert=mbpp_task)


def load_code_dataset(
    name_or_path: str | os.PathLike[str],
    *,
    style: str,
    split: str = "test",
    subset: str | None = None,
    revision: str | None = None,
    fields: Mapping[str, str] | None = None,
    limit: int | None = None,
) -> ListSource:
    """Code tasks through HuggingFace `datasets` (hub name, saved folder or local data file).

    `style` is "humaneval", "mbpp" or "cases" (our own format: a prompt and a `CodeTests`
    answer); `fields` maps our names (prompt, answer, id) to the dataset's columns when they
    differ from the style's usual ones, e.g. `{"prompt": "prompt"}` for sanitized MBPP.
    """
    if style not in STYLES:
        raise DatasetError(f"style must be one of {STYLES}, got {style!r}")
    mapping = {**_FIELDS[style], **(fields or {})}
    source = load_hf_dataset(
        name_or_path, split=split, subset=subset, revision=revision, fields=mapping, limit=limit
    )
    return _convert(source, style)


def _check_syntax(tests: CodeTests, task: Task) -> None:
    """Refuse a task whose tests or reference solution do not compile, at load (a DatasetError
    naming the line), rather than on every reply or in the oracle and `rlvr audit`."""
    try:
        tests.check_syntax(task.id)
    except TaskFormatError as exc:
        raise DatasetError(str(exc)) from None


def _require(value: Any, task: Task, name: str) -> Any:
    if not isinstance(value, str) or not value.strip():
        raise DatasetError(f"{task.id}: missing or empty field {name!r}")
    return value


def _prompt_context(code: str, entry_point: str) -> str:
    """The top-level statements of a HumanEval prompt but the entry point's stub: its imports and
    the helpers it defines. Nothing if the prompt does not parse."""
    tree = parse_python(code)
    if tree is None:
        return ""
    lines = code.splitlines()
    kept = []
    for node in tree.body:
        is_stub = (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == entry_point
        )
        if is_stub or (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
            continue  # the stub, and bare strings (a module docstring)
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
        kept.append("\n".join(lines[first - 1 : node.end_lineno]))
    return "\n".join(kept)


def _tested_function(code: str, asserts: list[str], task_id: str) -> tuple[str, str]:
    """The function of `code` that the asserts call, and its `def` line."""
    tree = parse_python(code)
    if tree is None:
        why = compile_error(code, "reference") or "not Python this interpreter parses"
        raise DatasetError(f"{task_id}: the reference code does not parse: {why}")
    called = set(re.findall(r"\b([A-Za-z_]\w*)\s*\(", " ".join(asserts)))
    lines = code.splitlines()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in called:
            header = lines[node.lineno - 1 : max(node.body[0].lineno - 1, node.lineno)]
            return node.name, "\n".join(header).strip()
    raise DatasetError(f"{task_id}: no function of the reference code is called by the tests")


__all__ = [
    "CodeEnv",
    "CodeJudge",
    "cases_task",
    "function_prompt",
    "humaneval_task",
    "load_code_dataset",
    "load_humaneval",
    "load_mbpp",
    "mbpp_task",
    "unit_test_verifier",
]
