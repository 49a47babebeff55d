"""Procedural databases: five domains (shop, school, flights, library, HR) of four tables each.

Every domain has the same shape under different names, so one set of question templates serves
them all:

    group  <-  item  <-  fact  ->  entity
    (suppliers <- products <- orders -> customers, departments <- courses <- enrollments ->
    students, ...)

with primary and foreign keys, dates ('YYYY-MM-DD'), NULLs in some columns, unique labels, some
entities without facts (for NOT IN / NOT EXISTS questions) and at most one fact per entity and
date (so running totals are unambiguous). A database is a pure function of (domain, index,
variant): `DomainCatalog` rebuilds "shop/3" or its test-suite twin "shop/3~1" from its id alone.

Mostly task data (~660 lines): the five domains' tables, names and value pools, kept with the
code that draws from them because each domain's columns and their drawing go together.
"""

from __future__ import annotations

import datetime as dt
import itertools
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

from rlvr.verifiers.sql.database import Column, Database, Table
from rlvr.verifiers.sql.errors import UnknownDatabase


@dataclass(frozen=True)
class Attr:
    """A column with its wording. `kind`: label, category, int, real, date."""

    column: str
    noun: str
    kind: str
    pool: tuple[Any, ...] = ()
    low: float = 0
    high: float = 0
    null_rate: float = 0.0
    plural: str = ""

    @property
    def nouns(self) -> str:
        return self.plural or f"{self.noun}s"

    @property
    def sql_type(self) -> str:
        return {"label": "TEXT", "category": "TEXT", "int": "INTEGER", "real": "REAL",
                "date": "DATE"}[self.kind]  # fmt: skip


@dataclass(frozen=True)
class Role:
    """One table of a domain: its name, key, wording and attributes."""

    table: str
    key: str
    noun: str
    plural: str
    label: Attr | None = None
    category: Attr | None = None
    number: Attr | None = None
    date: Attr | None = None
    size: tuple[int, int] = (10, 20)

    @property
    def attrs(self) -> tuple[Attr, ...]:
        return tuple(a for a in (self.label, self.category, self.number, self.date) if a)


@dataclass(frozen=True)
class Domain:
    name: str
    group: Role
    item: Role
    entity: Role
    fact: Role
    verb: str
    """Past tense linking an entity to an item through a fact ("ordered", "enrolled in")."""
    relation: str
    """How an item belongs to its group ("supplied by", "offered by")."""


# --- value pools ----------------------------------------------------------------------------------

FIRST = ("Ana", "Ben", "Chloe", "Dmitri", "Elif", "Farah", "Goran", "Hana", "Ivan", "Jonas",
         "Kaito", "Lena", "Mateo", "Nadia", "Omar", "Priya", "Quinn", "Rosa", "Sven", "Tariq",
         "Uma", "Victor", "Wen", "Ximena", "Yusuf", "Zoe")  # fmt: skip
LAST = ("Abara", "Berg", "Costa", "Dubois", "Eriksen", "Fischer", "Garcia", "Haddad", "Ito",
        "Jensen", "Kowalski", "Lopez", "Moreau", "Novak", "Okafor", "Petrov", "Quispe", "Rossi",
        "Sato", "Torres", "Ueda", "Varga", "Weber", "Yilmaz", "Zhou")  # fmt: skip
PEOPLE = tuple(f"{first} {last}" for first, last in itertools.product(FIRST, LAST))
CITIES = ("Lyon", "Porto", "Austin", "Osaka", "Leeds", "Turin", "Quebec", "Recife", "Gdansk")
COUNTRIES = ("France", "Germany", "Japan", "Brazil", "Canada", "Italy", "Kenya", "Norway")


def _combos(first: tuple[str, ...], second: tuple[str, ...], sep: str = " ") -> tuple[str, ...]:
    return tuple(f"{a}{sep}{b}" for a, b in itertools.product(first, second))


