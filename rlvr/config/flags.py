"""The command line of a config class: a flag per field (`add_flags`), the flags given read
back as file data (`flag_values`) and layered over a `--config` file (`resolve`)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import typing
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from rlvr.config.files import load_file
from rlvr.config.schema import (
    EACH,
    NONE,
    ConfigError,
    T,
    _default,
    _hints,
    _is_dataclass_type,
    _is_mapping,
    _required,
    field_docs,
)
from rlvr.config.values import build, flag_type
from rlvr.core.fields import (
    FieldCli,
    _cache,
    _field_cli,
    _init_fields,
    _sequence_of,
    _strip_optional,
)

_DEST = "config:"  # argparse dests of generated flags start with this; the rest is the target
_ON = object()  # the value of --lora: the optional table on, with what the file gives it


# --- the command line ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Option:
    """One field reachable from the top config: its path and how to read it from text."""

    path: tuple[str, ...]
    field: dataclasses.Field
    tp: Any
    owner: type
    default: Any = dataclasses.MISSING
    """Its default in the top config: a nested field's comes from the default of the field
    holding it (`TrainConfig.sampling`'s `max_new_tokens` is 64, `SamplingParams`' own 256)."""

    @property
    def flag(self) -> str:
        return "--" + ".".join(part.replace("_", "-") for part in self.path if part != EACH)

    @property
    def key(self) -> str:
        return ".".join(self.path)

    @property
    def cli(self) -> FieldCli:
        return _field_cli(self.field)


def _options(cls: type, prefix: tuple[str, ...] = (), within: Any = None) -> Iterator[_Option]:
    """Every field of `cls` and of its nested dataclasses, parents before their fields;
    `within` is the default instance of `cls` where its holder's field gives one."""
    hints = _hints(cls)
    for field in _init_fields(cls):
        default = _default(field) if within is None else getattr(within, field.name)
        option = _Option((*prefix, field.name), field, hints[field.name], cls, default)
        yield option
        inner, _ = _strip_optional(option.tp)
        sequence = _sequence_of(inner)
        if _is_dataclass_type(inner):
            yield from _options(inner, option.path, default if isinstance(default, inner) else None)
        elif sequence is not None and _is_dataclass_type(sequence[0]):
            yield from _options(sequence[0], (*option.path, EACH))


@_cache
def flag_options(cls: type) -> tuple[_Option, ...]:
    """The fields of `cls` (nested ones included) that have a flag of their own: all but the
    non-optional nested dataclasses, reached through their fields (`--grpo.lr`), and the required
    fields of list elements, which each element sets for itself (`--envs.id` would set them all)."""
    return tuple(
        option
        for option in _options(cls)
        if not _is_dataclass_type(option.tp)
        and not (EACH in option.path and _required(option.field))
    )


def _shared_aliases(options: Sequence[_Option]) -> dict[str, list[_Option]]:
    declared: dict[str, list[_Option]] = {}
    for option in options:
        for alias in option.cli.aliases:
            declared.setdefault(alias, []).append(option)
    return {alias: targets for alias, targets in declared.items() if len(targets) > 1}


def _show(value: Any) -> str:
    if value is None:
        return NONE
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return " ".join(_show(item) for item in value) or "(empty)"
    if isinstance(value, Mapping):
        return json.dumps(value)
    return str(value)


def _help(option: _Option) -> str:
    text = field_docs(option.owner).get(option.field.name, "")
    if option.cli.const is not None:
        text += f" Given alone: {option.cli.const}."
    if option.cli.help is not None:
        text = f"{text} {option.cli.help()}".strip()
    if _required(option.field):
        text += " (required)"
    elif _is_dataclass_type(_strip_optional(option.tp)[0]):  # --lora/--no-lora
        text += f" (default: {'off' if option.default is None else 'on'})"
    else:
        text += f" (default: {_show(option.default)})"
    return text.replace("%", "%%")


def _argparse_kind(option: _Option) -> dict[str, Any]:
    """How argparse reads this option's flag (action, nargs, type, choices, metavar)."""
    kind = _kind_of_type(option)
    if option.cli.metavar is not None and "metavar" in kind:
        kind["metavar"] = option.cli.metavar
    if option.cli.const is not None:
        kind.update(nargs="?", const=kind.get("type", str)(option.cli.const))
    return kind


def _kind_of_type(option: _Option) -> dict[str, Any]:
    inner, optional = _strip_optional(option.tp)
    if (inner is bool and not optional) or _is_dataclass_type(inner):
        return {"action": argparse.BooleanOptionalAction}
    sequence = _sequence_of(inner)
    if option.cli.parse is not None:
        if sequence is not None and _is_dataclass_type(sequence[0]):
            return {"action": "append", "metavar": "TEXT"}
        return {"nargs": "*" if sequence else None, "metavar": "TEXT"}
    if sequence is not None:
        element, size = sequence
        return {"nargs": size or "*", **_kind_of_type(dataclasses.replace(option, tp=element))}
    kind: dict[str, Any] = {"type": flag_type(option.tp, numbers=False)}
    if typing.get_origin(inner) is Literal:
        kind["choices"] = [*typing.get_args(inner), *([None] if optional else [])]
        kind["metavar"] = "{" + ",".join(_show(choice) for choice in kind["choices"]) + "}"
    else:
        names = {int: "INT", float: "FLOAT", bool: "{true,false,none}"}
        kind["metavar"] = "JSON" if _is_mapping(inner) else names.get(inner, "TEXT")
    return kind


