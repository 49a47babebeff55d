"""The user docs work: README.md, CONTRIBUTING.md and docs/*.md, read as a newcomer reads them.

- Every ```python block runs. The blocks of one page run in order in one fresh interpreter (a
  page is read top to bottom, so a block may use what an earlier one defined), in an empty
  temporary directory, under a time limit. A failure's traceback names the page and its line.
- A block right after `<!-- docs-test: file PATH -->` is a file the reader writes: it is written
  to PATH (relative) in the page's temporary directory before the page's python blocks run, and
  is not run itself (CONTRIBUTING.md's "Adding a family" shows a family's files this way).
- A block right after `<!-- docs-test: skip (reason) -->` does not run (it needs a hub model, a
  remote server, minutes of training); its imports still do, so a renamed API still fails.
  `EXPECTED_SKIPS` counts the skips per page, so a new one is added on purpose, never silently.
- Every `rlvr ...` line of a ```bash block (and `$ rlvr ...` of a ```console block) parses with
  the real command line parser, `rlvr.cli.build_parser()`, without running; a script it runs
  (`bash .ci/demo.sh`, `python benchmarks/...`) exists.
- Every ```toml block loads as a leaderboard suite, or, when it sets `model`, as a `rlvr train
  --config` file: it reads into a `TrainConfig` (unknown keys and wrong types fail), writes back
  equal, and its envs are made with their kwargs. Every fence names its language (so no command
  hides in an untagged block), every relative link and `#anchor` resolves, and every repository
  file named in backticks exists.

"The repository" is the project's files as git counts them (tests/checkout.py), not the working
tree: after `bash .ci/demo.sh` a checkout holds runs/, and a page naming `runs/grpo/config.toml`
still names a file the reader makes, while a link to a file no commit holds is still broken.
"""

from __future__ import annotations

import ast
import json
import os
import posixpath
import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.checkout import ROOT, Repository
from tests.conftest import require_extra

PAGES = [
    "README.md",
    "CONTRIBUTING.md",
    *sorted(f"docs/{page.name}" for page in (ROOT / "docs").glob("*.md")),
]

EXPECTED_SKIPS = {
    "docs/agents.md": 1,  # 500 GRPO steps
    "docs/code.md": 1,  # HumanEval/MBPP files and a hub dataset
    "docs/integrations.md": 3,  # a tool-calling chat model from the hub; a running server (2)
    "docs/math.md": 1,  # hub datasets
    "docs/repo.md": 1,  # SWE-bench-style tasks of the user's own, and a Docker image
    "docs/sql.md": 2,  # Spider/BIRD files; a PostgreSQL admin DSN
}
PAGE_TIME_LIMIT = 300  # seconds for all the blocks of one page

_FENCE = re.compile(r"^(`{3,})([\w-]*)\s*$")
_DIRECTIVE = re.compile(r"^<!--\s*docs-test:\s*(.*?)\s*-->$")
_SKIP = re.compile(r"^skip \((.+)\)$")
_FILE = re.compile(r"^file ([\w.-]+(?:/[\w.-]+)*)$")
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")  # links and images
_REPO_PATH = re.compile(r"`((\.?[\w-]+)/(?:[\w-]+/)*[\w.-]+\.(?:py|toml|sh|md))`")


@dataclass(frozen=True)
class Block:
    page: str
    line: int  # line of the block's first source line in the page (1-based)
    language: str
    source: str
    skip: str | None  # the reason, when a docs-test skip marker precedes the block
    file: str | None = None  # the path it is written to, when a docs-test file marker precedes it


def blocks(page: str) -> list[Block]:
    lines = (ROOT / page).read_text(encoding="utf-8").splitlines()
    found, index = [], 0
    while index < len(lines):
        fence = _FENCE.match(lines[index])
        if fence is None:
            index += 1
            continue
        end = index + 1
        while end < len(lines) and lines[end].rstrip() != fence.group(1):
            end += 1
        if end == len(lines):
            raise AssertionError(f"{page}:{index + 1}: code fence never closed")
        skip, file = _directive(page, lines, index)
        source = "\n".join(lines[index + 1 : end])
        found.append(Block(page, index + 2, fence.group(2), source, skip, file))
        index = end + 1
    return found


