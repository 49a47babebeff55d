"""`WebEnv`: what the web envs share — a site server, and a fresh browser session per episode."""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from rlvr.envs.core import Start
from rlvr.envs.errors import EnvConfigError
from rlvr.envs.tasks import Generator, ProceduralSource
from rlvr.envs.tools.env import VerifiableToolEnv
from rlvr.envs.tools.tool import Tool
from rlvr.envs.verifiable import VerifiableEnv
from rlvr.envs.web.browser import Browser
from rlvr.envs.web.server import App, acquire_server, release_server
from rlvr.verifiers.types import Verifier

WEB_INSTRUCTIONS = (
    "You are using a website through tools. Pages come back as text; links are numbered like "
    "[3], and follow_link(3) opens one."
)


class WebEnv(VerifiableToolEnv):
    """Base of the web envs: tasks about a generated site, posed and judged like any
    `VerifiableEnv`, with the site's pages as tools.

    `app` serves the site; its `describe()` names it by `kind`, `seed` and `size`. `generate`
    draws a task about that site (a `ProceduralSource` generator, named `family`); `verifier`
    judges the final answer. The site's server starts at the first `reset` (never at import or
    construction) and is shared with every env of this process that serves the same site; the
    last env to `close` stops it. With `server_url` the env uses a server that is already
    running (e.g. `rlvr web serve`) and checks that it serves the same site. Every episode opens
    its own session on the site, so carts and orders never leak between episodes or envs.
    """

    def __init__(
        self,
        app: App,
        generate: Generator,
        verifier: Verifier | Callable[..., Any],
        *,
        family: str,
        split: str,
        difficulty: int | Sequence[int],
        seed: int,
        server_url: str | None = None,
        max_page_chars: int = 3000,
        http_timeout: float = 5.0,
        **tool_env_kwargs: Any,
    ) -> None:
        site = app.describe()
        source = ProceduralSource(
            generate,
            name=f"{family}-s{site['seed']}-n{site['size']}",
            split=split,
            difficulty=difficulty,
            seed=seed,
        )
        tool_env_kwargs.setdefault("system_prompt", WEB_INSTRUCTIONS)
        super().__init__(VerifiableEnv(source, verifier), [], **tool_env_kwargs)
        if max_page_chars < 200:
            raise EnvConfigError(f"max_page_chars must be >= 200, got {max_page_chars}")
        self.app = app
        self.site_description = site
        self.site_key = (site["kind"], site["seed"], site["size"])
        self.server_url = server_url
        self.max_page_chars = max_page_chars
        self.http_timeout = http_timeout
        self.browser: Browser | None = None
        self._site_url: str | None = None
        self._release: weakref.finalize | None = None

    # --- the site --------------------------------------------------------------------------

    def site_url(self) -> str:
        """The site's URL, starting (or joining) the shared server on first use."""
        if self._site_url is None:
            if self.server_url is not None:
                self._site_url = self.server_url.rstrip("/")
                self._check_external_site()
            else:
                server = acquire_server(self.site_key, lambda: self.app)
                # Give the server back even if the env is dropped without close().
                self._release = weakref.finalize(self, release_server, self.site_key)
                self._site_url = server.url
        return self._site_url

    def _check_external_site(self) -> None:
        probe = Browser(self._site_url, timeout=self.http_timeout)
        served = probe.get_json("/api/site")
        if served != self.site_description:
            raise EnvConfigError(
                f"{self.server_url} serves {served}, but this env's tasks are for "
                f"{self.site_description}; start the server with the same site, seed and size"
            )

    # --- episodes --------------------------------------------------------------------------

    def _begin(self, options: dict[str, Any]) -> Start:
        start = super()._begin(options)
        self.browser = Browser(
            self.site_url(), timeout=self.http_timeout, max_page_chars=self.max_page_chars
        ).start()
        return start

    def episode_tools(self) -> Sequence[Tool]:
        assert self.browser is not None  # _begin ran
        # No request the agent can make is slow (sizes are bounded): a tool over its time limit
        # means the site stalled, which is our failure, not the agent's.
        tools = [*self.browser.tools(), *self.site_tools()]
        return [dataclasses.replace(one, slow_is_infra=True) for one in tools]

    def site_tools(self) -> Sequence[Tool]:
        """Tools beyond browsing (add to cart, buy, ...)."""
        return []

    def _end_episode(self) -> None:
        if self.browser is not None:
            self.browser.close()
            self.browser = None

    def close(self) -> None:
        super().close()
        if self._release is not None:
            self._release()  # runs release_server once
            self._release = None
        self._site_url = None