SHOP = Domain(
    name="shop",
    group=Role(
        "suppliers",
        "supplier_id",
        "supplier",
        "suppliers",
        label=Attr(
            "name",
            "name",
            "label",
            (
                "Acme Ltd",
                "Borealis Trading",
                "Cobalt Supply",
                "Delta Goods",
                "Evergreen Co",
                "Fjord Imports",
                "Granite Wholesale",
                "Harbor Partners",
            ),
        ),
        category=Attr("country", "country", "category", COUNTRIES),
        size=(4, 7),
    ),
    item=Role(
        "products",
        "product_id",
        "product",
        "products",
        label=Attr(
            "name",
            "name",
            "label",
            _combos(
                ("Classic", "Deluxe", "Eco", "Mini", "Pro", "Smart", "Ultra", "Vintage"),
                (
                    "Lamp",
                    "Kettle",
                    "Backpack",
                    "Headphones",
                    "Blender",
                    "Chair",
                    "Notebook",
                    "Umbrella",
                    "Watch",
                    "Mug",
                    "Speaker",
                    "Toaster",
                ),
            ),
        ),
        category=Attr(
            "category",
            "category",
            "category",
            ("Kitchen", "Electronics", "Furniture", "Outdoor", "Stationery", "Accessories"),
            plural="categories",
        ),
        number=Attr("price", "price", "real", low=5, high=500),
        size=(12, 24),
    ),
    entity=Role(
        "customers",
        "customer_id",
        "customer",
        "customers",
        label=Attr("name", "name", "label", PEOPLE),
        category=Attr("city", "city", "category", CITIES, null_rate=0.1, plural="cities"),
        number=Attr(
            "loyalty_points", "loyalty point balance", "int", low=0, high=5000, null_rate=0.25
        ),
        date=Attr("signup_date", "sign-up date", "date", low=2018, high=2023),
        size=(15, 32),
    ),
    fact=Role(
        "orders",
        "order_id",
        "order",
        "orders",
        number=Attr("quantity", "quantity", "int", low=1, high=10, plural="quantities"),
        date=Attr("order_date", "order date", "date", low=2021, high=2024),
        size=(30, 80),
    ),
    verb="ordered",
    relation="supplied by",
)

SCHOOL = Domain(
    name="school",
    group=Role(
        "departments",
        "department_id",
        "department",
        "departments",
        label=Attr(
            "name",
            "name",
            "label",
            (
                "Mathematics",
                "Physics",
                "History",
                "Biology",
                "Economics",
                "Literature",
                "Computer Science",
            ),
        ),
        category=Attr(
            "building",
            "building",
            "category",
            ("North Hall", "South Hall", "Main Building", "Science Center"),
        ),
        size=(4, 7),
    ),
    item=Role(
        "courses",
        "course_id",
        "course",
        "courses",
        label=Attr(
            "title",
            "title",
            "label",
            _combos(
                ("Introduction to", "Advanced", "Topics in", "Foundations of", "Seminar on"),
                (
                    "Algebra",
                    "Optics",
                    "Genetics",
                    "Macroeconomics",
                    "Poetry",
                    "Databases",
                    "Statistics",
                    "Ecology",
                    "Ancient Rome",
                    "Thermodynamics",
                ),
            ),
        ),
        category=Attr("level", "level", "category", ("Introductory", "Intermediate", "Advanced")),
        number=Attr(
            "credits", "number of credits", "int", low=1, high=6, plural="numbers of credits"
        ),
        size=(12, 24),
    ),
    entity=Role(
        "students",
        "student_id",
        "student",
        "students",
        label=Attr("name", "name", "label", PEOPLE),
        category=Attr("hometown", "hometown", "category", CITIES, null_rate=0.1),
        number=Attr(
            "scholarship", "scholarship amount", "real", low=500, high=10000, null_rate=0.4
        ),
        date=Attr("enrollment_date", "enrollment date", "date", low=2019, high=2024),
        size=(15, 32),
    ),
    fact=Role(
        "enrollments",
        "enrollment_id",
        "enrollment",
        "enrollments",
        number=Attr("grade", "grade", "real", low=40, high=100, null_rate=0.15),
        date=Attr("enrolled_on", "enrollment day", "date", low=2020, high=2024),
        size=(30, 80),
    ),
    verb="enrolled in",
    relation="offered by",
)

