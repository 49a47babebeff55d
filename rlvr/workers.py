"""`env_workers`: the Ray env workers a command asks for with `--ray ADDRESS`, or None.

It sits above `rlvr.distributed` (which needs the `ray` extra the moment it is imported) and
`rlvr.rollout` (which never imports either), so a command imports this module without Ray and
loads `rlvr.distributed` only when `--ray` is given: `rlvr eval` and `rlvr bench` catch the
`ImportError` of a missing extra and `rlvr.rollout.hosts.EnvWorkersError` alike.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def env_workers(address: str | None, count: int) -> Iterator[Any]:
    """Ray env workers (an `rlvr.distributed.EnvWorkers`) for a command given `--ray ADDRESS`,
    closed after it however it ends (Ctrl-C too: no Ray process is left behind); None without
    `--ray`."""
    if address is None:
        yield None
        return
    from rlvr.distributed import EnvWorkers

    workers = EnvWorkers(count, address=address)
    try:
        yield workers
    finally:
        workers.close()
