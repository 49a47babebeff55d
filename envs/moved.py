"""Old import paths of modules that moved into their family's folder (docs/design.md "Families").

A shim at the old path calls `alias(__name__, new)`, which makes the old name the new module
itself in `sys.modules` (and each submodule of a package too): `import old.path` then gives the
very module object the new path gives, so a class has one identity under both names (isinstance,
pickles written under either name) and a module attribute read on first use (`PROBLEMS`) still
works. A plain `from new import *` would copy names instead and miss those.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from types import ModuleType


def alias(old: str, new: str) -> ModuleType:
    """Import `new` and register it (and every submodule of it) under the name `old`."""
    module = importlib.import_module(new)
    for info in pkgutil.iter_modules(getattr(module, "__path__", [])):
        submodule = importlib.import_module(f"{new}.{info.name}")
        sys.modules[f"{old}.{info.name}"] = submodule
    sys.modules[old] = module
    return module
