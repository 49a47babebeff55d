"""Build the Docker image of the `docker` backend offline (no registry is needed).

Two methods:

- `host` (default, ~1 s): an image that is only a skeleton (merged-/usr symlinks, /etc/passwd
  with the sandbox user, empty mount points); containers mount the host's /usr read-only and so
  run the host's own `/usr/bin/python3`. Needs a merged-/usr Linux host and a local engine.
- `debootstrap` (~1-2 min, needs `debootstrap` and a Debian mirror): a self-contained Debian
  (minbase + python3) root filesystem, imported with `docker import`. Use it for a remote engine
  or when the host's /usr should not be visible.

The image records its method in the label `rlvr.sandbox.method`; the backend reads it to decide
whether to mount /usr.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Callable
from typing import Any

from rlvr.sandboxes.errors import SandboxConfigError, SandboxUnavailable

DEFAULT_IMAGE = "rlvr-sandbox:latest"
METHOD_LABEL = "rlvr.sandbox.method"
METHODS = ("host", "debootstrap")
SANDBOX_UID = 61000
DEFAULT_MIRROR = "http://deb.debian.org/debian"
MERGED_USR = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")


def docker_sdk() -> Any:
    """The Docker SDK module; an ImportError naming the `docker` extra if it is not installed."""
    try:
        import docker
    except ImportError:
        raise ImportError(
            "the docker sandbox needs the Docker SDK: pip install 'rlvr-gym[docker]'"
        ) from None
    return docker


def docker_client(base_url: str | None = None, timeout: int = 120) -> Any:
    """A Docker SDK client (needs the `docker` extra); raises SandboxUnavailable if unreachable."""
    docker = docker_sdk()
    try:
        client = (
            docker.DockerClient(base_url=base_url, timeout=timeout)
            if base_url
            else docker.from_env(timeout=timeout)
        )
        client.ping()
    except Exception as exc:  # the SDK raises several unrelated types for "no engine"
        where = base_url or os.environ.get("DOCKER_HOST") or "the default socket"
        raise SandboxUnavailable(
            f"Docker engine unreachable at {where}: {exc}. Start dockerd "
            "(bash .ci/setup-system.sh does) or point base_url/DOCKER_HOST at a running engine"
        ) from None
    return client


def passwd_files(uid: int = SANDBOX_UID) -> dict[str, bytes]:
    return {
        "etc/passwd": (
            "root:x:0:0:root:/root:/usr/sbin/nologin\n"
            f"sandbox:x:{uid}:{uid}:sandbox:/tmp:/usr/sbin/nologin\n"
        ).encode(),
        "etc/group": f"root:x:0:\nsandbox:x:{uid}:\n".encode(),
    }


def skeleton_tar(uid: int = SANDBOX_UID) -> bytes:
    """The root filesystem of the `host` image as a tar archive (a few kilobytes)."""
    missing = [name for name in ("bin", "lib") if not os.path.islink(f"/{name}")]
    if missing:
        raise SandboxUnavailable(
            f"the 'host' image method needs a merged-/usr system (/{missing[0]} is not a "
            "symlink into /usr here); use --method debootstrap"
        )
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, mode in (
            ("usr", 0o755),
            ("tmp", 0o1777),
            ("proc", 0o555),
            ("dev", 0o755),
            ("sys", 0o555),
            ("etc", 0o755),
            ("run", 0o755),
        ):
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, mode
            tar.addfile(info)
        for name in MERGED_USR:
            if os.path.islink(f"/{name}"):
                info = tarfile.TarInfo(name)
                info.type, info.linkname = tarfile.SYMTYPE, os.readlink(f"/{name}")
                tar.addfile(info)
        for path, data in passwd_files(uid).items():
            info = tarfile.TarInfo(path)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def build_image(
    method: str = "host",
    tag: str = DEFAULT_IMAGE,
    *,
    base_url: str | None = None,
    suite: str = "bookworm",
    mirror: str = DEFAULT_MIRROR,
    log: Callable[[str], None] = print,
) -> str:
    """Build and tag the sandbox image; returns its id."""
    if method not in METHODS:
        raise SandboxConfigError(f"unknown image method {method!r}; use one of {METHODS}")
    client = docker_client(base_url)
    changes = [
        f"LABEL {METHOD_LABEL}={method}",
        f"USER {SANDBOX_UID}:{SANDBOX_UID}",
        "WORKDIR /tmp",
    ]
    repository, _, version = tag.rpartition(":") if ":" in tag.split("/")[-1] else (tag, "", "")
    try:
        if method == "host":
            log("building the skeleton image (containers mount the host's /usr read-only)")
            client.api.import_image_from_data(
                skeleton_tar(), repository=repository, tag=version or "latest", changes=changes
            )
        else:
            with tempfile.TemporaryDirectory(prefix="rlvr-rootfs-") as workdir:
                archive = _debootstrap_archive(workdir, suite, mirror, log)
                log(f"importing {os.path.getsize(archive) // 2**20} MiB into Docker")
                client.api.import_image(
                    src=archive, repository=repository, tag=version or "latest", changes=changes
                )
        image = client.images.get(tag)
    finally:
        client.close()
    log(f"built {tag} ({image.short_id}, method {method})")
    return image.id


def _debootstrap_archive(workdir: str, suite: str, mirror: str, log: Callable[[str], None]) -> str:
    debootstrap = shutil.which("debootstrap")
    if debootstrap is None:
        raise SandboxUnavailable("debootstrap not found: apt-get install debootstrap")
    if os.geteuid() != 0:
        raise SandboxUnavailable(
            "debootstrap needs root; run build-image as root or use --method host"
        )
    rootfs = os.path.join(workdir, "rootfs")
    log(f"debootstrap {suite} from {mirror} (a minute or two)")
    subprocess.run(
        [debootstrap, "--variant=minbase", "--include=python3", suite, rootfs, mirror],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    for path, data in passwd_files().items():
        with open(os.path.join(rootfs, path), "ab") as handle:
            handle.write(data.split(b"\n", 1)[1])  # keep Debian's root line, add the sandbox user
    shutil.rmtree(os.path.join(rootfs, "var/cache/apt/archives"), ignore_errors=True)
    archive = os.path.join(workdir, "rootfs.tar")
    with tarfile.open(archive, "w") as tar:
        tar.add(rootfs, arcname=".")
    return archive


def image_method(client: Any, tag: str) -> str:
    """The build method recorded on an image; raises SandboxUnavailable if it is missing."""
    import docker

    try:
        image = client.images.get(tag)
    except docker.errors.ImageNotFound:
        raise SandboxUnavailable(
            f"Docker image {tag!r} not found; build it with `rlvr sandbox build-image` "
            f"(add --tag {tag} for a custom name)"
        ) from None
    return (image.labels or {}).get(METHOD_LABEL, "debootstrap")
