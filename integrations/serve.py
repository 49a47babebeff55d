"""`rlvr serve ENV_ID`: any registered env over OpenEnv's protocol (extra `serve`).

The server is openenv-core's own (`HTTPEnvServer` on FastAPI, served by uvicorn), in its
production mode: a session is one WebSocket at `/ws` holding its own env instance, made lazily
at the session's first reset and closed when the socket closes, when the session sits idle past
`idle_timeout`, or when the server shuts down. `/health`, `/schema` and `/metadata` answer as in
every OpenEnv server. What this module adds is the env side of the contract:

- `TextAction` (the reply `text`, and for a multi-agent env optionally the `agent` replying) and
  `TextObservation` (the fields listed in `rlvr.integrations.wire.OBSERVATION_FIELDS`: the
  env's observation, the chat, its `info` with `verdict` and `infra_error`, end flags, the task
  fingerprint, and for multi-agent envs who moves);
- `ServedEnv`, an OpenEnv `Environment` driving one rlvr env (`gym.make`) or one multi-agent
  game (`rlvr.envs.multiagent.make`, mapped onto reset/step: see docs/serving.md);
- the limits: sessions (`max_sessions`, then OpenEnv's `CAPACITY_REACHED` error, and HTTP 503
  for connections past that plus a margin), message and body sizes (`max_message_bytes`: a
  bigger WebSocket message closes that socket with code 1009, a bigger HTTP body gets 413),
  idle sessions reaped after `idle_timeout` seconds.

Everything a reply can change is inside `messages` and the verdict's fields; `infra_error`
comes from the env's own `info` (facts, see docs/design.md), and the action's `metadata`, which
OpenEnv's base `Action` carries, is never read. The threat model is in docs/serving.md.

Why one module of ~660 lines (the project keeps modules under ~600): the session lifecycle,
the wire types and the worker hand-off are one server, reviewed with its threat model.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from rlvr.integrations.errors import IntegrationConfigError
from rlvr.integrations.wire import error_text, jsonable

try:
    import uvicorn
    from fastapi import FastAPI, WebSocketDisconnect
    from fastapi.responses import JSONResponse
    from openenv.core.env_server.http_server import HTTPEnvServer
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.types import (
        Action,
        ConcurrencyConfig,
        EnvironmentMetadata,
        Observation,
        ServerMode,
        State,
    )
    from pydantic import Field
    from uvicorn.protocols.utils import ClientDisconnected
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError(
        f"rlvr serve needs the serve extra: pip install 'rlvr-gym[serve]' ({exc})"
    ) from None

logger = logging.getLogger("rlvr.serve")

CONFIG_VARIABLE = "RLVR_SERVE_CONFIG"
"""Where `--workers N` hands each uvicorn worker process its config (JSON)."""
CONNECTION_MARGIN = 16
"""Connections allowed past `max_sessions` (health checks, a refused session's socket) before
uvicorn answers HTTP 503."""
LOOPBACK = ("127.0.0.1", "localhost", "::1")


class ServeConfigError(IntegrationConfigError):
    """`rlvr serve` was configured with something that cannot work."""


@dataclass(frozen=True)
class ServeConfig:
    """What `rlvr serve` serves, where, and within which limits."""

    env_id: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    """Keyword arguments of every session's env (`gym.make(env_id, **kwargs)`)."""
    host: str = "127.0.0.1"
    """Address to bind: loopback unless you mean to expose the env (docs/serving.md)."""
    port: int = 8000
    workers: int = 1
    """uvicorn worker processes; each holds up to `max_sessions` sessions of its own."""
    max_sessions: int = 64
    """Sessions (envs) one worker holds at once; one more gets `CAPACITY_REACHED`."""
    idle_timeout: float = 300.0
    """Seconds a session may sit without a message before its env is closed."""
    max_message_bytes: int = 1 << 20
    """Largest WebSocket message or HTTP body accepted."""
    oracle: bool = False
    """Serve the oracle's reply in each session's state (it reads the gold answer: for
    `check_env` and oracle baselines, never for a policy being trained)."""

    def __post_init__(self) -> None:
        if not isinstance(self.env_id, str) or not self.env_id:
            raise ServeConfigError("give the id of a registered env, e.g. rlvr/Math-v0")
        if not isinstance(self.kwargs, Mapping):
            raise ServeConfigError(
                f"--kwargs must be a JSON object, got {type(self.kwargs).__name__}"
            )
        for name in ("port", "workers", "max_sessions", "max_message_bytes"):
            value = getattr(self, name)
            low = 0 if name == "port" else 1
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ServeConfigError(f"--{name.replace('_', '-')} must be an int >= {low}")
        if self.port > 65535:
            raise ServeConfigError(f"--port must be at most 65535, got {self.port}")
        if not isinstance(self.idle_timeout, (int, float)) or not self.idle_timeout > 0:
            raise ServeConfigError("--idle-timeout must be a number of seconds > 0")

    def to_json(self) -> str:
        return json.dumps({**asdict(self), "kwargs": dict(self.kwargs)})

    @classmethod
    def from_json(cls, text: str) -> ServeConfig:
        return cls(**json.loads(text))


# --- the wire types (OpenEnv's Action, Observation and State) -------------------------------------


class TextAction(Action):
    """A reply. `agent` names who replies in a multi-agent env (checked against whose turn it
    is, like `TextAECEnv.step(..., agent=...)`); OpenEnv's `metadata` field is ignored."""

    text: str = Field(description="the reply, as the model wrote it")
    agent: str | None = Field(default=None, description="multi-agent envs: who is replying")


class TextObservation(Observation):
    """What a reset or a step returns (`reward` and `done` are OpenEnv's own fields; `done` is
    `terminated or truncated`)."""

    text: str = Field(default="", description="the env's observation (the new user message)")
    messages: list[dict[str, Any]] = Field(
        default_factory=list, description="the chat so far, as the agent to move sees it"
    )
    info: dict[str, Any] = Field(
        default_factory=dict, description="the env's info (JSON), less `messages` (above)"
    )
    infra_error: bool = Field(
        default=False, description="our machinery failed: drop the sample, it is not a 0"
    )
    verdict: dict[str, Any] | None = Field(default=None, description="the judge's verdict")
    terminated: bool = False
    truncated: bool = False
    task_fingerprint: str | None = Field(
        default=None, description="hash of the posed task, gold included (after reset)"
    )
    agent: str | None = Field(default=None, description="multi-agent: who moves now")
    agents: list[str] = Field(default_factory=list, description="multi-agent: who still plays")
    seats: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="multi-agent: each seat's reward, return, end flags and infra_error",
    )


