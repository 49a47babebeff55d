"""The generated shop: a catalog of products, its web pages, shopping goals and their grading.

Product `i` is generated from `np.random.default_rng([seed, SALT, i])` alone, so the catalog,
the goals drawn from it and the pages are the same on every machine for the same seed and size.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import numpy as np

from rlvr.envs.errors import EnvConfigError
from rlvr.envs.web.search import SearchIndex
from rlvr.envs.web.server import (
    Request,
    Response,
    error_page,
    escape,
    html_page,
    link,
    pager,
    paginate,
)

_SALT = 0x5409
DEFAULT_SIZE = 2000
PAGE_SIZE = 10
COLORS = (
    "black", "white", "gray", "navy", "blue", "red", "green", "olive", "beige", "brown", "pink",
    "purple", "yellow", "orange",
)  # fmt: skip
CLOTHING_SIZES = ("xs", "s", "m", "l", "xl", "xxl")
SHOE_SIZES = tuple(str(size) for size in range(5, 14))


@dataclass(frozen=True)
class Category:
    noun: str
    attributes: tuple[str, ...]
    options: Mapping[str, tuple[str, ...]]
    price_range: tuple[int, int]


CATEGORIES = (
    Category(
        "hiking backpack",
        ("waterproof", "lightweight", "laptop compartment", "padded straps", "anti-theft",
         "reflective", "hydration compatible"),
        {"color": COLORS, "capacity": ("20l", "30l", "40l", "50l")},
        (25, 160),
    ),
    Category(
        "running shoes",
        ("breathable", "non-slip", "lightweight", "memory foam", "wide fit", "waterproof",
         "arch support"),
        {"color": COLORS, "size": SHOE_SIZES},
        (35, 190),
    ),
    Category(
        "t-shirt",
        ("organic cotton", "moisture wicking", "slim fit", "crew neck", "v-neck",
         "machine washable", "short sleeve"),
        {"color": COLORS, "size": CLOTHING_SIZES},
        (8, 45),
    ),
    Category(
        "headphones",
        ("wireless", "noise cancelling", "over-ear", "foldable", "built-in microphone",
         "long battery life", "water resistant"),
        {"color": COLORS},
        (15, 350),
    ),
    Category(
        "coffee mug",
        ("dishwasher safe", "microwave safe", "insulated", "ceramic", "stainless steel",
         "lid included", "handmade"),
        {"color": COLORS, "capacity": ("8oz", "12oz", "16oz", "20oz")},
        (6, 40),
    ),
    Category(
        "desk lamp",
        ("dimmable", "usb charging port", "touch control", "adjustable arm", "energy efficient",
         "clamp mount", "eye care"),
        {"color": COLORS},
        (12, 120),
    ),
    Category(
        "yoga mat",
        ("non-slip", "extra thick", "eco-friendly", "carrying strap", "high density",
         "sweat resistant", "alignment lines"),
        {"color": COLORS, "thickness": ("4mm", "6mm", "8mm", "10mm")},
        (12, 90),
    ),
    Category(
        "water bottle",
        ("insulated", "bpa free", "leak proof", "stainless steel", "wide mouth", "straw lid",
         "dishwasher safe"),
        {"color": COLORS, "capacity": ("500ml", "750ml", "1l", "1.5l")},
        (8, 55),
    ),
    Category(
        "rain jacket",
        ("waterproof", "windproof", "hooded", "packable", "fleece lined", "breathable",
         "reflective"),
        {"color": COLORS, "size": CLOTHING_SIZES},
        (30, 240),
    ),
    Category(
        "phone case",
        ("shockproof", "slim", "wallet", "magnetic", "clear", "kickstand", "raised edges"),
        {"color": COLORS, "model": ("nova 12", "nova 13", "nova 14", "zenith s", "zenith s plus")},
        (7, 45),
    ),
    Category(
        "office chair",
        ("ergonomic", "lumbar support", "adjustable height", "mesh back", "swivel",
         "padded armrests", "headrest"),
        {"color": COLORS},
        (60, 480),
    ),
    Category(
        "bed sheets",
        ("organic cotton", "deep pocket", "wrinkle resistant", "cooling", "hypoallergenic",
         "machine washable", "breathable"),
        {"color": COLORS, "size": ("twin", "full", "queen", "king")},
        (20, 150),
    ),
)  # fmt: skip

_SYLLABLES = (
    "ka", "lo", "mi", "ra", "ve", "to", "zu", "ne", "ri", "sa", "po", "li", "da", "fe", "go",
    "mo", "ta", "vi", "xo", "yu", "ber", "lan", "dor", "mar", "tis", "vel", "cor", "sen",
)  # fmt: skip


@dataclass(frozen=True)
class Product:
    id: str
    title: str
    category: str
    brand: str
    attributes: tuple[str, ...]
    options: Mapping[str, tuple[str, ...]]
    price_cents: int
    rating: float
    description: str

    @property
    def price(self) -> str:
        return f"${self.price_cents // 100}.{self.price_cents % 100:02d}"

    @property
    def url(self) -> str:
        return f"/product/{self.id}"


def _brand(rng: np.random.Generator) -> str:
    parts = [_SYLLABLES[int(rng.integers(len(_SYLLABLES)))] for _ in range(int(rng.integers(2, 4)))]
    return "".join(parts).capitalize()


def generate_product(seed: int, index: int) -> Product:
    """Product `index` of the catalog with `seed`, generated on its own."""
    rng = np.random.default_rng([seed, _SALT, index])
    category = CATEGORIES[int(rng.integers(len(CATEGORIES)))]
    brand = _brand(rng)
    count = int(rng.integers(2, 6))
    picked = sorted(rng.choice(len(category.attributes), size=count, replace=False))
    attributes = tuple(category.attributes[i] for i in picked)
    options = {}
    for kind, values in category.options.items():
        size = int(rng.integers(2, min(6, len(values)) + 1))
        start = int(rng.integers(0, len(values) - size + 1))
        chosen = values[start : start + size] if kind != "color" else _sample(rng, values, size)
        options[kind] = tuple(chosen)
    low, high = category.price_range
    price_cents = int(rng.integers(low, high + 1)) * 100 + int(rng.choice([99, 49, 0, 95]))
    in_title = attributes[: int(rng.integers(1, 3))]
    title = f"{brand} {' '.join(word.title() for word in in_title)} {category.noun.title()}"
    description = (
        f"The {brand} {category.noun}: {', '.join(attributes)}. "
        f"Available in {len(options['color'])} colors."
    )
    return Product(
        id=f"P{index:05d}",
        title=title,
        category=category.noun,
        brand=brand,
        attributes=attributes,
        options=options,
        price_cents=price_cents,
        rating=round(float(rng.uniform(2.5, 5.0)), 1),
        description=description,
    )


def _sample(rng: np.random.Generator, values: tuple[str, ...], size: int) -> tuple[str, ...]:
    picked = sorted(rng.choice(len(values), size=size, replace=False))
    return tuple(values[i] for i in picked)


class Catalog:
    """All products of a shop, with a search index."""

    def __init__(self, seed: int, size: int) -> None:
        if size < 10:
            raise EnvConfigError(f"a shop needs at least 10 products, got {size}")
        self.seed = seed
        self.size = size
        self.products = [generate_product(seed, index) for index in range(size)]
        self.by_id = {product.id: product for product in self.products}
        self.index = SearchIndex(
            [
                (p.title, f"{p.category} {p.brand} {' '.join(p.attributes)} {p.description}")
                for p in self.products
            ]
        )

    def search(self, query: str) -> list[Product]:
        return [self.products[index] for index in self.index.search(query)]


@functools.lru_cache(maxsize=8)
def load_catalog(seed: int, size: int) -> Catalog:
    """The catalog for (seed, size), built once per process."""
    return Catalog(seed, size)


# --- goals and their grading -------------------------------------------------------------------


@dataclass(frozen=True)
class Goal:
    """What to buy: a category, wanted attributes and option values, and a price limit."""

    category: str
    attributes: tuple[str, ...]
    options: Mapping[str, str]
    max_price_cents: int
    target: str
    """A product that meets every requirement (there may be others)."""

    def instruction(self) -> str:
        wanted = " and ".join(self.attributes)
        options = ", ".join(f"{kind} {value}" for kind, value in self.options.items())
        dollars = self.max_price_cents / 100
        return (
            f"i am looking for a {wanted} {self.category} with {options}, and price lower than "
            f"{dollars:.2f} dollars"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "category": self.category,
            "attributes": list(self.attributes),
            "options": dict(self.options),
            "max_price_cents": self.max_price_cents,
            "target": self.target,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Goal:
        """The goal `to_dict` wrote; `ValueError` for anything else (a field missing or of the
        wrong type)."""
        try:
            category, attributes = data["category"], data["attributes"]
            options, price, target = data["options"], data["max_price_cents"], data["target"]
        except (KeyError, TypeError):
            raise ValueError("not a goal dict") from None
        texts = isinstance(attributes, (list, tuple)) and all(
            isinstance(a, str) for a in attributes
        )
        pairs = isinstance(options, Mapping) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in options.items()
        )
        price_ok = isinstance(price, int) and not isinstance(price, bool) and price >= 0
        if not (isinstance(category, str) and isinstance(target, str) and texts and pairs):
            raise ValueError("a goal field has the wrong type")
        if not price_ok:
            raise ValueError("max_price_cents must be an int >= 0")
        return cls(category, tuple(attributes), dict(options), price, target)


def make_goal(catalog: Catalog, rng: np.random.Generator, difficulty: int) -> Goal:
    """A goal met by a random product: `difficulty` wanted attributes (1-3), every option kind."""
    target = catalog.products[int(rng.integers(catalog.size))]
    count = min(max(difficulty, 1), len(target.attributes))
    picked = sorted(rng.choice(len(target.attributes), size=count, replace=False))
    options = {
        kind: values[int(rng.integers(len(values)))] for kind, values in target.options.items()
    }
    headroom = float(rng.uniform(1.1, 1.6))
    max_price = math.ceil(target.price_cents * headroom / 100) * 100
    return Goal(
        target.category,
        tuple(target.attributes[i] for i in picked),
        options,
        max_price,
        target.id,
    )


def grade_purchase(
    goal: Goal, product: Product | None, options: Mapping[str, str]
) -> dict[str, float]:
    """WebShop-style graded reward: the share of requirements met (each wanted attribute, each
    option, the price), and 0 for a product of another category. Returns the terms and `total`."""
    if product is None or product.category != goal.category:
        return {"category": 0.0, "attributes": 0.0, "options": 0.0, "price": 0.0, "total": 0.0}
    attributes = sum(attribute in product.attributes for attribute in goal.attributes)
    matched = sum(options.get(kind) == value for kind, value in goal.options.items())
    price = 1.0 if product.price_cents < goal.max_price_cents else 0.0  # "lower than"
    requirements = len(goal.attributes) + len(goal.options) + 1
    return {
        "category": 1.0,
        "attributes": attributes / len(goal.attributes),
        "options": matched / len(goal.options) if goal.options else 1.0,
        "price": price,
        "total": (attributes + matched + price) / requirements,
    }


# --- the web app ---------------------------------------------------------------------------------


class ShopApp:
    """The shop's pages: home, search, product, cart, checkout, orders; JSON under /api/."""

    kind = "shop"

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "seed": self.catalog.seed, "size": self.catalog.size}

    def handle(self, request: Request) -> Response:
        path, method = request.path, request.method
        if method == "GET":
            if path == "/":
                return self.home()
            if path == "/search":
                return self.search(request.query.get("q", ""), request.query.get("page", "1"))
            if path.startswith("/product/"):
                return self.product(path.removeprefix("/product/"))
            if path == "/cart":
                return self.cart_page(request)
            if path == "/orders":
                return self.orders_page(request)
            if path == "/api/cart":
                return Response.json(_cart(request))
            if path == "/api/orders":
                return Response.json(request.session.data.get("orders", []))
        if method == "POST":
            if path == "/cart/add":
                return self.add_to_cart(request)
            if path == "/cart/remove":
                return self.remove_from_cart(request)
            if path == "/checkout":
                return self.checkout(request)
        return error_page(404, f"no page at {path}", _nav())

    # --- pages -------------------------------------------------------------------------------

    def home(self) -> Response:
        items = "".join(
            f"<li>{link('/search?' + urlencode({'q': c.noun}), c.noun.title())}</li>"
            for c in CATEGORIES
        )
        body = (
            "<h1>Welcome to the shop</h1>"
            f"<p>{self.catalog.size} products. Search, or browse a category:</p>"
            f"<ul>{items}</ul>"
            "<form action='/search' method='get'><input name='q'><button>Search</button></form>"
        )
        return Response(200, html_page("Shop", body, _nav()))

    def search(self, query: str, page_text: str) -> Response:
        results = self.catalog.search(query)
        page, pages, shown = paginate(results, page_text, PAGE_SIZE)
        items = "".join(f"<li>{link(p.url, p.title)} {escape(p.price)}</li>" for p in shown)
        body = (
            f"<h1>Results for &quot;{escape(query)}&quot;</h1>"
            f"<p>{len(results)} products, page {page} of {pages}</p>"
            f"<ol>{items}</ol>{pager('/search', {'q': query}, page, pages)}"
        )
        return Response(200, html_page(f"Search: {query}", body, _nav()))

    def product(self, product_id: str) -> Response:
        product = self.catalog.by_id.get(product_id)
        if product is None:
            return error_page(404, f"no product {product_id!r}", _nav())
        features = "".join(f"<li>{escape(a)}</li>" for a in product.attributes)
        options = "".join(
            f"<li>{escape(kind)}: {escape(', '.join(values))}</li>"
            for kind, values in product.options.items()
        )
        selects = "".join(
            f"<label>{escape(kind)} <select name='option.{escape(kind)}'>"
            + "".join(f"<option>{escape(v)}</option>" for v in values)
            + "</select></label>"
            for kind, values in product.options.items()
        )
        body = (
            f"<h1>{escape(product.title)}</h1>"
            f"<p>Product id: {product.id}</p><p>Price: {product.price}</p>"
            f"<p>Brand: {escape(product.brand)}. Rating: {product.rating} of 5.</p>"
            f"<h2>Features</h2><ul>{features}</ul>"
            f"<h2>Options</h2><ul>{options}</ul>"
            f"<h2>Description</h2><p>{escape(product.description)}</p>"
            f"<form action='/cart/add' method='post'><input type='hidden' name='product_id' "
            f"value='{product.id}'>{selects}<button>Add to cart</button></form>"
        )
        return Response(200, html_page(product.title, body, _nav()))

    def cart_page(self, request: Request) -> Response:
        lines = _cart(request)
        items = "".join(
            f"<li>{link('/product/' + line['product_id'], line['title'])} "
            f"({escape(_options_text(line['options']))}) {escape(line['price'])}</li>"
            for line in lines
        )
        total = sum(line["price_cents"] for line in lines)
        body = (
            f"<h1>Your cart</h1><p>{len(lines)} item(s), total ${total // 100}.{total % 100:02d}"
            f"</p><ul>{items}</ul>"
            "<form action='/checkout' method='post'><button>Buy now</button></form>"
        )
        return Response(200, html_page("Cart", body, _nav()))

    def orders_page(self, request: Request) -> Response:
        orders = request.session.data.get("orders", [])
        items = "".join(
            f"<li>Order {order['number']}: "
            + "; ".join(
                f"{line['title']} ({_options_text(line['options'])})" for line in order["lines"]
            )
            + "</li>"
            for order in orders
        )
        body = f"<h1>Your orders</h1><ul>{items or '<li>none yet</li>'}</ul>"
        return Response(200, html_page("Orders", body, _nav()))

    # --- actions -----------------------------------------------------------------------------

    def add_to_cart(self, request: Request) -> Response:
        product = self.catalog.by_id.get(request.form.get("product_id", ""))
        if product is None:
            return error_page(400, f"no product {request.form.get('product_id')!r}", _nav())
        chosen = {
            key.removeprefix("option."): value
            for key, value in request.form.items()
            if key.startswith("option.")
        }
        unknown = sorted(set(chosen) - set(product.options))
        if unknown:
            kinds = ", ".join(product.options)
            return error_page(
                400, f"{product.id} has no option {unknown[0]!r}; its options: {kinds}", _nav()
            )
        for kind, values in product.options.items():
            if kind not in chosen:
                return error_page(
                    400, f"choose a {kind} for {product.id}: {', '.join(values)}", _nav()
                )
            if chosen[kind] not in values:
                return error_page(
                    400,
                    f"{kind} {chosen[kind]!r} is not available for {product.id}; "
                    f"choose one of: {', '.join(values)}",
                    _nav(),
                )
        cart = request.session.data.setdefault("cart", [])
        cart.append(
            {
                "product_id": product.id,
                "options": dict(sorted(chosen.items())),
                "title": product.title,
                "price": product.price,
                "price_cents": product.price_cents,
            }
        )
        return Response.redirect("/cart")

    def remove_from_cart(self, request: Request) -> Response:
        cart = request.session.data.setdefault("cart", [])
        product_id = request.form.get("product_id", "")
        kept = [line for line in cart if line["product_id"] != product_id]
        if len(kept) == len(cart):
            return error_page(400, f"{product_id!r} is not in the cart", _nav())
        request.session.data["cart"] = kept
        return Response.redirect("/cart")

    def checkout(self, request: Request) -> Response:
        lines = _cart(request)
        if not lines:
            return error_page(400, "the cart is empty; add a product first", _nav())
        orders = request.session.data.setdefault("orders", [])
        order = {"number": len(orders) + 1, "lines": lines}
        orders.append(order)
        request.session.data["cart"] = []
        items = "".join(
            f"<li>{escape(line['title'])} ({escape(_options_text(line['options']))}) "
            f"{escape(line['price'])}</li>"
            for line in lines
        )
        body = f"<h1>Thank you!</h1><p>Order {order['number']} is placed:</p><ul>{items}</ul>"
        return Response(200, html_page("Order placed", body, _nav()))


def _cart(request: Request) -> list[dict[str, Any]]:
    """Copies of the session's cart lines (product id, options, title, price)."""
    return [
        dict(line, options=dict(line["options"])) for line in request.session.data.get("cart", [])
    ]


def _options_text(options: Mapping[str, str]) -> str:
    return ", ".join(f"{kind} {value}" for kind, value in options.items())


def _nav() -> str:
    return f"{link('/', 'Home')} | {link('/cart', 'Cart')} | {link('/orders', 'Orders')}"
