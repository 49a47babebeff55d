"""rlvr/WebShop-v0: optimal trajectories, graded purchases, isolation inside a GRPO group."""

from __future__ import annotations

import threading
import time

import gymnasium as gym
import pytest

import rlvr  # noqa: F401
from rlvr.envs import EnvConfigError, check_env
from rlvr.envs.tools import format_tool_call
from rlvr.envs.web.server import SiteServer, acquire_server, release_server, running_servers
from rlvr.envs.web.shop import Goal, ShopApp, grade_purchase, load_catalog

SIZE = 300


def make(**kwargs):
    return gym.make("rlvr/WebShop-v0", site_size=SIZE, **kwargs)


def run(env, replies):
    """Step through replies (None: the oracle's); returns (rewards, last info)."""
    rewards, info = [], {}
    for reply in replies:
        _, reward, terminated, truncated, info = env.step(reply or env.unwrapped.oracle_reply())
        rewards.append(reward)
        if terminated or truncated:
            break
    return rewards, info


@pytest.mark.parametrize("answer", ["a lamp", None, {"category": "lamp"}])
def test_a_pinned_task_without_a_goal_names_the_fix(answer):
    env = make()
    try:
        with pytest.raises(EnvConfigError, match="goal dict with keys"):
            env.reset(options={"task": {"prompt": "Buy a lamp", "answer": answer}})
        env.reset(seed=0)  # the env still works afterwards
        rewards, _ = run(env, [None] * 10)
        assert rewards[-1] == 1.0
    finally:
        env.close()


def test_registered_env_passes_check_env():
    env = gym.make("rlvr/WebShop-v0")
    check_env(env)
    env.close()


def test_replaying_the_scripted_optimal_trajectory_earns_one():
    env = make()
    env.reset(seed=11)
    oracle_replies = []
    for _ in range(10):
        reply = env.unwrapped.oracle_reply()
        oracle_replies.append(reply)
        _, reward, terminated, _, info = env.step(reply)
        if terminated:
            break
    assert [r.split('"')[3] for r in oracle_replies] == [
        "search",
        "follow_link",
        "add_to_cart",
        "buy",
    ]
    assert reward == 1.0 and info["verdict"]["status"] == "correct"
    assert info["rewards"] == {
        "category": 1.0,
        "attributes": 1.0,
        "options": 1.0,
        "price": 1.0,
        "total": 1.0,
    }
    # The same replies on a fresh env (a new session, the same task) earn the same.
    replay = make()
    replay.reset(seed=11)
    rewards, _ = run(replay, oracle_replies)
    assert rewards == [0.0, 0.0, 0.0, 1.0]
    env.close()
    replay.close()


def test_the_oracle_recovers_from_a_messy_state():
    env = make()
    env.reset(seed=3)
    catalog = env.unwrapped.catalog
    goal = env.unwrapped.goal
    other = next(p for p in catalog.products if p.id != goal.target)
    options = {kind: values[0] for kind, values in other.options.items()}
    env.step(format_tool_call("add_to_cart", product_id=other.id, options=options))
    env.step(format_tool_call("open_page", url="/orders"))
    env.step(format_tool_call("search", query="nothing relevant here"))
    rewards, info = run(env, [None] * 10)
    assert rewards[-1] == 1.0 and sum(rewards) == 1.0
    assert info["verdict"]["data"]["purchase"]["product_id"] == goal.target
    env.close()


def test_purchases_are_graded_on_attributes_options_and_price():
    env = make(difficulty=3)
    env.reset(seed=5)
    shop = env.unwrapped
    goal = shop.goal
    target = shop.catalog.by_id[goal.target]
    wrong = {kind: next(v for v in target.options[kind] if v != goal.options[kind])
             for kind in goal.options if len(target.options[kind]) > 1}  # fmt: skip
    options = {**goal.options, **wrong}
    env.step(format_tool_call("add_to_cart", product_id=target.id, options=options))
    _, reward, terminated, _, info = env.step(format_tool_call("buy"))
    expected = grade_purchase(goal, target, options)
    assert terminated and reward == expected["total"] == info["rewards"]["total"]
    requirements = len(goal.attributes) + len(goal.options) + 1
    assert reward == pytest.approx((requirements - len(wrong)) / requirements)
    assert info["verdict"]["status"] == "incorrect"
    env.close()


def test_a_price_equal_to_the_limit_is_not_lower_than_it():
    catalog = load_catalog(0, SIZE)
    product = catalog.products[0]
    goal = Goal(product.category, product.attributes[:1], {}, product.price_cents, product.id)
    assert "price lower than" in goal.instruction()
    assert grade_purchase(goal, product, {})["price"] == 0.0
    cheaper = Goal(product.category, product.attributes[:1], {}, product.price_cents + 1, "x")
    assert grade_purchase(cheaper, product, {})["price"] == 1.0


def test_another_category_earns_nothing_and_so_does_not_buying():
    catalog = load_catalog(0, SIZE)
    env = make()
    env.reset(seed=2)
    goal = env.unwrapped.goal
    other = next(p for p in catalog.products if p.category != goal.category)
    assert grade_purchase(goal, other, goal.options)["total"] == 0.0
    _, reward, terminated, _, info = env.step("I would buy the blue one.")
    assert (reward, terminated) == (0.0, True)
    assert info["verdict"]["details"] == "nothing was bought"
    env.close()


