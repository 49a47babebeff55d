"""Reading config classes: field docstrings, types, defaults and how a type is described in
messages; the names every part of `rlvr.config` shares (`ConfigError`, `NONE`, `EACH`)."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import itertools
import textwrap
import typing
from collections.abc import Mapping
from typing import Any, Literal, TypeVar

from rlvr.core.errors import RlvrError
from rlvr.core.fields import (
    _cache,
    _init_fields,
    _sequence_of,
    _strip_optional,
)

T = TypeVar("T")


NONE = "none"
"""How None is written in config files and flags (TOML has no null)."""
EACH = "*"
"""Path part for every element of a list of dataclasses (`--envs.kwargs` sets each env's)."""


class ConfigError(RlvrError, ValueError):
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
