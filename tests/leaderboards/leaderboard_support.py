"""Envs, agents and a headless browser for the leaderboard tests (imported by them).

The envs are registered here, at import, with `rlvr.envs.register_task_env` (and one with a
held-out split); worker processes are forked from this process, so they see them too.
"""

from __future__ import annotations

import base64
import json
import shutil
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

from rlvr.agents.policy import Completion, Conversation, SamplingParams
from rlvr.envs import Problem, ProceduralSource, VerifiableEnv, register_task_env
from rlvr.verifiers.types import Task, Verdict
from tests.envs.toy_envs import GuessNumberEnv

ADD_ENV = "lbtest/Add-v0"
YES_ENV = "lbtest/Yes-v0"
SPLIT_ENV = "lbtest/Split-v0"
GUESS_ENV = "lbtest/Guess-v0"


class YesVerifier:
    """Accepts a reply holding the word 'yes'. Tests "fix" it by flipping `strict` and VERSION."""

    VERSION = "1"

    def __init__(self) -> None:
        self.strict = False

    def verify(self, response: str, task: Task) -> Verdict:
        words = response.split()
        ok = words == ["yes"] if self.strict else "yes" in words
        return Verdict.correct("yes") if ok else Verdict.incorrect(" ".join(words[:3]))


YES_VERIFIER = YesVerifier()


def _addition(rng: Any, difficulty: int) -> Problem:
    a, b = (int(x) for x in rng.integers(0, 10**difficulty, size=2))
    return Problem(f"What is {a} + {b}?", str(a + b))


class SplitAddEnv(VerifiableEnv):
    """Procedural addition with train/test splits (stands in for a built-in env)."""

    def __init__(self, split: str = "train", difficulty: int = 2) -> None:
        source = ProceduralSource(_addition, name="add", split=split, difficulty=difficulty)
        super().__init__(source, lambda reply, task: reply.strip() == task.answer)


def _register() -> None:
    tasks = [
        {"prompt": f"What is {a} + {b}?", "answer": str(a + b)} for a in range(20) for b in range(5)
    ]
    register_task_env(ADD_ENV, tasks, lambda r, t: r.strip() == t.answer, override=True)
    questions = [{"prompt": f"Say yes to question {i}.", "answer": "yes"} for i in range(60)]
    register_task_env(YES_ENV, questions, YES_VERIFIER, override=True)
    if SPLIT_ENV not in gym.registry:
        gym.register(SPLIT_ENV, entry_point=SplitAddEnv)
    if GUESS_ENV not in gym.registry:  # multi-turn: guess a number, told "higher"/"lower"
        gym.register(GUESS_ENV, entry_point=GuessNumberEnv, max_episode_steps=6)


_register()


@contextmanager
def fixed_yes_verifier() -> Iterator[YesVerifier]:
    """'Fix' the verifier of lbtest/Yes-v0 (strict, version 2) for the duration of a block."""
    YES_VERIFIER.strict, YES_VERIFIER.VERSION = True, "2"
    try:
        yield YES_VERIFIER
    finally:
        YES_VERIFIER.strict, YES_VERIFIER.VERSION = False, "1"


class CountingPolicy:
    """Replies `reply()` ('yes' by default), reporting token counts like a model would (3
    generated, 10 prompt)."""

    def __init__(self, reply: Callable[[], str] = lambda: "yes") -> None:
        self.reply = reply

    def generate(
        self,
        conversations: Sequence[Conversation],
        n: int = 1,
        sampling: SamplingParams | None = None,
    ) -> list[list[Completion]]:
        return [
            [
                Completion(self.reply(), token_ids=[1, 2, 3], metadata={"prompt_tokens": 10})
                for _ in range(n)
            ]
            for _ in conversations
        ]


TOY_SUITE = """
name = "toy"
description = "two small test envs"
split = false
seed = 11
episodes = 40
samples = 2
pass_at_k = [1, 2]

[sampling]
temperature = 1.0

[bootstrap]
resamples = 200
seed = 3

[[envs]]
id = "lbtest/Add-v0"

[[envs]]
id = "lbtest/Yes-v0"
episodes = 30
"""


def write_toy_suite(folder: Path, text: str = TOY_SUITE) -> Path:
    path = folder / "toy.toml"
    path.write_text(text)
    return path


@contextmanager
def write_lock_held(db: Path) -> Iterator[None]:
    """Another process holding `db`'s write lock (a long write in progress) for the block."""
    import sys

    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_LOCK, str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        yield
    finally:
        holder.communicate("release\n", timeout=30)


