"""Process-wide shared resources: one per key, counted, not inherited through fork, closed at exit.

Several parts of rlvr keep something costly that every user in the process should share: the
sandbox worker pools (one per backend and config), the generated sites' HTTP servers (one per
site), the math verifier's checker processes. Each keeps them in a `SharedResources` table, which
gives all of them the same rules:

- **One per key, counted.** `acquire(key, create)` returns the key's resource, built with
  `create()` by the first caller, and counts a user; `release(key, resource)` uncounts one and the
  last release closes it. `get(key, create)` is the uncounted form: the table itself holds the
  resource until `discard(key)` or exit. All of it is thread-safe; `create` runs once per key.
- **Never inherited through fork.** A forked child (a Gymnasium `AsyncVectorEnv` worker, a
  `multiprocessing` fork) copies the parent's memory but not its threads, and the processes and
  sockets behind a resource answer the parent. The child's tables start empty: each inherited
  resource goes to the table's `abandon` (let go of the child's copies of pipes or sockets,
  without stopping anything of the parent's), and the child builds its own at first use. A
  `Handle` (one user's counted reference) acquires afresh when it is first used in a child and
  never releases the parent's resource there.
- **Closed at exit.** Whatever is still open when the interpreter exits is closed (atexit), so no
  worker process, container or server thread outlives it.

`Owner` is the same rule for an object that is not shared through a table (a SQL backend's worker
processes and connections): it remembers the process that made it, so a forked child can tell
that a resource is its parent's and must be neither used nor closed.

Standard library only: the lowest layers (sandboxes, verifiers) import it. `rlvr._shared`, its
former name, still exports the same objects.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import weakref
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

from rlvr.core.errors import RlvrError

logger = logging.getLogger(__name__)

T = TypeVar("T")


class Owner:
    """The process that made something. In a forked child, `mine` is False: the parent's
    processes, pipes and connections are not the child's to use or to close."""

    __slots__ = ("pid",)

    def __init__(self) -> None:
        self.pid = os.getpid()

    @property
    def mine(self) -> bool:
        """True in the process that made it (not in a forked child)."""
        return os.getpid() == self.pid

    def claim(self) -> bool:
        """In a forked child: take ownership and return True (the caller then drops the
        parent's state). In the owning process: False."""
        if self.mine:
            return False
        self.pid = os.getpid()
        return True

    def __repr__(self) -> str:
        return f"Owner(pid={self.pid})"


@dataclass
class _Entry(Generic[T]):
    resource: T
    users: int = 0
    held: bool = False  # taken with `get`: the table keeps it until discard or exit