class TextState(State):
    """A session's state; `oracle_reply` only when the server runs with `--oracle`."""

    env_id: str = ""
    env_kwargs: dict[str, Any] = Field(default_factory=dict, description="the env's kwargs")
    verifier: dict[str, Any] = Field(
        default_factory=dict, description="what judges replies (name, version): provenance"
    )
    oracle_reply: str | None = None


# --- one session's env ----------------------------------------------------------------------------


class _SingleAgent:
    """A Gymnasium env (`gym.make`) behind a session."""

    def __init__(self, config: ServeConfig) -> None:
        import gymnasium as gym

        self.env = gym.make(config.env_id, **dict(config.kwargs))

    def reset(self, seed: int | None, options: dict[str, Any] | None) -> dict[str, Any]:
        from rlvr.rollout.tasks import task_fingerprint

        text, info = self.env.reset(seed=seed, options=options)
        return _fields(text, info, fingerprint=task_fingerprint(self.env))

    def step(self, text: str, agent: str | None) -> dict[str, Any]:
        from rlvr.envs.errors import ActionError

        if agent is not None:
            raise ActionError(f"this env has one agent; send the reply without agent={agent!r}")
        observation, reward, terminated, truncated, info = self.env.step(text)
        return _fields(observation, info, float(reward), bool(terminated), bool(truncated))

    def oracle(self) -> str | None:
        return str(self.env.unwrapped.oracle_reply())  # type: ignore[attr-defined]

    def close(self) -> None:
        self.env.close()


