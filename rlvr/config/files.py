"""TOML config files: reading them (`load_file`, `read_config`, `parse_toml`) and writing
file data as TOML (`to_toml`, `write_config`)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rlvr.config.schema import ConfigError, T
from rlvr.config.values import _Inline, build, dump

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
