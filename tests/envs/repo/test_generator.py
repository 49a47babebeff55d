"""The procedural repositories of rlvr/Repo-v0: the templates' rules, reproducible items, splits
disjoint by repository and by mutation, and bugs verified the same way in the sandbox as here."""

from __future__ import annotations

import ast
import hashlib
import itertools

import numpy as np
import pytest

from rlvr.envs.repo.generator import LEVELS, RepoGenerator, run_calls
from rlvr.envs.repo.mutations import mutations
from rlvr.envs.repo.patches import apply_patch
from rlvr.envs.repo.task import RepoTask
from rlvr.envs.repo.templates import DOMAINS, Draw
from rlvr.envs.tasks import ProceduralSource, split_of
from rlvr.sandboxes import get_executor
from rlvr.verifiers.repo import RepoTestVerifier
from tests.sandboxes.conftest import require_local_sandbox


def source(split="train", level=1, seed=0):
    return ProceduralSource(RepoGenerator(), name="repo", split=split, difficulty=level, seed=seed)


def every_template():
    for domain in DOMAINS:
        yield domain, *domain.helper
        for name, text in domain.modules.items():
            yield domain, name, text


@pytest.mark.parametrize(("domain", "name", "text"), list(every_template()))
def test_templates_end_quickly_on_every_input_by_construction(domain, name, text):
    # What lets the generator run mutants here: no unbounded loop, no recursion, no power.
    text.encode("ascii")
    tree = ast.parse(text)
    functions = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    for node in ast.walk(tree):
        assert not isinstance(node, (ast.While, ast.Lambda, ast.AsyncFunctionDef))
        assert not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow))
        if isinstance(node, ast.FunctionDef):
            called = {
                call.func.id
                for call in ast.walk(node)
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
            }
            assert node.name not in called, f"{name}.{node.name} is recursive"
        if isinstance(node, ast.ImportFrom):
            assert node.level == 1 or node.module in ("re", "math"), ast.dump(node)
        if isinstance(node, ast.Import):
            assert all(alias.name in ("re", "math") for alias in node.names)
    public = [f for f in functions if not f.startswith("_") and name != domain.helper[0]]
    assert set(public) <= set(domain.samplers), f"{name}: no sampler for some function"
    for replacement in {m.replacement for m in mutations(text, name)}:
        assert "**" not in replacement and "while" not in replacement


def arity(text: str) -> dict[str, tuple[int, int]]:
    """Each top-level function's (required, total) count of positional parameters."""
    functions = [node for node in ast.parse(text).body if isinstance(node, ast.FunctionDef)]
    return {
        node.name: (len(node.args.args) - len(node.args.defaults), len(node.args.args))
        for node in functions
    }


@pytest.mark.parametrize("domain", DOMAINS, ids=lambda domain: domain.key)
def test_edge_cases_and_sampled_inputs_are_argument_tuples_that_fit(domain):
    # An edge case written `([3, 1])` is a list, not a 1-tuple: it was called as median(3, 1),
    # a TypeError in the reference itself, never a test of the function.
    arities = {}
    for text in domain.modules.values():
        arities.update(arity(text))
    draw = Draw(np.random.default_rng(0))
    for name, edges in domain.edges.items():
        low, high = arities[name]
        for args in edges:
            assert isinstance(args, tuple) and low <= len(args) <= high, (name, args)
    for name, sampler in domain.samplers.items():
        low, high = arities[name]
        for _ in range(20):
            args = sampler(draw)
            assert isinstance(args, tuple) and low <= len(args) <= high, (name, args)


def test_an_item_is_the_same_every_time_and_in_every_process():
    first, again = source(level=2)[3], source(level=2)[3]
    assert first == again
    assert source(level=2, seed=1)[3] != first


@pytest.mark.parametrize("level", LEVELS)
def test_splits_are_disjoint_by_repository_and_by_mutation(level):
    count = 12 if level < 3 else 6
    keys = {}
    for split in ("train", "test"):
        tasks = [source(split, level)[index] for index in range(count)]
        keys[split] = [RepoGeneratorKeys.of(task) for task in tasks]
        for task_keys in keys[split]:
            assert all(split_of(key, 0.1) == split for key in task_keys)
    repos = {split: {k[0] for k in keys[split]} for split in keys}
    bugs = {split: {b for k in keys[split] for b in k[1:]} for split in keys}
    assert not repos["train"] & repos["test"]
    assert not bugs["train"] & bugs["test"]


class RepoGeneratorKeys:
    """A task's split keys, recomputed from what it holds (the reference repository and the
    mutations), not read from the generator."""

    @staticmethod
    def of(task):
        parsed = RepoTask.from_task(task)
        fixed, _ = apply_patch(parsed.files, parsed.fix)
        digest = hashlib.blake2b(digest_size=16)
        package = task.metadata["package"]
        for path in sorted(fixed):
            if path.startswith(package + "/"):
                name = path[len(package) + 1 : -3]
                digest.update(f"{package}/{name}\0{fixed[path].decode()}\0".encode())
        bugs = []
        for path in fixed:
            if fixed[path] != parsed.files.get(path) and path.startswith(package + "/"):
                name = path[len(package) + 1 : -3]
                buggy = parsed.files[path].decode()
                bugs += [
                    m.key
                    for m in mutations(fixed[path].decode(), name)
                    if m.apply(fixed[path].decode()) == buggy
                ]
        return ("repo:" + digest.hexdigest(), *bugs)


