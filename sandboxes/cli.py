"""`rlvr sandbox ...`: check the sandbox backends and build the Docker image."""

from __future__ import annotations

import argparse
import subprocess
import sys


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    sandbox = subparsers.add_parser("sandbox", help="check sandbox backends, build the image")
    commands = sandbox.add_subparsers(dest="sandbox_command", metavar="SUBCOMMAND")

    doctor = commands.add_parser("doctor", help="say which sandbox backends work here and why not")
    doctor.add_argument(
        "--backend", choices=("local", "docker", "all"), default="all", help="backend to check"
    )
    doctor.add_argument("--image", default=None, help="Docker image to check (default: ours)")
    doctor.set_defaults(func=run_doctor)

    build = commands.add_parser("build-image", help="build the Docker sandbox image offline")
    build.add_argument(
        "--method",
        choices=("host", "debootstrap"),
        default="host",
        help="host: skeleton image that mounts the host's /usr (about 1 s); debootstrap: a "
        "self-contained Debian root filesystem (a minute or two, needs a Debian mirror)",
    )
    build.add_argument("--tag", default=None, help="image name (default: rlvr-sandbox:latest)")
    build.add_argument("--suite", default="bookworm", help="Debian suite for debootstrap")
    build.add_argument("--mirror", default=None, help="Debian mirror for debootstrap")
    build.add_argument(
        "--if-missing", action="store_true", help="do nothing if the image already exists"
    )
    build.set_defaults(func=run_build_image)
    sandbox.set_defaults(func=lambda args: _help(sandbox))


def _help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def run_doctor(args: argparse.Namespace) -> int:
    from rlvr.sandboxes.doctor import check_docker, check_local, format_report

    reports = []
    if args.backend in ("local", "all"):
        reports.append(check_local())
    if args.backend in ("docker", "all"):
        reports.append(check_docker(args.image))
    print(format_report(reports))
    return 0 if all(report.works for report in reports) else 1


def run_build_image(args: argparse.Namespace) -> int:
    from rlvr.sandboxes.errors import SandboxError
    from rlvr.sandboxes.image import DEFAULT_IMAGE, DEFAULT_MIRROR, build_image, docker_client

    tag = args.tag or DEFAULT_IMAGE
    try:
        if args.if_missing:
            client = docker_client()
            try:
                existing = [t for image in client.images.list() for t in image.tags]
            finally:
                client.close()
            if tag in existing:
                print(f"{tag} already exists")
                return 0
        build_image(args.method, tag, suite=args.suite, mirror=args.mirror or DEFAULT_MIRROR)
    except (SandboxError, subprocess.CalledProcessError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0
