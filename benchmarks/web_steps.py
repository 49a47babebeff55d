"""How much a web env's step costs over the HTTP request it makes.

Baseline: one raw GET of a search page on the same local server (http.client, new connection).
Measured, interleaved, medians over many rounds:
- `env.step` with a `search` tool call (parse the call, validate, HTTP GET, render the page);
- a whole scripted WebShop episode (oracle: search, follow link, add to cart, buy; 4 steps plus
  the oracle's own cart lookups), and a whole WikiQA episode of 3 hops;
- a GRPO group of 8 WebShop envs stepped in 8 threads against the one shared server.

    python benchmarks/web_steps.py [--rounds 200]
"""

from __future__ import annotations

import argparse
import http.client
import statistics
import threading
import time
from urllib.parse import urlsplit

import gymnasium as gym

import rlvr  # noqa: F401
from rlvr.envs.tools import format_tool_call


def raw_get(url: str, path: str) -> None:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    connection.request("GET", path)
    connection.getresponse().read()
    connection.close()


def oracle_episode(env: gym.Env, seed: int) -> None:
    env.reset(seed=seed)
    while True:
        *_, terminated, truncated, _ = env.step(env.unwrapped.oracle_reply())
        if terminated or truncated:
            return


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()

    shop = gym.make("rlvr/WebShop-v0")
    wiki = gym.make("rlvr/WikiQA-v0", difficulty=3)
    shop.reset(seed=0)
    wiki.reset(seed=0)
    url = shop.unwrapped.interaction.site_url()
    group = [gym.make("rlvr/WebShop-v0") for _ in range(8)]
    search = format_tool_call("search", query="waterproof rain jacket")

    def group_episodes() -> None:
        threads = [threading.Thread(target=oracle_episode, args=(env, 1)) for env in group]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    cases = {
        "raw GET /search (baseline)": lambda: raw_get(url, "/search?q=waterproof+rain+jacket"),
        "env.step(search call)": lambda: shop.step(search),
        "WebShop oracle episode": lambda: oracle_episode(shop, 0),
        "WikiQA oracle episode (3 hops)": lambda: oracle_episode(wiki, 0),
        "8 WebShop episodes, 8 threads": group_episodes,
    }
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.rounds):  # interleaved, so background load hits every case alike
        shop.reset(seed=0)
        for name, case in cases.items():
            samples[name].append(timed(case))
    baseline = statistics.median(samples["raw GET /search (baseline)"])
    print(f"{'case':34} {'median ms':>10} {'x baseline':>11}")
    for name, values in samples.items():
        median = statistics.median(values)
        print(f"{name:34} {median * 1000:10.2f} {median / baseline:11.1f}")
    for env in [shop, wiki, *group]:
        env.close()


if __name__ == "__main__":
    main()
