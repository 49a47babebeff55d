"""`RemoteEnv(url)`: an env served by `rlvr serve`, as a Gymnasium env (extra `serve`).

    import gymnasium as gym, rlvr
    env = gym.make("remote/OpenEnv-v0", url="http://127.0.0.1:8000")   # or RemoteEnv(url)
    text, info = env.reset(seed=0)

Everything that takes an env id and kwargs (`check_env`, `rlvr eval`, `rlvr train`, `rlvr
bench`, Ray env workers) works against the served env through `remote/OpenEnv-v0`, with the
same episode records as in-process for the same seeds: the observation, `info` (messages,
verdict, rewards, `infra_error`), the task fingerprint and the env's errors all come back as
the env made them (`ResetNeeded`, `EnvConfigError`, ... are raised again here).

A session that dies mid-episode (the server killed or restarted, the session closed as idle,
the connection lost or past `step_timeout`) ends that episode with `info["infra_error"]` True
and `truncated` True: the sample is dropped, never scored 0. The next reset opens a new
session. The oracle's reply (`unwrapped.oracle_reply()`, used by `check_env` and the oracle
agent) comes from the server only when it runs with `--oracle`.

The client speaks OpenEnv's WebSocket messages itself (`websockets`, a dependency of
openenv-core): openenv-core's own client imports its server stack, Gradio and FastMCP with it
(about 12 s on the development machine), and its sync wrapper adds a thread hop per call.
"""

from __future__ import annotations

import contextlib
import copy
import json
import socket
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, ClassVar

import gymnasium as gym

from rlvr.envs import errors as env_errors
from rlvr.envs.core import check_options, require_text
from rlvr.envs.errors import EnvConfigError, EnvError
from rlvr.envs.spaces import TextSpace
from rlvr.integrations.wire import SESSION_EXPIRED, env_info, error_name

try:
    from websockets.exceptions import WebSocketException
    from websockets.sync.client import ClientConnection, connect
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError(
        f"RemoteEnv needs the serve extra: pip install 'rlvr-gym[serve]' ({exc})"
    ) from None

MAX_MESSAGE_BYTES = 64 << 20
"""Largest observation accepted from a server (a web page's text, a long chat)."""


class RemoteEnvError(EnvError):
    """The server could not be reached, or raised something the env itself would not."""


class _Lost(Exception):
    """The session is gone: connection closed or timed out, or the server closed it."""


