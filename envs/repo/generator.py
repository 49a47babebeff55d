"""Procedural repositories with verified bugs: the tasks of `rlvr/Repo-v0`.

A task is drawn in five steps, every choice from the generator's `rng`:

1. a layout: one domain of `rlvr.envs.repo.templates` (two at level 3), some of its modules, a
   package name; the reference repository is rendered from it (package, README, pyproject, a
   unittest file per module);
2. inputs: for every public function, hidden calls (its edge cases and random inputs) and
   visible ones (the repository's own tests);
3. a bug: an AST mutation (`rlvr.envs.repo.mutations`) of a function of the package (two of
   them, in different modules, at level 3);
4. verification: the reference and the mutant are run on every hidden call, here, in a private
   namespace (the templates end quickly on every input by construction, see `templates`). The
   reference's results are the expected values; a hidden test fails to pass if one of its calls
   gives something else under the mutant. A mutation is kept only if it breaks at least two
   calls, one of them neither shown in the issue nor in the visible tests (so hard-coding the
   issue's example cannot pass), leaves at least one hidden test passing, and (level 3) each
   of the two mutations breaks calls alone. The reference fix, the mutation reversed, restores
   every call by construction;
5. the issue: one failing call per bug, described as a user would (what they ran, what came
   out, what they expected), never the fix.

Levels: 1, a bug in a public function that a visible test catches (one domain, two modules);
2, a bug anywhere in the package, helpers included, that no visible test catches (one domain,
every module); 3, two bugs in two modules of a larger repository (two domains, ~20 files).

Splits are disjoint by repository and by mutation: a task is in a split only if both the hash
of its reference repository and the key of each of its mutations (the function, the position in
it, the edit) fall in that split, so no repository and no bug of the test split is ever trained
on.

Why one module of ~700 lines (the project keeps modules under ~600): the five steps share one
draw's state and are read top to bottom; split, each part would need the others' internals.
"""

from __future__ import annotations

import ast
import copy
import hashlib
import importlib.abc
import importlib.util
import itertools
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from rlvr.envs.errors import DatasetError
from rlvr.envs.repo.mutations import Mutation, mutations
from rlvr.envs.repo.patches import unified_diff
from rlvr.envs.repo.templates import DOMAINS, MIXED_PACKAGES, Domain, Draw
from rlvr.envs.tasks import Problem, split_of
from rlvr.verifiers.code.harness import (
    NotPlainData,
    builtin_exception_class,
    decode_value,
    encode_value,
)
from rlvr.verifiers.code.spec import CallCase
from rlvr.verifiers.code.verifier import judge_case
from rlvr.verifiers.repo.spec import HiddenTest, RepoCall, RepoTests

LEVELS = (1, 2, 3)
RANDOM_HIDDEN_CALLS = 4
VISIBLE_CALLS = 2
# Layouts drawn for one task at most; drawing one is cheap (only those in the split with a
# candidate bug are run), and a domain may have few bugs in a 10% test split.
LAYOUT_ATTEMPTS = 1000
CACHE_SIZE = 256  # generated tasks remembered per process (a level-3 task is ~40 KB)
_cache: dict[tuple, Problem] = {}
_cache_lock = threading.Lock()


# --- running the package's code here --------------------------------------------------------------

_aliases = itertools.count()
_import_lock = threading.Lock()


class _MemoryPackage(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports a package's modules from source held in memory, under a private name."""

    def __init__(self, alias: str, sources: Mapping[str, str]) -> None:
        self.alias = alias
        self.sources = sources  # module name -> source; "__init__" for the package

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname == self.alias:
            return importlib.util.spec_from_loader(fullname, self, is_package=True)
        prefix = self.alias + "."
        if fullname.startswith(prefix) and fullname[len(prefix) :] in self.sources:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec: Any) -> None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        name = module.__name__
        key = "__init__" if name == self.alias else name[len(self.alias) + 1 :]
        exec(compile(self.sources.get(key, ""), f"<{key}.py>", "exec"), module.__dict__)