def test_cart_mistakes_come_back_as_tool_errors():
    env = make()
    env.reset(seed=4)
    goal = env.unwrapped.goal
    target = env.unwrapped.catalog.by_id[goal.target]
    observation, _reward, terminated, *_ = env.step(format_tool_call("buy"))
    assert observation.startswith("Error: the cart is empty") and not terminated
    observation, *_ = env.step(format_tool_call("add_to_cart", product_id=target.id, options={}))
    assert observation.startswith("Error: choose a ")
    observation, *_ = env.step(
        format_tool_call("add_to_cart", product_id="P77777", options={"color": "red"})
    )
    assert "no product" in observation
    for _ in range(2):
        env.step(format_tool_call("add_to_cart", product_id=target.id, options=dict(goal.options)))
    observation, _, terminated, *_ = env.step(format_tool_call("buy"))
    assert "the cart holds 2 items" in observation and not terminated
    env.close()


def test_a_group_of_envs_on_one_task_never_sees_each_others_carts():
    """Eight rollouts of one task (a GRPO group), stepped in parallel threads: half buy the
    goal's target, half a wrong product; every purchase is graded on its own cart."""
    envs = [make() for _ in range(8)]
    for env in envs:
        env.reset(seed=21)
    goal = envs[0].unwrapped.goal
    urls = {env.unwrapped.interaction.site_url() for env in envs}
    assert len(urls) == 1  # one shared server
    catalog = envs[0].unwrapped.catalog
    wrong = next(p for p in catalog.products if p.category != goal.category)
    results = {}

    def rollout(index: int, env) -> None:
        if index % 2:
            options = {kind: values[0] for kind, values in wrong.options.items()}
            env.step(format_tool_call("add_to_cart", product_id=wrong.id, options=options))
        rewards, _ = run(env, [None] * 10)
        results[index] = sum(rewards)

    threads = [threading.Thread(target=rollout, args=(i, env)) for i, env in enumerate(envs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Odd envs had a wrong item first: the oracle removes it, so all reach 1.0 on their own.
    assert results == dict.fromkeys(range(8), 1.0)
    # Now interleave: even envs buy the wrong product, odd ones the target.
    for env in envs:
        env.reset(seed=21)
    for index, env in enumerate(envs):
        product = wrong if index % 2 == 0 else catalog.by_id[goal.target]
        options = (
            {kind: values[0] for kind, values in product.options.items()}
            if product is wrong
            else dict(goal.options)
        )
        env.step(format_tool_call("add_to_cart", product_id=product.id, options=options))
    finals = [env.step(format_tool_call("buy"))[1] for env in envs]
    assert finals == [0.0, 1.0] * 4
    for env in envs:
        env.close()
    assert not any(key[0] == "shop" and key[2] == SIZE for key in running_servers())


def test_a_call_abandoned_at_its_time_limit_never_acts_on_the_next_episode():
    env = make(tool_timeout=0.5)
    env.reset(seed=3)
    shop = env.unwrapped
    target = shop.catalog.by_id[shop.goal.target]
    add = format_tool_call("add_to_cart", product_id=target.id, options=dict(shop.goal.options))
    env.step(add)
    server = acquire_server(("shop", 0, SIZE), lambda: pytest.fail("the env's server is gone"))
    stalled = server.sessions.get(shop.interaction.browser.token)
    stalled.lock.acquire()  # the site stalls on this episode's requests: buy times out
    try:
        observation, _, terminated, _, info = env.step(format_tool_call("buy"))
        # A stalled site is our failure: the sample is dropped, never scored 0.
        assert terminated and info["infra_error"] and "timed out" in observation
        env.reset(seed=3)  # the next episode, while the abandoned buy still waits
        env.step(add)
    finally:
        stalled.lock.release()
    deadline = time.monotonic() + 10
    while any(t.name == "rlvr-tool" for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.05)
    # The abandoned buy used to check out through the env's current browser: the new cart.
    assert len(shop.interaction.browser.get_json("/api/cart")) == 1
    _, reward, terminated, _, _ = env.step(format_tool_call("buy"))
    assert (reward, terminated) == (1.0, True)
    release_server(("shop", 0, SIZE))
    env.close()


def test_a_policy_that_never_buys_is_truncated_with_nothing():
    env = make()
    env.reset(seed=0)
    rewards, _ = run(env, [format_tool_call("search", query="mug")] * 40)
    assert len(rewards) == 30 and sum(rewards) == 0.0
    env.close()


def test_an_external_server_is_used_and_checked():
    server = SiteServer(ShopApp(load_catalog(0, SIZE))).start()
    try:
        env = make(server_url=server.url)
        env.reset(seed=1)
        rewards, _ = run(env, [None] * 10)
        assert sum(rewards) == 1.0
        assert not any(key[0] == "shop" and key[2] == SIZE for key in running_servers())
        env.close()
        with pytest.raises(EnvConfigError, match="start the server with the same site"):
            gym.make("rlvr/WebShop-v0", site_size=SIZE + 1, server_url=server.url)
    finally:
        server.stop()


def test_every_episode_starts_with_an_empty_cart():
    env = make()
    env.reset(seed=6)
    goal = env.unwrapped.goal
    env.step(format_tool_call("add_to_cart", product_id=goal.target, options=dict(goal.options)))
    assert len(env.unwrapped.interaction.browser.get_json("/api/cart")) == 1
    env.reset(seed=6)
    assert env.unwrapped.interaction.browser.get_json("/api/cart") == []
    env.close()
