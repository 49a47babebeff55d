"""`rlvr web serve shop|wiki`: serve a generated site on a local port, to browse it yourself or
to share one server between processes (pass its URL as the envs' `server_url`)."""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import Annotated, Any

from rlvr.config import Positive, Range, flag_type

SITES = ("shop", "wiki")
SiteSeed = Annotated[int, Range(0)]  # what the envs' site_seed accepts
Port = Annotated[int, Range(0, 65535)]


def add_commands(subparsers: Any) -> None:
    web = subparsers.add_parser("web", help="the generated web sites of the web envs")
    commands = web.add_subparsers(dest="web_command", metavar="COMMAND")
    serve = commands.add_parser("serve", help="serve the shop or the encyclopedia over HTTP")
    serve.add_argument("site", choices=SITES)
    serve.add_argument(
        "--seed", type=flag_type(SiteSeed), default=0, help="the site's seed (env: site_seed)"
    )
    serve.add_argument(
        "--size", type=flag_type(Positive), default=None, help="products or articles"
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--port", type=flag_type(Port), default=8000, help="0: any free port")
    serve.set_defaults(func=serve_site)


def serve_site(args: argparse.Namespace) -> int:
    from rlvr.envs.errors import EnvError

    try:  # a size the site refuses, a host or port it cannot listen on: one line
        server, size = _server(args)
    except (EnvError, OSError) as exc:
        print(f"error: rlvr web serve {args.site}: {exc}", file=sys.stderr)
        return 1
    print(f"serving the {args.site} (seed {args.seed}, size {size}) at {server.url}; Ctrl-C stops")
    print(
        f"use it from envs with server_url={server.url!r}, site_seed={args.seed}, site_size={size}",
        flush=True,
    )
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    return 0


def _server(args: argparse.Namespace) -> tuple[Any, int]:
    from rlvr.envs.web.server import SiteServer

    if args.site == "shop":
        from rlvr.envs.web.shop import DEFAULT_SIZE, ShopApp, load_catalog

        size = args.size or DEFAULT_SIZE
        app: Any = ShopApp(load_catalog(args.seed, size))
    else:
        from rlvr.envs.web.wiki import DEFAULT_SIZE, WikiApp, load_wiki

        size = args.size or DEFAULT_SIZE
        app = WikiApp(load_wiki(args.seed, size))
    return SiteServer(app, host=args.host, port=args.port), size
