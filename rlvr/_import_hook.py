"""Run a function right after a module is imported (now, if it already is): a post-import hook.

`import rlvr` registers the built-in environments with Gymnasium this way, so that importing
`rlvr` (or `rlvr.sandboxes`, which runs `rlvr/__init__.py`) never imports Gymnasium itself: a
worker process that only runs sandboxes or verifiers does not pay for it, and any program that
calls `gym.make` has imported Gymnasium, at which point the ids are registered.

A finder at the front of `sys.meta_path` answers for the watched module only: it asks the other
finders for the module's spec and wraps its loader, so that the callbacks run once the module has
executed. It removes itself once every watched module has loaded. Standard library only, and not
even `importlib.abc` (10 ms): the import system needs only the two methods of each class.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec

_lock = threading.Lock()
_waiting: dict[str, list[Callable[[ModuleType], object]]] = {}


def after_import(name: str, callback: Callable[[ModuleType], object]) -> None:
    """Call `callback(module)` once `name` is imported: at once if it is, else right after the
    import that loads it (before that import returns to its caller)."""
    with _lock:
        module = sys.modules.get(name)
        if module is None or _initializing(module):
            _waiting.setdefault(name, []).append(callback)
            if _FINDER not in sys.meta_path:
                sys.meta_path.insert(0, _FINDER)
            return
    callback(module)


def _initializing(module: ModuleType) -> bool:
    return bool(getattr(getattr(module, "__spec__", None), "_initializing", False))


class _Finder:
    """Finds the watched modules with the other finders and wraps their loaders."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname not in _waiting:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _Loader(spec.loader)  # type: ignore[assignment]  # a Loader by duck typing
        return spec


class _Loader:
    """The module's own loader, then the callbacks waiting for it."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        # The module sees its real loader (importlib.resources, inspect and the like use it).
        module.__loader__ = self.loader
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        self.loader.exec_module(module)
        with _lock:
            callbacks = _waiting.pop(module.__name__, [])
            if not _waiting and _FINDER in sys.meta_path:
                sys.meta_path.remove(_FINDER)
        for callback in callbacks:
            callback(module)


_FINDER = _Finder()