FLIGHTS = Domain(
    name="flights",
    group=Role(
        "airlines",
        "airline_id",
        "airline",
        "airlines",
        label=Attr(
            "name",
            "name",
            "label",
            (
                "Aurora Air",
                "Blue Heron",
                "Cirrus Lines",
                "Dune Airways",
                "Equinox Air",
                "Falcon Jet",
                "Gale Airlines",
            ),
        ),
        category=Attr("country", "country", "category", COUNTRIES),
        size=(4, 7),
    ),
    item=Role(
        "flights",
        "flight_id",
        "flight",
        "flights",
        label=Attr(
            "flight_number",
            "flight number",
            "label",
            tuple(
                f"{code}{number}"
                for code, number in itertools.product(
                    ("AU", "BH", "CL", "DA", "EQ", "FJ", "GA"), range(101, 990, 37)
                )
            ),
        ),
        category=Attr(
            "destination",
            "destination",
            "category",
            ("Paris", "Tokyo", "Nairobi", "Lima", "Oslo", "Cairo", "Sydney", "Denver"),
        ),
        number=Attr(
            "distance_km", "distance in km", "int", low=300, high=12000, plural="distances in km"
        ),
        size=(12, 24),
    ),
    entity=Role(
        "passengers",
        "passenger_id",
        "passenger",
        "passengers",
        label=Attr("name", "name", "label", PEOPLE),
        category=Attr(
            "nationality",
            "nationality",
            "category",
            COUNTRIES,
            null_rate=0.1,
            plural="nationalities",
        ),
        number=Attr("miles", "frequent-flyer mileage", "int", low=0, high=200000, null_rate=0.3),
        date=Attr("birth_date", "birth date", "date", low=1950, high=2005),
        size=(15, 32),
    ),
    fact=Role(
        "bookings",
        "booking_id",
        "booking",
        "bookings",
        number=Attr("fare", "fare", "real", low=40, high=1500),
        date=Attr("booking_date", "booking date", "date", low=2022, high=2024),
        size=(30, 80),
    ),
    verb="booked",
    relation="operated by",
)

LIBRARY = Domain(
    name="library",
    group=Role(
        "authors",
        "author_id",
        "author",
        "authors",
        label=Attr("name", "name", "label", PEOPLE),
        category=Attr("country", "country", "category", COUNTRIES),
        size=(4, 8),
    ),
    item=Role(
        "books",
        "book_id",
        "book",
        "books",
        label=Attr(
            "title",
            "title",
            "label",
            _combos(
                (
                    "The Silent",
                    "A Distant",
                    "The Last",
                    "Hidden",
                    "Broken",
                    "The Golden",
                    "Winter",
                    "Midnight",
                ),
                (
                    "River",
                    "Garden",
                    "Letter",
                    "Harbor",
                    "Kingdom",
                    "Orchard",
                    "Lighthouse",
                    "Promise",
                    "Journey",
                    "Mirror",
                ),
            ),
        ),
        category=Attr(
            "genre",
            "genre",
            "category",
            ("Mystery", "Fantasy", "Biography", "Science Fiction", "Romance", "History", "Poetry"),
        ),
        number=Attr("pages", "page count", "int", low=80, high=900),
        size=(12, 24),
    ),
    entity=Role(
        "members",
        "member_id",
        "member",
        "members",
        label=Attr("name", "name", "label", PEOPLE),
        category=Attr("city", "city", "category", CITIES, null_rate=0.1, plural="cities"),
        number=Attr("fines", "unpaid fines amount", "real", low=0.5, high=40, null_rate=0.6),
        date=Attr("joined_on", "joining date", "date", low=2015, high=2024),
        size=(15, 32),
    ),
    fact=Role(
        "loans",
        "loan_id",
        "loan",
        "loans",
        number=Attr(
            "days_kept", "number of days kept", "int", low=1, high=60, plural="numbers of days kept"
        ),
        date=Attr("loan_date", "loan date", "date", low=2022, high=2024),
        size=(30, 80),
    ),
    verb="borrowed",
    relation="written by",
)