def run_calls(sources: Mapping[str, str], calls: Sequence[tuple[str, str, tuple]]) -> list[dict]:
    """Replies, in the code harness's form, of `(module, function, args)` calls of a package
    whose modules' sources are `sources` (imported under a private name, then forgotten)."""
    alias = f"_rlvr_generated_{next(_aliases)}"
    finder = _MemoryPackage(alias, sources)
    with _import_lock:
        sys.meta_path.insert(0, finder)
        try:
            modules = {name: importlib.import_module(f"{alias}.{name}") for name in sources}
        finally:
            sys.meta_path.remove(finder)
            for name in [name for name in sys.modules if name.split(".")[0] == alias]:
                del sys.modules[name]
    return [_reply(getattr(modules[module], function), args) for module, function, args in calls]


def _reply(function: Any, args: tuple) -> dict:
    try:
        return {"value": encode_value(function(*copy.deepcopy(args)))}
    except NotPlainData as exc:
        return {"error": "NotPlainData", "names": [], "message": str(exc)}
    except Exception as exc:
        names = [cls.__name__ for cls in type(exc).__mro__ if cls.__module__ == "builtins"]
        return {"error": type(exc).__name__, "names": names, "message": str(exc)[:500]}


def expected_case(args: tuple, reply: dict) -> CallCase | None:
    """What a call must give, from the reference's reply (None if it cannot be a test)."""
    if "value" in reply:
        value = decode_value(reply["value"])
        compare = "approx" if _has_float(value) else "exact"
        return CallCase(args, {}, value, None, compare)
    names = reply.get("names")
    cls = builtin_exception_class(names)
    return CallCase(args, {}, None, cls.__name__, "exact") if cls is not None else None


def _has_float(value: Any) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, (list, tuple)):
        return any(_has_float(item) for item in value)
    if isinstance(value, dict):
        return any(_has_float(item) for item in value.values())
    return False


# --- layouts --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Unit:
    """A module of the package: its domain, name and reference source."""

    domain: Domain
    name: str
    source: str

    @property
    def functions(self) -> list[str]:
        tree = ast.parse(self.source)
        return [node.name for node in tree.body if isinstance(node, ast.FunctionDef)]

    @property
    def public(self) -> list[str]:
        return [name for name in self.functions if name in self.domain.samplers]

    @property
    def doc(self) -> str:
        return ast.get_docstring(ast.parse(self.source)) or ""


@dataclass(frozen=True)
class Layout:
    package: str
    domains: tuple[Domain, ...]
    helpers: tuple[Unit, ...]
    modules: tuple[Unit, ...]

    @property
    def units(self) -> tuple[Unit, ...]:
        return self.helpers + self.modules

    def sources(self, mutated: Sequence[Mutation] = ()) -> dict[str, str]:
        """Module name -> source, with `mutated` applied."""
        sources = {"__init__": package_init(self)}
        for unit in self.units:
            source = unit.source
            for mutation in mutated:
                if mutation.module == unit.name:
                    source = mutation.apply(source)
            sources[unit.name] = source
        return sources

    @property
    def key(self) -> str:
        """The repository's identity for the splits: its package name and reference code."""
        digest = hashlib.blake2b(digest_size=16)
        for name, source in sorted(self.sources().items()):
            digest.update(f"{self.package}/{name}\0{source}\0".encode())
        return "repo:" + digest.hexdigest()


def draw_layout(
    rng: np.random.Generator, level: int, choices: Sequence[Domain] = DOMAINS
) -> Layout:
    draw = Draw(rng)
    count = min(2 if level == 3 else 1, len(choices))
    order = rng.permutation(len(choices))[:count]
    domains = tuple(choices[int(index)] for index in order)
    package = draw.choice(MIXED_PACKAGES if len(domains) > 1 else domains[0].packages)
    helpers, modules = [], []
    for domain in domains:
        helpers.append(Unit(domain, *domain.helper))
        names = list(domain.modules)
        if level == 1:
            names = [names[int(index)] for index in sorted(rng.permutation(len(names))[:2])]
        for name in names:
            source = domain.modules[name]
            modules.append(Unit(domain, name, keep_functions(source, _kept(source, draw))))
    return Layout(package, domains, tuple(helpers), tuple(modules))


