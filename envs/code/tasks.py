"""The built-in Python tasks of `rlvr/Code-v0`, written for this project, and their reader.

Each task is a function to write: a signature, a description that fixes every edge case the
tests check, a reference solution (the oracle) and hidden test cases with hand-written expected
values. Levels: 1 (one idea, a few lines), 2 (a small algorithm or careful parsing), 3 (dynamic
programming, graphs, search). Expected values are compared with exact types: a function that
must return an int fails if it returns 5.0 or True.

The tasks are data, in TOML files shipped with the package (`envs/code/data/level1.toml` to
`level3.toml`), one `[[tasks]]` table each; the format is in docs/code.md#built-in-tasks.
`read_problems` reads such a file and checks every record (`DatasetError` naming the file, the
task and the field), so `load_code_tasks(path)` serves files of your own as well. The built-in
files are read once per process, on first use (`builtin_tasks`, `PROBLEMS`), not on import.
`builtin_tasks` reads them on a trusted path (`_builtin_records`) that skips those checks;
tests/envs/test_code_task_files.py checks that it gives exactly the Tasks the checked read gives.
"""

from __future__ import annotations

import functools
import json
import os
import re
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlvr.core.jsonfiles import JSONReadError, decode_utf8, parse_json
from rlvr.core.tomlfiles import TOMLReadError, parse_toml
from rlvr.envs import options
from rlvr.envs.code import LEVELS, function_prompt
from rlvr.envs.errors import DatasetError
from rlvr.envs.tasks import ListSource, lone_surrogate
from rlvr.verifiers.code.spec import CallCase, CodeTests, compile_error
from rlvr.verifiers.types import Task, TaskFormatError

FAMILY = "code"
SOURCE = "rlvr-builtin"
BUILTIN_FILES = ("level1.toml", "level2.toml", "level3.toml")
"""The built-in task files (in `rlvr.envs.code`'s folder `data`), in the order of the tasks."""
FIELDS = ("name", "difficulty", "signature", "description", "reference", "cases")
"""The keys of a task's table, every one required."""
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


@dataclass(frozen=True)
class CodeProblem:
    """One task as its file gives it: the function to write, its reference and test cases."""

    name: str
    difficulty: int
    signature: str
    description: str
    reference: str
    cases: tuple[CallCase, ...] = field(default_factory=tuple)

    def prompt(self) -> str:
        return function_prompt(self.name, self.description, self.signature)

    def task(self, source: str = SOURCE) -> Task:
        tests = CodeTests(entry_point=self.name, cases=self.cases, reference=self.reference)
        return _code_task(self.name, self.difficulty, self.prompt(), tests.to_answer(), source)


def _code_task(
    name: str, difficulty: int, prompt: str, answer: dict[str, Any], source: str
) -> Task:
    """A Code task as both reads of the task files make it (`CodeProblem.task`, trusted path)."""
    metadata = {"family": FAMILY, "difficulty": difficulty, "source": source}
    return Task(id=f"code/{name}", prompt=prompt, answer=answer, metadata=metadata)


def builtin_tasks(difficulty: int | list[int] | tuple[int, ...] | None = None) -> list[Task]:
    """The built-in tasks, optionally only those of the given difficulty level(s) 1-3."""
    levels = LEVELS if difficulty is None else options.levels(difficulty, LEVELS)
    return [_builtin_task(*record) for record in _builtin_records() if record[1] in levels]


def load_code_tasks(
    path: str | os.PathLike[str], *, difficulty: int | list[int] | tuple[int, ...] | None = None
) -> ListSource:
    """The tasks of a TOML file in the built-in tasks' format (`CodeEnv(load_code_tasks(...))`);
    each task's metadata names the file as its `source`."""
    name = str(Path(path))
    return ListSource(_tasks(read_problems(path), difficulty, name), name=name)


def _tasks(
    problems: tuple[CodeProblem, ...] | list[CodeProblem],
    difficulty: int | list[int] | tuple[int, ...] | None,
    source: str,
) -> list[Task]:
    levels = LEVELS if difficulty is None else options.levels(difficulty, LEVELS)
    return [problem.task(source) for problem in problems if problem.difficulty in levels]


def builtin_paths() -> list[Path]:
    """The built-in task files, in the order of the tasks."""
    # Beside this module, as family.toml is found (importlib.resources costs ~9 ms of imports)
    folder = Path(__file__).parent / "data"
    return [folder / name for name in BUILTIN_FILES]


@functools.cache
def _builtin_problems() -> tuple[CodeProblem, ...]:
    return tuple(read_problems(*builtin_paths()))


# The trusted path. Checking the built-in files on every first make cost ~40% of it: compiling
# each reference, and decoding every case into a `CallCase` only for `to_answer` to encode it
# back. The files ship with the package and their cases are written in `CallCase.to_dict`'s
# canonical form, so a task's answer is the parsed JSON itself. A test compares these Tasks
# with the checked read's, field by field (and runs the judge's check, which CodeEnv skips).
@functools.cache
def _builtin_records() -> tuple[tuple[str, int, str, str, str], ...]:
    """`(name, difficulty, prompt, reference, cases JSON)` of each built-in task, in order."""
    records = []
    for path in builtin_paths():
        for _, table in _records(path):
            description, reference = _laid_out(table["description"], table["reference"])
            prompt = function_prompt(table["name"], description, table["signature"])
            records.append((table["name"], table["difficulty"], prompt, reference, table["cases"]))
    return tuple(records)


