"""The quick check (`pytest -m quick`, tests/conftest.py's QUICK) stays representative: every
area of the suite has tests in it, and every entry still names a test that exists."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from tests.conftest import QUICK


def _area(path: str) -> str:
    """tests/<area>/... -> area; a test module at the top of tests/ -> "tests"."""
    parts = PurePosixPath(path).parts
    return parts[1] if len(parts) > 2 else parts[0]


def test_every_area_of_the_suite_is_in_the_quick_check(repository):
    test_files = [
        name
        for name in repository.files
        if name.startswith("tests/") and PurePosixPath(name).name.startswith("test_")
    ]
    areas = {_area(name) for name in test_files}
    assert {"agents", "envs", "leaderboards", "sandboxes", "sql", "verifiers"} <= areas
    quick = {_area(entry.split("::")[0]) for entry in QUICK}
    assert areas - quick == set(), "add fast tests of these areas to QUICK in tests/conftest.py"


def test_every_quick_entry_names_an_existing_test(repository):
    for entry in QUICK:
        path, _, test = entry.partition("::")
        assert path in repository.files, f"QUICK names {path}, which is not in the repository"
        if test:
            source = (repository.root / path).read_text(encoding="utf-8")
            assert re.search(rf"^def {re.escape(test)}\w*\(", source, re.M), f"no test {entry}"
