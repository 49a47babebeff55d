"""`rlvr sandbox doctor`: which sandbox backends work on this machine, and why not."""

from __future__ import annotations

import os
import platform
import subprocess
import time
from dataclasses import dataclass

from rlvr.sandboxes import seccomp
from rlvr.sandboxes.errors import SandboxError
from rlvr.sandboxes.types import ExecRequest, Limits

PROBE_CODE = "import os\nprint(os.getuid())"


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


@dataclass(frozen=True)
class BackendReport:
    backend: str
    checks: tuple[Check, ...]

    @property
    def works(self) -> bool:
        return all(check.ok for check in self.checks)


def check_local() -> BackendReport:
    from rlvr.sandboxes.local import LocalConfig, probe

    config = LocalConfig()
    isolation = probe(config)
    checks = []
    if isolation.bwrap:
        checks.append(Check("bubblewrap", True, f"{isolation.bwrap} ({_version(isolation.bwrap)})"))
    else:
        checks.append(Check("bubblewrap", False, "not found: apt-get install bubblewrap"))
    if os.geteuid() == 0:
        checks.append(
            Check(
                "privileges",
                isolation.setpriv is not None,
                f"root: sandboxes run as uid {config.uid} via setpriv"
                if isolation.setpriv
                else "root, but setpriv (util-linux) is missing to drop privileges",
            )
        )
    else:
        checks.append(Check("privileges", True, f"sandboxes run as our uid {os.geteuid()}"))
    if isolation.cgroups is not None:
        bases = sorted(set(isolation.cgroups.bases.values()))
        checks.append(Check("cgroups", True, f"v{isolation.cgroups.version}: {', '.join(bases)}"))
    else:
        why = next((p for p in isolation.problems if "cgroup" in p), "unavailable")
        checks.append(Check("cgroups", False, why))
    machine = platform.machine()
    checks.append(
        Check(
            "seccomp",
            True,
            f"{machine} filter" if seccomp.supported() else f"no filter for {machine} (optional)",
        )
    )
    if all(check.ok for check in checks):
        checks.append(_trial("local"))
    return BackendReport("local", tuple(checks))


def check_docker(image: str | None = None) -> BackendReport:
    from rlvr.sandboxes.image import DEFAULT_IMAGE, docker_client, image_method

    image = image or DEFAULT_IMAGE
    checks = []
    try:
        import docker
    except ImportError:
        checks.append(Check("docker SDK", False, "not installed: pip install 'rlvr-gym[docker]'"))
        return BackendReport("docker", tuple(checks))
    checks.append(Check("docker SDK", True, f"docker {docker.__version__}"))
    try:
        client = docker_client(timeout=10)
    except SandboxError as exc:
        checks.append(Check("engine", False, str(exc)))
        return BackendReport("docker", tuple(checks))
    try:
        checks.append(Check("engine", True, f"Docker {client.version().get('Version', '?')}"))
        try:
            method = image_method(client, image)
            checks.append(Check("image", True, f"{image} (built with --method {method})"))
        except SandboxError as exc:
            checks.append(Check("image", False, str(exc)))
    finally:
        client.close()
    if all(check.ok for check in checks):
        checks.append(_trial("docker", image=image))
    return BackendReport("docker", tuple(checks))


def _trial(backend: str, **options: object) -> Check:
    from rlvr.sandboxes.pool import get_executor

    started = time.monotonic()
    try:
        with get_executor(backend, workers=1, shared=False, **options) as executor:
            result = executor.run(ExecRequest(code=PROBE_CODE, limits=Limits(wall_time=10)))
    except SandboxError as exc:
        return Check("trial run", False, str(exc))
    elapsed = time.monotonic() - started
    if not result.ok:
        detail = result.describe() + (
            f": {result.stderr_text.strip()[-300:]}" if result.stderr else ""
        )
        return Check("trial run", False, detail)
    uid = result.stdout_text.strip()
    if uid == "0":
        return Check("trial run", False, "the sandboxed program ran as root")
    return Check("trial run", True, f"ok in {elapsed:.2f}s, uid {uid} inside")


def _version(binary: str) -> str:
    try:
        output = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return "version unknown"
    return output.stdout.strip() or "version unknown"


def format_report(reports: list[BackendReport]) -> str:
    lines = []
    for report in reports:
        verdict = "works" if report.works else "does NOT work"
        lines.append(f"{report.backend}: {verdict}")
        for check in report.checks:
            mark = "ok " if check.ok else "FAIL"
            lines.append(f"  [{mark}] {check.name:<12} {check.detail}")
    return "\n".join(lines)
