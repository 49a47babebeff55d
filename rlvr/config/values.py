"""Values: a flag's text or a file's data checked against a field's type and built into the
config dataclass (`build`), and a config turned back into file data (`dump`, `differences`)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, Union

from rlvr.config.schema import (
    NONE,
    ConfigError,
    T,
    _default,
    _describe,
    _hints,
    _is_dataclass_type,
    _is_mapping,
    _required,
    field_docs,
)
from rlvr.core.fields import (
    _declared_hints,
    _init_fields,
    _number_problem,
    _sequence_of,
    _strip_optional,
)

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
    hint = _table_list_hint(inner, value, key)
    raise ConfigError(f"{source}: {key}: expected {_describe(tp)}, got {value!r}{hint}")


def _table_list_hint(tp: Any, value: Any, key: str) -> str:
    """How to write a list of tables, for a single table given where a list of them belongs
    (`[envs]` written for `[[envs]]`)."""
    sequence = _sequence_of(tp)
    if sequence is not None and _is_dataclass_type(sequence[0]) and isinstance(value, Mapping):
        return f"; write [[{key}]] (double brackets) above each table"
    return ""


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
