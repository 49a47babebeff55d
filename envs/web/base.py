"""What the web envs share: the `WebSite` interaction (a site server, and a fresh browser session
per episode whose pages are the tools) and `web_env_parts`, which builds a family's task source
and interaction from the options every web env takes (`WebOptions`)."""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypedDict

from rlvr.envs import options as checks
from rlvr.envs import services
from rlvr.envs.core import TextEnv
from rlvr.envs.errors import EnvConfigError, ToolInfraError
from rlvr.envs.options import (
    declare,
    level,
    nonempty_text,
    one_of,
    optional,
    real,
    whole,
)
from rlvr.envs.services import one_line
from rlvr.envs.tasks import SPLITS, Generator, ProceduralSource
from rlvr.envs.tools.env import ToolUse
from rlvr.envs.tools.tool import Tool
from rlvr.envs.web.browser import Browser
from rlvr.envs.web.server import App, acquire_server, release_server
from rlvr.verifiers.types import Task

WEB_INSTRUCTIONS = (
    "You are using a website through tools. Pages come back as text; links are numbered like "
    "[3], and follow_link(3) opens one."
)

SiteTools = Callable[[Browser, TextEnv], Sequence[Tool]]
"""`site_tools(browser, env) -> tools` beyond browsing (add to cart, buy, ...), bound to one
episode's browser session and task (`env.task`)."""


class WebSite(ToolUse):
    """Tool use on a generated site: every episode browses the site in its own session.

    `app` serves the site; its `describe()` names it by `kind`, `seed` and `size`. The site's
    server starts at the first episode (never at import or construction) and is shared with
    every env of this process that serves the same site; the last one to `close` stops it. With
    `server_url` a server that is already running (e.g. `rlvr web serve`) is used, after checking
    that it serves the same site. Every episode opens its own session on the site, so carts and
    orders never leak between episodes or envs. The tools are the browser's (`search`,
    `open_page`, `follow_link`, `find_in_page`) and `site_tools(browser, env)`; the other
    arguments are `ToolUse`'s (`instructions` default to `WEB_INSTRUCTIONS`).

    State of the episode: `browser` (its session), and `ToolUse`'s `calls`.
    """

    def __init__(
        self,
        app: App,
        *,
        site_tools: SiteTools | None = None,
        server_url: str | None = None,
        max_page_chars: int = 3000,
        http_timeout: float = 5.0,
        instructions: str | None = WEB_INSTRUCTIONS,
        **tool_use_kwargs: Any,
    ) -> None:
        super().__init__((), instructions=instructions, **tool_use_kwargs)
        self.max_page_chars = checks.integer(max_page_chars, name="max_page_chars", minimum=200)
        site = app.describe()
        self.app = app
        self.site_description = site
        self.site_key = (site["kind"], site["seed"], site["size"])
        self.site_tools = site_tools
        self.server_url = server_url
        self.http_timeout = http_timeout
        self.browser: Browser | None = None
        self._site_url: str | None = None
        self._release: weakref.finalize | None = None
        if server_url is not None:  # a server that is not there stops the program now
            url = server_url.rstrip("/")
            services.reach(("site", url, self.site_key), lambda: self._reach_external_site(url))

    # --- the site --------------------------------------------------------------------------

    def site_url(self) -> str:
        """The site's URL, starting (or joining) the shared server on first use."""
        if self._site_url is None:
            if self.server_url is not None:
                self._check_external_site(self.server_url.rstrip("/"))
                self._site_url = self.server_url.rstrip("/")
            else:
                server = acquire_server(self.site_key, lambda: self.app)
                # Give the server back even if the env is dropped without close().
                self._release = weakref.finalize(self, release_server, self.site_key)
                self._site_url = server.url
        return self._site_url

    def _reach_external_site(self, url: str) -> None:
        try:
            self._check_external_site(url)
        except ToolInfraError as exc:
            raise EnvConfigError(
                f"server_url={self.server_url!r}: the site does not answer ({one_line(exc)}); "
                f"start it with `rlvr web serve {self.site_description['kind']} --seed "
                f"{self.site_description['seed']} --size {self.site_description['size']}`, "
                "or drop server_url to serve the site in this process"
            ) from None

    def _check_external_site(self, url: str) -> None:
        probe = Browser(url, timeout=self.http_timeout)
        served = probe.get_json("/api/site")
        if served != self.site_description:
            raise EnvConfigError(
                f"{self.server_url} serves {served}, but this env's tasks are for "
                f"{self.site_description}; start the server with the same site, seed and size"
            )

    # --- episodes --------------------------------------------------------------------------

    def episode_tools(self, env: TextEnv, task: Task) -> Sequence[Tool]:
        self.browser = Browser(
            self.site_url(), timeout=self.http_timeout, max_page_chars=self.max_page_chars
        ).start()
        site_tools = self.site_tools(self.browser, env) if self.site_tools is not None else ()
        # No request the agent can make is slow (sizes are bounded): a tool over its time limit
        # means the site stalled, which is our failure, not the agent's.
        tools = [*self.browser.tools(), *site_tools]
        return [dataclasses.replace(one, slow_is_infra=True) for one in tools]

    def end_episode(self) -> None:
        if self.browser is not None:
            self.browser.close()
            self.browser = None

    def close(self) -> None:
        super().close()
        if self._release is not None:
            self._release()  # runs release_server once
            self._release = None
        self._site_url = None


class WebOptions(TypedDict, total=False):
    """The options every web env takes (see the env cards)."""

    split: str
    difficulty: int | Sequence[int]
    seed: int
    server_url: str | None
    max_page_chars: int
    tool_timeout: float


MAX_SITE_SIZE = 100_000  # pages of a generated site: past this, building it takes minutes


def web_arguments(levels: Sequence[int], min_site_size: int) -> Mapping[str, checks.Check]:
    """The `argument_checks` of a web env: its `WebOptions`, `site_seed` and `site_size`."""
    return declare(
        site_seed=whole(0),
        site_size=whole(min_site_size, MAX_SITE_SIZE),
        split=one_of(*SPLITS),
        difficulty=level(levels),
        seed=whole(0),
        server_url=optional(nonempty_text),
        max_page_chars=whole(200),
        tool_timeout=real(0.0, low_open=True),
    )


def web_env_parts(
    app: App,
    generate: Generator,
    *,
    family: str,
    split: str = "train",
    difficulty: int | Sequence[int] = (1, 2, 3),
    seed: int = 0,
    **site_options: Any,
) -> tuple[ProceduralSource, WebSite]:
    """The task source and the interaction of a web env: tasks drawn by `generate` about the
    site `app` serves (named after the family and the site), played on that site:
    `site_options` are `WebSite`'s (the family's `site_tools`, `oracle` and
    `final_instructions`, and the user's `WebOptions`)."""
    site = app.describe()
    tasks = ProceduralSource(
        generate,
        name=f"{family}-s{site['seed']}-n{site['size']}",
        split=split,
        difficulty=difficulty,
        seed=seed,
    )
    return tasks, WebSite(app, **site_options)
