"""Subcommands built on config classes: `--config`, `--print-config` and the generated flags
(`add_command`), added on first use so `rlvr --help` does not import every config class."""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rlvr.config.files import to_toml
from rlvr.config.flags import add_flags, flag_options, resolve

# --- subcommands whose flags are made on first use -----------------------------------------------


class CommandParser(argparse.ArgumentParser):
    """An ArgumentParser whose arguments may be added on first use (`defer`): generating a
    command's flags imports its config classes (torch, for `rlvr train`), which `rlvr --help`
    and the other commands must not pay for."""

    _populate: Callable[[argparse.ArgumentParser], None] | None = None

    def defer(self, populate: Callable[[argparse.ArgumentParser], None]) -> None:
        self._populate = populate

    def _ensure_populated(self) -> None:
        populate, self._populate = self._populate, None
        if populate is not None:
            try:
                populate(self)
            except ImportError as exc:  # a missing extra: one line, not a traceback
                self.error(str(exc))

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        self._ensure_populated()
        return super().parse_known_args(args, namespace)

    def format_usage(self) -> str:
        self._ensure_populated()
        return super().format_usage()

    def format_help(self) -> str:
        self._ensure_populated()
        return super().format_help()


def defer(
    parser: argparse.ArgumentParser, populate: Callable[[argparse.ArgumentParser], None]
) -> None:
    """Add `parser`'s arguments on first use when it supports that (a `CommandParser`, as
    `rlvr.cli` makes them), else now."""
    if isinstance(parser, CommandParser):
        parser.defer(populate)
    else:
        populate(parser)


def add_config_arguments(parser: argparse.ArgumentParser, cls: type) -> None:
    """`--config FILE`, `--print-config` and the flags of `cls` (listed by `--help`; the usage
    line stays short)."""
    positionals = [f"[{o.field.name.upper()}]" for o in flag_options(cls) if o.cli.positional]
    parser.usage = " ".join(["%(prog)s", *positionals, "[--config FILE.toml] [options]"])
    parser.add_argument(
        "--config",
        metavar="FILE.toml",
        help="start from this TOML config file (as --print-config writes them); flags override "
        "its values",
    )
    parser.add_argument(
        "--print-config",
        action="store_true",
        help="print the resolved config as TOML and exit without running",
    )
    add_flags(parser, cls)


def add_command(
    subparsers: Any,
    name: str,
    config_class: Callable[[], type],
    run: Callable[[Any, argparse.Namespace], int],
    *,
    config_file: Callable[[argparse.Namespace], str | Path | None] = lambda args: args.config,
    **parser_settings: Any,
) -> argparse.ArgumentParser:
    """A subcommand whose flags, `--config` and `--print-config` come from `config_class()`
    (imported on first use): it resolves the config and calls `run(config, args)`."""
    parser = subparsers.add_parser(name, **parser_settings)
    defer(parser, lambda parser: add_config_arguments(parser, config_class()))
    parser.set_defaults(func=functools.partial(_run_command, config_class, run, config_file))
    return parser


def _run_command(
    config_class: Callable[[], type],
    run: Callable[[Any, argparse.Namespace], int],
    config_file: Callable[[argparse.Namespace], str | Path | None],
    args: argparse.Namespace,
) -> int:
    try:  # a bad file, key or flag value is reported in one line
        config: Any = resolve(config_class(), args, config_file(args))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.print_config:
        print(to_toml(config), end="")
        return 0
    return run(config, args)