class _Game:
    """A multi-agent game (`rlvr.envs.multiagent.make`, PettingZoo AEC) behind a session: one
    reply per step from the agent to move, dead steps done here, the game over when every seat
    has ended (docs/serving.md#multi-agent-envs)."""

    def __init__(self, config: ServeConfig) -> None:
        from rlvr.envs.multiagent import make

        self.env = make(config.env_id, **dict(config.kwargs))
        self.returns: dict[str, float] = {}

    def reset(self, seed: int | None, options: dict[str, Any] | None) -> dict[str, Any]:
        from rlvr.rollout.tasks import task_fingerprint

        self.env.reset(seed=seed, options=options)
        self.returns = dict.fromkeys(self.env.possible_agents, 0.0)
        return self._view(None, fingerprint=task_fingerprint(self.env))

    def step(self, text: str, agent: str | None) -> dict[str, Any]:
        from rlvr.envs.errors import ResetNeeded

        if self._over():
            raise ResetNeeded("the game is over; reset to play another")
        mover = self.env.agent_selection
        self.env.step(text, agent=agent)
        for seat, reward in self.env.rewards.items():
            self.returns[seat] += float(reward)
        return self._view(float(self.env.rewards.get(mover, 0.0)))

    def oracle(self) -> str | None:
        oracle = getattr(self.env, "oracle_reply", None)
        return str(oracle()) if callable(oracle) else None

    def close(self) -> None:
        self.env.close()

    def _over(self) -> bool:
        env = self.env
        return not env.agents or all(env.terminations[a] or env.truncations[a] for a in env.agents)

    def _view(self, reward: float | None, fingerprint: str | None = None) -> dict[str, Any]:
        env, over = self.env, self._over()
        agent = env.agent_selection
        info = env.infos[agent]
        seats = {
            seat: {
                "reward": float(env.rewards.get(seat, 0.0)),
                "return": self.returns[seat],
                "terminated": bool(env.terminations.get(seat, True)),
                "truncated": bool(env.truncations.get(seat, False)),
                "infra_error": bool(env.infos[seat].get("infra_error", False)),
            }
            for seat in env.possible_agents
        }
        truncated = over and any(s["truncated"] for s in seats.values())
        fields = _fields(str(env.observe(agent)), info, reward, over and not truncated, truncated)
        fields.update(
            infra_error=any(s["infra_error"] for s in seats.values()),
            task_fingerprint=fingerprint,
            agent=None if over else agent,
            agents=[] if over else list(env.agents),
            seats=seats,
        )
        return fields


def _fields(
    text: Any,
    info: Mapping[str, Any],
    reward: float | None = None,
    terminated: bool = False,
    truncated: bool = False,
    *,
    fingerprint: str | None = None,
) -> dict[str, Any]:
    data: dict[str, Any] = jsonable(info)
    messages = data.pop("messages", [])  # sent once, at the top level (the client puts it back)
    return {
        "text": str(text),
        "messages": messages,
        "info": data,
        "infra_error": bool(data.get("infra_error", False)),
        "verdict": data.get("verdict"),
        "reward": reward,
        "done": terminated or truncated,
        "terminated": terminated,
        "truncated": truncated,
        "task_fingerprint": fingerprint,
    }


class ServedError(RuntimeError):
    """An env's exception on its way to the client (`rlvr.integrations.wire.error_text`)."""


class SessionExpired(RuntimeError):
    """The session's env was closed (idle too long, or the server is shutting down)."""