def _kept(source: str, draw: Draw) -> set[str]:
    """The functions a module keeps: all of them, or all but one (with what they call)."""
    functions = [node for node in ast.parse(source).body if isinstance(node, ast.FunctionDef)]
    names = [node.name for node in functions]
    if draw.integer(0, 2) == 0:  # a third of the modules have every function
        return set(names)
    dropped = draw.choice(names)
    kept = {name for name in names if name != dropped}
    calls = {
        node.name: {
            call.func.id
            for call in ast.walk(node)
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
        }
        for node in functions
    }
    for name in list(kept):  # keep what a kept function calls (one level is enough here)
        kept |= calls[name] & set(names)
    return kept


def keep_functions(source: str, kept: set[str]) -> str:
    """`source` without its top-level functions not in `kept` (and their blank lines)."""
    lines = source.split("\n")
    drop: set[int] = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name not in kept:
            end = node.end_lineno or node.lineno
            drop |= set(range(node.lineno - 1, end))
            while end < len(lines) and not lines[end].strip():  # the blank lines after it
                drop.add(end)
                end += 1
    kept_lines = [line for index, line in enumerate(lines) if index not in drop]
    return "\n".join(kept_lines).rstrip("\n") + "\n"


def package_init(layout: Layout) -> str:
    summary = " and ".join(domain.summary for domain in layout.domains)
    return f'"""{summary[0].upper()}{summary[1:]}."""\n\n__version__ = "0.1.0"\n'


# --- calls and tests ------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Call:
    """One call of a public function (equal to another with the same function and inputs)."""

    module: str
    function: str
    args: tuple

    def _identity(self) -> tuple[str, str, str]:
        return self.module, self.function, repr(self.args)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Call) and self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

    def show(self) -> str:
        return f"{self.function}({', '.join(repr(arg) for arg in self.args)})"

    @property
    def target(self) -> tuple[str, str, tuple]:
        return self.module, self.function, self.args


def draw_calls(
    layout: Layout, draw: Draw
) -> tuple[dict[tuple[str, str], list[Call]], dict[tuple[str, str], list[Call]]]:
    """Hidden and visible calls of every public function, by (module, function)."""
    hidden: dict[tuple[str, str], list[Call]] = {}
    visible: dict[tuple[str, str], list[Call]] = {}
    for unit in layout.modules:
        for name in unit.public:
            sampler = unit.domain.samplers[name]
            edges = [Call(unit.name, name, tuple(args)) for args in unit.domain.edges.get(name, ())]
            randoms = [Call(unit.name, name, sampler(draw)) for _ in range(RANDOM_HIDDEN_CALLS)]
            hidden[(unit.name, name)] = _distinct(edges + randoms)
            shown = [Call(unit.name, name, sampler(draw)) for _ in range(VISIBLE_CALLS + 2)]
            visible[(unit.name, name)] = _distinct(shown)[:VISIBLE_CALLS]
    return hidden, visible


def _distinct(calls: list[Call]) -> list[Call]:
    seen, kept = set(), []
    for call in calls:
        key = repr(call.args)
        if key not in seen:
            seen.add(key)
            kept.append(call)
    return kept


def hidden_test_name(call_module: str, function: str) -> str:
    return f"hidden/test_{call_module}.py::test_{function}"


# --- a task ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verified:
    """A mutation set that passed the checks, with what it breaks."""

    mutations: tuple[Mutation, ...]
    tests: RepoTests
    failing: dict[Call, tuple[dict, dict]]  # call -> (reference reply, mutant reply)
    issue_calls: tuple[Call, ...]


DOMAIN_KEYS = tuple(domain.key for domain in DOMAINS)