HR = Domain(
    name="hr",
    group=Role(
        "departments",
        "department_id",
        "department",
        "departments",
        label=Attr(
            "name",
            "name",
            "label",
            ("Engineering", "Sales", "Finance", "Legal", "Marketing", "Support", "Research"),
        ),
        category=Attr("location", "location", "category", CITIES),
        size=(4, 7),
    ),
    item=Role(
        "projects",
        "project_id",
        "project",
        "projects",
        label=Attr(
            "name",
            "name",
            "label",
            _combos(
                (
                    "Apollo",
                    "Beacon",
                    "Cascade",
                    "Drift",
                    "Ember",
                    "Falcon",
                    "Glacier",
                    "Horizon",
                    "Juniper",
                    "Keystone",
                    "Lumen",
                    "Nimbus",
                ),
                ("I", "II", "III"),
            ),
        ),
        category=Attr(
            "status",
            "status",
            "category",
            ("active", "completed", "planned", "on hold"),
            plural="statuses",
        ),
        number=Attr("budget", "budget", "real", low=10000, high=900000),
        size=(12, 24),
    ),
    entity=Role(
        "employees",
        "employee_id",
        "employee",
        "employees",
        label=Attr("name", "name", "label", PEOPLE),
        category=Attr("office", "office", "category", CITIES, null_rate=0.1),
        number=Attr("bonus", "bonus", "real", low=500, high=20000, null_rate=0.5),
        date=Attr("hire_date", "hire date", "date", low=2010, high=2024),
        size=(15, 32),
    ),
    fact=Role(
        "assignments",
        "assignment_id",
        "assignment",
        "assignments",
        number=Attr("hours", "number of hours", "int", low=5, high=400, plural="numbers of hours"),
        date=Attr("start_date", "start date", "date", low=2020, high=2024),
        size=(30, 80),
    ),
    verb="worked on",
    relation="run by",
)

DOMAINS: dict[str, Domain] = {d.name: d for d in (SHOP, SCHOOL, FLIGHTS, LIBRARY, HR)}
_SALT = 0x5D1


# --- building -------------------------------------------------------------------------------------


def _value(rng: np.random.Generator, attr: Attr) -> Any:
    if attr.null_rate and rng.random() < attr.null_rate:
        return None
    if attr.kind == "category":
        return str(attr.pool[int(rng.integers(len(attr.pool)))])
    if attr.kind == "int":
        return int(rng.integers(int(attr.low), int(attr.high) + 1))
    if attr.kind == "real":
        return round(float(rng.uniform(attr.low, attr.high)), 2)
    if attr.kind == "date":
        return _random_date(rng, int(attr.low), int(attr.high)).isoformat()
    raise ValueError(f"no random values for kind {attr.kind!r}")


def _random_date(rng: np.random.Generator, first_year: int, last_year: int) -> dt.date:
    start = dt.date(first_year, 1, 1).toordinal()
    end = dt.date(last_year, 12, 31).toordinal()
    return dt.date.fromordinal(int(rng.integers(start, end + 1)))


def _labels(rng: np.random.Generator, attr: Attr, count: int) -> list[str]:
    chosen = rng.choice(len(attr.pool), size=min(count, len(attr.pool)), replace=False)
    return [str(attr.pool[i]) for i in chosen]


def _size(rng: np.random.Generator, bounds: tuple[int, int]) -> int:
    return int(rng.integers(bounds[0], bounds[1] + 1))