def _directive(page: str, lines: list[str], fence_index: int) -> tuple[str | None, str | None]:
    """(skip reason, file path) of the docs-test directive right above a block, if any."""
    previous = fence_index - 1
    while previous >= 0 and not lines[previous].strip():
        previous -= 1
    directive = _DIRECTIVE.match(lines[previous].strip()) if previous >= 0 else None
    if directive is None:
        return None, None
    skip, file = _SKIP.match(directive.group(1)), _FILE.match(directive.group(1))
    if skip is None and (file is None or ".." in file.group(1).split("/")):
        raise AssertionError(
            f"{page}:{previous + 1}: unknown directive {directive.group(1)!r}; the directives "
            "are `<!-- docs-test: skip (reason) -->` and `<!-- docs-test: file relative/path -->`"
        )
    return (skip.group(1), None) if skip else (None, file.group(1) if file else None)


def all_blocks() -> Iterator[Block]:
    for page in PAGES:
        yield from blocks(page)


# --- python blocks -------------------------------------------------------------------------------

# Runs the blocks handed over as JSON on stdin in one namespace; a block is compiled with its page
# as file name and its own line numbers, so a traceback points into the page.
_RUNNER = r"""
import ast, json, sys
namespace = {"__name__": "__main__"}
for page, line, source, skip in json.load(sys.stdin):
    if skip is not None:  # only its imports: the names it uses must still exist
        tree = ast.parse(source)
        tree.body = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
        ast.increment_lineno(tree, line - 1)
        exec(compile(tree, page, "exec"), namespace)
        continue
    print(f"--- {page}:{line}", flush=True)
    exec(compile("\n" * (line - 1) + source, page, "exec"), namespace)
"""


def _tiny_model(workdir: Path) -> None:
    """docs/agents.md loads `runs/tiny`, which its `rlvr tiny` command builds (minutes); an
    untrained tiny model of the same shape takes seconds and loads the same way."""
    require_extra("torch", "agents")
    from rlvr.agents.tiny import build_tiny

    kwargs = {"families": ["arithmetic"], "difficulty": 1}
    build_tiny("rlvr/Math-v0", workdir / "runs" / "tiny", env_kwargs=kwargs, warm=None)


def _local_sandbox(workdir: Path) -> None:
    from tests.sandboxes.conftest import require_local_sandbox

    require_local_sandbox()


def _tiny_model_and_sandbox(workdir: Path) -> None:
    """docs/integrations.md trains TRL on rlvr/Code-v0 with `runs/tiny`."""
    _local_sandbox(workdir)
    require_extra("trl", "trl")
    _tiny_model(workdir)


PAGE_SETUP: dict[str, Callable[[Path], None]] = {
    "CONTRIBUTING.md": _tiny_model,  # the "Adding a learner" walk-through trains a step
    "docs/agents.md": _tiny_model,
    "docs/code.md": _local_sandbox,
    "docs/integrations.md": _tiny_model_and_sandbox,
    "docs/sandboxes.md": _local_sandbox,
}


def _python_blocks(page: str) -> list[Block]:
    return [block for block in blocks(page) if block.language == "python" and block.file is None]


def write_files(page: str, folder: Path) -> list[Path]:
    """Write the page's file blocks (`<!-- docs-test: file PATH -->`) under `folder`."""
    written = []
    for block in blocks(page):
        if block.file is not None:
            path = folder / block.file
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(block.source + "\n", encoding="utf-8")
            written.append(path)
    return written