class ServedEnv(Environment):
    """One session: an rlvr env behind OpenEnv's `Environment` interface.

    The env is made at the first reset, in the session's own thread (OpenEnv runs each
    session's calls on a thread of its own). Exceptions leave as `ServedError` whose message
    starts with the original class name, so the client can raise the same one.
    """

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, config: ServeConfig, sessions: LiveSessions) -> None:
        super().__init__()
        self._config = config
        self._driver: _SingleAgent | _Game | None = None
        self._closed = False
        self._episode_id: str | None = None
        self._steps = 0
        self._sessions = sessions
        sessions.add(self)

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        options: dict[str, Any] | None = None,
        **unknown: Any,
    ) -> TextObservation:
        with _served():
            _check_reset(seed, episode_id, options, unknown)
            fields = self._live().reset(seed, options)
            self._episode_id, self._steps = episode_id, 0
            return TextObservation(**fields)

    def step(
        self, action: TextAction, timeout_s: float | None = None, **kwargs: Any
    ) -> TextObservation:
        with _served():
            fields = self._live().step(action.text, action.agent)  # action.metadata: never read
            self._steps += 1
            return TextObservation(**fields)

    @property
    def state(self) -> TextState:
        oracle = None
        if self._config.oracle and self._driver is not None and not self._closed:
            with _served():
                oracle = self._driver.oracle()
        return TextState(
            episode_id=self._episode_id,
            step_count=self._steps,
            env_id=self._config.env_id,
            env_kwargs=jsonable(self._config.kwargs),
            verifier=self._sessions.verifier,
            oracle_reply=oracle,
        )

    def get_metadata(self) -> EnvironmentMetadata:
        return self._sessions.metadata

    @property
    def opened(self) -> bool:
        """Whether this session has made its env (at its first reset) and not closed it."""
        return self._driver is not None and not self._closed

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._sessions.discard(self)
        if self._driver is not None:
            driver, self._driver = self._driver, None
            driver.close()

    def _live(self) -> _SingleAgent | _Game:
        if self._closed:
            raise SessionExpired(
                "this session was closed by the server (idle past its timeout, or shutting "
                "down); open a new one"
            )
        if self._driver is None:
            kind = _Game if self._sessions.multiagent else _SingleAgent
            self._driver = kind(self._config)
        return self._driver


@contextlib.contextmanager
def _served() -> Iterator[None]:
    """Let an exception leave as `ServedError` named after its class; log unexpected ones."""
    from rlvr.envs.errors import EnvError

    try:
        yield
    except ServedError:
        raise
    except (EnvError, TypeError, ValueError, SessionExpired) as exc:
        raise ServedError(error_text(exc)) from exc
    except Exception as exc:
        logger.exception("the env raised")
        raise ServedError(error_text(exc)) from exc


def _check_reset(seed: Any, episode_id: Any, options: Any, unknown: Mapping[str, Any]) -> None:
    from rlvr.envs.errors import ArgumentTypeError, EnvConfigError

    if unknown:
        raise EnvConfigError(
            f"unknown reset arguments {sorted(unknown)}; a reset takes seed, options and episode_id"
        )
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or seed < 0):
        raise ArgumentTypeError(f"seed must be an int >= 0 or null, got {seed!r}")
    if episode_id is not None and not isinstance(episode_id, str):
        raise ArgumentTypeError(f"episode_id must be a string or null, got {episode_id!r}")
    if options is not None and not isinstance(options, dict):
        raise ArgumentTypeError(f"options must be an object or null, got {options!r}")


