"""A real `rlvr serve` process on a free loopback port, for the serving tests."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import require_extra

START_TIMEOUT = 240  # importing openenv-core (Gradio, FastMCP) takes ~15 s on a loaded 2-core box


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Server:
    """`python -m rlvr.cli serve ENV_ID ARGS...` on 127.0.0.1 (stopped with SIGTERM)."""

    def __init__(self, env_id: str, *args: str, kwargs: dict | None = None) -> None:
        require_extra("openenv", "serve")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "rlvr.cli", "serve", env_id, "--port", str(self.port)]
        if kwargs is not None:
            command += ["--kwargs", json.dumps(kwargs)]
        self.log = Path(os.environ.get("TMPDIR", "/tmp")) / f"rlvr-serve-{self.port}.log"
        self.process = subprocess.Popen(
            [*command, *args], stdout=self.log.open("wb"), stderr=subprocess.STDOUT
        )
        self._wait_healthy()

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"rlvr serve exited: {self.output()}")
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(self.url + "/health", timeout=2) as answer,
            ):
                if json.loads(answer.read()) == {"status": "healthy"}:
                    return
            time.sleep(0.3)
        self.stop()
        raise AssertionError(f"rlvr serve did not become healthy: {self.output()}")

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def children(self) -> list[int]:
        """Pids of the server's child processes (its sandbox workers, ...)."""
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError, IndexError):
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if int(fields[1]) == self.process.pid:
                    found.append(int(entry.name))
        return found

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return int(self.process.returncode)


@contextlib.contextmanager
def served(env_id: str, *args: str, kwargs: dict | None = None) -> Iterator[Server]:
    server = Server(env_id, *args, kwargs=kwargs)
    try:
        yield server
    finally:
        server.stop()


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    with contextlib.suppress(OSError):
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    return False


__all__ = ["Server", "free_port", "pid_alive", "served", "signal"]
