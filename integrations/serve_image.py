"""`rlvr serve build-image --family FAMILY`: a Docker image serving a family's envs, built offline.

Like the sandbox image (`rlvr sandbox build-image`, rlvr/sandboxes/image.py), nothing is pulled:
the image's root filesystem is assembled here and imported with `docker import`:

- the host's Debian Python (`/usr/bin/python3`, its standard library and the shared libraries it
  and every copied extension module link to, found with `ldd`);
- the installed distributions rlvr-gym and its `serve` extra need, walked from their metadata
  (their RECORD files), less Gradio (openenv-core's optional web UI, off in the image);
- rlvr-gym itself, laid out as the `rlvr` package;
- OpenEnv's packaging conventions: `/app/openenv.yaml` (the manifest), the server on port 8000
  with its `/health` endpoint, so `from_docker_image`-style clients (OpenEnv's
  `LocalDockerProvider`: `docker run -d -p PORT:8000 IMAGE`, then polling `/health`) start it.

The container runs as an unprivileged user and serves `RLVR_ENV` (default: the family's first
env) with the JSON kwargs `RLVR_KWARGS`; `RLVR_ORACLE=1` adds `--oracle`, `RLVR_MAX_SESSIONS`
sets `--max-sessions`, and `RLVR_HOST`/`RLVR_PORT` move it off 0.0.0.0:8000. The code family is
refused: its envs run model-written code in the bubblewrap sandbox, which a container started
without privileges cannot provide, and an env that runs such code is never served without it;
so is the repo family (rlvr/Repo-v0: a shell in the same sandbox).
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import tarfile
from collections.abc import Iterable, Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

from packaging.markers import default_environment
from packaging.requirements import Requirement

from rlvr.integrations.serve import ServeConfigError

FAMILIES: dict[str, tuple[str, ...]] = {
    "math": ("rlvr/Math-v0", "rlvr/MathSelfCorrect-v0", "rlvr/ToolMath-v0", "rlvr/Debate-v0"),
    "sql": ("rlvr/SQL-v0", "rlvr/SQLInteractive-v0", "rlvr/SQLSelfCorrect-v0"),
    "web": ("rlvr/WebShop-v0", "rlvr/WikiQA-v0"),
    "games": (
        "rlvr/Connect4-v0",
        "rlvr/TicTacToe-v0",
        "rlvr/Nim-v0",
        "rlvr/Negotiation-v0",
        "rlvr/ProposerSolver-v1",
    ),
}
"""The envs each image serves (any of them, by `RLVR_ENV`); the first is the default."""
NEEDS_SANDBOX = {"code": "rlvr/Code-v0", "repo": "rlvr/Repo-v0"}
"""Families refused (each with an env to name in the message): they run model-written code."""
EXCLUDED = frozenset({"gradio", "gradio-client", "hf-gradio"})
"""Distributions left out: openenv-core's web UI, imported only when ENABLE_WEB_INTERFACE is on."""
UID = 61000
PORT = 8000
PACKAGE_ROOT = "opt/rlvr/site-packages"
SOURCE_FOLDERS = {
    "rlvr": "rlvr",
    "rlvr/agents": "agents",
    "rlvr/envs": "envs",
    "rlvr/integrations": "integrations",
    "rlvr/leaderboards": "leaderboards",
    "rlvr/sandboxes": "sandboxes",
    "rlvr/verifiers": "verifiers",
}


def image_tag(family: str) -> str:
    return f"rlvr-serve-{family}:latest"


def build_serve_image(
    family: str, *, tag: str | None = None, if_missing: bool = False, log: Any = print
) -> str:
    """Build (and tag) the image serving `family`; returns the tag."""
    from rlvr.sandboxes.image import docker_client

    envs = _family_envs(family)
    tag = tag or image_tag(family)
    client = docker_client()
    try:
        if if_missing and any(tag in image.tags for image in client.images.list()):
            log(f"{tag} already exists")
            return tag
        log(f"assembling the root filesystem of {tag} (the host's Python and the installed deps)")
        archive = root_filesystem(envs)
        repository, _, version = tag.rpartition(":")
        log(f"importing {len(archive) // 2**20} MiB into Docker")
        client.api.import_image_from_data(
            archive, repository=repository, tag=version, changes=_changes(family, envs)
        )
    finally:
        client.close()
    log(f"built {tag}: docker run -p 127.0.0.1:{PORT}:{PORT} {tag}")
    return tag


