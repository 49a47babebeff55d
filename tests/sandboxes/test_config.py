"""Requests, limits and backend options: validation, weak isolation only on request, seccomp,
cgroups, the worker's framing, and the `rlvr sandbox` commands."""

from __future__ import annotations

import struct

import pytest

from rlvr.cli import main
from rlvr.sandboxes import (
    ExecRequest,
    Limits,
    SandboxConfigError,
    SandboxUnavailable,
    get_executor,
    seccomp,
)
from rlvr.sandboxes.worker import FrameError, FrameReader, encode_frame
from tests.sandboxes.conftest import require_local_sandbox

needs_local = pytest.mark.usefixtures("local_sandbox")


@pytest.fixture
def local_sandbox():
    require_local_sandbox()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({}, "exactly one of code"),
        ({"code": "1", "command": ["x"]}, "exactly one of code"),
        ({"command": "python3 main.py"}, "not a shell string"),
        ({"code": "1", "files": {"../escape": "x"}}, "stay inside"),
        ({"code": "1", "files": {"/etc/passwd": "x"}}, "stay inside"),
        ({"code": "1", "env": {"A=B": "x"}}, "not valid"),
        ({"code": "1", "return_files": "out.txt"}, "list of paths"),
    ],
)
def test_bad_requests_name_the_fix(kwargs, match):
    with pytest.raises(SandboxConfigError, match=match):
        ExecRequest(**kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"wall_time": 0},
        {"wall_time": float("inf")},
        {"memory": 1024},
        {"processes": 0},
        {"output": True},
        {"cpus": -1},
        {"network": "yes"},
    ],
)
def test_bad_limits_are_refused(kwargs):
    with pytest.raises(SandboxConfigError, match="Limits"):
        Limits(**kwargs)


def test_missing_bubblewrap_is_refused_loudly_unless_weak_isolation_is_allowed():
    with pytest.raises(SandboxUnavailable, match="bubblewrap .* not found.*allow_weak_isolation"):
        get_executor("local", bwrap="/nonexistent/bwrap", shared=False)


@needs_local
def test_weak_isolation_runs_with_a_warning_and_still_not_as_root():
    with pytest.warns(RuntimeWarning, match="WEAKER ISOLATION"):
        executor = get_executor(
            "local", bwrap="/nonexistent/bwrap", allow_weak_isolation=True, workers=1, shared=False
        )
    with executor:
        result = executor.run(ExecRequest(code="import os\nprint(os.getuid())"))
        timeout = executor.run(ExecRequest(code="while True: pass", limits=Limits(wall_time=0.5)))
    assert result.ok and result.stdout_text.strip() != "0"
    assert timeout.status.value == "timeout"


def test_python_outside_usr_is_refused():
    with pytest.raises(SandboxConfigError, match="only host tree mounted"):
        get_executor("local", python="/root/.pyenv/shims/python3", shared=False)


@pytest.mark.parametrize("machine", sorted(seccomp.ARCHITECTURES))
def test_seccomp_filter_is_well_formed(machine):
    program = seccomp.build_filter(machine)
    assert len(program) % 8 == 0 and len(program) // 8 < 4096  # BPF_MAXINSNS
    instructions = [struct.unpack("=HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
    assert instructions[-1] == (0x06, 0, 0, 0x7FFF0000)  # ends by allowing the rest
    for index, (code, jt, jf, _) in enumerate(instructions):
        if code & 0x07 == 0x05:  # jumps stay inside the program
            assert index + 1 + max(jt, jf) < len(instructions)


def test_frames_round_trip_and_reject_garbage():
    reader = FrameReader()
    data = encode_frame({"op": "x"}, [b"abc", b""]) + encode_frame({"op": "y"})
    for byte in data:  # byte by byte, as a slow pipe would deliver them
        reader.feed(bytes([byte]))
    frames = [reader.pop(), reader.pop()]
    assert frames[0][0]["op"] == "x" and frames[0][1] == [b"abc", b""]
    assert frames[1][0]["op"] == "y" and reader.pop() is None
    reader.feed(b"bwrap: Can't mount proc\n")
    with pytest.raises(FrameError):
        reader.pop()


@needs_local
def test_cgroup_limits_are_written(local_executor):
    local_executor.run(ExecRequest(code="print(1)", limits=Limits(memory=100 * 2**20, processes=7)))
    cgroups = list(local_executor._pool.backend.cgroups.values())
    assert any(c.applied.get("processes") == 7 + 3 for c in cgroups)


@needs_local
def test_doctor_reports_the_local_backend(capsys):
    assert main(["sandbox", "doctor", "--backend", "local"]) == 0
    output = capsys.readouterr().out
    assert "local: works" in output and "uid" in output and "trial run" in output


@pytest.mark.docker
def test_build_image_if_missing_is_a_no_op_when_present(docker_image, capsys):
    assert main(["sandbox", "build-image", "--if-missing"]) == 0
    assert "already exists" in capsys.readouterr().out
