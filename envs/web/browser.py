"""A text browser for agents: fetches the site's pages over HTTP and renders them as compact text.

A page becomes a few lines: `# heading`, `- item`, and links numbered in place (`[3] Trail
Backpack`), so the agent can `follow_link(3)`. Forms, scripts and styles are left out (actions
such as adding to the cart are tools). Each `Browser` has its own session on the site, so two
browsers never share a cart.
"""

from __future__ import annotations

import contextlib
import http.client
import json
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any
from urllib.parse import quote, urlencode, urljoin, urlsplit

from rlvr.envs.errors import EnvConfigError, ToolError, ToolInfraError
from rlvr.envs.tools.tool import Tool, object_schema
from rlvr.envs.web.server import MAX_BODY_BYTES

MAX_RESPONSE_BYTES = 2 * 1024 * 1024
# Longer requests are refused here, as the agent's mistake: sent, the server cuts them off and
# the broken connection would look like a dead site (an infrastructure error).
MAX_PATH_CHARS = 8192
# What a browser leaves as is in an address; anything else (spaces, control characters,
# non-ASCII) is percent-encoded, so no address the agent writes can break the HTTP request.
_URL_SAFE = "/?&=%:@!$'()*+,;~"
_BLOCK_TAGS = {"p", "div", "ul", "ol", "nav", "main", "section", "table", "tr", "br", "h1", "h2",
               "h3", "h4", "li", "footer", "header", "article"}  # fmt: skip
_SKIPPED_TAGS = {"script", "style", "form", "head", "select", "button", "template"}


@dataclass
class Page:
    """A rendered page: its path (with query), title, text lines and numbered links."""

    url: str
    status: int
    title: str
    lines: list[str]
    links: list[str] = field(default_factory=list)
    """Link targets; link n (1-based, as shown in the text) is `links[n - 1]`."""

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


