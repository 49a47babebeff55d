"""`rlvr/WebShop-v0`: buy a product matching an instruction on a generated shop website."""

from __future__ import annotations

import functools
from typing import Any, Unpack

import numpy as np

from rlvr.envs.core import Outcome, TextEnv
from rlvr.envs.errors import ToolError
from rlvr.envs.judge import TaskJudge
from rlvr.envs.tasks import Problem, TaskSource
from rlvr.envs.tools.env import ToolUse
from rlvr.envs.tools.parsing import format_tool_call
from rlvr.envs.tools.tool import Tool, object_schema
from rlvr.envs.web.base import WebOptions, WebSite, web_arguments, web_env_parts
from rlvr.envs.web.browser import Browser
from rlvr.envs.web.shop import (
    DEFAULT_SIZE,
    Catalog,
    Goal,
    ShopApp,
    grade_purchase,
    load_catalog,
    make_goal,
)
from rlvr.verifiers.types import Status, Task, TaskFormatError, Verdict

PROMPT = (
    "Instruction: {instruction}\n"
    "Find a product that matches it on the shop's website, add it to the cart with the right "
    "options, and buy it."
)
LEVELS = (1, 2, 3)  # wanted attributes
FINAL_INSTRUCTIONS = (
    "The episode ends when you call buy (the purchase is graded) or when you reply without a "
    "tool call (nothing is bought)."
)


class WebShopEnv(TextEnv):
    """Shop on a generated web store for a product matching an instruction.

    ## Description
    A shop of `site_size` generated products (12 categories; each product has attributes such
    as "waterproof", options such as color and size, and a price) is served by a real HTTP
    server on loopback. The instruction asks for a product of a category with some attributes,
    a value for every option, and a price limit, e.g. "i am looking for a waterproof and
    reflective rain jacket with color gray, size xxl, and price lower than 85.00 dollars". The
    agent browses with tools (`search`, `open_page`, `follow_link`, `find_in_page`), fills its
    cart (`add_to_cart`, `remove_from_cart`) and checks out (`buy`). Each episode has its own
    session on the site: carts never leak between episodes or parallel envs.

    ## Action Space
    `TextSpace`: a reply with `<tool_call>{...}</tool_call>` blocks; a reply without one ends
    the episode without a purchase.

    ## Observation Space
    `TextSpace`: the instruction; then tool results (pages as compact text with numbered links).

    ## Rewards
    0 until `buy`; then WebShop's graded reward: 0 for a product of another category, otherwise
    the share of requirements met — each wanted attribute, each option value, and the price
    limit count one. `info["rewards"]` breaks it down. Buying needs exactly one item in the cart.

    ## Starting State
    A goal drawn with the env's generator: a random product's category, 1-3 of its attributes
    (the difficulty), a value for each of its options, and a price limit 10-60% above its price.
    `options={"task_index": i}` pins one.

    ## Episode End
    Terminates on `buy` or a reply without a tool call; truncated after `max_episode_steps`
    (30) replies; ends flagged `infra_error` if the site stops answering.

    ## Arguments
    `site_seed`, `site_size` (products; default 2000), `split`, `difficulty` (1-3 or a list),
    `seed` (of the goal source), `server_url` (use a running `rlvr web serve` instead of starting
    a server), `max_page_chars`, `tool_timeout`, `render_mode`.

    ## Version History
    - v0: initial version.
    """

    argument_checks = web_arguments(LEVELS, min_site_size=10)

    def __init__(
        self,
        *,
        site_seed: int = 0,
        site_size: int = DEFAULT_SIZE,
        render_mode: str | None = None,
        **options: Unpack[WebOptions],
    ) -> None:
        self.catalog = load_catalog(site_seed, site_size)
        tasks, site = web_env_parts(
            ShopApp(self.catalog),
            functools.partial(goal_problem, self.catalog),
            family="webshop",
            final_instructions=FINAL_INSTRUCTIONS,
            oracle=shortest_purchase,
            site_tools=shop_tools,
            **options,
        )
        super().__init__(WebShopJudge(tasks, self.catalog), site, render_mode=render_mode)

    @property
    def goal(self) -> Goal:
        """The goal of the current episode."""
        if self.task is None:
            raise RuntimeError("call reset() first")
        return goal_of(self.task)


class WebShopJudge(TaskJudge):
    """Shopping goals, graded on the purchase (`grade`, called by the `buy` tool); a final
    reply without a tool call buys nothing and scores 0.

    The judge itself is the verifier: `describe()` names it and its `VERSION` (none declared:
    the rlvr-gym version stands in).
    """

    def __init__(self, tasks: TaskSource, catalog: Catalog) -> None:
        self.catalog = catalog
        super().__init__(tasks, self)

    def check(self, task: Task) -> None:
        goal = goal_of(task)
        if goal.target not in self.catalog.by_id:
            raise TaskFormatError(
                f"task {task.id!r}: the goal's target {goal.target!r:.40} is not a product of "
                f"this shop (site_seed={self.catalog.seed}, site_size={self.catalog.size})"
            )

    def verify(self, response: str, task: Task) -> Verdict:
        return Verdict.incorrect(details="nothing was bought")

    def judge(self, reply: str, task: Task) -> Outcome:
        return Outcome(
            feedback="The episode ended without a purchase.",
            reward=0.0,
            terminated=True,
            verdict=self.verify(reply, task),
        )

    def grade(self, purchase: dict[str, Any], task: Task) -> Outcome:
        """Grade an order line (`product_id`, `title`, `price`, `options`) against the goal."""
        product = self.catalog.by_id.get(purchase["product_id"])
        terms = grade_purchase(goal_of(task), product, purchase["options"])
        total = terms["total"]
        verdict = Verdict(
            Status.CORRECT if total == 1.0 else Status.INCORRECT,
            total,
            extracted=f"{purchase['product_id']} {purchase['options']}",
            data={
                "purchase": {"product_id": purchase["product_id"], "options": purchase["options"]}
            },
        )
        options = ", ".join(f"{kind} {value}" for kind, value in purchase["options"].items())
        return Outcome(
            feedback=f"You bought {purchase['title']} ({options}) for {purchase['price']}.",
            reward=total,
            terminated=True,
            verdict=verdict,
            rewards=terms,
        )

    def reference_reply(self, task: Task) -> str:
        raise NotImplementedError(
            "a purchase takes several steps: the env's oracle_reply() gives the next one"
        )


