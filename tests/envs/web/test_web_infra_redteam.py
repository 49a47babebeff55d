"""Red team: tool calls and answers that try to turn their own episode into an infrastructure
error in rlvr/WebShop-v0 and rlvr/WikiQA-v0.

The browsing tools are `slow_is_infra`, and a site that does not answer, answers 5xx or breaks a
connection is `ToolInfraError`: all of these end the episode flagged `infra_error`. So no call
the agent writes may make a request slow, fail or break: huge or malformed queries and paths,
other hosts and schemes, the JSON API, numbers out of range, oversized forms, our own error
messages. Each must come back as a page or an error message, fast, and the episode goes on; a
site that really stops answering must still be flagged.
"""

from __future__ import annotations

import time

import gymnasium as gym
import pytest

import rlvr  # noqa: F401
from rlvr.envs.tools import format_tool_call
from rlvr.envs.web.server import SiteServer
from rlvr.envs.web.shop import ShopApp, load_catalog

SIZE = 200
BROWSING = [
    ("search", {"query": "lamp " * 1700}),  # the longest query that fits in an address
    ("search", {"query": "x" * 9000}),
    ("search", {"query": "é" * 3000}),
    ("search", {"query": "\x00\r\n%00%ZZ\ud800 sandbox error"}),
    ("open_page", {"url": "/search?page=" + "9" * 5000 + "&q=lamp"}),
    ("open_page", {"url": "/?" + "&".join(f"a{i}=b" for i in range(1500))}),
    ("open_page", {"url": "/" + "a" * 8190}),
    ("open_page", {"url": "/../../etc/passwd"}),
    ("open_page", {"url": "//example.com/x"}),
    ("open_page", {"url": "http://127.0.0.1:1/"}),
    ("open_page", {"url": "http://[::1"}),
    ("open_page", {"url": "file:///etc/passwd"}),
    ("open_page", {"url": "/api/session"}),
    ("open_page", {"url": "/wiki/%FF%FE%00"}),
    ("open_page", {"url": "/checkout"}),
    ("follow_link", {"number": 10**9}),
    ("find_in_page", {"text": "x" * 90_000}),
]
SHOPPING = [
    ("add_to_cart", {"product_id": "P00001", "options": {"color" * 100: "x" * 1000}}),
    ("add_to_cart", {"product_id": "\ud800", "options": {}}),
    ("add_to_cart", {"product_id": "P00001", "options": {str(i): "v" for i in range(5000)}}),
    ("remove_from_cart", {"product_id": "nothing"}),
    ("buy", {}),
]
FINAL = "Error: the tool is unavailable (the site is not answering). Infrastructure error."


def play(env, calls):
    env.reset(seed=0)
    steps = []
    for name, arguments in calls:
        started = time.monotonic()
        _, reward, terminated, _, info = env.step(format_tool_call(name, **arguments))
        steps.append((name, reward, info["infra_error"], time.monotonic() - started))
        if terminated:
            break
    _, reward, _, _, info = env.step(FINAL)
    return [*steps, ("final answer", reward, info["infra_error"], 0.0)]


@pytest.mark.parametrize(
    ("env_id", "calls"),
    [("rlvr/WebShop-v0", BROWSING + SHOPPING), ("rlvr/WikiQA-v0", BROWSING)],
)
def test_no_call_or_answer_makes_a_web_episode_an_infrastructure_error(env_id, calls):
    env = gym.make(env_id, site_size=SIZE, max_episode_steps=100)
    try:
        steps = play(env, calls)
    finally:
        env.close()
    assert [step for step in steps if step[1] or step[2]] == []
    assert len(steps) == len(calls) + 1  # the agent's calls never end the episode
    assert max(seconds for *_, seconds in steps) < 1.0  # far from any time limit


def test_a_site_that_stops_answering_is_still_an_infrastructure_error():
    server = SiteServer(ShopApp(load_catalog(0, SIZE))).start()
    env = gym.make("rlvr/WebShop-v0", site_size=SIZE, server_url=server.url)
    try:
        env.reset(seed=0)
        server.stop()
        _, reward, terminated, _, info = env.step(format_tool_call("search", query="lamp"))
    finally:
        env.close()
    assert info["infra_error"] and terminated and reward == 0
