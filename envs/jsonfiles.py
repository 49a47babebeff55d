"""Moved to `rlvr.core.jsonfiles` (the ground layer: the config reader and every layer use it);
this name still imports it."""

from rlvr.core.jsonfiles import (
    MAX_DEPTH,
    JSONReadError,
    decode_utf8,
    depth_exceeds,
    numbered_lines,
    parse_json,
    read_json_file,
    write_text_atomic,
)

__all__ = [
    "MAX_DEPTH",
    "JSONReadError",
    "decode_utf8",
    "depth_exceeds",
    "numbered_lines",
    "parse_json",
    "read_json_file",
    "write_text_atomic",
]
