"""A real HTTP server on loopback for the generated sites, with per-visitor sessions.

`SiteServer` serves one `App` (the shop or the encyclopedia) from a `ThreadingHTTPServer` in a
daemon thread. Every visitor has a session (cookie `sid`, an unguessable token) holding its own
state (cart, orders), so rollouts that share a server never see each other's state. Requests of
one session run one at a time; different sessions run concurrently.

Environments share servers through `acquire_server`/`release_server`: the first env that needs a
site starts its server, the last one to close stops it. Nothing starts at import time.

Built-in routes: `POST /api/session` starts a fresh session (returns `{"session": token}` and
sets the cookie), `DELETE /api/session` ends the caller's, `GET /api/site` describes the site.
"""

from __future__ import annotations

import html
import json
import logging
import math
import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from http.cookies import CookieError, SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol
from urllib.parse import parse_qs, urlencode, urlsplit

from rlvr._shared import SharedResources

logger = logging.getLogger(__name__)

COOKIE = "sid"
MAX_BODY_BYTES = 64 * 1024


@dataclass
class Session:
    """One visitor's state. Apps keep what they need in `data`."""

    token: str
    data: dict[str, Any] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    form: dict[str, str]
    session: Session


@dataclass
class Response:
    status: int = 200
    body: str = ""
    content_type: str = "text/html; charset=utf-8"
    location: str | None = None
    """Redirect target; the status should then be 303."""

    @classmethod
    def json(cls, value: Any, status: int = 200) -> Response:
        return cls(status, json.dumps(value), "application/json")

    @classmethod
    def redirect(cls, location: str) -> Response:
        return cls(303, "", location=location)


class App(Protocol):
    """A site: turns requests into responses. Must be safe to call from many threads."""

    def handle(self, request: Request) -> Response: ...

    def describe(self) -> dict[str, Any]: ...


# --- HTML helpers shared by the apps ---------------------------------------------------------


def escape(text: Any) -> str:
    return html.escape(str(text), quote=True)


def link(href: str, text: str) -> str:
    return f'<a href="{escape(href)}">{escape(text)}</a>'


def html_page(title: str, body: str, nav: str = "") -> str:
    return (
        "<!DOCTYPE html>\n<html><head><meta charset='utf-8'>"
        f"<title>{escape(title)}</title></head>\n<body>\n"
        f"<nav>{nav}</nav>\n<main>\n{body}\n</main>\n</body></html>\n"
    )


def paginate(items: list, page_text: str, size: int = 10) -> tuple[int, int, list]:
    """(page, number of pages, the items on that page) for a 1-based page given as text."""
    pages = max(1, math.ceil(len(items) / size))
    try:
        page = min(max(int(page_text), 1), pages)
    except ValueError:
        page = 1
    return page, pages, items[(page - 1) * size : page * size]


def pager(path: str, params: dict[str, Any], page: int, pages: int) -> str:
    """Links to the previous and next page of a listing."""
    links = []
    if page > 1:
        links.append(link(f"{path}?{urlencode({**params, 'page': page - 1})}", "Previous page"))
    if page < pages:
        links.append(link(f"{path}?{urlencode({**params, 'page': page + 1})}", "Next page"))
    return f"<p>{' '.join(links)}</p>" if links else ""


def error_page(status: int, message: str, nav: str = "") -> Response:
    return Response(
        status, html_page("Error", f"<h1>Error {status}</h1><p>{escape(message)}</p>", nav)
    )


# --- the server ---------------------------------------------------------------------------------


class SessionStore:
    """Sessions by token, oldest dropped first beyond `capacity`."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._lock = threading.Lock()

    def new(self) -> Session:
        session = Session(secrets.token_hex(16))
        with self._lock:
            self._sessions[session.token] = session
            while len(self._sessions) > self.capacity:
                self._sessions.popitem(last=False)
        return session

    def get(self, token: str | None) -> Session | None:
        if not token:
            return None
        with self._lock:
            session = self._sessions.get(token)
            if session is not None:
                self._sessions.move_to_end(token)
            return session

    def drop(self, token: str) -> None:
        with self._lock:
            self._sessions.pop(token, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)


class SiteServer:
    """Serves `app` on `host:port` (port 0 picks a free one) until `stop()`."""

    def __init__(
        self, app: App, *, host: str = "127.0.0.1", port: int = 0, max_sessions: int = 10_000
    ) -> None:
        self.app = app
        self.sessions = SessionStore(max_sessions)
        handler = type("Handler", (_Handler,), {"site": self})
        self._httpd = _HTTPServer((host, port), handler)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> SiteServer:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._httpd.serve_forever,
                kwargs={"poll_interval": 0.05},  # how long stop() waits for the loop to notice
                name=f"rlvr-site {self.url}",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join()
            self._thread = None
        self._httpd.server_close()

    def abandon(self) -> None:
        """In a forked child: close the child's copy of the listening socket, leaving the
        parent's server serving."""
        self._httpd.socket.close()

    def serve_forever(self) -> None:
        """Serve in the calling thread (the `rlvr web serve` command)."""
        try:
            self._httpd.serve_forever()
        finally:
            self._httpd.server_close()


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default backlog of 5 resets connections when a GRPO group's envs all
    # request at once.
    request_queue_size = 256


