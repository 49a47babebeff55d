"""The trainer's state files (`trainer.pt`, a seat's `learner.pt`): written as plain data, read
without running code.

`torch.load(weights_only=False)` unpickles whatever a file names, so a checkpoint someone
altered (or one downloaded with a run) could run any code at resume. These files are therefore
written in the form `torch.load(weights_only=True)` accepts, tensors and plain dicts, lists,
tuples, numbers, strings and None: `plain_state` turns numpy scalars (a mean of rewards) and
dict subclasses into those, and refuses anything else by name at save time, long before a
resume would need it. `load_state` reads them with `weights_only=True`, which refuses any other
object: a tampered file is a `TrainingError` saying so, and nothing in it runs.

The random generators' states are plain already: numpy's `bit_generator.state` is a dict of
ints, torch's `get_state()` a tensor (Python's `random.getstate()` would be a tuple of ints).
"""

from __future__ import annotations

import contextlib
import pickle
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from rlvr.agents.errors import TrainingError

_PLAIN = (bool, int, float, str, bytes, type(None))


def _legacy_globals() -> list[Any]:
    """What checkpoints written before `plain_state` existed hold besides plain data: numpy
    scalars (a float64 evaluation mean) and, in the saved config, `rlvr.config`'s dict subclass.
    Data constructors only: none of them can call anything."""
    from rlvr.config import _Inline

    core = getattr(np, "_core", None) or np.core  # numpy 2 / numpy 1
    dtypes = getattr(np, "dtypes", None)  # numpy >= 1.25
    kinds = ("Float64DType", "Int64DType", "BoolDType")
    return [
        core.multiarray.scalar,
        np.dtype,
        *(getattr(dtypes, kind) for kind in kinds if hasattr(dtypes, kind)),
        _Inline,
    ]


def plain_state(value: Any, where: str = "state") -> Any:
    """`value` as data `torch.load(weights_only=True)` reads back: numpy scalars as Python
    numbers, mappings as dicts; a `TypeError` naming `where` for anything else."""
    if type(value) in _PLAIN or isinstance(value, torch.Tensor):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Mapping):
        return {
            plain_state(key, where): plain_state(item, f"{where}[{key!r}]")
            for key, item in value.items()
        }
    if isinstance(value, (list, tuple)):
        items = [plain_state(item, f"{where}[{i}]") for i, item in enumerate(value)]
        return items if isinstance(value, list) else tuple(items)
    raise TypeError(f"{where}: a {type(value).__name__} cannot go into a checkpoint")


def save_state(state: Mapping[str, Any], path: str | Path) -> None:
    """Write `state` (see `plain_state`) to `path` with `torch.save`."""
    torch.save(plain_state(state), path)


def load_state(path: str | Path) -> dict[str, Any]:
    """The state `save_state` wrote to `path`, read with `weights_only=True`: a file holding
    any other object, or no state at all, is a `TrainingError` and nothing in it runs."""
    allow = getattr(torch.serialization, "safe_globals", None)  # torch >= 2.5
    try:
        with allow(_legacy_globals()) if allow else contextlib.nullcontext():
            state = torch.load(path, weights_only=True)
    except pickle.UnpicklingError as exc:
        raise TrainingError(
            f"{path} holds objects no checkpoint of rlvr train holds ({_reason(exc)}): it was "
            "altered or written by something else, and loading it could run code, so it is "
            "refused. Resume from another checkpoint, or start a fresh output_dir"
        ) from None
    except (OSError, RuntimeError, EOFError, ValueError) as exc:  # cut short, not a torch file
        raise TrainingError(f"cannot read the checkpoint file {path}: {_reason(exc)}") from None
    if not isinstance(state, dict):
        raise TrainingError(f"{path} is not a checkpoint: it holds a {type(state).__name__}")
    return state


def _reason(exc: BaseException) -> str:
    """The telling line of torch's (long, multi-line) message, without its advice to allow the
    object (the one thing not to do with a file nobody vouches for)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    telling = [line for line in lines if line.startswith("WeightsUnpickler error:")]
    if telling:
        detail = telling[0].removeprefix("WeightsUnpickler error:").split(". Please")[0].strip()
        after = lines[lines.index(telling[0]) + 1 :]
        return (detail or (after[0] if after else "an object it does not allow"))[:300]
    return (lines[0] if lines else type(exc).__name__)[:300]
