"""The static leaderboard page, as a visitor sees it in headless Chromium."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rlvr.cli import main
from rlvr.leaderboards import ResultStore, load_suite, run_suite
from tests.leaderboards.leaderboard_support import (
    ELEMENT_KEY,
    YES_ENV,
    launch_browser,
    write_toy_suite,
)

pytestmark = pytest.mark.browser


@pytest.fixture
def site(tmp_path: Path) -> Path:
    suite = load_suite(write_toy_suite(tmp_path))
    db = tmp_path / "board.sqlite"
    with ResultStore(db) as store:
        for agent in ("random", "oracle", "fixed:yes"):
            store.add(run_suite(suite, agent, parallel="serial"))
    assert main(["leaderboard", "html", str(tmp_path / "site"), "--db", str(db)]) == 0
    return tmp_path / "site" / "index.html"


def test_page_is_self_contained(site: Path) -> None:
    page = site.read_text()
    assert "<script src" not in page and "<link" not in page
    external = re.findall(r'(?:src|href)="(https?:[^"]*)"', page)
    assert external == []
    assert (site.parent / "traces" / "2" / "lbtest_Yes-v0.html").is_file()


def names(browser, table: str) -> list[str]:
    return [browser.text(cell) for cell in browser.find_all(f"{table} tbody tr td:nth-child(2)")]


def test_visitor_sees_ranking_sorting_charts_and_traces(site: Path, tmp_path: Path) -> None:
    with launch_browser(tmp_path / "profile") as browser:
        browser.get(site.as_uri())
        assert browser.script("return document.title") == "rlvr-gym leaderboard"
        table = "table#board-toy"
        # Ranked best first: oracle 1.0, fixed:yes 0.5 (only Yes-v0), random ~0.
        assert names(browser, table) == ["oracle", "fixed:yes", "random"]
        ranks = [browser.text(c) for c in browser.find_all(f"{table} tbody td:nth-child(1)")]
        assert ranks == ["1", "2", "3"]

        headers = {browser.text(th): th for th in browser.find_all(f"{table} th")}
        browser.click(headers["Name"])
        assert names(browser, table) == ["fixed:yes", "oracle", "random"]
        assert browser.attribute(headers["Name"], "aria-sort") == "ascending"
        browser.click(headers["Score"])
        assert names(browser, table) == ["random", "fixed:yes", "oracle"]
        browser.click(headers["Score"])
        assert names(browser, table) == ["oracle", "fixed:yes", "random"]
        assert browser.attribute(headers["Score"], "aria-sort") == "descending"
        assert browser.attribute(headers["Name"], "aria-sort") is None

        charts = browser.find_all("figure.chart")
        assert [browser.attribute(c, "data-env") for c in charts] == ["lbtest/Add-v0", YES_ENV]
        bars = browser.find_all(f'figure.chart[data-env="{YES_ENV}"] rect.bar')
        widths = [
            browser.script("return arguments[0].getBBox().width", {ELEMENT_KEY: bar})
            for bar in bars
        ]
        assert len(widths) == 3 and widths[0] > widths[2] > 0  # oracle's bar beats random's
        intervals = browser.find_all(f'figure.chart[data-env="{YES_ENV}"] line.ci')
        assert len(intervals) == 3 * 3  # a whisker and two caps per bar
        shot = browser.screenshot(tmp_path / "leaderboard.png")
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
        assert browser.script("return performance.getEntriesByType('resource').length") == 0

        # A bar links to that result's traces for that env.
        oracle_bar = browser.find(f'figure.chart[data-env="{YES_ENV}"] g.bar[data-result="2"] rect')
        browser.click(oracle_bar)
        assert browser.current_url.endswith("/traces/2/lbtest_Yes-v0.html")
        assert browser.text(browser.find("h1")) == f"oracle on {YES_ENV}"
        episodes = browser.find_all("details.episode")
        assert len(episodes) == 60  # 30 tasks x 2 samples
        summary = browser.find("details.episode summary")
        assert "return 1.000" in browser.text(summary) and "correct" in browser.text(summary)
        browser.click(summary)
        reply = browser.find("details.episode .msg.assistant pre")
        assert browser.text(reply) == "yes"
        browser.screenshot(tmp_path / "traces.png")

        browser.click(browser.find("p a"))  # back to the board, then a table link
        assert browser.current_url == site.as_uri()
        link = browser.find(f'{table} tr[data-result="1"] a.trace-link')
        browser.click(link)
        assert browser.current_url.endswith("/traces/1/lbtest_Add-v0.html")
        assert browser.text(browser.find("h1")) == "random on lbtest/Add-v0"