class RepoGenerator:
    """`generate(rng, level, split=..., test_fraction=...)` for `ProceduralSource`: draws the
    parts of a task in the requested split itself (`draws_in_split`), since verifying a
    candidate costs a run of its code. `domains` (keys of `templates.DOMAINS`, default all)
    restricts the repositories to those domains (level 3 combines two of them when it can)."""

    draws_in_split = True

    def __init__(self, domains: Sequence[str] = DOMAIN_KEYS) -> None:
        self.domains = tuple(domain for domain in DOMAINS if domain.key in set(domains))

    def __call__(
        self,
        rng: np.random.Generator,
        level: int,
        split: str = "train",
        test_fraction: float = 0.1,
    ) -> Problem:
        # Item i is drawn from a fresh generator seeded by (seed, i, ...): its starting state
        # names the task, so a task asked for again (every reset of a pinned task) is not
        # verified again.
        key = (self, repr(rng.bit_generator.state), level, split, test_fraction)
        with _cache_lock:
            cached = _cache.get(key)
        if cached is None:
            cached = self.draw(rng, level, split, test_fraction)
            with _cache_lock:
                if len(_cache) >= CACHE_SIZE:
                    _cache.pop(next(iter(_cache)))
                _cache[key] = cached
        return cached

    def draw(
        self, rng: np.random.Generator, level: int, split: str, test_fraction: float
    ) -> Problem:
        for _ in range(LAYOUT_ATTEMPTS):
            layout = draw_layout(rng, level, self.domains)
            if split_of(layout.key, test_fraction) != split:
                continue
            draw = Draw(rng)
            hidden, visible = draw_calls(layout, draw)
            verified = _find_bugs(layout, hidden, visible, level, rng, split, test_fraction)
            if verified is not None:
                return build_problem(layout, verified, hidden, visible, level, draw)
        raise DatasetError(
            f"repo generator: no verified bug for split {split!r} at level {level} in "
            f"{LAYOUT_ATTEMPTS} layouts"
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RepoGenerator) and other.domains == self.domains

    def __hash__(self) -> int:
        return hash((RepoGenerator, tuple(domain.key for domain in self.domains)))


def _candidates(layout: Layout, level: int, split: str, test_fraction: float) -> list[Mutation]:
    units = layout.modules if level == 1 else layout.units
    found = []
    for unit in units:
        targets = set(unit.public) if level == 1 else set(unit.functions)
        found += [
            mutation
            for mutation in mutations(unit.source, unit.name)
            if mutation.function in targets and split_of(mutation.key, test_fraction) == split
        ]
    return found


def _find_bugs(
    layout: Layout,
    hidden: dict[tuple[str, str], list[Call]],
    visible: dict[tuple[str, str], list[Call]],
    level: int,
    rng: np.random.Generator,
    split: str,
    test_fraction: float,
) -> Verified | None:
    candidates = _candidates(layout, level, split, test_fraction)
    if len({mutation.module for mutation in candidates}) < (2 if level == 3 else 1):
        return None
    order = [candidates[int(i)] for i in rng.permutation(len(candidates))]
    calls = [call for group in hidden.values() for call in group]
    reference = dict(zip(calls, run_calls(layout.sources(), [c.target for c in calls])))
    if level < 3:
        for mutation in order[:24]:
            verified = _verify(layout, (mutation,), calls, reference, hidden, visible, level)
            if verified is not None:
                return verified
        return None
    singles = []
    for mutation in order[:24]:
        breaks = _failing(layout, (mutation,), calls, reference)
        if breaks:
            singles.append(mutation)
    for first, second in itertools.combinations(singles, 2):
        if first.module != second.module:
            pair = (first, second)
            verified = _verify(layout, pair, calls, reference, hidden, visible, level)
            if verified is not None:
                return verified
    return None


def _failing(
    layout: Layout, mutated: tuple[Mutation, ...], calls: list[Call], reference: dict
) -> dict[Call, tuple[dict, dict]]:
    """The calls whose result under `mutated` differs from the reference's."""
    try:
        replies = run_calls(layout.sources(mutated), [call.target for call in calls])
    except Exception:  # a mutant that does not even import is no fair bug
        return {}
    failing = {}
    for call, reply in zip(calls, replies):
        case = expected_case(call.args, reference[call])
        if case is not None and not judge_case(case, reply, reveal=False)[0]:
            failing[call] = (reference[call], reply)
    return failing