class SharedResources(Generic[T]):
    """A process-wide table of shared resources of one kind (module docstring).

    `close(resource)` stops one (called outside the table's lock); `abandon(resource)`, in a
    forked child, lets go of the child's copy without touching the parent's; `usable(resource)`
    says whether an existing resource may still be handed out (one closed behind the table's
    back is replaced).
    """

    def __init__(
        self,
        name: str,
        close: Callable[[T], object],
        *,
        abandon: Callable[[T], object] | None = None,
        usable: Callable[[T], bool] | None = None,
    ) -> None:
        self.name = name
        self._close = close
        self._abandon = abandon
        self._usable = usable
        self._lock = threading.RLock()
        self._entries: dict[Hashable, _Entry[T]] = {}
        _TABLES.add(self)

    # --- counted use --------------------------------------------------------------------------

    def acquire(self, key: Hashable, create: Callable[[], T]) -> T:
        """The resource for `key` (made with `create()` if there is none), counted as used."""
        with self._lock:
            entry = self._entry(key, create)
            entry.users += 1
            return entry.resource

    def release(self, key: Hashable, resource: T | None = None) -> None:
        """Count one user of `key` fewer; the last one closes the resource. With `resource`,
        nothing happens unless it is still the key's (a replaced or forgotten one)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or (resource is not None and entry.resource is not resource):
                return
            entry.users -= 1
            if entry.users > 0 or entry.held:
                return
            del self._entries[key]
        self._close_quietly(entry.resource)

    def handle(self, key: Hashable, create: Callable[[], T]) -> Handle[T]:
        """A counted reference that follows the process: see `Handle`."""
        return Handle(self, key, create)

    # --- held by the table ---------------------------------------------------------------------

    def get(self, key: Hashable, create: Callable[[], T]) -> T:
        """The resource for `key` (made with `create()` if there is none), held by the table
        until `discard(key)` or exit, whatever `release` calls follow."""
        with self._lock:
            entry = self._entry(key, create)
            entry.held = True
            return entry.resource

    def discard(self, key: Hashable) -> None:
        """Close the resource of `key` now, however many use it (a later call makes a new one)."""
        with self._lock:
            entry = self._entries.pop(key, None)
        if entry is not None:
            self._close_quietly(entry.resource)

    def close_all(self) -> None:
        """Close every resource of the table (safe to call twice; run at exit)."""
        with self._lock:
            entries = list(self._entries.values())
            self._entries.clear()
        for entry in entries:
            self._close_quietly(entry.resource)

    def current(self) -> dict[Hashable, T]:
        """Key -> resource, for every resource open in this process (for tests and monitoring)."""
        with self._lock:
            return {key: entry.resource for key, entry in self._entries.items()}

    def users(self, key: Hashable) -> int:
        """How many counted users `key` has in this process (0 when it has no resource)."""
        with self._lock:
            entry = self._entries.get(key)
            return entry.users if entry is not None else 0

    # --- internals ------------------------------------------------------------------------------

    def _entry(self, key: Hashable, create: Callable[[], T]) -> _Entry[T]:
        entry = self._entries.get(key)
        if entry is None or (self._usable is not None and not self._usable(entry.resource)):
            entry = self._entries[key] = _Entry(create())
        return entry

    def _close_quietly(self, resource: T) -> None:
        try:
            self._close(resource)
        except Exception:  # one failing close must not keep the others (or exit) from running
            logger.exception("closing a shared %s failed", self.name)

    def _forget_after_fork(self) -> None:
        """In a forked child: drop the parent's resources (each handed to `abandon`)."""
        self._lock = threading.RLock()  # another thread may have held it at fork time
        entries, self._entries = list(self._entries.values()), {}
        if self._abandon is None:
            return
        for entry in entries:
            try:
                self._abandon(entry.resource)
            except Exception:
                logger.exception("letting go of a parent's %s failed", self.name)

    def __repr__(self) -> str:
        return f"<SharedResources {self.name}: {len(self._entries)} open>"


class Handle(Generic[T]):
    """One user's counted reference to a table's resource, for objects that may reach a forked
    child (an executor handle inside an env that an `AsyncVectorEnv` forks).

    `get()` returns the resource; in a forked child its first call acquires the child's own (the
    parent's is not the child's) and later calls return that. `close()` releases what this
    process acquired, once; in a child that never used it, it does nothing.
    """

    def __init__(self, table: SharedResources[T], key: Hashable, create: Callable[[], T]) -> None:
        self._table = table
        self._key = key
        self._create = create
        self._owner = Owner()
        self._resource = table.acquire(key, create)
        self._closed = False

    @property
    def key(self) -> Hashable:
        return self._key

    @property
    def resource(self) -> T:
        """The resource last acquired, without acquiring (the parent's, in a fresh child)."""
        return self._resource

    @property
    def mine(self) -> bool:
        """True when `resource` was acquired by this process."""
        return self._owner.mine

    @property
    def closed(self) -> bool:
        return self._closed

    def get(self) -> T:
        """The resource, acquired afresh in a forked child. Raises `HandleClosed` after
        `close()`."""
        if self._owner.mine and not self._closed:
            return self._resource
        with self._table._lock:  # reset in a forked child, like the table
            if self._closed:
                raise HandleClosed(f"this {self._table.name} handle is closed")
            if self._owner.claim():
                self._resource = self._table.acquire(self._key, self._create)
            return self._resource

    def close(self) -> None:
        """Release the resource if this process acquired it (once; later calls do nothing)."""
        with self._table._lock:
            if self._closed:
                return
            self._closed = True
            if not self._owner.mine:
                return  # the parent's: not ours to release
        self._table.release(self._key, self._resource)

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<Handle {self._table.name} {self._key!r} {state}>"


class HandleClosed(RlvrError, RuntimeError):
    """`Handle.get()` after `close()`."""


_TABLES: weakref.WeakSet[SharedResources] = weakref.WeakSet()


def _forget_all_after_fork() -> None:
    for table in list(_TABLES):
        table._forget_after_fork()


@atexit.register
def close_all() -> None:
    """Close every shared resource of every table (registered with atexit; safe to call twice)."""
    for table in list(_TABLES):
        table.close_all()


os.register_at_fork(after_in_child=_forget_all_after_fork)