class RemoteEnv(gym.Env[str, str]):
    """An rlvr env served by `rlvr serve URL`, stepped over one OpenEnv session (WebSocket).

    Arguments:
        url: the server (`http://HOST:PORT`, or `ws://HOST:PORT`).
        connect_timeout: seconds to open a session.
        step_timeout: seconds to wait for one reset or step before the session counts as lost
            (an infrastructure error); a code env's sandbox limits are far below the default.
        max_text_length: the spaces' `max_length` (the served env's, 65536 by default).
        split: the split the served env must hold (the server's `--kwargs`), checked: held-out
            evaluation asks for `split="test"`, which one server serving one split cannot give.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}  # type: ignore[misc]

    def __init__(
        self,
        url: str,
        *,
        connect_timeout: float = 10.0,
        step_timeout: float = 600.0,
        max_text_length: int = 1 << 16,
        split: str | None = None,
    ) -> None:
        self.base_url = _base_url(url)
        self.connect_timeout = connect_timeout
        self.step_timeout = step_timeout
        self.observation_space = TextSpace(max_text_length)
        self.action_space = TextSpace(max_text_length)
        self.served = self._get("/metadata")
        """The server's OpenEnv metadata: `name` is the served env id."""
        self.task_fingerprint: str | None = None
        """The posed task's fingerprint, as the server computed it
        (`rlvr.rollout.tasks.task_fingerprint`)."""
        self._socket: ClientConnection | None = None
        self._verifier: dict[str, Any] | None = None
        self._last: dict[str, Any] = {}
        self._done = True
        if split is not None:
            self._check_split(split)

    # --- the Gymnasium API ----------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        check_options(options)
        data: dict[str, Any] = {}
        if seed is not None:
            data["seed"] = seed
        if options is not None:
            data["options"] = options
        try:
            answer = self._call("reset", data)
        except _Lost:  # a stale session (the server restarted, or reaped it): one new try
            self._disconnect()
            try:
                answer = self._call("reset", data)
            except _Lost as exc:
                raise RemoteEnvError(
                    f"the server at {self.base_url} lost the session: {exc}"
                ) from None
        observation = answer["observation"]
        self._last, self._done = observation, False
        self.task_fingerprint = observation.get("task_fingerprint")
        return observation["text"], env_info(observation)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        require_text(action)  # refused here, as in-process: no turn is used
        try:
            answer = self._call("step", {"text": action})
        except _Lost as exc:
            return self._lost(action, str(exc))
        observation = answer["observation"]
        self._last = observation
        self._done = bool(answer.get("done"))
        reward = answer.get("reward")
        return (
            observation["text"],
            float(reward if reward is not None else 0.0),
            bool(observation["terminated"]),
            bool(observation["truncated"]),
            env_info(observation),
        )

    def close(self) -> None:
        if self._socket is not None:
            with contextlib.suppress(OSError, TimeoutError, WebSocketException):
                self._socket.send(json.dumps({"type": "close"}))
                self._socket.recv(timeout=2)  # the server ends the session and closes first
        self._disconnect()
        super().close()

    # --- what the rest of rlvr reads ------------------------------------------------------------

    def oracle_reply(self) -> str:
        """The served env's oracle reply (reads the gold: the server must run with --oracle)."""
        reply = self._state().get("oracle_reply")
        if not isinstance(reply, str):
            raise NotImplementedError(
                f"the server at {self.base_url} does not serve the oracle's replies; start it "
                "with `rlvr serve ENV_ID --oracle` (for checks and baselines only)"
            )
        return reply

    def _check_split(self, split: str) -> None:
        served = self._state().get("env_kwargs", {}).get("split")
        self.close()
        if served != split:
            raise EnvConfigError(
                f"the server at {self.base_url} serves split={served!r}, not {split!r}: serve "
                f"that split on a server of its own (rlvr serve ENV_ID --kwargs "
                f'\'{{"split": "{split}"}}\') and give its url for held-out evaluation '
                "(--heldout-kwargs '{\"url\": ...}')"
            )

    def _state(self) -> dict[str, Any]:
        try:
            return dict(self._call("state", None)["data"])
        except _Lost as exc:
            raise RemoteEnvError(f"the session is gone: {exc}") from None

    @property
    def served_verifier(self) -> dict[str, Any]:
        """What judges the served env's replies (provenance: its name and version), as the
        server describes it in each session's state."""
        if self._verifier is None:
            self._verifier = dict(self._state().get("verifier") or {})
        return dict(self._verifier)

    # --- the session ----------------------------------------------------------------------------

    def _call(self, kind: str, data: dict[str, Any] | None) -> dict[str, Any]:
        message: dict[str, Any] = {"type": kind}
        if data is not None:
            message["data"] = data
        socket_ = self._connected()
        try:
            try:
                socket_.send(json.dumps(message))
            except WebSocketException:
                # The server may have closed right after sending its reason (a full server
                # refuses a session that way): read what it said before giving up.
                answer = json.loads(socket_.recv(timeout=1))
            else:
                answer = json.loads(socket_.recv(timeout=self.step_timeout))
        except (OSError, TimeoutError, WebSocketException, ValueError) as exc:
            self._disconnect()
            raise _Lost(f"{type(exc).__name__}: {exc}") from None
        if answer.get("type") == "error":
            raise self._served_error(answer.get("data") or {})
        return answer if kind == "state" else answer["data"]

    def _served_error(self, data: dict[str, Any]) -> Exception:
        message = str(data.get("message", "unknown error"))
        name = error_name(message)
        if name == SESSION_EXPIRED:
            self._disconnect()
            return _Lost(message)
        if data.get("code") == "CAPACITY_REACHED":
            self._disconnect()
            return RemoteEnvError(f"the server at {self.base_url} is full: {message}")
        if name is not None:
            return getattr(env_errors, name)(message.partition(": ")[2])
        return RemoteEnvError(f"the served env failed: {message}")

    def _connected(self) -> ClientConnection:
        if self._socket is None:
            ws_url = self.base_url.replace("http", "ws", 1) + "/ws"
            try:
                self._socket = connect(
                    ws_url,
                    sock=self._tcp_socket(),
                    open_timeout=self.connect_timeout,
                    max_size=MAX_MESSAGE_BYTES,
                    compression=None,  # small JSON messages: deflate costs more than it saves
                    legacy=True,  # held open across calls, not in a `with` block
                )
            except (OSError, WebSocketException) as exc:
                raise RemoteEnvError(
                    f"cannot open a session at {self.base_url}: {exc}; is `rlvr serve` running?"
                ) from None
        return self._socket

    def _tcp_socket(self) -> socket.socket | None:
        """A plain-HTTP server's socket with Nagle off (one small message each way per step:
        Nagle's delay would add tens of milliseconds); None for TLS, which websockets opens."""
        parts = urllib.parse.urlsplit(self.base_url)
        if parts.scheme != "http":
            return None
        raw = socket.create_connection((parts.hostname, parts.port or 80), self.connect_timeout)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return raw

    def _disconnect(self) -> None:
        if self._socket is not None:
            socket_, self._socket = self._socket, None
            with contextlib.suppress(OSError, WebSocketException):
                socket_.close()

    def _lost(self, action: str, why: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """The step of an episode whose session died: an infrastructure error, never a 0."""
        info = copy.deepcopy(self._last.get("info") or {})
        messages = list(self._last.get("messages") or [])
        messages.append({"role": "assistant", "content": action})
        info.update(
            messages=messages,
            turn=int(info.get("turn", 0)) + 1,
            infra_error=True,
            rewards={"total": 0.0},
            served_error=why,
        )
        info.pop("verdict", None)
        self._done = True
        return "", 0.0, False, True, info

    def _get(self, path: str) -> dict[str, Any]:
        try:
            with urllib.request.urlopen(self.base_url + path, timeout=self.connect_timeout) as r:
                return dict(json.loads(r.read()))
        except (OSError, ValueError, urllib.error.URLError) as exc:
            raise RemoteEnvError(
                f"cannot reach {self.base_url}{path}: {exc}; start the server with "
                "`rlvr serve ENV_ID --port PORT` and pass its URL"
            ) from None


def _base_url(url: Any) -> str:
    if not isinstance(url, str):
        raise EnvConfigError(f"url must be the server's address as a str, got {url!r}")
    parts = urllib.parse.urlsplit(url.strip())
    scheme = {"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme)
    if scheme not in ("http", "https") or not parts.hostname:
        raise EnvConfigError(
            f"url must look like http://HOST:PORT (the `rlvr serve` server), got {url!r}"
        )
    return f"{scheme}://{parts.netloc}{parts.path.rstrip('/')}"
