"""The generated encyclopedia: countries, cities, people and companies of an invented world, linked
to each other, its web pages, and multi-hop questions whose facts sit on different pages.

Every name is invented, so a model cannot answer from memory: it has to read the pages. The
whole wiki is generated from `np.random.default_rng([seed, SALT, size])`.
"""

from __future__ import annotations

import functools
import re
import string
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote

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

_SALT = 0x3171
DEFAULT_SIZE = 1200
KINDS = ("country", "city", "person", "company")
_ONSETS = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "dr",
           "kl", "st", "tr", "th", "sh", "qu", "v", "h")  # fmt: skip
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ei", "ou", "ya")
_CODAS = ("", "", "", "n", "r", "l", "s", "th", "m", "x", "nd", "rk")
OCCUPATIONS = ("engineer", "painter", "physician", "architect", "novelist", "chemist",
               "composer", "lawyer", "astronomer", "economist", "sculptor", "pilot")  # fmt: skip
INDUSTRIES = ("shipping", "software", "mining", "textiles", "banking", "agriculture",
              "aerospace", "publishing", "pharmaceuticals", "energy")  # fmt: skip
COMPANY_SUFFIXES = ("Industries", "Systems", "Holdings", "Works", "Group", "Labs", "Trading")
CURRENCY_UNITS = ("crown", "mark", "florin", "dinar", "thaler", "real", "sol")


@dataclass
class Article:
    slug: str
    title: str
    kind: str
    facts: dict[str, Any] = field(default_factory=dict)
    """Attribute facts: numbers and words (birth_year, population, currency, ...)."""
    links: dict[str, str] = field(default_factory=dict)
    """Relations to other articles, by slug (birth_city, country, mayor, founder, ...)."""

    @property
    def url(self) -> str:
        return f"/wiki/{quote(self.slug)}"


# Relations a question can follow: (kind, relation) -> (target kind, phrase about the subject).
RELATIONS: dict[tuple[str, str], tuple[str, str]] = {
    ("person", "birth_city"): ("city", "the city where {} was born"),
    ("person", "employer"): ("company", "the company that {} works for"),
    ("city", "country"): ("country", "the country where {} is located"),
    ("city", "mayor"): ("person", "the mayor of {}"),
    ("country", "capital"): ("city", "the capital of {}"),
    ("company", "founder"): ("person", "the founder of {}"),
    ("company", "headquarters"): ("city", "the city where {} has its headquarters"),
}
# Facts a question can ask for: (kind, fact) -> question template.
FACT_QUESTIONS: dict[tuple[str, str], str] = {
    ("person", "birth_year"): "In what year was {} born?",
    ("person", "occupation"): "What is the occupation of {}?",
    ("city", "population"): "What is the population of {}?",
    ("city", "founded"): "In what year was {} founded?",
    ("country", "currency"): "What is the currency of {}?",
    ("country", "independence"): "In what year did {} become independent?",
    ("company", "founded"): "In what year was {} founded?",
    ("company", "industry"): "What industry is {} in?",
}