class LiveSessions:
    """The sessions of one server process, so that shutdown closes every env still open."""

    def __init__(
        self, metadata: EnvironmentMetadata, multiagent: bool, verifier: dict[str, Any]
    ) -> None:
        self.metadata = metadata
        self.multiagent = multiagent
        self.verifier = verifier
        self._lock = threading.Lock()
        self._envs: set[ServedEnv] = set()

    def add(self, env: ServedEnv) -> None:
        with self._lock:
            self._envs.add(env)

    def discard(self, env: ServedEnv) -> None:
        with self._lock:
            self._envs.discard(env)

    def __len__(self) -> int:
        with self._lock:
            return len(self._envs)

    def close_all(self) -> None:
        with self._lock:
            envs, self._envs = list(self._envs), set()
        opened = [env for env in envs if env.opened]
        print(f"rlvr serve: closing {len(opened)} open session(s)", file=sys.stderr, flush=True)
        for env in envs:
            try:
                env.close()
            except Exception:  # shutting down: close the others whatever one does
                logger.exception("closing a session's env failed")


# --- the app --------------------------------------------------------------------------------------


def describe(config: ServeConfig) -> LiveSessions:
    """Check that the env can be made with the config's kwargs (one is made and closed), and
    return the (empty) session table describing it: its metadata, whether it is a multi-agent
    env, and its verifier's provenance. Raises `ServeConfigError` with the env's own reason
    otherwise."""
    import gymnasium as gym

    import rlvr
    from rlvr.envs.errors import EnvError
    from rlvr.envs.multiagent import registry as multiagent_registry

    multiagent = config.env_id in multiagent_registry
    if not multiagent and config.env_id not in gym.registry:
        ours = sorted(i for i in gym.registry if i.startswith("rlvr/"))
        raise ServeConfigError(
            f"unknown env {config.env_id!r}; `rlvr envs` lists them ({', '.join(ours[:4])}, ...)"
        )
    try:
        probe = (_Game if multiagent else _SingleAgent)(config)
    except (EnvError, TypeError, ValueError, ImportError) as exc:
        raise ServeConfigError(
            f"cannot make {config.env_id} with {dict(config.kwargs)}: {exc}"
        ) from None
    try:
        verifier = _verifier_info(probe.env)
    finally:
        probe.close()
    metadata = EnvironmentMetadata(
        name=config.env_id,
        description=_summary(config.env_id, multiagent),
        version=rlvr.__version__,
    )
    return LiveSessions(metadata, multiagent, jsonable(verifier))


def _verifier_info(env: Any) -> dict[str, Any]:
    from rlvr.envs.core import TextEnv

    base = env.unwrapped
    if isinstance(base, TextEnv):
        from rlvr.envs.judge import verifier_info

        return verifier_info(env)
    judge = getattr(base, "judge", None)
    describe = getattr(judge, "describe", None)
    return dict(describe()) if callable(describe) else {}


def _summary(env_id: str, multiagent: bool) -> str:
    import gymnasium as gym

    from rlvr.envs.cli import entry_point_summary
    from rlvr.envs.multiagent import registry as multiagent_registry

    entry = multiagent_registry[env_id].entry_point if multiagent else gym.spec(env_id).entry_point
    return entry_point_summary(entry) or env_id


def build_app(config: ServeConfig) -> BodyLimit:
    """The ASGI app serving `config.env_id` (what uvicorn runs): OpenEnv's FastAPI app behind
    the body-size limit (`.app` is the FastAPI app)."""
    sessions = describe(config)
    app = FastAPI(title=f"rlvr serve {config.env_id}", version=sessions.metadata.version or "")
    server = HTTPEnvServer(
        functools.partial(ServedEnv, config, sessions),
        TextAction,
        TextObservation,
        concurrency_config=ConcurrencyConfig(
            max_concurrent_envs=config.max_sessions, session_timeout=config.idle_timeout
        ),
    )
    # Production mode: no stateless HTTP /reset and /step (each would make an env per request,
    # outside the session limit); sessions live on /ws.
    server.register_routes(app, mode=ServerMode.PRODUCTION)
    _refuse_stateless_routes(app)
    app.router.on_shutdown.append(_closer(sessions))
    app.state.rlvr_sessions = sessions
    return BodyLimit(app, config.max_message_bytes)