class _Renderer(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lines: list[str] = []
        self.links: list[str] = []
        self.title = ""
        self._line: list[str] = []
        self._prefix = ""
        self._skip = 0
        self._in_title = False
        self._link_text: list[str] | None = None
        self._href = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        if tag in _SKIPPED_TAGS:
            self._skip += 1
            return
        if self._skip:
            return
        if tag in _BLOCK_TAGS:
            self._flush()
        if tag in ("h1", "h2", "h3", "h4"):
            self._prefix = "#" * int(tag[1]) + " "
        elif tag == "li":
            self._prefix = "- "
        elif tag == "a":
            self._href = dict(attrs).get("href") or ""
            self._link_text = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if tag in _SKIPPED_TAGS:
            self._skip = max(0, self._skip - 1)
            return
        if self._skip:
            return
        if tag == "a" and self._link_text is not None:
            text = " ".join("".join(self._link_text).split())
            if self._href:
                self.links.append(self._href)
                self._line.append(f"[{len(self.links)}] {text}")
            else:
                self._line.append(text)
            self._link_text = None
        elif tag in _BLOCK_TAGS:
            self._flush()

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        if self._skip:
            return
        if self._link_text is not None:
            self._link_text.append(data)
        else:
            self._line.append(data)

    def _flush(self) -> None:
        text = " ".join("".join(self._line).split())
        if text:
            self.lines.append(self._prefix + text)
        self._line, self._prefix = [], ""

    def close(self) -> None:
        super().close()
        self._flush()


def render_html(html: str, url: str, status: int = 200) -> Page:
    """Render an HTML document as a `Page`."""
    renderer = _Renderer()
    renderer.feed(html)
    renderer.close()
    return Page(url, status, " ".join(renderer.title.split()), renderer.lines, renderer.links)


class Browser:
    """One agent's browser on the site at `base_url`, with its own session.

    Arguments:
        base_url: the site, e.g. "http://127.0.0.1:41234".
        timeout: seconds per HTTP request.
        max_page_chars: longest page text shown (find_in_page searches the whole page).
        blocked_prefixes: paths the agent may not open (the JSON API).
    """

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = 5.0,
        max_page_chars: int = 3000,
        blocked_prefixes: tuple[str, ...] = ("/api/",),
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme != "http" or not parts.hostname or not parts.port:
            raise EnvConfigError(f"base_url must look like http://HOST:PORT, got {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.host, self.port = parts.hostname, parts.port
        self.timeout = timeout
        self.max_page_chars = max_page_chars
        self.blocked_prefixes = blocked_prefixes
        self.token: str | None = None
        self.page: Page | None = None

    # --- session ---------------------------------------------------------------------------

    def start(self) -> Browser:
        """Open a fresh session on the site (a new visitor: empty cart, no orders)."""
        status, body, _ = self.request("POST", "/api/session")
        if status != 200:
            raise ToolInfraError(f"the site refused a new session (HTTP {status})")
        self.token = json.loads(body)["session"]
        self.page = None
        return self

    def close(self) -> None:
        """End the session on the site (best effort: the server also drops old sessions)."""
        if self.token is not None:
            with contextlib.suppress(ToolInfraError):
                self.request("DELETE", "/api/session")
            self.token = None

    # --- HTTP ------------------------------------------------------------------------------

    def request(
        self, method: str, path: str, form: dict[str, str] | None = None
    ) -> tuple[int, str, str]:
        """(status, body, final path) of one request, following the site's 303 redirects."""
        if len(path) > MAX_PATH_CHARS:
            raise ToolError(f"the address is longer than {MAX_PATH_CHARS} characters")
        if form is not None and len(urlencode(form).encode("utf-8")) > MAX_BODY_BYTES:
            raise ToolError(f"the form is larger than {MAX_BODY_BYTES} bytes")
        for _ in range(4):
            status, body, location = self._send(method, path, form)
            if status not in (301, 302, 303, 307) or location is None:
                return status, body, path
            path = self._same_site_path(location)
            method, form = "GET", None
        raise ToolInfraError(f"too many redirects from {path}")

    def _send(
        self, method: str, path: str, form: dict[str, str] | None
    ) -> tuple[int, str, str | None]:
        headers = {"Connection": "close"}
        if self.token is not None:
            headers["Cookie"] = f"sid={self.token}"
        body = None
        if form is not None:
            body = urlencode(form).encode("utf-8")
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        connection = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        try:
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            data = response.read(MAX_RESPONSE_BYTES)
            return response.status, data.decode("utf-8", "replace"), response.getheader("Location")
        except (OSError, http.client.HTTPException) as exc:
            raise ToolInfraError(f"the site at {self.base_url} is not answering: {exc}") from None
        finally:
            connection.close()

    def get_json(self, path: str) -> Any:
        status, body, _ = self.request("GET", path)
        if status != 200:
            raise ToolInfraError(f"GET {path} answered HTTP {status}")
        try:
            return json.loads(body)
        except ValueError:
            raise ToolInfraError(f"GET {path} answered something that is not JSON") from None

    # --- pages -----------------------------------------------------------------------------

    def visit(self, path: str, form: dict[str, str] | None = None) -> Page:
        """Load a page (POST when `form` is given); it becomes the current page unless it is an
        error page, which raises `ToolError` with the page's text."""
        status, body, final_path = self.request("GET" if form is None else "POST", path, form)
        if status >= 500:  # the site failed, not the agent
            raise ToolInfraError(f"{path} answered HTTP {status}")
        page = render_html(body, final_path, status)
        if status >= 400:
            # The error page's own text, without its heading and navigation links.
            message = " ".join(
                line for line in page.lines if not line.startswith("#") and "[" not in line
            )
            raise ToolError(message or f"HTTP {status} for {path}")
        self.page = page
        return page

    def show(self, page: Page) -> str:
        """The page as the agent sees it (cut at `max_page_chars`)."""
        text = page.text
        if len(text) > self.max_page_chars:
            text = text[: self.max_page_chars] + "\n... (page cut; use find_in_page to search it)"
        return f"URL: {page.url}\nTitle: {page.title}\n\n{text}"

    def _same_site_path(self, url: str) -> str:
        parts = urlsplit(urljoin(self.base_url + "/", url))
        if (parts.hostname, parts.port) != (self.host, self.port):
            raise ToolError("only pages of this site can be opened")
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return quote(path, safe=_URL_SAFE, errors="backslashreplace")

    # --- the agent's tools --------------------------------------------------------------------

    def search(self, query: str) -> str:
        return self.show(self.visit("/search?" + urlencode({"q": query})))

    def open_page(self, url: str) -> str:
        path = self._same_site_path(url.strip())
        if path.startswith(self.blocked_prefixes):
            raise ToolError(f"{path} is not a page; open pages such as / or /search?q=...")
        return self.show(self.visit(path))

    def follow_link(self, number: int) -> str:
        links = self.page.links if self.page is not None else []
        if not 1 <= number <= len(links):
            where = f"links go from 1 to {len(links)}" if links else "this page has no links"
            raise ToolError(f"there is no link [{number}] on the current page; {where}")
        return self.open_page(links[number - 1])

    def find_in_page(self, text: str) -> str:
        if self.page is None:
            raise ToolError("no page is open yet; search or open a page first")
        needle = text.strip().lower()
        if not needle:
            raise ToolError("give the text to look for")
        found = [
            f"line {number}: {line}"
            for number, line in enumerate(self.page.lines, 1)
            if needle in line.lower()
        ]
        if not found:
            return f"No line of {self.page.url} contains {text!r}."
        shown = found[:20]
        more = f"\n({len(found) - 20} more lines match)" if len(found) > 20 else ""
        return (
            f"{len(found)} line(s) of {self.page.url} contain {text!r}:\n" + "\n".join(shown) + more
        )

    def tools(self) -> list[Tool]:
        """search, open_page, follow_link and find_in_page, bound to this browser."""
        return [
            Tool(
                "search",
                "Search the site; returns the first page of results with numbered links.",
                object_schema({"query": {"type": "string", "description": "words to look for"}}),
                self.search,
            ),
            Tool(
                "open_page",
                "Open a page of the site by its path (e.g. /search?q=lamp&page=2).",
                object_schema({"url": {"type": "string", "description": "a path on this site"}}),
                self.open_page,
            ),
            Tool(
                "follow_link",
                "Open the link numbered [number] on the current page.",
                object_schema({"number": {"type": "integer", "description": "the link's number"}}),
                self.follow_link,
            ),
            Tool(
                "find_in_page",
                "List the lines of the current page that contain a text (case-insensitive).",
                object_schema({"text": {"type": "string", "description": "the text to find"}}),
                self.find_in_page,
            ),
        ]

    def link_number(self, path: str) -> int | None:
        """The number of the current page's first link to `path`, if any."""
        if self.page is None:
            return None
        for number, href in enumerate(self.page.links, 1):
            if self._same_site_path(href) == path:
                return number
        return None
