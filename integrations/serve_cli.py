"""`rlvr serve ENV_ID ...` and `rlvr serve build-image ...` (parsing only: the server and the
image builder load when the command runs, so `rlvr --help` imports neither)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

BUILD_IMAGE = "build-image"
SERVE_ONLY = ("kwargs", "host", "port", "workers", "max_sessions", "idle_timeout", "oracle")
BUILD_ONLY = ("family", "tag", "if_missing")


def add_commands(subparsers: Any) -> None:
    serve = subparsers.add_parser(
        "serve",
        help="serve an env over OpenEnv's protocol (HTTP + WebSocket), or build its image",
        description="rlvr serve ENV_ID [options]: serve ENV_ID to remote trainers (OpenEnv); "
        "rlvr serve build-image --family FAMILY: build a Docker image serving a family's "
        "envs, offline. See docs/serving.md.",
    )
    serve.add_argument("env_id", help="e.g. rlvr/Math-v0, or build-image")
    serve.add_argument("--kwargs", type=json.loads, default=None, help="env kwargs as JSON")
    serve.add_argument("--host", default=None, help="address to bind (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=None, help="port (default: 8000)")
    serve.add_argument("--workers", type=int, default=None, help="uvicorn worker processes")
    serve.add_argument(
        "--max-sessions", type=int, default=None, help="sessions per worker (default: 64)"
    )
    serve.add_argument(
        "--idle-timeout", type=float, default=None, help="seconds before an idle session closes"
    )
    serve.add_argument(
        "--oracle",
        action="store_true",
        default=None,
        help="serve the oracle's reply in each session's state (reads the gold: for check_env "
        "and baselines, never for training)",
    )
    serve.add_argument("--family", default=None, help="build-image: the env family to serve")
    serve.add_argument("--tag", default=None, help="build-image: image name")
    serve.add_argument(
        "--if-missing", action="store_true", default=None, help="build-image: skip if it exists"
    )
    serve.set_defaults(func=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    building = args.env_id == BUILD_IMAGE
    wrong = [name for name in (SERVE_ONLY if building else BUILD_ONLY) if getattr(args, name)]
    if wrong:
        flag = "--" + wrong[0].replace("_", "-")
        what = "build-image" if building else "serving an env"
        print(f"error: {flag} is not an option of {what} (see rlvr serve --help)", file=sys.stderr)
        return 2
    try:
        return _build(args) if building else _serve(args)
    except (ValueError, ImportError, OSError) as exc:  # a bad id, argument or setup: one line
        print(f"error: {exc}", file=sys.stderr)
        return 1


def _serve(args: argparse.Namespace) -> int:
    from rlvr.integrations.serve import ServeConfig, serve

    given = {
        name: getattr(args, name)
        for name in SERVE_ONLY
        if getattr(args, name) is not None and name != "oracle"
    }
    config = ServeConfig(args.env_id, oracle=bool(args.oracle), **given)
    serve(config)
    return 0


def _build(args: argparse.Namespace) -> int:
    from rlvr.integrations.serve_image import build_serve_image

    if args.family is None:
        print("error: build-image needs --family (e.g. --family math)", file=sys.stderr)
        return 2
    build_serve_image(args.family, tag=args.tag, if_missing=bool(args.if_missing))
    return 0