def test_levels_shape_the_repository():
    one, two, three = (source(level=level)[0] for level in LEVELS)
    assert len(one.metadata["bugs"]) == 1 and len(two.metadata["bugs"]) == 1
    assert len(three.metadata["bugs"]) == 2 and len(three.metadata["domains"]) == 2
    assert 17 <= len(three.answer["files"]) <= 22  # the benchmark's ~20-file repository
    modules = {bug.split(":")[0] for bug in three.metadata["bugs"]}
    assert len(modules) == 2


@pytest.fixture(scope="module")
def verifier():
    require_local_sandbox()
    with get_executor("local", workers=2, shared=False) as executor:
        verifier = RepoTestVerifier(executor=executor)
        yield verifier
        verifier.close()


@pytest.mark.parametrize(("level", "split"), list(itertools.product(LEVELS, ("train", "test"))))
def test_bugs_are_verified_in_the_sandbox_as_here(verifier, level, split):
    for index in range(3):
        task = source(split, level)[index]
        parsed = RepoTask.from_task(task)
        buggy = verifier.grade(parsed.files, parsed.tests)
        assert buggy.score == 0.0 and not buggy.infra_error, buggy.details
        fixed_files, _ = apply_patch(parsed.files, parsed.fix)
        fixed = verifier.grade(fixed_files, parsed.tests)
        assert fixed.score == 1.0, fixed.details
        assert parsed.tests.fail_to_pass and parsed.tests.pass_to_pass
        # Exactly the fail-to-pass tests fail under the bug.
        assert set(buggy.data["passed"]) == set(parsed.tests.pass_to_pass)
        added = [line[1:] for line in parsed.fix.split("\n") if line.startswith("+ ")]
        assert not any(line.strip() in task.prompt for line in added if line.strip())


def test_the_issue_example_alone_never_covers_every_failing_call():
    for level in LEVELS:
        task = source(level=level)[1]
        parsed = RepoTask.from_task(task)
        fixed, _ = apply_patch(parsed.files, parsed.fix)
        package = task.metadata["package"]
        sources = {"__init__": fixed[f"{package}/__init__.py"].decode()}
        buggy = dict(sources)
        for path in fixed:
            if path.startswith(package + "/") and path.endswith(".py"):
                name = path[len(package) + 1 : -3]
                sources[name] = fixed[path].decode()
                buggy[name] = parsed.files[path].decode()
        failing = []
        for test in parsed.tests.tests:
            if test.name not in parsed.tests.fail_to_pass:
                continue
            for call in test.calls:
                module, function = call.target.split(":")
                target = (module.split(".", 1)[1], function, call.case.args)
                if run_calls(sources, [target]) != run_calls(buggy, [target]):
                    failing.append(call)
        shown = task.prompt + "".join(text for text in task.answer["files"].values())
        written = [
            f"{c.target.split(':')[1]}({', '.join(map(repr, c.case.args))})" for c in failing
        ]
        hidden_only = [text for text in written if text not in shown]
        assert hidden_only, task.id


def test_visible_tests_catch_the_bug_at_level_one_only(verifier):
    from rlvr.sandboxes import ExecRequest

    executor = verifier.executor()
    for level, expect_failure in ((1, True), (2, False), (3, False)):
        parsed = RepoTask.from_task(source(level=level)[2])
        command = ["python3", "-m", "unittest", "discover", "-s", "tests", "-t", "."]
        result = executor.run(ExecRequest(command=command, files=parsed.files))
        assert (not result.ok) == expect_failure, (level, result.stderr_text[-500:])
        fixed, _ = apply_patch(parsed.files, parsed.fix)
        assert executor.run(ExecRequest(command=command, files=fixed)).ok


def test_domains_restrict_the_repositories_and_are_checked():
    import gymnasium as gym

    import rlvr  # noqa: F401
    from rlvr.envs import EnvConfigError

    grid = ProceduralSource(RepoGenerator(["grid"]), name="repo", difficulty=[1, 2, 3])
    assert {tuple(grid[i].metadata["domains"]) for i in range(8)} == {("grid",)}
    with pytest.raises(EnvConfigError, match="domains"):
        gym.make("rlvr/Repo-v0", domains=["grid", "nope"])


def test_repositories_vary_within_a_domain_and_level():
    # Each module keeps all its functions or all but one (with what they call), under one of
    # six package names: enough distinct repositories for a 10% test split of each domain.
    tasks = [source(level=2)[index] for index in range(30)]
    repositories = {RepoGeneratorKeys.of(task)[0] for task in tasks}
    assert len(repositories) >= 25
    for task in tasks:  # a kept function's callees are kept: every module still imports
        parsed = RepoTask.from_task(task)
        assert parsed.tests.pass_to_pass