class Wiki:
    """All articles of an encyclopedia generated from (seed, size), with a search index."""

    def __init__(self, seed: int, size: int) -> None:
        if size < 40:
            raise EnvConfigError(f"a wiki needs at least 40 articles, got {size}")
        self.seed, self.size = seed, size
        rng = np.random.default_rng([seed, _SALT, size])
        self._names: set[str] = set()
        counts = {
            "country": max(4, size // 30),
            "city": size * 26 // 100,
            "company": size * 17 // 100,
        }
        counts["person"] = size - sum(counts.values())
        self.articles: list[Article] = []
        by_kind: dict[str, list[Article]] = defaultdict(list)
        for kind in KINDS:
            for _ in range(counts[kind]):
                article = Article("", self._new_name(rng, kind), kind)
                article.slug = article.title.replace(" ", "_")
                by_kind[kind].append(article)
                self.articles.append(article)
        self.by_kind = dict(by_kind)
        self._fill_facts(rng)
        self.by_slug = {article.slug: article for article in self.articles}
        self.index = SearchIndex([(a.title, self.summary(a)) for a in self.articles])

    # --- generation ------------------------------------------------------------------------------

    def _word(self, rng: np.random.Generator, syllables: int) -> str:
        parts = []
        for _ in range(syllables):
            parts.append(_ONSETS[int(rng.integers(len(_ONSETS)))])
            parts.append(_VOWELS[int(rng.integers(len(_VOWELS)))])
        parts.append(_CODAS[int(rng.integers(len(_CODAS)))])
        return "".join(parts).capitalize()

    def _new_name(self, rng: np.random.Generator, kind: str) -> str:
        while True:
            if kind == "person":
                name = f"{self._word(rng, 2)} {self._word(rng, int(rng.integers(2, 4)))}"
            elif kind == "company":
                suffix = COMPANY_SUFFIXES[int(rng.integers(len(COMPANY_SUFFIXES)))]
                name = f"{self._word(rng, 2)} {suffix}"
            else:
                name = self._word(rng, int(rng.integers(2, 4)))
            if name.lower() not in self._names:
                self._names.add(name.lower())
                return name

    def _fill_facts(self, rng: np.random.Generator) -> None:
        def pick(kind: str) -> Article:
            articles = self.by_kind[kind]
            return articles[int(rng.integers(len(articles)))]

        countries = self.by_kind["country"]
        for index, city in enumerate(self.by_kind["city"]):
            # The first cities go one per country, so every country has one to be its capital.
            country = countries[index] if index < len(countries) else pick("country")
            city.links["country"] = country.slug
            city.facts["founded"] = int(rng.integers(800, 1900))
            city.facts["population"] = int(rng.integers(5_000, 3_000_000))
        for index, country in enumerate(countries):
            country.links["capital"] = self.by_kind["city"][index].slug
            unit = CURRENCY_UNITS[int(rng.integers(len(CURRENCY_UNITS)))]
            country.facts["currency"] = f"{country.title.lower()} {unit}"
            country.facts["independence"] = int(rng.integers(1500, 1990))
        for person in self.by_kind["person"]:
            person.facts["birth_year"] = int(rng.integers(1900, 2000))
            person.facts["occupation"] = OCCUPATIONS[int(rng.integers(len(OCCUPATIONS)))]
            person.links["birth_city"] = pick("city").slug
        for company in self.by_kind["company"]:
            company.facts["founded"] = int(rng.integers(1920, 2020))
            company.facts["industry"] = INDUSTRIES[int(rng.integers(len(INDUSTRIES)))]
            company.links["founder"] = pick("person").slug
            company.links["headquarters"] = pick("city").slug
        for person in self.by_kind["person"]:
            if rng.random() < 0.7:
                person.links["employer"] = pick("company").slug
        for city in self.by_kind["city"]:
            city.links["mayor"] = pick("person").slug

    # --- text ---------------------------------------------------------------------------------

    def summary(self, article: Article) -> str:
        """The article's first sentence (plain text)."""
        facts, links = article.facts, article.links
        if article.kind == "person":
            return (
                f"{article.title} (born {facts['birth_year']}) is {_article(facts['occupation'])} "
                f"from {self._title(links['birth_city'])}."
            )
        if article.kind == "city":
            return f"{article.title} is a city in {self._title(links['country'])}."
        if article.kind == "country":
            return f"{article.title} is a country whose capital is {self._title(links['capital'])}."
        industry = _article(facts["industry"])
        return f"{article.title} is {industry} company founded in {facts['founded']}."

    def _title(self, slug: str) -> str:
        return slug.replace("_", " ")

    def search(self, query: str) -> list[Article]:
        return [self.articles[index] for index in self.index.search(query)]

    def backlinks(self, article: Article, relation: str, kind: str) -> list[Article]:
        return [a for a in self.by_kind[kind] if a.links.get(relation) == article.slug]


@functools.lru_cache(maxsize=8)
def load_wiki(seed: int, size: int) -> Wiki:
    """The wiki for (seed, size), built once per process."""
    return Wiki(seed, size)


# --- questions -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    text: str
    answer: str
    pages: tuple[str, ...]
    """Slugs of the articles to read, in order; the answer is on the last one."""


def make_question(wiki: Wiki, rng: np.random.Generator, hops: int) -> Question:
    """A question that needs `hops` articles read (1 to 4): relations followed from a random
    start, then either a fact of the entity reached or the name of the next one."""
    hops = min(max(hops, 1), 4)
    while True:  # a walk can dead-end (a person with no employer): draw again
        question = _try_question(wiki, rng, hops)
        if question is not None:
            return question


def _try_question(wiki: Wiki, rng: np.random.Generator, hops: int) -> Question | None:
    ask_name = bool(rng.random() < 0.4)
    walk = hops if ask_name else hops - 1
    article = wiki.articles[int(rng.integers(len(wiki.articles)))]
    phrase = article.title
    pages = [article.slug]
    for step in range(walk):
        relations = [
            rel for (kind, rel) in RELATIONS if kind == article.kind and rel in article.links
        ]
        if not relations:
            return None
        relation = relations[int(rng.integers(len(relations)))]
        target = wiki.by_slug[article.links[relation]]
        if target.slug in pages:
            return None
        phrase = RELATIONS[(article.kind, relation)][1].format(phrase)
        article = target
        if step < walk - 1 or not ask_name:
            pages.append(article.slug)
    if ask_name:
        return Question(f"What is the name of {phrase}?", article.title, tuple(pages))
    facts = [fact for (kind, fact) in FACT_QUESTIONS if kind == article.kind]
    fact = facts[int(rng.integers(len(facts)))]
    text = FACT_QUESTIONS[(article.kind, fact)].format(phrase)
    return Question(text, str(article.facts[fact]), tuple(pages))


_ARTICLES = re.compile(r"\b(a|an|the)\b")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_PUNCTUATION = str.maketrans({char: " " for char in string.punctuation})


def normalize_answer(text: str) -> str:
    """Lower case, no thousands separators, punctuation or articles, single spaces."""
    text = _THOUSANDS.sub("", text.lower())
    text = text.translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


# --- the web app ---------------------------------------------------------------------------------


class WikiApp:
    """The encyclopedia's pages: home, search, category listings and articles."""

    kind = "wiki"

    def __init__(self, wiki: Wiki) -> None:
        self.wiki = wiki

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "seed": self.wiki.seed, "size": self.wiki.size}

    def handle(self, request: Request) -> Response:
        if request.method != "GET":
            return error_page(405, "the encyclopedia is read-only", _nav())
        path = request.path
        if path == "/":
            return self.home()
        if path == "/search":
            return self.search(request.query.get("q", ""), request.query.get("page", "1"))
        if path.startswith("/category/"):
            return self.category(path.removeprefix("/category/"), request.query.get("page", "1"))
        if path.startswith("/wiki/"):
            return self.article(unquote(path.removeprefix("/wiki/")))
        return error_page(404, f"no page at {path}", _nav())

    def home(self) -> Response:
        kinds = "".join(
            f"<li>{link('/category/' + kind, kind.title() + ' articles')} "
            f"({len(self.wiki.by_kind[kind])})</li>"
            for kind in KINDS
        )
        body = (
            "<h1>The Encyclopedia</h1>"
            f"<p>{len(self.wiki.articles)} articles about an invented world.</p><ul>{kinds}</ul>"
            "<form action='/search' method='get'><input name='q'><button>Search</button></form>"
        )
        return Response(200, html_page("Encyclopedia", body, _nav()))

    def search(self, query: str, page_text: str) -> Response:
        results = self.wiki.search(query)
        page, pages, shown = paginate(results, page_text)
        items = "".join(
            f"<li>{link(a.url, a.title)}: {escape(self.wiki.summary(a))}</li>" for a in shown
        )
        more = pager("/search", {"q": query}, page, pages)
        body = (
            f"<h1>Search results for &quot;{escape(query)}&quot;</h1>"
            f"<p>{len(results)} articles, page {page} of {pages}</p><ol>{items}</ol>{more}"
        )
        return Response(200, html_page(f"Search: {query}", body, _nav()))

    def category(self, kind: str, page_text: str) -> Response:
        if kind not in self.wiki.by_kind:
            return error_page(404, f"no category {kind!r}; categories: {', '.join(KINDS)}", _nav())
        articles = sorted(self.wiki.by_kind[kind], key=lambda a: a.title)
        page, pages, shown = paginate(articles, page_text, size=50)
        items = "".join(f"<li>{link(a.url, a.title)}</li>" for a in shown)
        more = pager(f"/category/{kind}", {}, page, pages)
        body = (
            f"<h1>{kind.title()} articles</h1><p>page {page} of {pages}</p><ul>{items}</ul>{more}"
        )
        return Response(200, html_page(f"{kind.title()} articles", body, _nav()))

    def article(self, slug: str) -> Response:
        article = self.wiki.by_slug.get(slug)
        if article is None:
            return error_page(404, f"no article {slug!r}; try the search", _nav())
        body = f"<h1>{escape(article.title)}</h1>" + _ARTICLE_BODIES[article.kind](
            self.wiki, article
        )
        return Response(200, html_page(article.title, body, _nav()))


