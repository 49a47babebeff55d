"""The generated sites, driven over real HTTP: pages, sessions, isolation, sharing, rendering."""

from __future__ import annotations

import http.client
import itertools
import json
import multiprocessing
import re
import signal
import subprocess
import sys
import threading
from urllib.parse import urlencode, urlsplit

import numpy as np
import pytest

from rlvr.envs.errors import ToolError, ToolInfraError
from rlvr.envs.web.browser import Browser, render_html
from rlvr.envs.web.server import (
    Response,
    SessionStore,
    SiteServer,
    acquire_server,
    release_server,
    running_servers,
)
from rlvr.envs.web.shop import ShopApp, load_catalog
from rlvr.envs.web.wiki import WikiApp, load_wiki, make_question

SHOP_SIZE = 400
WIKI_SIZE = 300


@pytest.fixture(scope="module")
def shop():
    server = SiteServer(ShopApp(load_catalog(0, SHOP_SIZE))).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def wiki():
    server = SiteServer(WikiApp(load_wiki(0, WIKI_SIZE))).start()
    yield server
    server.stop()


class Client:
    """A bare HTTP client with its own session cookie (what a browser does, nothing more)."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.host, self.port = parts.hostname, parts.port
        self.cookie: str | None = None

    def request(self, method: str, path: str, form: dict | None = None):
        connection = http.client.HTTPConnection(self.host, self.port, timeout=10)
        headers = {"Cookie": f"sid={self.cookie}"} if self.cookie else {}
        body = None
        if form is not None:
            body = urlencode(form)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        text = response.read().decode()
        cookie = response.getheader("Set-Cookie")
        if cookie and self.cookie is None:
            self.cookie = cookie.split(";")[0].split("=", 1)[1]
        connection.close()
        return response.status, text, response

    def json(self, path: str):
        status, text, _ = self.request("GET", path)
        assert status == 200
        return json.loads(text)


def test_shop_pages_over_http(shop):
    client = Client(shop.url)
    status, home, _ = client.request("GET", "/")
    assert status == 200 and "<title>Shop</title>" in home
    status, results, _ = client.request("GET", "/search?q=waterproof+rain+jacket")
    assert status == 200 and 'href="/product/P' in results and "page 1 of" in results
    product = load_catalog(0, SHOP_SIZE).products[7]
    status, page, _ = client.request("GET", product.url)
    assert status == 200 and product.title in page and product.price in page
    for attribute in product.attributes:
        assert attribute in page
    status, missing, _ = client.request("GET", "/product/P99999")
    assert status == 404 and "no product" in missing
    assert client.request("GET", "/nowhere")[0] == 404


def test_cart_validates_options_and_checkout_places_an_order(shop):
    client = Client(shop.url)
    product = load_catalog(0, SHOP_SIZE).products[3]
    form = {"product_id": product.id}
    status, text, _ = client.request("POST", "/cart/add", form)
    assert status == 400 and "choose a color" in text
    form.update({f"option.{kind}": values[0] for kind, values in product.options.items()})
    status, text, _ = client.request("POST", "/cart/add", {**form, "option.color": "plaid"})
    assert status == 400 and "&#x27;plaid&#x27; is not available" in text
    status, _, response = client.request("POST", "/cart/add", form)
    assert status == 303 and response.getheader("Location") == "/cart"
    assert [line["product_id"] for line in client.json("/api/cart")] == [product.id]
    status, text, _ = client.request("POST", "/checkout", {})
    assert status == 200 and "Order 1 is placed" in text
    assert client.json("/api/cart") == []
    (order,) = client.json("/api/orders")
    assert order["lines"][0]["options"] == {kind: v[0] for kind, v in product.options.items()}
    assert client.request("POST", "/checkout", {})[0] == 400  # the cart is empty now


def test_concurrent_sessions_never_share_carts_or_orders(shop):
    products = load_catalog(0, SHOP_SIZE).products[:24]
    bought: dict[int, list] = {}
    errors = []

    def shopper(index: int) -> None:
        try:
            client = Client(shop.url)
            client.request("POST", "/api/session")
            product = products[index]
            options = {f"option.{k}": v[-1] for k, v in product.options.items()}
            for _ in range(3):  # interleave several requests per session
                client.request("POST", "/cart/add", {"product_id": product.id, **options})
                client.request("GET", "/search?q=" + product.category.replace(" ", "+"))
            client.request("POST", "/checkout", {})
            bought[index] = client.json("/api/orders")
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=shopper, args=(i,)) for i in range(len(products))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    for index, orders in bought.items():
        (order,) = orders
        assert [line["product_id"] for line in order["lines"]] == [products[index].id] * 3


def test_a_visitor_without_a_cookie_gets_a_fresh_session(shop):
    first, second = Client(shop.url), Client(shop.url)
    product = load_catalog(0, SHOP_SIZE).products[1]
    options = {f"option.{k}": v[0] for k, v in product.options.items()}
    first.request("POST", "/cart/add", {"product_id": product.id, **options})
    assert first.cookie is not None
    assert len(first.json("/api/cart")) == 1
    assert second.json("/api/cart") == [] and second.cookie != first.cookie
    forged = Client(shop.url)
    forged.cookie = "0" * 32  # an unknown token is a new visitor, never someone else's session
    assert forged.json("/api/cart") == []


def test_session_store_drops_the_oldest_beyond_capacity():
    store = SessionStore(capacity=3)
    sessions = [store.new() for _ in range(5)]
    assert len(store) == 3
    assert store.get(sessions[0].token) is None and store.get(sessions[4].token) is not None
    assert len({s.token for s in sessions}) == 5 and all(len(s.token) == 32 for s in sessions)


def test_a_crashing_page_answers_500_and_the_server_keeps_serving():
    class Flaky:
        def handle(self, request):
            if request.path == "/boom":
                raise RuntimeError("bug")
            return Response(200, "fine")

        def describe(self):
            return {"kind": "flaky"}

    server = SiteServer(Flaky()).start()
    try:
        client = Client(server.url)
        assert client.request("GET", "/boom")[0] == 500
        assert client.request("GET", "/ok")[1] == "fine"
        assert client.json("/api/site") == {"kind": "flaky"}
    finally:
        server.stop()


def test_shared_servers_start_once_and_stop_with_their_last_user():
    key = ("test-shared", 1)
    first = acquire_server(key, lambda: ShopApp(load_catalog(0, SHOP_SIZE)))
    second = acquire_server(key, lambda: pytest.fail("a second server was started"))
    assert first is second and running_servers()[key] == first.url
    release_server(key)
    assert Client(first.url).request("GET", "/")[0] == 200
    release_server(key)
    assert key not in running_servers()
    with pytest.raises(OSError):
        Client(first.url).request("GET", "/")


def test_importing_and_making_the_web_envs_starts_nothing():
    code = (
        "import threading, gymnasium as gym, rlvr\n"
        "from rlvr.envs.web.server import running_servers\n"
        "envs = [gym.make('rlvr/WebShop-v0', site_size=50), gym.make('rlvr/WikiQA-v0', "
        "site_size=60)]\n"
        "assert not running_servers(), running_servers()\n"
        "assert threading.active_count() == 1, threading.enumerate()\n"
        "envs[1].reset(seed=0)\n"
        "assert len(running_servers()) == 1\n"
        "envs[1].close()\n"
        "assert not running_servers()\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


# --- the encyclopedia ------------------------------------------------------------------------


def test_every_question_is_answerable_from_its_linked_pages(wiki):
    data = load_wiki(0, WIKI_SIZE)
    browser = Browser(wiki.url).start()
    rng = np.random.default_rng(0)
    for index in range(40):
        question = make_question(data, rng, 1 + index % 4)
        assert len(question.pages) == 1 + index % 4
        urls = [data.by_slug[slug].url for slug in question.pages]
        for here, there in itertools.pairwise(urls):
            browser.open_page(here)
            assert browser.link_number(there) is not None, (question, here, there)
        last = browser.visit(urls[-1]).text
        answer = question.answer if not question.answer.isdigit() else f"{int(question.answer):,}"
        assert answer in last or question.answer in last, (question, last)
    browser.close()


def test_names_are_unique_and_search_finds_an_article_by_its_title(wiki):
    data = load_wiki(0, WIKI_SIZE)
    titles = [article.title.lower() for article in data.articles]
    assert len(set(titles)) == len(titles)
    browser = Browser(wiki.url).start()
    for article in data.articles[::37]:
        browser.search(article.title)
        assert browser.page.links[2] == article.url  # first result after the two nav links
    browser.close()


# --- the browser -----------------------------------------------------------------------------


def test_render_html_gives_compact_text_with_numbered_links():
    html = (
        "<html><head><title>T  1</title><style>p {}</style></head><body>"
        "<nav><a href='/'>Home</a> | <a href='/cart'>Cart</a></nav>"
        "<h1>Big   title</h1><p>Some <b>bold</b> text and <a href='/x?a=1'>a link</a>.</p>"
        "<ul><li>one</li><li>two</li></ul><script>alert(1)</script>"
        "<form><select><option>hidden</option></select><button>Go</button></form></body></html>"
    )
    page = render_html(html, "/here")
    assert page.title == "T 1"
    assert page.lines == [
        "[1] Home | [2] Cart",
        "# Big title",
        "Some bold text and [3] a link.",
        "- one",
        "- two",
    ]
    assert page.links == ["/", "/cart", "/x?a=1"]


def test_browser_tools_navigate_and_refuse_what_they_must(shop):
    browser = Browser(shop.url, max_page_chars=400).start()
    text = browser.search("desk lamp")
    assert text.startswith("URL: /search?q=desk+lamp\nTitle: Search: desk lamp")
    assert "(page cut; use find_in_page" in text
    found = browser.find_in_page("NEXT PAGE")
    assert "line" in found and "Next page" in found
    assert "No line" in browser.find_in_page("zebra crossing")
    product_page = browser.follow_link(4)
    assert product_page.startswith("URL: /product/P")
    with pytest.raises(ToolError, match="no link \\[99\\]"):
        browser.follow_link(99)
    other_port = f"http://127.0.0.1:{browser.port + 1}/"
    for elsewhere in ("http://example.com/", "//example.com/x", other_port, "file:///etc/passwd"):
        with pytest.raises(ToolError, match="only pages of this site"):
            browser.open_page(elsewhere)
    with pytest.raises(ToolError, match="is not a page"):
        browser.open_page("/api/orders")
    with pytest.raises(ToolError, match="no page at /missing"):
        browser.open_page("missing")
    assert browser.page.url.startswith("/product/")  # an error page does not replace the page
    browser.close()


@pytest.mark.parametrize(
    ("address", "shown"),
    [
        ("/foo bar", "/foo%20bar"),  # http.client refused these: the step became an infra error
        ("/cart\r\nX-Injected: 1", "/cartX-Injected:%201"),  # urlsplit drops CR/LF/tab
        ("/\x00", "/%00"),
        ("/caf\u00e9", "/caf%C3%A9"),
        ("/caf\ud800", "/caf%5Cud800"),
    ],
)
def test_addresses_the_agent_writes_are_encoded_never_an_infra_error(shop, address, shown):
    browser = Browser(shop.url).start()
    with pytest.raises(ToolError, match=f"no page at {re.escape(shown)}"):
        browser.open_page(address)
    browser.close()


def test_oversized_requests_are_the_agents_error_not_a_broken_connection(shop):
    browser = Browser(shop.url).start()
    for attempt in (
        lambda: browser.open_page("/search?q=" + "a" * 5_000_000),
        lambda: browser.search("a " * 1_000_000),
        lambda: browser.visit("/cart/add", {"product_id": "P" * 1_000_000}),
    ):
        with pytest.raises(ToolError, match="longer than|larger than"):
            attempt()
    browser.close()


def test_a_failing_site_is_an_infra_error_not_the_agents():
    class Failing:
        def handle(self, request):
            if request.path == "/api/cart":
                return Response(200, "<html>not json</html>")
            raise RuntimeError("bug")

        def describe(self):
            return {"kind": "failing"}

    server = SiteServer(Failing()).start()
    browser = Browser(server.url).start()
    try:
        with pytest.raises(ToolInfraError, match="HTTP 500"):
            browser.search("mug")
        with pytest.raises(ToolInfraError, match="not JSON"):
            browser.get_json("/api/cart")
    finally:
        browser.close()
        server.stop()


def test_a_forked_process_starts_its_own_servers():
    key = ("test-fork", 1)
    parent = acquire_server(key, lambda: ShopApp(load_catalog(0, SHOP_SIZE)))
    context = multiprocessing.get_context("fork")
    queue = context.Queue()

    def child() -> None:
        inherited = running_servers()
        own = acquire_server(key, lambda: ShopApp(load_catalog(0, SHOP_SIZE)))
        answered = Browser(own.url).start().search("mug").startswith("URL: /search")
        queue.put((inherited, own.url, answered))
        release_server(key)

    process = context.Process(target=child)
    process.start()
    inherited, child_url, answered = queue.get(timeout=30)
    process.join(timeout=30)
    release_server(key)
    # The parent's server serves from the parent's threads: closing the parent's envs stopped it
    # under the child (AsyncVectorEnv workers) and its requests hung until the time limit.
    assert inherited == {} and child_url != parent.url and answered
    assert process.exitcode == 0


def test_browser_reports_a_dead_site_as_an_infra_error():
    server = SiteServer(ShopApp(load_catalog(0, SHOP_SIZE))).start()
    browser = Browser(server.url, timeout=2).start()
    server.stop()
    with pytest.raises(ToolInfraError, match="not answering"):
        browser.search("mug")


def test_rlvr_web_serve_serves_a_site_until_interrupted():
    process = subprocess.Popen(
        [sys.executable, "-m", "rlvr.cli", "web", "serve", "wiki", "--size", "60", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        first_line = process.stdout.readline()
        url = first_line.split(" at ")[1].split(";")[0]
        assert Client(url).json("/api/site") == {"kind": "wiki", "seed": 0, "size": 60}
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=10) == 0


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["wiki", "--size", "5"], 1, "error: rlvr web serve wiki: a wiki needs at least 40"),
        (["shop", "--size", "3"], 1, "error: rlvr web serve shop: a shop needs at least 10"),
        (["wiki", "--size", "0"], 2, "argument --size: must be >= 1, got 0"),
        (["wiki", "--port", "99999"], 2, "argument --port: must be in [0, 65535], got 99999"),
        (["wiki", "--seed", "-1"], 2, "argument --seed: must be >= 0, got -1"),
        (["wiki", "--size", "40", "--host", "no.such.host.invalid"], 1, "error: rlvr web serve"),
    ],
)
def test_rlvr_web_serve_refuses_bad_input_in_one_line(argv, code, message, capsys):
    from rlvr.cli import main

    if code == 2:
        with pytest.raises(SystemExit) as exit_:
            main(["web", "serve", *argv])
        assert exit_.value.code == 2
    else:
        assert main(["web", "serve", *argv]) == 1
    err = capsys.readouterr().err
    assert message in err.strip().splitlines()[-1] and "Traceback" not in err, err
    assert code == 2 or err.count("\n") == 1  # a usage error shows the usage above its line
