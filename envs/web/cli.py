"""`rlvr web serve shop|wiki`: serve a generated site on a local port, to browse it yourself or
to share one server between processes (pass its URL as the envs' `server_url`)."""

from __future__ import annotations

import argparse
import contextlib
from typing import Any

SITES = ("shop", "wiki")


def add_commands(subparsers: Any) -> None:
    web = subparsers.add_parser("web", help="the generated web sites of the web envs")
    commands = web.add_subparsers(dest="web_command", metavar="COMMAND")
    serve = commands.add_parser("serve", help="serve the shop or the encyclopedia over HTTP")
    serve.add_argument("site", choices=SITES)
    serve.add_argument("--seed", type=int, default=0, help="the site's seed (env: site_seed)")
    serve.add_argument("--size", type=int, default=None, help="products or articles")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--port", type=int, default=8000)
    serve.set_defaults(func=serve_site)


def serve_site(args: argparse.Namespace) -> int:
    from rlvr.envs.web.server import SiteServer

    if args.site == "shop":
        from rlvr.envs.web.shop import DEFAULT_SIZE, ShopApp, load_catalog

        size = args.size or DEFAULT_SIZE
        app: Any = ShopApp(load_catalog(args.seed, size))
    else:
        from rlvr.envs.web.wiki import DEFAULT_SIZE, WikiApp, load_wiki

        size = args.size or DEFAULT_SIZE
        app = WikiApp(load_wiki(args.seed, size))
    server = SiteServer(app, host=args.host, port=args.port)
    print(f"serving the {args.site} (seed {args.seed}, size {size}) at {server.url}; Ctrl-C stops")
    print(
        f"use it from envs with server_url={server.url!r}, site_seed={args.seed}, site_size={size}",
        flush=True,
    )
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    return 0