_HOLD_LOCK = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()
db.execute("ROLLBACK")
"""


# --- an OpenAI-compatible server on loopback that breaks mid-run ---------------------------------


class FlakyChatServer:
    """Replies "yes" to the first `good` requests, then fails as `mode` says: "500" (HTTP 500),
    "abort" (HTTP 200 with an aborted, empty generation) or "hang" (never answers)."""

    def __init__(self, good: int, mode: str) -> None:
        self.requests = 0
        self.release = threading.Event()  # lets hanging handlers go at the end
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                server.requests += 1
                choice = {"message": {"role": "assistant", "content": "yes"}}
                if server.requests <= good:
                    return self._reply(200, {"choices": [{**choice, "finish_reason": "stop"}]})
                if mode == "hang":
                    server.release.wait(60)
                    return None
                if mode == "abort":
                    choice = {"message": {"role": "assistant", "content": None}}
                    return self._reply(200, {"choices": [{**choice, "finish_reason": "abort"}]})
                return self._reply(500, {"error": "engine died"})

            def _reply(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                with suppress(OSError):
                    self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FlakyChatServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


# --- a headless browser, driven through chromedriver's W3C WebDriver HTTP API ---------------------

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
ELEMENT_KEY = "element-6066-11e4-a52e-4f735466cecf"


class WebDriverError(RuntimeError):
    pass


class Browser:
    """The handful of WebDriver commands the tests need (navigate, find, click, read, shoot)."""

    def __init__(self, url: str, profile: Path) -> None:
        self.url = url
        args = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            f"--user-data-dir={profile}",
            "--window-size=1400,1000",
        ]
        capabilities = {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": CHROMIUM, "args": args},
        }
        value = self._call("POST", "/session", {"capabilities": {"alwaysMatch": capabilities}})
        self.session = value["sessionId"]

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.url + path, data=data, method=method, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return json.load(response)["value"]
        except urllib.error.HTTPError as exc:
            raise WebDriverError(
                f"{method} {path}: {exc.read().decode(errors='replace')}"
            ) from None

    def _session(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        return self._call(method, f"/session/{self.session}{path}", body)

    def get(self, url: str) -> None:
        self._session("POST", "/url", {"url": url})

    @property
    def current_url(self) -> str:
        return self._session("GET", "/url")

    def find_all(self, css: str) -> list[str]:
        found = self._session("POST", "/elements", {"using": "css selector", "value": css})
        return [element[ELEMENT_KEY] for element in found]

    def find(self, css: str) -> str:
        found = self.find_all(css)
        if not found:
            raise WebDriverError(f"no element matches {css!r}")
        return found[0]

    def text(self, element: str) -> str:
        return self._session("GET", f"/element/{element}/text")

    def attribute(self, element: str, name: str) -> str | None:
        return self._session("GET", f"/element/{element}/attribute/{name}")

    def displayed(self, element: str) -> bool:
        return self._session("GET", f"/element/{element}/displayed")

    def click(self, element: str) -> None:
        self._session("POST", f"/element/{element}/click", {})

    def script(self, source: str, *args: Any) -> Any:
        return self._session("POST", "/execute/sync", {"script": source, "args": list(args)})

    def screenshot(self, path: Path) -> Path:
        path.write_bytes(base64.b64decode(self._session("GET", "/screenshot")))
        return path

    def quit(self) -> None:
        with suppress(WebDriverError, OSError):
            self._session("DELETE", "")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def launch_browser(profile: Path) -> Iterator[Browser]:
    """Headless Chromium behind a chromedriver we start on a free port (skip/fail if absent)."""
    from tests.conftest import require_service

    present = Path(CHROMIUM).exists() and shutil.which(CHROMEDRIVER) is not None
    require_service("chromium", present, f"needs {CHROMIUM} and {CHROMEDRIVER}")
    port = _free_port()
    driver = subprocess.Popen(
        [CHROMEDRIVER, f"--port={port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(url + "/status", timeout=2) as response:
                    if json.load(response)["value"].get("ready"):
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("chromedriver did not become ready within 20 s")
            time.sleep(0.1)
        session = Browser(url, profile)
        try:
            yield session
        finally:
            session.quit()
    finally:
        driver.terminate()
        try:
            driver.wait(timeout=10)
        except subprocess.TimeoutExpired:
            driver.kill()
            driver.wait()