@pytest.mark.parametrize("page", [page for page in PAGES if _python_blocks(page)])
def test_python_blocks_run(page, tmp_path):
    python = _python_blocks(page)
    if page in PAGE_SETUP:
        PAGE_SETUP[page](tmp_path)
    write_files(page, tmp_path)
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",  # a block that reaches for the hub fails at once
        "MPLBACKEND": "Agg",
        "RLVR_LEADERBOARD_DB": str(tmp_path / "leaderboard.sqlite"),
        "XDG_DATA_HOME": str(tmp_path / "xdg"),
    }
    payload = [(block.page, block.line, block.source, block.skip) for block in python]
    result = subprocess.run(
        [sys.executable, "-c", _RUNNER],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=PAGE_TIME_LIMIT,
    )
    assert result.returncode == 0, (
        f"a python block of {page} failed (the last '---' line names it):\n"
        f"{result.stdout[-3000:]}\n{result.stderr[-6000:]}"
    )


def test_skips_are_counted_and_explained():
    counted: dict[str, int] = {}
    for block in all_blocks():
        if block.skip is not None:
            assert block.language == "python", (
                f"{block.page}:{block.line}: skip on a non-python block"
            )
            assert len(block.skip) > 5, f"{block.page}:{block.line}: say why the block is skipped"
            counted[block.page] = counted.get(block.page, 0) + 1
    assert counted == EXPECTED_SKIPS, (
        "the docs' skipped python blocks changed: make the block run if you can, otherwise "
        "update EXPECTED_SKIPS on purpose"
    )


def test_python_blocks_are_valid_python():
    for block in all_blocks():
        if block.language == "python":
            try:
                ast.parse(block.source)
            except SyntaxError as exc:
                pytest.fail(f"{block.page}:{block.line + (exc.lineno or 1) - 1}: {exc.msg}")


# --- command lines -------------------------------------------------------------------------------


def command_lines(block: Block) -> Iterator[tuple[int, list[str]]]:
    """(page line, argv) of each command in a bash or console block, `\\` continuations joined,
    comments, a `$ ` prompt and `VAR=value` prefixes dropped."""
    pending, start = "", 0
    for offset, raw in enumerate(block.source.splitlines()):
        if block.language == "console" and not pending:
            if not raw.startswith("$ "):
                continue  # output
            raw = raw[2:]
        if not pending:
            start = block.line + offset
        if raw.rstrip().endswith("\\"):
            pending += raw.rstrip()[:-1] + " "
            continue
        argv = shlex.split(pending + raw, comments=True)
        pending = ""
        while argv and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", argv[0]):
            argv = argv[1:]
        if argv:
            yield start, argv


def test_rlvr_command_lines_parse(repository):
    from rlvr.cli import build_parser

    parser = build_parser()
    parsed = 0
    for block in all_blocks():
        if block.language not in ("bash", "console"):
            continue
        for line, argv in command_lines(block):
            if argv[0] in ("rlvr", ".venv/bin/rlvr"):
                try:
                    args = parser.parse_args(argv[1:])
                except SystemExit:
                    pytest.fail(f"{block.page}:{line}: `{shlex.join(argv)}` does not parse")
                assert callable(getattr(args, "func", None)), f"{block.page}:{line}: no command"
                parsed += 1
            elif argv[0] in ("bash", "python", "python3", ".venv/bin/python") and len(argv) > 1:
                script = argv[1]
                if not script.startswith("-"):
                    assert script in repository.files, f"{block.page}:{line}: no file {script}"
    assert parsed >= 20  # the docs show the command line throughout; this guards the extraction


def test_toml_blocks_are_valid_suites_or_train_configs(tmp_path):
    from rlvr.config import parse_toml
    from rlvr.leaderboards import load_suite

    for number, block in enumerate(b for b in all_blocks() if b.language == "toml"):
        if block.file is not None and Path(block.file).name == "family.toml":
            continue  # a family's descriptor: the page's walk-through registers it
        path = tmp_path / f"block{number}.toml"
        path.write_text(block.source, encoding="utf-8")
        if "model" in parse_toml(block.source, f"{block.page}:{block.line}"):
            _check_train_config(path)
        else:
            load_suite(str(path))  # raises SuiteError naming the problem


