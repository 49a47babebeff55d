"""The `rlvr` command line. Each family adds its subcommands from its own module.

A module listed in `COMMAND_MODULES` defines `add_commands(subparsers)`, registering argparse
subparsers whose `func(args) -> int` runs the command; `COMMAND_WIRING` gives a module below the
top layer the parts from above it that its commands use (its `add_commands` takes them by
keyword), since it may not import them itself. Modules import heavy dependencies inside
their command functions, and a command whose flags are generated from config classes adds them
on first use (`rlvr.config.defer`), so `rlvr --help` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rlvr.config import CommandParser

if TYPE_CHECKING:
    from rlvr.agents.held_out import SuiteEvaluator

COMMAND_MODULES = (
    "rlvr.envs.cli",
    "rlvr.envs.audit.cli",
    "rlvr.agents.cli",
    "rlvr.envs.web.cli",
    "rlvr.leaderboards.cli",
    "rlvr.sandboxes.cli",
    "rlvr.integrations.export",
    "rlvr.integrations.serve_cli",
    "rlvr.demo",
)


def _suite_evaluator() -> SuiteEvaluator:
    """What `rlvr train --eval-suite` scores the suite with: the leaderboards' evaluator, made on
    use (the leaderboards sit above the agents)."""
    from rlvr.leaderboards.training import BenchSuiteEvaluator

    return BenchSuiteEvaluator()


COMMAND_WIRING: dict[str, dict[str, Any]] = {
    "rlvr.agents.cli": {"suite_evaluator": _suite_evaluator},
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rlvr", description="rlvr-gym: environments, verifiers and learners for RLVR"
    )
    parser.add_argument("--version", action="version", version=_version())
    subparsers = parser.add_subparsers(
        dest="command", metavar="COMMAND", parser_class=CommandParser
    )
    for module_name in COMMAND_MODULES:
        wiring = COMMAND_WIRING.get(module_name, {})
        importlib.import_module(module_name).add_commands(subparsers, **wiring)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        if _busy_threads():  # e.g. requests to a hung API server: exiting would wait for them
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(130)
        return 130


def _busy_threads() -> bool:
    main = threading.main_thread()
    return any(t is not main and not t.daemon and t.is_alive() for t in threading.enumerate())


def _version() -> str:
    from rlvr import __version__

    return f"rlvr-gym {__version__}"


if __name__ == "__main__":
    sys.exit(main())
