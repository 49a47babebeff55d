"""Services an env needs (a sandbox backend, a PostgreSQL server, a site's server), reached once
when the env is made, so that a setting that cannot work stops the program at `gym.make` with
the fix named, instead of turning every later step into an infrastructure error.

A check that passed is remembered for the rest of the process (and by forked workers, which
inherit it): making many envs, or an `AsyncVectorEnv`'s workers, costs one check per service
and configuration. A check that failed is not remembered: the next make tries again. Set
`RLVR_LAZY_SERVICES=1` to skip the checks when a service comes up only after the envs are made;
a service that is down then fails at first use, as an infrastructure error (`info["infra_error"]`
on a step, `ToolInfraError` from the reset that opens a web site).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable, Mapping
from typing import Any

from rlvr.envs.errors import EnvConfigError

LAZY_ENV = "RLVR_LAZY_SERVICES"

_reached: set[Hashable] = set()


def lazy() -> bool:
    """True when the user asked for no checks at make time ($RLVR_LAZY_SERVICES=1)."""
    return os.environ.get(LAZY_ENV, "").strip().lower() in ("1", "true", "yes")


def reach(key: Hashable, check: Callable[[], None]) -> None:
    """Run `check()` unless it passed before for `key` in this process (or checks are lazy)."""
    if key in _reached or lazy():
        return
    check()
    _reached.add(key)  # a set: safe without a lock (a race costs one extra check)


def forget() -> None:
    """Forget every check that passed (tests; after a service moved)."""
    _reached.clear()


def sandbox(backend: str, options: Mapping[str, Any] | None) -> None:
    """Check a sandbox backend's name and options (always), and that it can run code here."""
    from rlvr.sandboxes import SandboxConfigError, SandboxError
    from rlvr.sandboxes.pool import check_backend, make_config

    if backend not in ("local", "docker"):
        raise EnvConfigError(f"backend must be one of ['local', 'docker'], got {backend!r:.80}")
    try:
        config = make_config(backend, dict(options or {}))
    except SandboxConfigError as exc:
        raise EnvConfigError(f"backend_options: {exc}") from None
    except TypeError as exc:  # a dataclass refusing a value's type
        raise EnvConfigError(f"backend_options: {exc}") from None

    def check() -> None:
        try:
            check_backend(backend, config)
        except SandboxError as exc:
            raise EnvConfigError(f"backend={backend!r}: {one_line(exc)}") from None
        except Exception as exc:  # the engine refusing a value of backend_options
            raise EnvConfigError(
                f"backend={backend!r} with backend_options={dict(options or {})!r:.200}: "
                f"{type(exc).__name__}: {one_line(exc)}"
            ) from None

    reach(("sandbox", backend, repr(config)), check)


def one_line(error: BaseException) -> str:
    """An error's message on one line."""
    return " ".join(str(error).split())