def _check_train_config(path: Path) -> None:
    require_extra("torch", "agents")
    from rlvr.agents.rollouts import check_env_specs
    from rlvr.agents.train_config import TrainConfig
    from rlvr.config import build, parse_toml, read_config, to_toml

    config = read_config(TrainConfig, path)  # raises ConfigError naming file and key
    assert build(TrainConfig, parse_toml(to_toml(config))) == config
    check_env_specs(config.envs)


def test_every_fence_names_its_language():
    untagged = [f"{block.page}:{block.line - 1}" for block in all_blocks() if not block.language]
    assert not untagged, f"give these code fences a language (bash, text, python, ...): {untagged}"


# --- links and paths -----------------------------------------------------------------------------


def _anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#+\s+(.*)$", page.read_text(encoding="utf-8"), flags=re.M)
    return {
        re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings
    }


def _prose(page: str, root: Path = ROOT) -> str:
    """The page without its code blocks."""
    return re.sub(
        r"^(`{3,})[\w-]*\n.*?^\1$", "", (root / page).read_text(encoding="utf-8"), flags=re.M | re.S
    )


def broken_links(repository: Repository, page: str) -> list[str]:
    """The relative links of `page` to no file or folder of the repository, or to no heading."""
    broken = []
    for match in _LINK.finditer(_prose(page, repository.root)):
        target = match.group(1)
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        linked = posixpath.join(posixpath.dirname(page), path) if path else page
        if not repository.holds(linked):
            broken.append(f"{page}: link to {target}: no such file in the repository")
        elif anchor and anchor not in _anchors(repository.root / linked):
            broken.append(f"{page}: link to {target}: no such heading")
    return broken


def unknown_named_files(repository: Repository, page: str) -> list[str]:
    """The paths in backticks under one of the repository's top folders that it does not hold
    (a path under another folder, such as runs/tiny/..., is one the reader makes)."""
    return [
        f"{page} names {path}, which is not in the repository"
        for path, top in _REPO_PATH.findall(_prose(page, repository.root))
        if top in repository.folders and not repository.holds(path)
    ]


@pytest.mark.parametrize("page", PAGES)
def test_relative_links_resolve(repository, page):
    assert not broken_links(repository, page)


@pytest.mark.parametrize("page", PAGES)
def test_named_repository_files_exist(repository, page):
    assert not unknown_named_files(repository, page)


def test_the_checkers_judge_the_repository_not_what_runs_leave_in_the_checkout(tmp_path):
    """The README's order: a demo, `rlvr train`, `rlvr bench` and the benchmarks have left their
    outputs in the clone before the tests run. The checkers see the same repository."""
    from tests.checkout import read_repository

    page = "docs/guide.md"
    text = (
        "Run the demo: [page](../runs/demo/site/index.html), [code](../envs/math.py), "
        "[design](design.md#how-it-fits).\n\n"
        "It writes `runs/grpo/config.toml`; read `envs/math.py` and `envs/gone.py`.\n\n"
        "## How it fits\n"
    )
    (tmp_path / "docs").mkdir()
    (tmp_path / page).write_text(text, encoding="utf-8")
    (tmp_path / "docs" / "design.md").write_text("# How it fits\n", encoding="utf-8")
    (tmp_path / "envs").mkdir()
    (tmp_path / "envs" / "math.py").write_text("", encoding="utf-8")
    (tmp_path / ".gitignore").write_text("runs/\n", encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for output in ("runs/demo/site/index.html", "runs/grpo/config.toml", "runs/envs/gone.py"):
        (tmp_path / output).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / output).write_text("made by a run", encoding="utf-8")
    repository = read_repository(tmp_path)
    assert "docs/guide.md" in repository.files and "runs/grpo/config.toml" not in repository.files
    assert broken_links(repository, page) == [
        f"{page}: link to ../runs/demo/site/index.html: no such file in the repository"
    ]
    assert unknown_named_files(repository, page) == [
        f"{page} names envs/gone.py, which is not in the repository"
    ]
