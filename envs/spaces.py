"""`TextSpace`: a permissive space of Python strings.

Gymnasium's own `Text` space only accepts a fixed character set (alphanumerics by default), which
rejects ordinary prompts and replies. `TextSpace` accepts any `str` up to `max_length` characters.
It also registers itself with Gymnasium's vector utilities so `AsyncVectorEnv` can pass text
through shared memory (UTF-8 bytes with a length prefix).
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import numpy as np
from gymnasium.spaces import Space
from gymnasium.vector.utils import (
    create_shared_memory,
    read_from_shared_memory,
    write_to_shared_memory,
)

from rlvr.envs.errors import EnvConfigError

# Characters used by `sample()`: printable ASCII plus a few non-ASCII letters, enough to exercise
# parsers with junk without producing unreadable test output.
_SAMPLE_ALPHABET = np.array(
    list(
        " \n!\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ"
        "[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~éß中π"
    )
)


class TextSpace(Space[str]):
    """Any `str` with at most `max_length` characters (Unicode included)."""

    def __init__(self, max_length: int = 1 << 16, seed: int | np.random.Generator | None = None):
        if not isinstance(max_length, int) or max_length < 1:
            raise EnvConfigError(f"max_length must be a positive int, got {max_length!r}")
        self.max_length = max_length
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """A random string of 0 to 64 characters (junk, as a random reply should be)."""
        if mask is not None or probability is not None:
            raise ValueError("TextSpace.sample() takes no mask or probability")
        length = int(self.np_random.integers(0, min(64, self.max_length) + 1))
        return "".join(self.np_random.choice(_SAMPLE_ALPHABET, size=length))

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"TextSpace(max_length={self.max_length})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TextSpace) and other.max_length == self.max_length

    def to_jsonable(self, sample_n: Any) -> list[str]:
        return list(sample_n)

    def from_jsonable(self, sample_n: list[str]) -> list[str]:
        return list(sample_n)

    @property
    def max_bytes(self) -> int:
        """Bytes needed for the longest string in UTF-8 (4 bytes per character at most)."""
        return 4 * self.max_length


# --- shared memory for AsyncVectorEnv: per slot, a 4-byte length then the UTF-8 bytes ---------

_LENGTH_BYTES = 4
# A Python str may hold lone surrogates (a reply decoded with errors="surrogateescape", echoed in
# feedback); "surrogatepass" encodes them in 3 bytes each so they round-trip instead of crashing.
_ENCODING_ERRORS = "surrogatepass"


@create_shared_memory.register(TextSpace)
def _create_text_shared_memory(space: TextSpace, n: int = 1, ctx: ModuleType = mp) -> Any:
    return ctx.Array("B", n * (_LENGTH_BYTES + space.max_bytes))


class SharedTexts(Sequence[str]):
    """A live view of the texts in an `AsyncVectorEnv` shared buffer.

    `AsyncVectorEnv` reads its shared memory once and relies on the result being a view that the
    workers update. Strings cannot be views, so this sequence decodes on access; `deepcopy` (what
    the vector env returns with its default `copy=True`) gives a plain tuple of `str`.
    """

    def __init__(self, space: TextSpace, shared_memory: Any, n: int) -> None:
        self._buffer = np.frombuffer(shared_memory.get_obj(), dtype=np.uint8)
        self._slot = _LENGTH_BYTES + space.max_bytes
        self._n = n

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(self._n)))
        if not -self._n <= index < self._n:
            raise IndexError(index)
        start = (index % self._n) * self._slot
        length = int.from_bytes(self._buffer[start : start + _LENGTH_BYTES].tobytes(), "little")
        body = self._buffer[start + _LENGTH_BYTES : start + _LENGTH_BYTES + length]
        return body.tobytes().decode("utf-8", _ENCODING_ERRORS)

    def __deepcopy__(self, memo: dict) -> tuple[str, ...]:
        return tuple(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    def __repr__(self) -> str:
        return f"SharedTexts({tuple(self)!r})"


@read_from_shared_memory.register(TextSpace)
def _read_text_shared_memory(space: TextSpace, shared_memory: Any, n: int = 1) -> SharedTexts:
    return SharedTexts(space, shared_memory, n)


@write_to_shared_memory.register(TextSpace)
def _write_text_shared_memory(space: TextSpace, index: int, value: str, shared_memory: Any) -> None:
    encoded = value.encode("utf-8", _ENCODING_ERRORS)
    if len(value) > space.max_length or len(encoded) > space.max_bytes:
        raise ValueError(
            f"an observation of {len(value)} characters does not fit the shared memory of "
            f"{space!r}; pass vector_kwargs={{'shared_memory': False}} to make_vec, or raise the "
            "env's max_text_length where it takes one (make_vec(id, ..., max_text_length=N))"
        )
    slot = _LENGTH_BYTES + space.max_bytes
    buffer = np.frombuffer(shared_memory.get_obj(), dtype=np.uint8)
    start = index * slot
    buffer[start : start + _LENGTH_BYTES] = np.frombuffer(
        len(encoded).to_bytes(_LENGTH_BYTES, "little"), dtype=np.uint8
    )
    buffer[start + _LENGTH_BYTES : start + _LENGTH_BYTES + len(encoded)] = np.frombuffer(
        encoded, dtype=np.uint8
    )
