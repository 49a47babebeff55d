"""`ExecRequest(return_changes=True)`: a run's changes to its working directory come back (the
workspace of rlvr/Repo-v0 is carried from run to run this way), on both backends, bounded, and
never as a sandbox error whatever the program leaves."""

from __future__ import annotations

import pytest

from rlvr.sandboxes import ExecRequest, Limits, SandboxConfigError


def run_shell(executor, script, **kwargs):
    request = ExecRequest(command=["sh", "-c", script], return_changes=True, **kwargs)
    result = executor.run(request)
    assert not result.infra_error, result.error
    assert result.changes is not None
    return result


def test_new_changed_deleted_and_executable_files_come_back(executor):
    result = run_shell(
        executor,
        "echo new > new.txt; rm gone.txt; echo more >> changed.txt; chmod +x same.txt; "
        "mkdir -p deep/er; echo deep > deep/er/file; test -x script.sh && echo script-is-x",
        files={
            "gone.txt": "x",
            "changed.txt": "first\n",
            "same.txt": "s",
            "untouched.txt": "u",
            "script.sh": "echo hi",
        },
        executable=["script.sh"],
    )
    changes = result.changes
    assert result.stdout_text == "script-is-x\n"
    assert changes.complete
    assert changes.files == {
        "new.txt": b"new\n",
        "changed.txt": b"first\nmore\n",
        "same.txt": b"s",  # only its mode changed
        "deep/er/file": b"deep\n",
    }
    assert changes.executable == {"same.txt"}
    assert changes.deleted == ("gone.txt",)


def test_symlinks_and_special_files_are_never_read(executor):
    result = run_shell(
        executor, "ln -s /etc/passwd link; mkfifo pipe; ln -s real.txt alias; echo r > real.txt"
    )
    assert result.changes.files == {"real.txt": b"r\n"}
    assert set(result.changes.skipped) == {"link", "pipe", "alias"}
    assert result.changes.complete


def test_a_file_turned_into_a_directory_is_deleted_and_its_files_new(executor):
    result = run_shell(
        executor, "rm thing; mkdir thing; echo in > thing/inside", files={"thing": "t"}
    )
    assert result.changes.deleted == ("thing",)
    assert result.changes.files == {"thing/inside": b"in\n"}


def test_changes_larger_than_the_output_budget_are_incomplete(executor):
    result = run_shell(
        executor, "head -c 300000 /dev/zero > big.bin", limits=Limits(output=100_000)
    )
    assert not result.changes.complete


def test_too_many_files_are_incomplete_not_an_error(executor):
    result = run_shell(
        executor, "mkdir d && cd d && seq 1 25000 | xargs touch", limits=Limits(wall_time=30)
    )
    assert not result.changes.complete


def test_unreadable_directories_make_the_changes_incomplete(executor):
    result = run_shell(executor, "mkdir locked && echo x > locked/f && chmod 000 locked")
    assert not result.changes.complete


def test_without_the_flag_nothing_is_walked(executor):
    result = executor.run(ExecRequest(command=["sh", "-c", "echo x > f"]))
    assert result.ok and result.changes is None


def test_executable_paths_must_be_among_the_files():
    with pytest.raises(SandboxConfigError, match="not in files"):
        ExecRequest(command=["true"], files={"a": "x"}, executable=["b"])
    with pytest.raises(SandboxConfigError, match="list of paths"):
        ExecRequest(command=["true"], executable="a")


def test_names_that_are_not_utf8_are_skipped(executor):
    result = run_shell(executor, "printf x > \"$(printf 'bad\\377name')\"; echo ok > good")
    assert result.changes.files == {"good": b"ok\n"}
    assert len(result.changes.skipped) == 1


def test_output_and_changes_share_the_output_limit(executor):
    result = run_shell(
        executor,
        "head -c 60000 /dev/zero | tr '\\0' a; echo x > small.txt",
        limits=Limits(output=64 * 1024),
    )
    assert result.changes.complete and result.changes.files == {"small.txt": b"x\n"}
    result = run_shell(
        executor,
        "head -c 60000 /dev/zero | tr '\\0' a; head -c 8000 /dev/zero > f",
        limits=Limits(output=64 * 1024),
    )
    assert not result.changes.complete
