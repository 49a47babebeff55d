"""The static leaderboard page, as a visitor sees it in headless Chromium."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rlvr.cli import main
from rlvr.envs.audit import Rate, load_rates
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
    assert (site.parent / "traces" / "2" / "2-lbtest_Yes-v0.html").is_file()


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
        assert browser.current_url.endswith("/traces/2/2-lbtest_Yes-v0.html")
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
        assert browser.current_url.endswith("/traces/1/1-lbtest_Add-v0.html")
        assert browser.text(browser.find("h1")) == "random on lbtest/Add-v0"


AUDITED_SUITE = """
name = "audited"
description = "an env whose verifier is audited"
split = "test"
episodes = 3

[[envs]]
id = "rlvr/Math-v0"
"""


def test_visitor_sees_each_suites_audited_verifier_error_rate(tmp_path: Path) -> None:
    audited = tmp_path / "audited.toml"
    audited.write_text(AUDITED_SUITE)
    db = tmp_path / "board.sqlite"
    with ResultStore(db) as store:
        for suite in (audited, write_toy_suite(tmp_path)):
            store.add(run_suite(load_suite(suite), "oracle", parallel="serial"))
    assert main(["leaderboard", "html", str(tmp_path / "site"), "--db", str(db)]) == 0
    published = load_rates()["rlvr/Math-v0"]

    def shown(browser, suite: str) -> list[str]:
        items = browser.find_all(f"section#suite-{suite} ul.audit li")
        assert items and all(browser.displayed(item) for item in items)
        return [browser.text(item) for item in items]  # rendered text: empty if hidden

    with launch_browser(tmp_path / "profile") as browser:
        browser.get((tmp_path / "site" / "index.html").as_uri())
        rates = shown(browser, "audited")
        assert len(rates) == len(published)
        for line, audit in zip(rates, published):
            negatives, positives = (
                Rate(audit[kind]["errors"], audit[kind]["total"])
                for kind in ("false_negative", "false_positive")
            )
            assert line == (
                f"rlvr/Math-v0: verifier audit on {audit['dataset']} ({audit['items']} items): "
                f"false negatives {negatives}, false positives {positives}"
            )
        assert shown(browser, "toy") == [
            "lbtest/Add-v0: verifier not audited",
            f"{YES_ENV}: verifier not audited",
        ]


HOSTILE = "<script>document.title='pwned';window.pwned=1</script>"
EVIL_ENV = "lbtest/Evil-v0"


def hostile_site(tmp_path: Path, monkeypatch) -> Path:
    """A board where every shown string attacks the page: names, spec, suite, labels, prompts,
    replies (script tags, attribute breakouts, javascript: links, bidi overrides, huge strings)."""
    from rlvr.envs import register_task_env
    from rlvr.leaderboards import webpage

    prompts = [
        {"prompt": f"</textarea></pre>{HOSTILE} question {i}", "answer": "yes"} for i in range(9)
    ]
    register_task_env(EVIL_ENV, prompts, lambda reply, task: reply == task.answer, override=True)
    suite = tmp_path / "evil.toml"
    suite.write_text(
        'name = "evil\\"><script>window.pwned=2</script>"\n'
        'description = "<img src=x onerror=window.pwned=3> \\u202e1.0 erocs"\n'
        "split = false\nepisodes = 9\n"
        f'[[envs]]\nid = "{EVIL_ENV}"\n'
        'label = "</title><script>window.pwned=4</script>\\u202eevil"\n'
        f'[[envs]]\nid = "{YES_ENV}"\nepisodes = 30\n'
    )
    reply = f'{HOSTILE}<a href="javascript:window.pwned=5">x</a>\u202e{"A" * 20_000}'
    db = tmp_path / "evil.sqlite"
    with ResultStore(db) as store:
        store.add(
            run_suite(
                load_suite(suite), f"fixed:{reply}", name=HOSTILE + "B" * 3000, parallel="serial"
            )
        )
        oracle = run_suite(load_suite(suite), "oracle", parallel="serial")
        oracle.name = '"onmouseover="window.pwned=6" x="'
        store.add(oracle)
    monkeypatch.setattr(webpage, "TRACE_PAGE_EPISODES", 12)  # Yes-v0's 30 episodes: 3 pages
    assert main(["leaderboard", "html", str(tmp_path / "site"), "--db", str(db)]) == 0
    return tmp_path / "site" / "index.html"


def test_hostile_strings_are_shown_as_text_never_run(tmp_path: Path, monkeypatch) -> None:
    site = hostile_site(tmp_path, monkeypatch)
    page = site.read_text()
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page)
    assert policy and "default-src 'none'" in policy.group(1)
    assert "script-src 'sha256-" in policy.group(1) and "unsafe" not in policy.group(1)

    def untouched(browser) -> None:
        assert browser.script("return typeof window.pwned") == "undefined"
        assert "\u202e" not in browser.script("return document.body.innerText")
        assert not browser.script("return document.title").startswith("pwned")
        width = browser.script("return document.documentElement.scrollWidth")
        assert width <= browser.script("return window.innerWidth")  # long strings wrap
        assert browser.script("return performance.getEntriesByType('resource').length") == 0

    with launch_browser(tmp_path / "profile") as browser:
        browser.get(site.as_uri())
        untouched(browser)
        assert browser.script("return document.title") == "rlvr-gym leaderboard"
        header = browser.text(browser.find("section.suite p.meta"))
        assert "window.pwned=4</script>\\u202eevil x9" in header  # the override is written out
        table = "table.board"
        first = names(browser, table)
        assert first[0].startswith('"onmouseover=')  # the oracle, ranked first, named as given
        headers = {browser.text(th): th for th in browser.find_all(f"{table} th")}
        browser.click(headers["Score"])  # the sorting script still runs under the policy
        assert names(browser, table) == first[::-1]

        evil_link = browser.find(f'{table} tr[data-result="2"] a.trace-link')
        browser.click(evil_link)
        assert browser.current_url.endswith(
            "/traces/2/1-_title_script_window.pwned_4_script_evil.html"
        )
        untouched(browser)
        prompt = browser.find(".msg.user pre")
        browser.click(browser.find("details.episode summary"))
        assert browser.text(prompt).startswith(f"</textarea></pre>{HOSTILE}")

        browser.get(site.as_uri())
        browser.click(
            browser.find(f'{table} tr[data-result="1"] a.trace-link[href$="Yes-v0.html"]')
        )
        untouched(browser)
        reply = browser.find(".msg.assistant pre")
        browser.click(browser.find("details.episode summary"))
        assert browser.text(reply).startswith(HOSTILE + '<a href="javascript:')
        assert browser.find_all('.msg a[href^="javascript"]') == []
        seen = []
        while True:  # follow the pages: 12 + 12 + 6 tasks x 1 sample
            seen += [browser.attribute(e, "id") for e in browser.find_all("details.episode")]
            untouched(browser)
            following = [a for a in browser.find_all("nav.pages a") if "next" in browser.text(a)]
            if not following:
                break
            browser.click(following[0])
        assert seen == [f"ep-{i}-0" for i in range(30)]
        browser.screenshot(tmp_path / "hostile.png")


ONE_ENV_SUITE = f"""
name = "one"
split = false
episodes = 6
samples = 2
pass_at_k = [1, 2]
[sampling]
temperature = 1.0
[[envs]]
id = "{YES_ENV}"
"""


def test_visitor_sees_each_number_once_and_every_section_counted(tmp_path: Path) -> None:
    """A single-env suite's table has no column repeating the score (the env's, pass@1 with 0/1
    rewards); the header counts the arena too; an undefeated agent's Elo sits inside its
    interval, and the page says which prior put it there."""
    from rlvr.leaderboards import parse_suite
    from rlvr.leaderboards.arena import ArenaResult, ArenaSuite, PairGames, rate

    db = tmp_path / "board.sqlite"
    suite = ArenaSuite(name="c4", env="rlvr/Connect4-v0", games=40)
    pairs = [PairGames("legal", "random", [1.0] * 40)]
    ratings = rate(["legal", "random"], pairs, suite)
    arena = ArenaResult(suite, {"legal": "legal", "random": "random"}, pairs, ratings)
    with ResultStore(db) as store:
        for agent in ("oracle", "random"):
            store.add(run_suite(parse_suite(ONE_ENV_SUITE), agent, parallel="serial"))
        store.add_arena(arena)
    assert main(["leaderboard", "html", str(tmp_path / "site"), "--db", str(db)]) == 0
    with launch_browser(tmp_path / "profile") as browser:
        browser.get((tmp_path / "site" / "index.html").as_uri())
        header = browser.text(browser.find("body > p.meta"))
        assert header.startswith("2 result(s) in 1 suite(s) and 1 head-to-head arena(s)")
        columns = [browser.text(th) for th in browser.find_all("table#board-one th")]
        assert columns == [
            *("#", "Name", "Agent", "Score", "95% CI", "pass@2", "Tokens", "Time", "Traces")
        ]
        note = browser.text(browser.find("section#suite-one .columns-note"))
        assert (
            note == f"The score is {YES_ENV}'s; pass@1 equals the score (every reward is 0 or 1)."
        )
        method = browser.text(browser.find("section.arena .method"))
        assert "Gaussian prior (mean 1500, sd 400)" in method
        rows = len(browser.find_all("section.arena tbody tr"))
        assert rows == 2
        for row in range(1, rows + 1):
            cells = [
                browser.text(cell)
                for cell in browser.find_all(f"section.arena tbody tr:nth-child({row}) td")
            ]
            low, high = (float(end) for end in cells[4].strip("[]").split(", "))
            assert low < float(cells[3]) < high, cells
        browser.screenshot(tmp_path / "single-env-and-arena.png")