def _dest(*options: _Option) -> str:
    return _DEST + "|".join(option.key for option in options)


def add_flags(parser: argparse.ArgumentParser, cls: type) -> None:
    """Add a flag for every field of `cls` (see the module docstring). The flags have no argparse
    defaults: `resolve` sees only what was typed, so the dataclass stays the one source."""
    options = flag_options(cls)
    shared = _shared_aliases(options)
    for option in options:
        settings = {"default": argparse.SUPPRESS, "help": _help(option), **_argparse_kind(option)}
        if option.cli.positional:  # a list takes any number of values, anything else one or none
            nargs = "*" if settings.get("nargs") == "*" else "?"
            settings.update(nargs=nargs, metavar=option.field.name.upper())
            parser.add_argument(_dest(option), **settings)
        else:
            aliases = [name for name in option.cli.aliases if name not in (*shared, option.flag)]
            names = [option.flag, *aliases]
            parser.add_argument(*names, dest=_dest(option), **settings)
    for alias, targets in shared.items():
        if len({_strip_optional(target.tp)[0] for target in targets}) > 1:
            raise TypeError(f"{alias} is declared by fields of different types")
        parser.add_argument(
            alias,
            dest=_dest(*targets),
            default=argparse.SUPPRESS,
            help=f"sets {', '.join(t.flag for t in targets)} (a specific one of those flags wins)",
            **_argparse_kind(targets[0]),
        )


def _assign(node: dict[str, Any], path: Sequence[str], value: Any) -> None:
    """Set `path` in file data, making the tables on the way; EACH walks every list element."""
    key, rest = path[0], path[1:]
    if not rest:
        on = isinstance(node.get(key), dict)
        node[key] = (node[key] if on else {}) if value is _ON else value
        return
    if rest[0] == EACH:
        for element in node.get(key) or []:
            _assign(element, rest[1:], value)
        return
    child = node.get(key)
    if not isinstance(child, dict):  # absent, or "none" for an optional table: turned on
        child = node[key] = {}
    _assign(child, rest, value)


def _flag_value(option: _Option, value: Any) -> Any:
    """A parsed flag's value as file data (running the field's `parse`; errors name the flag)."""
    inner, _ = _strip_optional(option.tp)
    if _is_dataclass_type(inner):  # --lora / --no-lora
        return _ON if value else None
    parse = option.cli.parse
    if parse is None:
        return list(value) if isinstance(value, (list, tuple)) else value
    try:
        if _argparse_kind(option).get("action") == "append":  # --env A --env B=2
            return [_plain(parse(item)) for item in value]
        return _plain(parse(value))
    except (ValueError, OSError) as exc:
        raise ConfigError(f"{option.flag}: {exc}") from None


def _plain(value: Any) -> Any:
    """A dataclass made by a `parse` function as a dict of its fields (file data)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: getattr(value, field.name) for field in _init_fields(type(value))}
    return value


def flag_values(cls: type, args: argparse.Namespace) -> list[tuple[tuple[str, ...], Any]]:
    """(path, value) of each generated flag given on the command line, in the order they apply:
    shared aliases (`--lr`) first, so that a specific flag (`--grpo.lr`) wins over them."""
    by_key = {option.key: option for option in flag_options(cls)}
    given = [
        (dest[len(_DEST) :].split("|"), value)
        for dest, value in vars(args).items()
        if dest.startswith(_DEST)
    ]
    order = list(by_key)
    given.sort(
        key=lambda item: (
            len(item[0]) == 1,
            order.index(item[0][0]) if item[0][0] in order else -1,
        )
    )
    assignments = []
    for keys, value in given:
        for key in keys:
            option = by_key.get(key)
            if option is None:  # given to a parent command for another of its subcommands
                flag = "--" + key.replace("_", "-")
                raise ConfigError(f"{flag} is not an option of this command: drop it")
            assignments.append((option.path, _flag_value(option, value)))
    _refuse_contradictions(assignments)
    return assignments


def _refuse_contradictions(assignments: Sequence[tuple[tuple[str, ...], Any]]) -> None:
    """`--no-lora --lora.r 4` says two things: refuse it rather than pick one."""
    for path, value in assignments:
        if value is None:
            inside = [p for p, _ in assignments if p[: len(path)] == path and len(p) > len(path)]
            if inside:
                off = "--no-" + ".".join(path).replace("_", "-")
                on = "--" + ".".join(part for part in inside[0] if part != EACH).replace("_", "-")
                raise ConfigError(f"{off} contradicts {on}: drop one of them")


def resolve(cls: type[T], args: argparse.Namespace, file: str | Path | None = None) -> T:
    """The config of a command: `file`'s data (if any), overridden by the flags given in `args`,
    defaults for the rest. Raises `ConfigError` (a ValueError) naming the file, key or flag."""
    data = load_file(file) if file is not None else {}
    for path, value in flag_values(cls, args):
        _assign(data, path, value)
    for option in flag_options(cls):
        if len(option.path) == 1 and option.key not in data and _required(option.field):
            raise ConfigError(
                f"{option.key} is required: give {_spelling(option)}, or set {option.key} in "
                "a --config file"
            )
    return build(cls, data, str(file) if file is not None else "command line")


def _spelling(option: _Option) -> str:
    """How a user gives this option on the command line."""
    if option.cli.positional:
        return option.field.name.upper()
    return option.cli.aliases[0] if option.cli.aliases else option.flag
