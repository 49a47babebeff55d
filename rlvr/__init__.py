"""rlvr-gym: environments, verifiers, sandboxes and learners for RL from verifiable rewards.

`import rlvr` registers every environment with Gymnasium, so that

    import gymnasium as gym, rlvr
    env = gym.make("rlvr/Math-v0")

works, as do `gym.register_envs(rlvr)` and `gym.make("rlvr:rlvr/Math-v0")`.

Importing `rlvr` (or one of its lower layers, `rlvr.sandboxes`, `rlvr.verifiers`) does not import
Gymnasium: the ids are registered the moment Gymnasium is imported, or at once if it already is
(`rlvr.builtin_envs`), so worker processes that never make an env start without it.
"""

import importlib as _importlib
from typing import Any as _Any

from rlvr._import_hook import after_import as _after_import
from rlvr.builtin_envs import register_builtin_envs as _register_builtin_envs

__version__ = "0.1.0"

_after_import("gymnasium", _register_builtin_envs)

_SUBPACKAGES = ("agents", "envs", "integrations", "leaderboards", "sandboxes", "verifiers")


def __getattr__(name: str) -> _Any:
    """`rlvr.envs` and the other subpackages, imported on first use after a bare `import rlvr`."""
    if name in _SUBPACKAGES:
        return _importlib.import_module(f"rlvr.{name}")
    raise AttributeError(f"module 'rlvr' has no attribute {name!r}")