def _builtin_task(name: str, difficulty: int, prompt: str, reference: str, cases: str) -> Task:
    # Parsed per call: every Task gets answer dicts of its own, as the checked path gives.
    answer = {"entry_point": name, "cases": json.loads(cases), "reference": reference}
    return _code_task(name, difficulty, prompt, answer, SOURCE)


def __getattr__(name: str) -> Any:
    """`PROBLEMS`, the built-in problems in order, read from the data files on first use."""
    if name == "PROBLEMS":
        return list(_builtin_problems())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --- reading task files --------------------------------------------------------------------------


def read_problems(*paths: str | os.PathLike[str]) -> list[CodeProblem]:
    """The problems of TOML task files, in order; a bad file or record, or a name given twice,
    raises `DatasetError` naming the file, the task and the field."""
    problems: list[CodeProblem] = []
    first_seen: dict[str, str] = {}
    for path in paths:
        for where, record in _records(Path(path)):
            problem = _problem(record, where)
            where = f"{where} {problem.name!r}"
            if problem.name in first_seen:
                raise DatasetError(
                    f"{where}: the name is taken by {first_seen[problem.name]}; names must be "
                    "unique (a task's id is code/<name>)"
                )
            first_seen[problem.name] = where
            problems.append(problem)
    return problems


def _records(path: Path) -> list[tuple[str, Any]]:
    """`(where, table)` of each `[[tasks]]` table of a task file."""
    if not path.is_file():
        raise DatasetError(f"{path}: no such file; pass the path of a .toml task file")
    try:
        data = parse_toml(decode_utf8(path.read_bytes().removeprefix(b"\xef\xbb\xbf")))
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read the file ({exc.strerror or exc})") from None
    except (JSONReadError, TOMLReadError) as exc:  # not UTF-8, not TOML, nested too deeply
        raise DatasetError(f"{path}: {exc}") from None
    unknown = sorted(set(data) - {"tasks"})
    if unknown:
        raise DatasetError(
            f"{path}: unknown top-level keys {unknown}; a task file holds only [[tasks]] tables"
        )
    tables = data.get("tasks")
    if not isinstance(tables, list) or not tables:
        raise DatasetError(f"{path}: no tasks; write one [[tasks]] table per task")
    return [(f"{path}: task {number}", table) for number, table in enumerate(tables, start=1)]


def _problem(record: Any, where: str) -> CodeProblem:
    if not isinstance(record, Mapping):
        raise DatasetError(f"{where}: a task is a [[tasks]] table, got {type(record).__name__}")
    missing = [key for key in FIELDS if key not in record]
    unknown = sorted(set(record) - set(FIELDS))
    if missing or unknown:
        raise DatasetError(
            f"{where}: missing fields {missing} and unknown fields {unknown}; a task has "
            f"exactly the fields {list(FIELDS)}"
        )
    name = _text(record, "name", where)
    if not name.isidentifier():
        raise DatasetError(f"{where}: field 'name' must be a Python function name, got {name!r}")
    where = f"{where} {name!r}"
    difficulty = record["difficulty"]
    if type(difficulty) is not int or difficulty not in LEVELS:
        raise DatasetError(
            f"{where}: field 'difficulty' must be one of {LEVELS}, got {difficulty!r}"
        )
    signature = _text(record, "signature", where)
    if not signature.startswith(f"def {name}("):
        raise DatasetError(
            f"{where}: field 'signature' must be the def line of the function, "
            f"'def {name}(...):', got {signature!r}"
        )
    description, reference = _laid_out(
        _text(record, "description", where), _text(record, "reference", where)
    )
    why = compile_error(reference, "reference")
    if why is not None:
        raise DatasetError(f"{where}: field 'reference' does not parse: {why}")
    cases = _cases(record["cases"], f"{where}, field 'cases'")
    return CodeProblem(name, difficulty, signature, description, reference, cases)


def _laid_out(description: str, reference: str) -> tuple[str, str]:
    """Whitespace collapsed and code dedented, so that both may be laid out freely in a file."""
    return " ".join(description.split()), textwrap.dedent(reference).strip() + "\n"


def _text(record: Mapping[str, Any], key: str, where: str) -> str:
    value = record[key]
    if not isinstance(value, str) or not value.strip():
        raise DatasetError(f"{where}: field {key!r} must be non-empty text, got {value!r:.80}")
    return value


def _cases(value: Any, where: str) -> tuple[CallCase, ...]:
    """The test cases: a JSON array (in a TOML string) of cases in the `CodeTests` form."""
    if not isinstance(value, str):
        raise DatasetError(
            f"{where}: must be a JSON array of cases in a string, e.g. "
            """cases = '''[{"args": [1, 2], "expected": 3}]'''"""
        )
    try:  # a checked file: a key given twice or a NaN (write {"$float": "nan"}) is a mistake
        cases = parse_json(value, multiline=True, unique_keys=True, allow_nan=False)
    except JSONReadError as exc:
        raise DatasetError(
            f"{where}: {exc} (line 1 is the line after its opening quotes)"
        ) from None
    if not isinstance(cases, list) or not cases:
        raise DatasetError(f"{where}: must be a non-empty JSON array of cases")
    # Only a JSON escape \ud800-\udfff makes one (TOML refuses them): the walk over every value
    # runs only when the text holds such an escape.
    surrogate = lone_surrogate(cases) if _SURROGATE_ESCAPE.search(value) else None
    if surrogate is not None:
        raise DatasetError(f"{where}: holds a lone surrogate {surrogate}, which is no text")
    try:
        return tuple(
            CallCase.from_dict(case, f"{where}, case {number}")
            for number, case in enumerate(cases, start=1)
        )
    except TaskFormatError as exc:
        raise DatasetError(str(exc)) from None