def goal_of(task: Task) -> Goal:
    """The goal of a WebShop task (its answer), or `TaskFormatError` naming the form."""
    try:
        return Goal.from_dict(task.answer)
    except (KeyError, TypeError, ValueError):
        raise TaskFormatError(
            f"task {task.id!r}: a WebShop task's answer must be a goal dict with keys "
            "category, attributes, options, max_price_cents and target (as in "
            f"env.unwrapped.task.answer after a reset), got {task.answer!r:.200}"
        ) from None


# --- tools ---------------------------------------------------------------------------------------


def shop_tools(browser: Browser, env: TextEnv) -> list[Tool]:
    """The shop's tools beyond browsing, bound to this episode's browser and task: a call
    abandoned at its time limit that ends later acts on its own episode's session, never on
    the next episode's cart."""
    judge, task = env.judge, env.task
    assert isinstance(judge, WebShopJudge) and task is not None  # a WebShop episode started
    return [
        Tool(
            "add_to_cart",
            "Add a product to the cart, with a value for each of its options "
            '(e.g. {"color": "navy", "size": "m"}).',
            object_schema(
                {
                    "product_id": {"type": "string", "description": "e.g. P00123"},
                    "options": {"type": "object", "additionalProperties": {"type": "string"}},
                }
            ),
            functools.partial(add_to_cart, browser),
        ),
        Tool(
            "remove_from_cart",
            "Remove a product from the cart.",
            object_schema({"product_id": {"type": "string"}}),
            functools.partial(remove_from_cart, browser),
        ),
        Tool(
            "buy",
            "Buy what is in the cart (exactly one item). Ends the episode.",
            object_schema({}),
            functools.partial(buy, browser, judge, task),
        ),
    ]


def add_to_cart(browser: Browser, product_id: str, options: dict[str, str]) -> str:
    form = {"product_id": product_id.strip()}
    for kind, value in options.items():
        form[f"option.{kind.strip().lower()}"] = str(value).strip()
    return browser.show(browser.visit("/cart/add", form))


def remove_from_cart(browser: Browser, product_id: str) -> str:
    return browser.show(browser.visit("/cart/remove", {"product_id": product_id}))


def buy(browser: Browser, judge: WebShopJudge, task: Task) -> Outcome:
    cart = browser.get_json("/api/cart")
    if len(cart) != 1:
        raise ToolError(
            f"the cart holds {len(cart)} items; buy exactly one (remove the others first)"
            if cart
            else "the cart is empty; add the product you choose with add_to_cart first"
        )
    browser.visit("/checkout", {})
    order = browser.get_json("/api/orders")[-1]
    return judge.grade(order["lines"][0], task)


# --- the oracle ----------------------------------------------------------------------------------


def shortest_purchase(site: ToolUse, env: TextEnv) -> str:
    """The next step of a shortest purchase of the goal's target from the current state: clear
    wrong cart items, reach the target's page (search its title, follow the link), add it with
    the goal's options, buy."""
    assert isinstance(site, WebSite) and site.browser is not None and env.task is not None
    judge = env.judge
    assert isinstance(judge, WebShopJudge)
    goal = goal_of(env.task)
    target = judge.catalog.by_id[goal.target]
    browser = site.browser
    cart = browser.get_json("/api/cart")
    wanted = {"product_id": target.id, "options": dict(sorted(goal.options.items()))}
    wrong = [line for line in cart if _cart_key(line) != wanted]
    if wrong or len(cart) > 1:
        return format_tool_call("remove_from_cart", product_id=(wrong or cart)[0]["product_id"])
    if cart:
        return format_tool_call("buy")
    page = browser.page
    if page is not None and page.url == target.url:
        return format_tool_call("add_to_cart", product_id=target.id, options=dict(goal.options))
    number = browser.link_number(target.url)
    if number is not None:
        return format_tool_call("follow_link", number=number)
    if not site.called("search", query=target.title):
        return format_tool_call("search", query=target.title)
    return format_tool_call("open_page", url=target.url)


def _cart_key(line: dict[str, Any]) -> dict[str, Any]:
    return {"product_id": line["product_id"], "options": line["options"]}


def goal_problem(catalog: Catalog, rng: np.random.Generator, difficulty: int) -> Problem:
    goal = make_goal(catalog, rng, difficulty)
    return Problem(
        PROMPT.format(instruction=goal.instruction()),
        goal.to_dict(),
        {"family": "webshop", "category": goal.category},
    )
