"""Unified diffs read and applied on the host, and the workspace's limits and invariants."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr.envs.errors import ToolError
from rlvr.envs.repo.patches import PatchError, apply_patch, unified_diff
from rlvr.envs.repo.workspace import Workspace, WorkspaceLimits
from rlvr.sandboxes.types import WorkdirChanges

OLD = {
    "a.py": b"def f(x):\n    return x + 1\n\n\ndef g():\n    pass\n",
    "b.txt": b"no newline",
    "gone.txt": b"bye\n",
}
NEW = {
    "a.py": b"def f(x):\n    return x - 1\n\n\ndef g():\n    return 2\n",
    "b.txt": b"no newline!",
    "c/new.py": b"new\n",
}


def test_a_diff_of_ours_applies_back_exactly():
    files, notes = apply_patch(OLD, unified_diff(OLD, NEW))
    assert files == NEW
    assert "created c/new.py" in notes and "deleted gone.txt" in notes


lines = st.lists(st.sampled_from(["a", "b", "", "  x = 1", "\tz", "é"]), max_size=12)


@settings(max_examples=200, derandomize=True, database=None)
@given(before=lines, after=lines, newline=st.booleans())
def test_any_text_edit_round_trips(before, after, newline):
    end = "\n" if newline else ""
    old = {"f.txt": ("\n".join(before) + end).encode()}
    new = {"f.txt": ("\n".join(after) + end).encode()}
    patch = unified_diff(old, new)
    if old == new:
        assert patch == ""
    else:
        assert apply_patch(old, patch)[0] == new


def test_what_models_write_is_read_leniently():
    # No a/ b/ prefixes, wrong counts, a blank context line without its space, prose around.
    patch = (
        "Here is the fix:\n```diff\ndiff --git a/a.py b/a.py\nindex 123..456 100644\n"
        "--- a.py\n+++ a.py\n@@ -1,99 +1,99 @@\n def f(x):\n-    return x + 1\n"
        "+    return x * 2\n\n \n```\n"
    )
    files, _ = apply_patch(OLD, patch)
    assert files["a.py"].startswith(b"def f(x):\n    return x * 2\n")


def test_a_hunk_is_found_away_from_its_stated_line():
    patch = "--- a/a.py\n+++ b/a.py\n@@ -40,2 +40,2 @@\n def g():\n-    pass\n+    return 3\n"
    assert apply_patch(OLD, patch)[0]["a.py"].endswith(b"    return 3\n")


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ("just words", "no unified diff"),
        ("@@ -1 +1 @@\n-x\n+y\n", "comes before"),
        ("--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-nothing like it\n+x\n", "does not apply"),
        ("--- a/nope.py\n+++ b/nope.py\n@@ -1 +1 @@\n-x\n+y\n", "no such file"),
        ("--- /dev/null\n+++ b/a.py\n@@ -0,0 +1 @@\n+x\n", "already exists"),
        ("--- a/b.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-other\n", "does not apply"),
    ],
)
def test_patches_that_do_not_apply_change_nothing(patch, message):
    with pytest.raises(PatchError, match=message):
        apply_patch(OLD, patch)


def test_the_workspace_copies_its_template_and_checks_every_write():
    template = {"pkg/m.py": b"x = 1\n"}
    workspace = Workspace(template, limits=WorkspaceLimits(max_files=3, max_bytes=100))
    workspace.write("pkg/n.py", b"y = 2\n")
    assert template == {"pkg/m.py": b"x = 1\n"}  # never the template's own dict
    for path in ("../x", "/etc/x", "", "a/../../b", "\ud800"):
        with pytest.raises(ToolError):
            workspace.write(path, b"")
    with pytest.raises(ToolError, match="is a file"):
        workspace.write("pkg/m.py/inner", b"")
    with pytest.raises(ToolError, match="is a file"):
        workspace.write("pkg", b"")
    with pytest.raises(ToolError, match="more than 100 bytes"):
        workspace.write("big", b"x" * 95)
    workspace.write("c", b"")
    with pytest.raises(ToolError, match="more than 3 files"):
        workspace.write("d", b"")
    assert workspace.paths("pkg") == ["pkg/m.py", "pkg/n.py"]


def test_changes_from_a_command_are_all_or_nothing():
    workspace = Workspace({"a": b"1", "b": b"2"}, limits=WorkspaceLimits(max_bytes=10))
    note = workspace.absorb(WorkdirChanges(files={"c": b"3"}, deleted=("a",)))
    assert note == "" and dict(workspace.files) == {"b": b"2", "c": b"3"}
    note = workspace.absorb(WorkdirChanges(files={"big": b"x" * 20}))
    assert "discarded" in note and "big" not in workspace.files
    note = workspace.absorb(WorkdirChanges(files={"d": b"4"}, complete=False))
    assert "discarded" in note and "d" not in workspace.files
    note = workspace.absorb(WorkdirChanges(files={"e": b"5"}, skipped=("link",)))
    assert "Not kept" in note and workspace.files["e"] == b"5"


def test_a_command_that_changed_nothing_leaves_files_and_modes_as_they_were():
    workspace = Workspace({"a": b"1", "run.sh": b"echo"}, executable={"run.sh"})
    assert workspace.absorb(WorkdirChanges()) == ""
    assert dict(workspace.files) == {"a": b"1", "run.sh": b"echo"}
    assert workspace.executable == {"run.sh"}
    note = workspace.absorb(WorkdirChanges(skipped=("fifo",)))
    assert note == "Not kept (only regular files are): fifo." and "fifo" not in workspace.files
    assert workspace.absorb(WorkdirChanges(files={"run.sh": b"echo"})) == ""
    assert workspace.executable == set()  # rewritten without its executable bit