def build_database(domain: Domain, db_id: str, rng: np.random.Generator) -> Database:
    """A fresh database of `domain`, every value drawn from `rng`."""
    g, i, e, f = domain.group, domain.item, domain.entity, domain.fact
    group_labels = _labels(rng, g.label, _size(rng, g.size))
    groups = [(n + 1, label, _value(rng, g.category)) for n, label in enumerate(group_labels)]
    item_labels = _labels(rng, i.label, _size(rng, i.size))
    items = [
        (n + 1, label, _value(rng, i.category), _value(rng, i.number),
         int(rng.integers(1, len(groups) + 1)))
        for n, label in enumerate(item_labels)
    ]  # fmt: skip
    entity_labels = _labels(rng, e.label, _size(rng, e.size))
    entities = [
        (n + 1, label, _value(rng, e.category), _value(rng, e.date), _value(rng, e.number))
        for n, label in enumerate(entity_labels)
    ]
    # About a fifth of the entities never appear in a fact; the rest get distinct dates each.
    active = [row[0] for row in entities if rng.random() > 0.2] or [entities[0][0]]
    used: set[tuple[int, str]] = set()
    facts = []
    for _ in range(_size(rng, f.size)):
        entity = active[int(rng.integers(len(active)))]
        day = _value(rng, f.date)
        if (entity, day) in used:
            continue
        used.add((entity, day))
        item = int(rng.integers(1, len(items) + 1))
        facts.append((entity, item, day, _value(rng, f.number)))
    facts.sort(key=lambda row: (row[2], row[0]))
    numbered = [(n + 1, *row) for n, row in enumerate(facts)]
    tables = (
        Table(g.table, (
            Column(g.key, "INTEGER", primary_key=True),
            Column(g.label.column, "TEXT", not_null=True),
            Column(g.category.column, g.category.sql_type),
        ), tuple(groups)),
        Table(i.table, (
            Column(i.key, "INTEGER", primary_key=True),
            Column(i.label.column, "TEXT", not_null=True),
            Column(i.category.column, i.category.sql_type),
            Column(i.number.column, i.number.sql_type),
            Column(g.key, "INTEGER", references=(g.table, g.key)),
        ), tuple(items)),
        Table(e.table, (
            Column(e.key, "INTEGER", primary_key=True),
            Column(e.label.column, "TEXT", not_null=True),
            Column(e.category.column, e.category.sql_type),
            Column(e.date.column, "DATE"),
            Column(e.number.column, e.number.sql_type),
        ), tuple(entities)),
        Table(f.table, (
            Column(f.key, "INTEGER", primary_key=True),
            Column(e.key, "INTEGER", not_null=True, references=(e.table, e.key)),
            Column(i.key, "INTEGER", not_null=True, references=(i.table, i.key)),
            Column(f.date.column, "DATE", not_null=True),
            Column(f.number.column, f.number.sql_type),
        ), tuple(numbered)),
    )  # fmt: skip
    return Database(db_id, tables)


class DomainCatalog:
    """Procedural databases by id: "<domain>/<index>" and its twins "<domain>/<index>~<variant>".

    Twins share the schema and the value pools but not the rows; the verifier runs a query on
    them too (a test suite), so a reply that hard-codes the answer it saw fails.
    """

    def __init__(self, cache_size: int = 256) -> None:
        self.cache_size = cache_size
        self._cache: OrderedDict[str, Database] = OrderedDict()
        self._lock = threading.Lock()

    def __getitem__(self, db_id: str) -> Database:
        with self._lock:
            if db_id in self._cache:
                self._cache.move_to_end(db_id)
                return self._cache[db_id]
        domain, index, variant = parse_db_id(db_id)
        rng = np.random.default_rng([_SALT, list(DOMAINS).index(domain.name), index, variant])
        database = build_database(domain, db_id, rng)
        with self._lock:
            self._cache[db_id] = database
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return database

    def __repr__(self) -> str:
        return f"DomainCatalog(domains={list(DOMAINS)})"


def db_id_of(domain: str, index: int, variant: int = 0) -> str:
    return f"{domain}/{index}" + (f"~{variant}" if variant else "")


def parse_db_id(db_id: str) -> tuple[Domain, int, int]:
    try:
        name, rest = str(db_id).split("/", 1)
        index_text, _, variant_text = rest.partition("~")
        index, variant = int(index_text), int(variant_text or 0)
        if index < 0 or variant < 0 or name not in DOMAINS:
            raise ValueError
    except ValueError:
        raise UnknownDatabase(
            f"{db_id!r} is not a procedural database id; expected '<domain>/<n>' or "
            f"'<domain>/<n>~<variant>' with a domain in {sorted(DOMAINS)}"
        ) from None
    return DOMAINS[name], index, variant
