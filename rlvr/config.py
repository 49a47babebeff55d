"""Config dataclasses as the one source of settings: flags, files and defaults all come from them.

A config is a dataclass whose fields hold the defaults, each with a docstring under it. From the
class alone this module

- generates the command line (`add_flags`): `--field-name` for every field, `--outer.field-name`
  for the fields of a nested dataclass, the field's docstring and default as its help,
  `--name/--no-name` for booleans and for an optional nested dataclass (`--lora/--no-lora`), and
  the extra names a field declares in its metadata (`field(..., metadata=cli("--out"))`). A name
  declared by several fields (`--lr` on both learners) sets all of them;
- reads a TOML file into it (`load_file` + `build`), refusing an unknown key or a value of the
  wrong type with the file, the key and what is accepted;
- refuses numbers no field means, wherever a config is made (file, flag or Python, through
  `check_numbers` in each config's `__post_init__`): NaN or an infinity in a float field, an int
  beyond 64 bits, and a value outside the `Range` a field's type declares
  (`seed: Seed`, `episodes: Positive`);
- layers the flags over a file (`resolve`: file first, then flags, then the defaults);
- writes it back as TOML (`to_toml`, `write_config`) so that reading the file gives an equal config.

TOML has no null: None is spelled "none" in files and flags (`max_turns = "none"`,
`--max-grad-norm none`), and a mapping holding None is written as a JSON string.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import inspect
import itertools
import json
import math
import re
import sys
import textwrap
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar, Union

from rlvr.core.fields import INT64 as INT64
from rlvr.core.fields import MAX_SEED as MAX_SEED
from rlvr.core.fields import FieldCli as FieldCli
from rlvr.core.fields import Positive as Positive
from rlvr.core.fields import Range as Range
from rlvr.core.fields import Seed as Seed
from rlvr.core.fields import _cache as _cache
from rlvr.core.fields import _declared_hints as _declared_hints
from rlvr.core.fields import _field_cli as _field_cli
from rlvr.core.fields import _init_fields as _init_fields
from rlvr.core.fields import _number_problem as _number_problem
from rlvr.core.fields import _sequence_of as _sequence_of
from rlvr.core.fields import _strip_optional as _strip_optional
from rlvr.core.fields import check_numbers as check_numbers
from rlvr.core.fields import cli as cli

T = TypeVar("T")


NONE = "none"
"""How None is written in config files and flags (TOML has no null)."""
EACH = "*"
"""Path part for every element of a list of dataclasses (`--envs.kwargs` sets each env's)."""
_DEST = "config:"  # argparse dests of generated flags start with this; the rest is the target
_ON = object()  # the value of --lora: the optional table on, with what the file gives it


class ConfigError(ValueError):
    """A config file, key or flag value that cannot be used; the message names where and why."""


# --- reading the classes ----------------------------------------------------------------------


@_cache
def field_docs(cls: type) -> dict[str, str]:
    """The docstring written under each field of `cls` (and of its dataclass bases), one line."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass):
            continue
        try:
            source = textwrap.dedent(inspect.getsource(klass))
        except (OSError, TypeError):  # no source (a class made at run time): no help text
            continue
        body = ast.parse(source).body[0].body  # type: ignore[attr-defined]
        for node, after in itertools.pairwise(body):
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                docs[node.target.id] = " ".join(after.value.value.split())
    return docs


@_cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _is_dataclass_type(tp: Any) -> bool:
    return isinstance(tp, type) and dataclasses.is_dataclass(tp)


def _is_mapping(tp: Any) -> bool:
    return tp in (dict, Mapping) or typing.get_origin(tp) in (dict, Mapping)


def _required(field: dataclasses.Field) -> bool:
    return field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING


def _default(field: dataclasses.Field) -> Any:
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return field.default


def field_default(cls: type, name: str) -> Any:
    """The default of field `name` of `cls` (`dataclasses.MISSING` for a required field)."""
    return _default(next(field for field in _init_fields(cls) if field.name == name))


def _describe(tp: Any) -> str:
    inner, optional = _strip_optional(tp)
    if typing.get_origin(inner) is Literal:
        text = "one of " + ", ".join(str(arg) for arg in typing.get_args(inner))
    elif _is_mapping(inner):
        text = "a table (or a JSON object)"
    elif _is_dataclass_type(inner):
        text = f"a table of {inner.__name__} fields"
    elif (sequence := _sequence_of(inner)) is not None:
        size = f"{sequence[1]} " if sequence[1] else ""
        text = f"a list of {size}({_describe(sequence[0])})"
    else:
        names = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}
        text = names.get(inner, getattr(inner, "__name__", str(inner)))
    return f"{text} or {NONE!r}" if optional else text


# --- values: from text, from file data, to file data ------------------------------------------


def _json_object(text: str) -> dict[str, Any]:
    from rlvr.core.jsonfiles import JSONReadError, parse_json  # stdlib only; imported on use

    example = "write an object, e.g. '{\"difficulty\": 1}'"
    try:
        value = parse_json(text, multiline=True, allow_nan=False)
    except JSONReadError as exc:
        raise ValueError(f"not valid JSON: {exc}; {example}, got {text!r:.100}") from None
    if not isinstance(value, dict):
        raise ValueError(
            "must be a JSON object of keyword arguments, e.g. '{\"difficulty\": 1}', "
            f"got {text!r:.100}"
        )
    return value


def _without_extras(tp: Any) -> Any:
    """`tp` without its `Annotated` wrapper (`Seed` -> int, `Seed | None` -> int | None)."""
    if typing.get_origin(tp) is Annotated:
        return _without_extras(typing.get_args(tp)[0])
    inner, optional = _strip_optional(tp)
    if optional and typing.get_origin(inner) is Annotated:
        return Union[_without_extras(inner), None]  # noqa: UP007
    return tp


def from_text(text: str, tp: Any) -> Any:
    """A flag's text as a value of type `tp` (ValueError naming what is accepted)."""
    tp = _without_extras(tp)
    inner, optional = _strip_optional(tp)
    if optional and text == NONE:
        return None
    if typing.get_origin(inner) is Literal:
        for choice in typing.get_args(inner):
            if str(choice) == text:
                return choice
    elif inner is bool and text.lower() in ("true", "false"):
        return text.lower() == "true"
    elif _is_mapping(inner):
        return _json_object(text)
    elif inner in (str, Any):
        return text
    elif inner in (int, float):
        try:
            return inner(text)
        except ValueError:
            pass
    raise ValueError(f"expected {_describe(tp)}, got {text!r}")


def flag_type(tp: Any, *, numbers: bool = True) -> Callable[[str], Any]:
    """An argparse `type=` reading a flag's text as a value of `tp` (see `from_text`) and, with
    `numbers`, refusing the numbers `check_numbers` refuses: `type=flag_type(Seed)`,
    `type=flag_type(Mapping[str, Any])` (a JSON object). Bad text is a usage error saying why.
    (The generated flags leave numbers to `build`, which names the key as a file's would be.)"""

    def convert(text: str) -> Any:
        try:
            value = from_text(text, tp)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        problem = _number_problem(value, tp, "") if numbers else None
        if problem:
            raise argparse.ArgumentTypeError(problem.strip())
        return value

    return convert


def _coerce(value: Any, tp: Any, source: str, key: str) -> Any:
    """`value` (from a TOML file or a flag) checked against `tp`, converted where TOML differs
    from Python (lists to tuples, "none" to None, tables to dataclasses)."""
    inner, optional = _strip_optional(tp)
    if optional and (value is None or value == NONE):
        return None
    if inner is Any:
        return value
    if _is_dataclass_type(inner):
        if isinstance(value, inner):
            return value
        if isinstance(value, Mapping):
            return _build(inner, value, source, key)
    elif typing.get_origin(inner) is Literal:
        if value in typing.get_args(inner):
            return value
    elif _is_mapping(inner):
        if isinstance(value, Mapping):
            return dict(value)
        if isinstance(value, str):
            try:
                return _json_object(value)
            except ValueError as exc:
                raise ConfigError(f"{source}: {key}: {exc}") from None
    elif (sequence := _sequence_of(inner)) is not None:
        element, size = sequence
        if isinstance(value, (list, tuple)) and size in (None, len(value)):
            return tuple(
                _coerce(item, element, source, f"{key}[{i}]") for i, item in enumerate(value)
            )
    elif inner is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif inner is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif isinstance(inner, type):
        if isinstance(value, inner):
            return value
    else:
        return value  # a union of several types: the dataclass checks it
    raise ConfigError(f"{source}: {key}: expected {_describe(tp)}, got {value!r}")


def _build(cls: type[T], data: Mapping[str, Any], source: str, table: str) -> T:
    fields = {field.name: field for field in _init_fields(cls)}
    where = f"[{table}]" if table else "the top level"
    unknown = [name for name in data if name not in fields]
    if unknown:
        raise ConfigError(
            f"{source}: unknown key {unknown[0]!r} in {where}; {cls.__name__} accepts: "
            + ", ".join(fields)
        )
    missing = [name for name, field in fields.items() if name not in data and _required(field)]
    if missing:
        doc = field_docs(cls).get(missing[0], "")
        raise ConfigError(f"{source}: {where} needs {missing[0]!r} ({doc})")
    hints, declared = _hints(cls), _declared_hints(cls)
    bases = _table_bases(cls, data)
    values = {}
    for name, value in data.items():
        key = f"{table}.{name}" if table else name
        base = _over_default(fields[name], value, bases.get(name))
        values[name] = _coerce(base, hints[name], source, key)
        if problem := _number_problem(values[name], declared[name], key):
            raise ConfigError(f"{source}: {problem}")
    try:
        return cls(**values)
    except ConfigError:
        raise
    except ValueError as exc:  # the class's own checks: name the file and the table
        raise ConfigError(f"{source}: {f'[{table}] ' if table else ''}{exc}") from None


def _over_default(field: dataclasses.Field, value: Any, base: Any = None) -> Any:
    """A table given for a nested dataclass field, over the field's own default (or over `base`,
    where the holder names one): the keys a file or the flags leave out keep the holder's
    defaults (`EvalConfig.sampling` is greedy, and `--max-new-tokens 8` alone must not bring back
    `SamplingParams`' temperature 1)."""
    default = base if base is not None else None if _required(field) else _default(field)
    if not isinstance(value, Mapping) or not dataclasses.is_dataclass(default):
        return value
    return {**dump(default), **value}


def _table_bases(cls: type, data: Mapping[str, Any]) -> Mapping[str, Any]:
    """What the tables given for `cls`'s nested fields are taken over, where that depends on
    other keys: a config class defines `table_bases(data) -> {field name: instance}` (a static
    method; `rlvr bench`'s sampling flags override the named suite's own `[sampling]`, so the
    keys they leave out keep the suite's values, not `SamplingParams`' defaults)."""
    table_bases = getattr(cls, "table_bases", None)
    return table_bases(data) if table_bases is not None else {}


def build(cls: type[T], data: Mapping[str, Any], source: str = "config", table: str = "") -> T:
    """`cls` from file data (nested dicts and lists): unknown keys and values of the wrong type
    raise `ConfigError` naming `source` (the file) and the key; missing keys take the defaults.
    `table` names where `data` sits in its file (`build(SamplingParams, data, "suite.toml",
    "sampling")` names the keys `sampling.temperature`)."""
    return _build(cls, upgraded(cls, data), source, table)


def upgraded(cls: type, data: Mapping[str, Any]) -> Mapping[str, Any]:
    """File data written by an older version of `cls` in today's layout: a config class that
    moved keys defines `from_older(data) -> data` (a static method), which this applies."""
    from_older = getattr(cls, "from_older", None)
    return from_older(data) if from_older is not None else data


def _has_none(value: Any) -> bool:
    if isinstance(value, Mapping):
        return any(_has_none(item) for item in value.values())
    if isinstance(value, (list, tuple)):
        return any(_has_none(item) for item in value)
    return value is None


class _Inline(dict):
    """A mapping field's value: written as an inline table, never as a [table]."""


def _to_data(value: Any, tp: Any, strict: bool) -> Any:
    inner, _ = _strip_optional(tp)
    if value is None:
        return NONE
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dump(value, strict=strict)
    if _is_mapping(inner) and isinstance(value, Mapping):
        try:
            plain = json.loads(json.dumps(dict(value), default=None if strict else repr))
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"cannot write {value!r} to a config file ({exc})") from None
        return json.dumps(plain) if _has_none(plain) else _Inline(plain)
    if (sequence := _sequence_of(inner)) is not None and isinstance(value, (list, tuple)):
        return [_to_data(item, sequence[0], strict) for item in value]
    return value


