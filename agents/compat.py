"""What differs between the transformers releases rlvr-gym supports (transformers>=4.45).

Newer releases call a causal LM's key/value cache `cache`, as a forward argument and as a field
of its output, and deprecate `past_key_values` (a FutureWarning on every forward, removal
announced for 5.40); older ones know only `past_key_values`. The name is read from the model's
own `forward`, so no version table needs keeping up to date.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import warnings
from collections.abc import Callable, Iterator
from typing import Any


@functools.cache
def _cache_name(forward: Callable[..., Any]) -> str:
    parameters = inspect.signature(forward).parameters
    return "cache" if "cache" in parameters else "past_key_values"


def cache_name(model: Any) -> str:
    """`"cache"` or `"past_key_values"`: what `model` (a causal LM, possibly wrapped by peft)
    calls its key/value cache."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return _cache_name(type(base).forward)  # the class's: one signature read per model class


def with_cache(model: Any, cache: Any) -> dict[str, Any]:
    """The forward keyword argument that hands `cache` to `model`."""
    return {cache_name(model): cache}


def cache_of(model: Any, output: Any) -> Any:
    """The key/value cache in `model`'s `output`."""
    return getattr(output, cache_name(model))


@contextlib.contextmanager
def peft_deprecations_quiet() -> Iterator[None]:
    """peft reads `model.is_gradient_checkpointing`, which newer transformers deprecate: the
    warning is peft's to fix, not the user's, so it is silenced around peft's calls."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message="`is_gradient_checkpointing` is deprecated", category=FutureWarning
        )
        yield
