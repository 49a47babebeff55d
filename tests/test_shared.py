"""rlvr._shared: counted process-wide resources, fork children that build their own, exit cleanup.

The pools and servers built on it have their own fork and cleanup tests (tests/sandboxes,
tests/verifiers/test_math_pool.py, tests/envs/web, tests/sql); these pin the helper's rules.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from rlvr._shared import HandleClosed, Owner, SharedResources


class Resource:
    """Something that knows whether it was closed, and by which process."""

    made = 0

    def __init__(self, name: str = "") -> None:
        Resource.made += 1
        self.name = name or f"r{Resource.made}"
        self.pid = os.getpid()
        self.closed = False
        self.abandoned = False

    def close(self) -> None:
        self.closed = True

    def abandon(self) -> None:
        self.abandoned = True


def table(**options) -> SharedResources[Resource]:
    return SharedResources("test resource", Resource.close, **options)


def test_one_resource_per_key_closed_by_its_last_user():
    shared = table()
    first = shared.acquire("k", Resource)
    second = shared.acquire("k", lambda: pytest.fail("made twice"))
    other = shared.acquire("other", Resource)
    assert first is second and other is not first
    assert shared.users("k") == 2
    shared.release("k", first)
    assert not first.closed and shared.current() == {"k": first, "other": other}
    shared.release("k", first)
    assert first.closed and "k" not in shared.current() and not other.closed
    third = shared.acquire("k", Resource)  # a new one once the old one is gone
    assert third is not first and not third.closed
    shared.close_all()
    assert third.closed and other.closed and shared.current() == {}


def test_a_release_of_a_replaced_resource_is_ignored():
    shared = table(usable=lambda resource: not resource.closed)
    old = shared.acquire("k", Resource)
    old.close()  # closed behind the table's back: the next user gets a fresh one
    new = shared.acquire("k", Resource)
    assert new is not old
    shared.release("k", old)  # the old one's user gives it back: the new one stays open
    assert not new.closed and shared.users("k") == 1
    shared.release("k", new)
    assert new.closed


def test_a_held_resource_outlives_its_users_until_discarded():
    shared = table()
    held = shared.get("k", Resource)
    assert shared.get("k", lambda: pytest.fail("made twice")) is held
    assert shared.acquire("k", Resource) is held
    shared.release("k", held)
    assert not held.closed  # the table itself holds it
    shared.discard("k")
    assert held.closed and shared.current() == {}
    shared.discard("k")  # nothing left: no error


def test_one_failing_close_does_not_keep_the_others_open(caplog):
    def close(resource: Resource) -> None:
        if resource.name == "bad":
            raise OSError("cannot close")
        resource.close()

    shared = SharedResources("test resource", close)
    bad, good = shared.acquire("a", lambda: Resource("bad")), shared.acquire("b", Resource)
    shared.close_all()
    assert good.closed and not bad.closed
    assert "closing a shared test resource failed" in caplog.text


def test_a_handle_releases_once_and_refuses_use_after_close():
    shared = table()
    handles = [shared.handle("k", Resource) for _ in range(2)]
    resource = handles[0].get()
    assert handles[1].get() is resource and shared.users("k") == 2
    handles[0].close()
    handles[0].close()  # twice: still one release
    assert shared.users("k") == 1 and not resource.closed
    with pytest.raises(HandleClosed):
        handles[0].get()
    handles[1].close()
    assert resource.closed and handles[1].closed


def test_concurrent_first_users_make_one_resource():
    shared = table()
    made: list[Resource] = []

    def slow() -> Resource:
        time.sleep(0.05)  # a window for a second thread to make another
        made.append(Resource())
        return made[-1]

    start = threading.Barrier(16)
    got: list[Resource] = []

    def use() -> None:
        start.wait()
        got.append(shared.acquire("k", slow))

    threads = [threading.Thread(target=use) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(made) == 1 and all(resource is made[0] for resource in got)
    assert shared.users("k") == 16


def test_concurrent_acquire_and_release_never_leave_two_open_or_one_leaked():
    open_now: list[Resource] = []
    most_open = [0]
    guard = threading.Lock()

    def make() -> Resource:
        resource = Resource()
        with guard:
            open_now.append(resource)
            most_open[0] = max(most_open[0], len(open_now))
        return resource

    def close(resource: Resource) -> None:
        with guard:
            open_now.remove(resource)
        resource.close()

    shared = SharedResources("test resource", close)

    def churn() -> None:
        for _ in range(300):
            resource = shared.acquire("k", make)
            assert not resource.closed
            shared.release("k", resource)

    threads = [threading.Thread(target=churn) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most_open[0] == 1 and open_now == [] and shared.current() == {}


def test_owner_tells_a_forked_child_from_the_process_that_made_it():
    owner = Owner()
    assert owner.mine and not owner.claim()
    read, write = os.pipe()
    child = os.fork()
    if child == 0:
        code = 1
        try:
            answer = f"{owner.mine} {owner.claim()} {owner.mine} {owner.claim()}"
            os.write(write, answer.encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    os.waitpid(child, 0)
    assert os.read(read, 100) == b"False True True False"
    os.close(read)
    assert owner.mine


# A parent with a counted resource, a held one and a handle forks; the child uses the handle, then
# both exit normally (atexit runs in each). Every line says who did what to which resource.
FORK_SCRIPT = textwrap.dedent(
    """
    import os, sys
    from rlvr._shared import SharedResources

    class Resource:
        def __init__(self, name):
            self.name = f"{name}@{'parent' if os.getpid() == PARENT else 'child'}"

    def log(what, resource):
        who = "parent" if os.getpid() == PARENT else "child"
        print(f"{who} {what} {resource.name}", flush=True)

    PARENT = os.getpid()
    shared = SharedResources(
        "test", lambda r: log("closes", r), abandon=lambda r: log("abandons", r)
    )
    shared.acquire("counted", lambda: Resource("counted"))
    shared.get("held", lambda: Resource("held"))
    handle = shared.handle("handled", lambda: Resource("handled"))
    if os.fork() == 0:
        assert shared.current() == {}, shared.current()
        mine = handle.get()
        assert handle.get() is mine
        log("uses", mine)
        sys.exit(0)
    os.wait()
    log("uses", handle.get())
    """
)


def test_a_forked_child_builds_its_own_and_never_closes_the_parents():
    result = subprocess.run(
        [sys.executable, "-c", FORK_SCRIPT], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    child = sorted(line for line in lines if line.startswith("child"))
    parent = sorted(line for line in lines if line.startswith("parent"))
    assert child == [
        "child abandons counted@parent",
        "child abandons handled@parent",
        "child abandons held@parent",
        "child closes handled@child",  # at the child's exit: its own, and only its own
        "child uses handled@child",
    ]
    assert parent == [
        "parent closes counted@parent",  # at exit, however many users it still has
        "parent closes handled@parent",
        "parent closes held@parent",
        "parent uses handled@parent",
    ]