def _verify(
    layout: Layout,
    mutated: tuple[Mutation, ...],
    calls: list[Call],
    reference: dict,
    hidden: dict[tuple[str, str], list[Call]],
    visible: dict[tuple[str, str], list[Call]],
    level: int,
) -> Verified | None:
    if any(expected_case(call.args, reference[call]) is None for call in calls):
        return None
    failing = _failing(layout, mutated, calls, reference)
    if len(failing) < 2:
        return None
    issue_calls = []
    for mutation in mutated:
        own = _failing(layout, (mutation,), calls, reference)
        shared = [call for call in failing if call in own]
        if not shared:
            return None
        issue_calls.append(shared[0])
    # Hard-coding what the agent is shown (the issue's calls, the visible tests) must not pass.
    shown = {call for group in visible.values() for call in group} | set(issue_calls)
    if all(call in shown for call in failing):
        return None
    tests: list[HiddenTest] = []
    fail: list[str] = []
    keep: list[str] = []
    for (module, function), group in hidden.items():
        name = hidden_test_name(module, function)
        cases = [expected_case(call.args, reference[call]) for call in group]
        tests.append(
            HiddenTest(
                name,
                tuple(
                    RepoCall(f"{layout.package}.{module}:{function}", case)
                    for case in cases
                    if case is not None
                ),
            )
        )
        (fail if any(call in failing for call in group) else keep).append(name)
    if not keep:
        return None
    return Verified(
        mutated, RepoTests(tuple(tests), tuple(fail), tuple(keep)), failing, tuple(issue_calls)
    )


def build_problem(
    layout: Layout,
    verified: Verified,
    hidden: dict[tuple[str, str], list[Call]],
    visible: dict[tuple[str, str], list[Call]],
    level: int,
    draw: Draw,
) -> Problem:
    reference_sources = layout.sources()
    buggy_sources = layout.sources(verified.mutations)
    shown = _visible_calls(layout, verified, visible, level)
    replies = dict(zip(shown, run_calls(reference_sources, [call.target for call in shown])))
    reference_files = render_repository(layout, reference_sources, shown, replies)
    buggy_files = render_repository(layout, buggy_sources, shown, replies)
    fix = unified_diff(_encoded(buggy_files), _encoded(reference_files))
    answer = {"files": buggy_files, **verified.tests.to_dict(), "fix": fix}
    issue = write_issue(layout, verified, draw)
    metadata = {
        "family": "repo",
        "domains": [domain.key for domain in layout.domains],
        "package": layout.package,
        "files": len(buggy_files),
        "bugs": [mutation.describe() for mutation in verified.mutations],
    }
    keys = (layout.key, *(mutation.key for mutation in verified.mutations))
    return Problem(issue, answer, metadata, split_keys=keys)


def _visible_calls(
    layout: Layout,
    verified: Verified,
    visible: dict[tuple[str, str], list[Call]],
    level: int,
) -> list[Call]:
    """The calls of the repository's own tests: those that pass under the bug (all of them at
    levels 2 and 3), plus, at level 1, the issue's call, which fails."""
    calls = [call for group in visible.values() for call in group]
    mutant = run_calls(layout.sources(verified.mutations), [call.target for call in calls])
    reference = run_calls(layout.sources(), [call.target for call in calls])
    kept = []
    for call, got, want in zip(calls, mutant, reference):
        case = expected_case(call.args, want)
        if case is not None and judge_case(case, got, reveal=False)[0]:
            kept.append(call)
    if level == 1:
        kept += list(verified.issue_calls)
    return kept


def _encoded(files: Mapping[str, str]) -> dict[str, bytes]:
    return {path: text.encode("utf-8") for path, text in files.items()}


# --- rendering ------------------------------------------------------------------------------------


def render_repository(
    layout: Layout,
    sources: Mapping[str, str],
    visible: Sequence[Call],
    replies: Mapping[Call, dict],
) -> dict[str, str]:
    package = layout.package
    files = {
        "README.md": render_readme(layout),
        "pyproject.toml": (
            f'[project]\nname = "{package}"\nversion = "0.1.0"\nrequires-python = ">=3.8"\n'
        ),
        f"{package}/__init__.py": sources["__init__"],
        "tests/__init__.py": "",
    }
    for unit in layout.units:
        files[f"{package}/{unit.name}.py"] = sources[unit.name]
    for unit in layout.modules:
        calls = [call for call in visible if call.module == unit.name]
        files[f"tests/test_{unit.name}.py"] = render_tests(package, unit, calls, replies)
    if len(layout.domains) > 1:
        files[".gitignore"] = "__pycache__/\n*.pyc\n"
        files["CHANGELOG.md"] = "# Changelog\n\n## 0.1.0\n\n- First release.\n"
    return files