def _article(noun: str) -> str:
    return f"{'an' if noun[0] in 'aeiou' else 'a'} {noun}"


def _a(wiki: Wiki, slug: str) -> str:
    return link(wiki.by_slug[slug].url, wiki.by_slug[slug].title)


def _list(heading: str, articles: list[Article], limit: int = 12) -> str:
    if not articles:
        return ""
    items = "".join(f"<li>{link(a.url, a.title)}</li>" for a in articles[:limit])
    more = f"<p>and {len(articles) - limit} more</p>" if len(articles) > limit else ""
    return f"<h2>{escape(heading)}</h2><ul>{items}</ul>{more}"


def _person(wiki: Wiki, person: Article) -> str:
    facts, links = person.facts, person.links
    works = (
        f" {person.title} works for {_a(wiki, links['employer'])}." if "employer" in links else ""
    )
    return (
        f"<p>{escape(person.title)} (born {facts['birth_year']}) is "
        f"{_article(facts['occupation'])} born in {_a(wiki, links['birth_city'])}.{works}</p>"
        + _list("Founded", wiki.backlinks(person, "founder", "company"))
        + _list("Mayor of", wiki.backlinks(person, "mayor", "city"))
    )


def _city(wiki: Wiki, city: Article) -> str:
    facts, links = city.facts, city.links
    return (
        f"<p>{escape(city.title)} is a city in {_a(wiki, links['country'])}. It was founded in "
        f"{facts['founded']} and has a population of {facts['population']:,}. Its mayor is "
        f"{_a(wiki, links['mayor'])}.</p>"
        + _list("People born here", wiki.backlinks(city, "birth_city", "person"))
        + _list("Companies based here", wiki.backlinks(city, "headquarters", "company"))
    )


def _country(wiki: Wiki, country: Article) -> str:
    facts, links = country.facts, country.links
    return (
        f"<p>{escape(country.title)} is a country. Its capital is {_a(wiki, links['capital'])} "
        f"and its currency is the {escape(facts['currency'])}. It became independent in "
        f"{facts['independence']}.</p>"
        + _list("Cities", wiki.backlinks(country, "country", "city"), limit=30)
    )


def _company(wiki: Wiki, company: Article) -> str:
    facts, links = company.facts, company.links
    return (
        f"<p>{escape(company.title)} is {_article(facts['industry'])} company founded in "
        f"{facts['founded']} by {_a(wiki, links['founder'])}. Its headquarters are in "
        f"{_a(wiki, links['headquarters'])}.</p>"
        + _list("Employees", wiki.backlinks(company, "employer", "person"))
    )


_ARTICLE_BODIES = {"person": _person, "city": _city, "country": _country, "company": _company}


def _nav() -> str:
    return f"{link('/', 'Home')} | {link('/search', 'Search')}"
