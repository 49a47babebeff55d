"""tests/checkout.py: what the suite counts as the repository, and how it sees what it wrote."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.checkout import NotACheckout, changes, read_repository, snapshot


def test_changes_name_files_written_changed_and_removed_and_new_folders(tmp_path):
    (tmp_path / "kept.txt").write_text("same")
    (tmp_path / "edited.txt").write_text("before")
    (tmp_path / "gone.txt").write_text("here")
    before = snapshot(tmp_path)
    (tmp_path / "edited.txt").write_text("after, longer")
    (tmp_path / "gone.txt").unlink()
    (tmp_path / "runs" / "demo").mkdir(parents=True)
    (tmp_path / "empty").mkdir()
    assert changes(before, snapshot(tmp_path)) == [
        "written edited.txt",
        "written empty/",
        "written runs/",
        "written runs/demo/",
        "removed gone.txt",
    ]


def test_a_file_rewritten_at_the_same_size_is_seen_by_its_time(tmp_path):
    (tmp_path / "model.bin").write_bytes(b"1234")
    before = snapshot(tmp_path)
    os.utime(tmp_path / "model.bin", ns=(1, 1))
    assert changes(before, snapshot(tmp_path)) == ["written model.bin"]


def test_caches_venvs_and_git_are_not_watched(tmp_path):
    before = snapshot(tmp_path)
    for folder in ("__pycache__", "tests/__pycache__", ".pytest_cache", ".venv", ".venv-verl",
                   ".git", ".mypy_cache", ".ruff_cache"):  # fmt: skip
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "file").write_text("x")
    assert changes(before, snapshot(tmp_path)) == ["written tests/"]


def test_outside_a_git_checkout_the_repository_is_refused(tmp_path):
    (tmp_path / "README.md").write_text("# not a clone\n")
    with pytest.raises(NotACheckout, match="not a git checkout"):
        read_repository(tmp_path)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "sub").mkdir()
    with pytest.raises(NotACheckout, match="not the top of its git work tree"):
        read_repository(tmp_path / "sub")
    assert read_repository(tmp_path).files == {"README.md"}