class _Handler(BaseHTTPRequestHandler):
    site: SiteServer
    server_version = "rlvr-site/0"

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s %s", self.address_string(), format % args)

    def _dispatch(self, method: str) -> None:
        parts = urlsplit(self.path)
        path = parts.path or "/"
        query = {key: values[0] for key, values in parse_qs(parts.query).items()}
        try:
            form = self._read_form()
        except ValueError as exc:
            self._send(error_page(400, str(exc)), None)
            return
        store = self.site.sessions
        if path == "/api/session" and method == "POST":
            fresh = store.new()
            self._send(Response.json({"session": fresh.token}), fresh.token)
            return
        session = store.get(self._cookie())
        if path == "/api/session" and method == "DELETE":
            if session is not None:
                store.drop(session.token)
            self._send(Response.json({"ended": session is not None}), None)
            return
        if path == "/api/site":
            self._send(Response.json(self.site.app.describe()), None)
            return
        new_token = None
        if session is None:
            session = store.new()
            new_token = session.token
        request = Request(method, path, query, form, session)
        with session.lock:
            try:
                response = self.site.app.handle(request)
            except Exception:  # the server boundary: log it, answer 500, keep serving
                logger.exception("site error on %s %s", method, self.path)
                response = error_page(500, "internal error")
        self._send(response, new_token)

    def _cookie(self) -> str | None:
        raw = self.headers.get("Cookie")
        if not raw:
            return None
        try:
            morsel = SimpleCookie(raw).get(COOKIE)
        except CookieError:
            return None
        return morsel.value if morsel is not None else None

    def _read_form(self) -> dict[str, str]:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            raise ValueError(f"request body over {MAX_BODY_BYTES} bytes")
        if length <= 0:
            return {}
        body = self.rfile.read(length).decode("utf-8", errors="replace")
        if self.headers.get("Content-Type", "").startswith("application/json"):
            value = json.loads(body) if body.strip() else {}
            if not isinstance(value, dict):
                raise ValueError("a JSON body must be an object")
            return {str(key): _form_value(item) for key, item in value.items()}
        return {key: values[0] for key, values in parse_qs(body).items()}

    def _send(self, response: Response, new_token: str | None) -> None:
        body = response.body.encode("utf-8")
        self.send_response(response.status)
        self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        if response.location is not None:
            self.send_header("Location", response.location)
        if new_token is not None:
            self.send_header("Set-Cookie", f"{COOKIE}={new_token}; Path=/; HttpOnly; SameSite=Lax")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


def _form_value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


# --- sharing servers between envs ------------------------------------------------------------

# In a forked child (an `AsyncVectorEnv` worker) the table starts empty: the parent's servers serve
# from the parent's threads, which the child does not have, and stop when the parent's envs close.
# The child closes its copies of their listening sockets (`abandon`) and starts its own.
SERVERS: SharedResources[SiteServer] = SharedResources(
    "site server", SiteServer.stop, abandon=SiteServer.abandon
)


def acquire_server(key: Hashable, make_app: Callable[[], App]) -> SiteServer:
    """The running server for `key`, started with `make_app()` if no env holds one yet."""
    return SERVERS.acquire(key, lambda: SiteServer(make_app()).start())


def release_server(key: Hashable) -> None:
    """Give back a server from `acquire_server`; the last user's release stops it."""
    SERVERS.release(key)


def running_servers() -> dict[Hashable, str]:
    """Key -> URL of every shared server running in this process (for tests and debugging)."""
    return {key: server.url for key, server in SERVERS.current().items()}