def _family_envs(family: str) -> tuple[str, ...]:
    if family in NEEDS_SANDBOX:
        raise ServeConfigError(
            f"the {family} family runs model-written code in the bubblewrap sandbox, which an "
            "unprivileged container cannot provide; serve it on a host with the sandbox: "
            f"rlvr serve {NEEDS_SANDBOX[family]}"
        )
    if family not in FAMILIES:
        raise ServeConfigError(f"unknown family {family!r}; choose one of {sorted(FAMILIES)}")
    return FAMILIES[family]


def _changes(family: str, envs: tuple[str, ...]) -> list[str]:
    return [
        f"ENV PYTHONPATH=/{PACKAGE_ROOT}",
        "ENV HOME=/tmp",
        f"ENV RLVR_ENV={envs[0]}",
        f"EXPOSE {PORT}",
        f"USER {UID}:{UID}",
        "WORKDIR /tmp",
        f"LABEL rlvr.serve.family={family}",
        f"LABEL rlvr.serve.envs={','.join(envs)}",
        'CMD ["/usr/bin/python3", "-m", "rlvr.integrations.serve_image"]',
    ]


# --- the root filesystem --------------------------------------------------------------------------


def root_filesystem(envs: Iterable[str]) -> bytes:
    """The image's root filesystem as a tar archive."""
    python = Path("/usr/bin/python3").resolve()
    _check_python(python)
    files = dict(_site_packages())
    files.update(_sources())
    stdlib = Path(f"/usr/lib/python{sys.version_info.major}.{sys.version_info.minor}")
    native = [python, *(p for p in files.values() if p.suffix == ".so")]
    native += list(stdlib.rglob("*.so"))
    buffer = io.BytesIO()
    seen: set[str] = set()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        _skeleton(tar)
        for binary in (Path("/usr/bin/python3"), *sorted(_shared_libraries(native))):
            _add_library(tar, binary, seen)
        tar.add(stdlib, arcname=str(stdlib).lstrip("/"), filter=_no_caches)
        for arcname, source in sorted(files.items()):
            tar.add(source, arcname=arcname, recursive=False)
        _add_text(tar, "app/openenv.yaml", _manifest(envs))
    return buffer.getvalue()