def render_readme(layout: Layout) -> str:
    package = layout.package
    lines = [f"# {package}", "", package_init(layout).split('"""')[1], "", "## Modules", ""]
    lines += [f"- `{package}.{unit.name}`: {unit.doc}" for unit in layout.modules]
    lines += [
        "",
        "## Tests",
        "",
        "```sh",
        "python3 -m unittest discover -s tests -t .",
        "```",
        "",
    ]
    return "\n".join(lines)


def render_tests(package: str, unit: Unit, calls: Sequence[Call], replies: Mapping) -> str:
    names = sorted({call.function for call in calls})
    title = "".join(part.capitalize() for part in unit.name.split("_"))
    lines = ["import unittest", ""]
    if names:
        lines += [f"from {package}.{unit.name} import {', '.join(names)}", ""]
    lines += ["", f"class Test{title}(unittest.TestCase):"]
    if not names:
        lines += ["    pass"]
    for name in names:
        lines += [f"    def test_{name}(self):"]
        for call in calls:
            if call.function == name:
                lines += ["        " + _assertion(call, replies[call])]
        lines += [""]
    lines += ["", 'if __name__ == "__main__":', "    unittest.main()", ""]
    return "\n".join(lines).replace("\n\n\n\nif", "\n\n\nif")


def _assertion(call: Call, reply: dict) -> str:
    shown = call.show()
    case = expected_case(call.args, reply)
    assert case is not None  # visible calls come from the reference's checked replies
    if case.raises is not None:
        return f"self.assertRaises({case.raises}, {call.function}, {_arguments(call)})"
    method = "assertAlmostEqual" if isinstance(case.expected, float) else "assertEqual"
    return f"self.{method}({shown}, {case.expected!r})"


def _arguments(call: Call) -> str:
    return ", ".join(repr(arg) for arg in call.args)


ISSUE_TITLES = (
    "Wrong result from `{function}`",
    "`{function}` gives a wrong answer for some inputs",
    "Bug in `{package}.{module}.{function}`",
    "Unexpected output from `{function}`",
)
ISSUE_OPENINGS = (
    "I'm using `{package}` and ran into this:",
    "Found a problem in `{package}.{module}`:",
    "This looks like a bug:",
    "Steps to reproduce:",
)


def write_issue(layout: Layout, verified: Verified, draw: Draw) -> str:
    """The issue a user would file: each bug's failing call, what it gave, what was expected."""
    parts = []
    for call in verified.issue_calls:
        reference, got = verified.failing[call]
        values = {"function": call.function, "module": call.module, "package": layout.package}
        parts.append(
            "\n".join(
                [
                    draw.choice(ISSUE_OPENINGS).format(**values),
                    "",
                    "```python",
                    f">>> from {layout.package}.{call.module} import {call.function}",
                    f">>> {call.show()}",
                    _shown_reply(got),
                    "```",
                    "",
                    _expectation(reference),
                ]
            )
        )
    first = verified.issue_calls[0]
    title = draw.choice(ISSUE_TITLES).format(
        function=first.function, module=first.module, package=layout.package
    )
    if len(parts) > 1:
        title = f"Two problems: {title[0].lower()}{title[1:]}, and more"
    body = "\n\n".join(
        f"{index}. {part}" if len(parts) > 1 else part for index, part in enumerate(parts, 1)
    )
    return f"{title}\n\n{body}"


def _shown_reply(reply: dict) -> str:
    if "value" in reply:
        return repr(decode_value(reply["value"]))
    return (
        f"Traceback (most recent call last):\n  ...\n{reply['error']}: {reply.get('message', '')}"
    )


def _expectation(reply: dict) -> str:
    if "value" in reply:
        return f"I expected `{decode_value(reply['value'])!r}`."
    return f"I expected it to raise `{reply['error']}` for this input."