def _refuse_stateless_routes(app: FastAPI) -> None:
    detail = (
        "this server keeps sessions on the WebSocket /ws (OpenEnv's EnvClient uses it); "
        "stateless HTTP {path} is off: it would make an env per request"
    )
    for path, method in (("/reset", "POST"), ("/step", "POST"), ("/state", "GET")):

        async def refuse(path: str = path) -> JSONResponse:
            return JSONResponse({"detail": detail.format(path=path)}, status_code=405)

        app.add_api_route(path, refuse, methods=[method], include_in_schema=False)


def _closer(sessions: LiveSessions) -> Callable[[], Awaitable[None]]:
    async def close_sessions() -> None:
        sessions.close_all()

    return close_sessions


class BodyLimit:
    """ASGI middleware answering 413 to an HTTP body over `limit` bytes (declared or sent), and
    keeping a WebSocket client's early departure out of the error log."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] == "websocket":
            # OpenEnv's /ws handler closes the socket in a `finally` that only expects
            # RuntimeError: a client that left first is not an error of ours to log.
            with contextlib.suppress(WebSocketDisconnect, ClientDisconnected):
                await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length", b"0")
        if not declared.isdigit() or int(declared) > self.limit:
            await _too_large(send, self.limit)
            return
        received = 0
        too_large = False

        async def counted_receive() -> dict:
            # Past the limit the body ends there (the app stops reading) and its answer, whatever
            # it is (OpenEnv's /mcp turns any read error into a 200 parse error), becomes a 413.
            nonlocal received, too_large
            if too_large:
                return {"type": "http.request", "body": b"", "more_body": False}
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.limit:
                too_large = True
                return {"type": "http.request", "body": b"", "more_body": False}
            return message

        async def checked_send(message: dict) -> None:
            if not too_large:
                await send(message)
            elif message["type"] == "http.response.start":
                await _too_large(send, self.limit)

        await self.app(scope, counted_receive, checked_send)


async def _too_large(send: Callable, limit: int) -> None:
    body = json.dumps({"detail": f"request body over {limit} bytes"}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _exit_on_signal(signum: int, frame: Any) -> None:
    raise SystemExit(0)


def app_from_environ() -> Any:
    """The app of a uvicorn worker process (`--workers N`): its config comes from the parent
    through `RLVR_SERVE_CONFIG`."""
    return build_app(ServeConfig.from_json(os.environ[CONFIG_VARIABLE]))


def serve(config: ServeConfig) -> None:
    """Serve until interrupted (SIGINT/SIGTERM: sessions are closed, then every pool and
    server the envs held, at exit)."""
    if config.host not in LOOPBACK:
        print(
            f"warning: serving on {config.host}, not loopback: anyone who reaches this port "
            "can run episodes, sending text to the env's judge and sandbox (docs/serving.md)",
            file=sys.stderr,
        )
    options: dict[str, Any] = {
        "host": config.host,
        "port": config.port,
        "ws_max_size": config.max_message_bytes,
        "limit_concurrency": config.max_sessions + CONNECTION_MARGIN,  # per worker
        "timeout_graceful_shutdown": 5,
        "log_level": "warning",
    }
    if config.workers > 1:
        os.environ[CONFIG_VARIABLE] = config.to_json()
        target: Any = "rlvr.integrations.serve:app_from_environ"
        options.update(factory=True, workers=config.workers)
    else:
        target = build_app(config)
    # uvicorn shuts down gracefully on SIGTERM, then raises the signal again: exit through
    # SystemExit instead of dying by it, so that the atexit hooks close every pool and server.
    signal.signal(signal.SIGTERM, _exit_on_signal)
    print(
        f"serving {config.env_id} on http://{config.host}:{config.port} (OpenEnv sessions: "
        f"ws://{config.host}:{config.port}/ws; health: /health)",
        flush=True,
    )
    uvicorn.run(target, **options)