def dump(config: Any, *, strict: bool = True) -> dict[str, Any]:
    """`config` as file data: nested dataclasses as dicts, tuples as lists, None as "none";
    `build(type(config), dump(config)) == config`. A mapping holding objects a file cannot hold
    (env kwargs given from Python) raises `ConfigError`, or with `strict=False` keeps their repr."""
    hints = _hints(type(config))
    return {
        field.name: _to_data(getattr(config, field.name), hints[field.name], strict)
        for field in _init_fields(type(config))
    }


# --- TOML ---------------------------------------------------------------------------------------

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}


def _toml_string(text: str) -> str:
    escaped = (
        _ESCAPES.get(char)
        or (f"\\u{ord(char):04x}" if ord(char) < 0x20 or ord(char) == 0x7F else char)
        for char in text
    )
    return '"' + "".join(escaped) + '"'


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else _toml_string(key)


def _toml_value(value: Any, where: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return repr(value) if math.isfinite(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(item, where) for item in value) + "]"
    if isinstance(value, Mapping):
        items = (f"{_toml_key(k)} = {_toml_value(v, f'{where}.{k}')}" for k, v in value.items())
        return "{ " + ", ".join(items) + " }" if value else "{}"
    raise ConfigError(f"{where}: cannot write {value!r} ({type(value).__name__}) as TOML")


def _is_table(value: Any) -> bool:
    return isinstance(value, dict) and not isinstance(value, _Inline)


def _is_table_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(_is_table(item) for item in value)


def toml_text(data: Mapping[str, Any], table: tuple[str, ...] = ()) -> str:
    """`data` (as `dump` makes it) as TOML: plain values first, then [tables] and [[lists]]."""
    where = ".".join(table) or "top level"
    lines = [
        f"{_toml_key(key)} = {_toml_value(value, f'{where}.{key}')}"
        for key, value in data.items()
        if not (_is_table(value) or _is_table_list(value))
    ]
    for key, value in data.items():
        name = (*table, key)
        header = ".".join(_toml_key(part) for part in name)
        for element in value if _is_table_list(value) else [value] if _is_table(value) else []:
            brackets = ("[[", "]]") if isinstance(value, list) else ("[", "]")
            lines += ["", f"{brackets[0]}{header}{brackets[1]}", toml_text(element, name)]
    return "\n".join(lines).strip("\n")


def to_toml(config: Any, comment: str | None = None) -> str:
    """`config` as the text of a TOML file (with `comment` as its first lines)."""
    head = "".join(f"# {line}\n" for line in comment.splitlines()) + "\n" if comment else ""
    return head + toml_text(dump(config)) + "\n"


def write_config(config: Any, path: str | Path, comment: str | None = None) -> Path:
    path = Path(path)
    path.write_text(to_toml(config, comment), encoding="utf-8")
    return path


def load_file(path: str | Path) -> dict[str, Any]:
    """The data of a TOML config file (`ConfigError` naming the file when it cannot be read)."""
    if Path(path).suffix in (".yaml", ".yml", ".json"):
        raise ConfigError(
            f"{path}: config files are TOML (e.g. run.toml; --print-config writes one)"
        )
    return parse_toml(read_text_file(path), str(path))


def read_text_file(path: str | Path, what: str = "config file") -> str:
    """The text of a UTF-8 file a user names (a leading BOM dropped); `ConfigError` naming the
    file when it is missing, unreadable or not UTF-8."""
    from rlvr.core.jsonfiles import JSONReadError, decode_utf8  # stdlib only; imported on use

    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    try:
        return decode_utf8(data.removeprefix(b"\xef\xbb\xbf"))
    except JSONReadError as exc:
        raise ConfigError(f"{what} {path}: {exc}") from None


def parse_toml(text: str, source: str = "config") -> dict[str, Any]:
    """The data of a TOML text (`ConfigError` naming `source` when it is not valid TOML, or
    nests tables and arrays deeper than any config: tomllib would exhaust the stack)."""
    from rlvr.core import tomlfiles  # stdlib only; imported on use

    try:
        return tomlfiles.parse_toml(text)
    except tomlfiles.TOMLReadError as exc:
        raise ConfigError(f"{source}: {exc}") from None


def read_config(cls: type[T], path: str | Path) -> T:
    """The config a TOML file describes (as `write_config` writes it, or written by hand)."""
    return build(cls, load_file(path), str(path))


def differences(
    cls: type, before: Mapping[str, Any], after: Mapping[str, Any], prefix: str = ""
) -> list[tuple[str, Any, Any]]:
    """(dotted key, before, after) for each field of `cls` whose value differs between two file
    datas (`dump` output); nested dataclasses are compared field by field. A key `before` lacks
    (written by a version without that field) is not a difference."""
    found = []
    hints = _hints(cls)
    for field in _init_fields(cls):
        if field.name not in before or field.name not in after:
            continue
        old, new = _normalised(before[field.name]), _normalised(after[field.name])
        inner, _ = _strip_optional(hints[field.name])
        if _is_dataclass_type(inner) and isinstance(old, dict) and isinstance(new, dict):
            found += differences(inner, old, new, f"{prefix}{field.name}.")
        elif old != new:
            found.append((prefix + field.name, old, new))
    return found


def _normalised(value: Any) -> Any:
    """File data with None as "none" and tuples as lists (so older saved forms compare equal)."""
    if value is None:
        return NONE
    if isinstance(value, Mapping):
        return {key: _normalised(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_normalised(item) for item in value]
    return value


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
