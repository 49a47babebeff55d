"""Reading TOML text so that bad content is a message, never a raw error.

`tomllib.loads` alone lets tables and arrays nested deeply enough exhaust the stack
(`RecursionError`). Here that, and text that is not TOML, become a `TOMLReadError` (a
`ValueError`) whose message says what is wrong; callers put the file in front and raise their
own package's error (`rlvr.config` a `ConfigError`, the code task files a `DatasetError`). Kept
apart from `rlvr.config` so that reading a data file does not import the config machinery
(argparse, inspect: about 40 ms per process).
"""

from __future__ import annotations

import tomllib
from typing import Any

from rlvr.core.errors import RlvrError
from rlvr.core.jsonfiles import MAX_DEPTH, depth_exceeds


class TOMLReadError(RlvrError, ValueError):
    """Text that is not the TOML it should be; the message says what is wrong."""


def parse_toml(text: str) -> dict[str, Any]:
    """The data of a TOML text, or `TOMLReadError` when it is not valid TOML or nests tables and
    arrays more than `MAX_DEPTH` levels deep (no config or data file does)."""
    too_deep = f"tables and arrays nested more than {MAX_DEPTH} levels deep"
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TOMLReadError(f"not valid TOML: {exc}") from None
    except RecursionError:
        raise TOMLReadError(too_deep) from None
    if depth_exceeds(data, MAX_DEPTH):
        raise TOMLReadError(too_deep)
    return data