def _check_python(python: Path) -> None:
    want = f"{sys.version_info.major}.{sys.version_info.minor}"
    found = subprocess.run(
        [str(python), "-c", "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    if found != want:
        raise ServeConfigError(
            f"the image runs the host's /usr/bin/python3 ({found or 'missing'}) with the "
            f"packages installed for Python {want}: build it on a host whose python3 is {want}"
        )


def _skeleton(tar: tarfile.TarFile) -> None:
    for name, mode in (("tmp", 0o1777), ("proc", 0o555), ("dev", 0o755), ("etc", 0o755)):
        info = tarfile.TarInfo(name)
        info.type, info.mode = tarfile.DIRTYPE, mode
        tar.addfile(info)
    for name in ("bin", "lib", "lib64", "sbin"):
        if os.path.islink(f"/{name}"):
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, os.readlink(f"/{name}")
            tar.addfile(info)
    _add_text(
        tar,
        "etc/passwd",
        f"root:x:0:0:root:/root:/usr/sbin/nologin\nrlvr:x:{UID}:{UID}:rlvr:/tmp:/usr/sbin/nologin\n",
    )
    _add_text(tar, "etc/group", f"root:x:0:\nrlvr:x:{UID}:\n")


def _no_caches(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    return None if "__pycache__" in info.name or "/test/" in info.name else info


def _add_text(tar: tarfile.TarFile, name: str, text: str) -> None:
    data = text.encode()
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), 0o644
    tar.addfile(info, io.BytesIO(data))


def _add_library(tar: tarfile.TarFile, path: Path, seen: set[str]) -> None:
    """A file at its canonical path (its folder's real path), following its symlink chain (a
    library's soname links to the versioned file), every link and the file itself added."""
    while True:
        path = Path(os.path.realpath(path.parent)) / path.name
        arcname = str(path).lstrip("/")
        if arcname in seen:
            return
        seen.add(arcname)
        if not path.is_symlink():
            tar.add(path, arcname=arcname)
            return
        link = os.readlink(path)
        info = tarfile.TarInfo(arcname)
        info.type, info.linkname = tarfile.SYMTYPE, link
        tar.addfile(info)
        path = path.parent / link


_LDD_LINE = re.compile(r"(?:=>\s*)?(/\S+)\s+\(0x")


def _shared_libraries(binaries: Iterable[Path]) -> set[Path]:
    """Every shared library the binaries load (ldd), in /usr or under the merged-/usr links."""
    found: set[Path] = set()
    for binary in binaries:
        result = subprocess.run(["ldd", str(binary)], capture_output=True, text=True)
        for line in result.stdout.splitlines():
            match = _LDD_LINE.search(line)
            if match and not match.group(1).startswith(str(Path(sys.prefix))):
                found.add(Path(match.group(1)))
    return {path for path in found if path.exists() and "site-packages" not in str(path)}


def _site_packages() -> Iterator[tuple[str, Path]]:
    """(path in the image, file here) of every installed distribution the server needs."""
    for dist in _closure(["rlvr-gym"], extras={"rlvr-gym": {"serve"}}):
        if _name(dist) == "rlvr-gym":
            continue  # the source tree goes in as the `rlvr` package (below)
        base = Path(str(dist.locate_file("")))
        for file in dist.files or ():
            source = Path(str(dist.locate_file(file)))
            relative = Path(str(file))
            if ".." in relative.parts or "__pycache__" in relative.parts or not source.is_file():
                continue  # scripts outside site-packages, caches
            if base not in source.parents:
                continue
            yield f"{PACKAGE_ROOT}/{relative}", source


def _closure(names: Iterable[str], extras: dict[str, set[str]]) -> list[metadata.Distribution]:
    """The installed distributions `names` require, with their requirements, recursively."""
    found: dict[str, metadata.Distribution] = {}
    pending = [(name, extras.get(name, set())) for name in names]
    while pending:
        name, wanted = pending.pop()
        key = _normal(name)
        if key in found or key in EXCLUDED:
            continue
        dist = metadata.distribution(name)
        found[key] = dist
        for text in dist.requires or ():
            requirement = Requirement(text)
            if _applies(requirement, wanted):
                pending.append((requirement.name, set(requirement.extras)))
    return list(found.values())


def _applies(requirement: Requirement, extras: set[str]) -> bool:
    if requirement.marker is None:
        return True
    environment: dict[str, Any] = dict(default_environment().items())
    return any(
        requirement.marker.evaluate({**environment, "extra": extra}) for extra in ("", *extras)
    )


def _name(dist: metadata.Distribution) -> str:
    return _normal(dist.metadata["Name"])


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _sources() -> Iterator[tuple[str, Path]]:
    """rlvr-gym's own files laid out as the `rlvr` package, and its metadata (version)."""
    root = Path(__file__).resolve().parents[1]
    for package, folder in SOURCE_FOLDERS.items():
        for path in sorted((root / folder).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                yield f"{PACKAGE_ROOT}/{package}/{path.relative_to(root / folder)}", path


def _manifest(envs: Iterable[str]) -> str:
    envs = list(envs)
    return (
        "spec_version: 1\n"
        f"name: rlvr-{envs[0].split('/')[-1].lower()}\n"
        "type: space\n"
        "runtime: fastapi\n"
        "app: rlvr.integrations.serve:app_from_environ\n"
        f"port: {PORT}\n"
        f"# envs: {', '.join(envs)} (choose with RLVR_ENV)\n"
    )


# --- the container's entry point ------------------------------------------------------------------


def main() -> None:
    """Serve `RLVR_ENV` on 0.0.0.0:8000 inside the container (the port Docker publishes;
    `RLVR_HOST` and `RLVR_PORT` change them, e.g. on the host's network)."""
    from rlvr.integrations.serve import ServeConfig, serve

    config = ServeConfig(
        os.environ["RLVR_ENV"],
        kwargs=json.loads(os.environ.get("RLVR_KWARGS") or "{}"),
        host=os.environ.get("RLVR_HOST", "0.0.0.0"),
        port=int(os.environ.get("RLVR_PORT", str(PORT))),
        oracle=os.environ.get("RLVR_ORACLE", "") in ("1", "true", "yes"),
        max_sessions=int(os.environ.get("RLVR_MAX_SESSIONS", "64")),
    )
    serve(config)


if __name__ == "__main__":
    main()
