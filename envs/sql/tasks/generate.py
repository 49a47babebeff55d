"""Procedural text-to-SQL tasks: a random database of a random domain and a templated question.

`procedural_tasks(...)` returns a `SQLTasks`: a task source (a `ProceduralSource`, so items are
reproducible one by one and train/test are disjoint by a hash of the prompt) together with the
catalog that rebuilds each task's databases from their ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from rlvr.envs import options
from rlvr.envs.errors import DatasetError
from rlvr.envs.sql.tasks.domains import DOMAINS, DomainCatalog, db_id_of
from rlvr.envs.sql.tasks.questions import LEVELS, TEMPLATES, Context
from rlvr.envs.tasks import Problem, ProceduralSource, TaskSource
from rlvr.verifiers.sql.backend import Limits
from rlvr.verifiers.sql.catalog import Catalog
from rlvr.verifiers.sql.compare import compare_results
from rlvr.verifiers.sql.errors import QueryError
from rlvr.verifiers.sql.results import QueryResult
from rlvr.verifiers.sql.sqlite import SQLiteBackend
from rlvr.verifiers.types import Task

MAX_ANSWER_ROWS = 40
_DRAWS = 200


@dataclass
class SQLTasks:
    """A task source plus the catalog its tasks' `db_id`s resolve in."""

    source: TaskSource
    catalog: Catalog
    name: str = "sql"
    info: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.source)

    def __getitem__(self, index: int) -> Task:
        return self.source[index]

    def __repr__(self) -> str:
        return f"SQLTasks({self.source!r})"


class QuestionGenerator:
    """`generate(rng, difficulty) -> Problem` for `ProceduralSource`.

    Draws a domain, one of `databases_per_domain` databases, and a template of the level, fills
    it from the database's values, runs the gold query on SQLite and keeps the question only if
    the answer is non-empty, not all NULL or zero, and at most `MAX_ANSWER_ROWS` rows, and the
    test-suite twins tell it apart (`_answers_discriminate`).
    """

    def __init__(
        self,
        catalog: DomainCatalog,
        *,
        domains: Sequence[str],
        databases_per_domain: int,
        twins: int,
        sample_rows: int,
    ) -> None:
        self.catalog = catalog
        self.domains = tuple(domains)
        self.databases_per_domain = databases_per_domain
        self.twins = twins
        self.sample_rows = sample_rows
        self._backend = SQLiteBackend(isolate=False)  # our own gold queries: trusted

    def _settings(self) -> tuple:
        return (self.domains, self.databases_per_domain, self.twins, self.sample_rows)

    def __eq__(self, other: object) -> bool:  # the catalog is a function of nothing else
        return isinstance(other, QuestionGenerator) and other._settings() == self._settings()

    def __hash__(self) -> int:
        return hash(self._settings())

    def strata(self, difficulty: int) -> int:
        """The strata of a stratified split: the level's question templates."""
        return len(TEMPLATES[difficulty])

    def __call__(
        self, rng: np.random.Generator, difficulty: int, stratum: int | None = None
    ) -> Problem:
        templates = TEMPLATES[difficulty]
        for _ in range(_DRAWS):
            domain = DOMAINS[self.domains[int(rng.integers(len(self.domains)))]]
            index = int(rng.integers(self.databases_per_domain))
            db_id = db_id_of(domain.name, index)
            database = self.catalog[db_id]
            if stratum is None:
                template = templates[int(rng.integers(len(templates)))]
            else:
                template = templates[stratum]
            question = template(Context(rng, domain, database))
            if question is None:
                continue
            text, gold = question
            twins = [db_id_of(domain.name, index, v) for v in range(1, self.twins + 1)]
            if not self._answers_discriminate(database, twins, gold):
                continue
            return Problem(
                prompt=f"{self._schema(db_id)}\n\nQuestion: {text}",
                answer=gold,
                metadata={
                    "family": "sql",
                    "db_id": db_id,
                    "domain": domain.name,
                    "template": template.__name__,
                    "question": text,
                    "test_suite": twins,
                },
            )
        raise DatasetError(f"no usable SQL question at difficulty {difficulty} in {_DRAWS} draws")

    def _answers_discriminate(self, database, twins: list[str], gold: str) -> bool:
        """The answer is interesting, and the twins can tell a query that computes it from one
        that recites it: each twin's answer is non-empty (else a query that recites the rows,
        filtered on values only this database has, passes the twin) and not all of them equal
        this database's answer."""
        try:
            answer = self._backend.run_sql(database, gold, Limits(timeout_s=5.0))
            if not _interesting(answer):
                return False
            others = [
                self._backend.run_sql(self.catalog[twin], gold, Limits(timeout_s=5.0))
                for twin in twins
            ]
        except QueryError:
            return False
        if any(len(other) == 0 for other in others):
            return False
        # As multisets (cheaper than parsing the gold for its ORDER BY, and stricter).
        return not others or not all(
            compare_results(answer, other, ordered=False).match for other in others
        )

    @lru_cache(maxsize=512)  # noqa: B019 (one generator per source; the cache dies with it)
    def _schema(self, db_id: str) -> str:
        return self.catalog[db_id].describe(self.sample_rows)


def _interesting(result: QueryResult) -> bool:
    if not 1 <= len(result) <= MAX_ANSWER_ROWS:
        return False
    if len(result) == 1 and len(result.columns) == 1:
        return result.rows[0][0] not in (None, 0, 0.0)
    return True


def procedural_tasks(
    *,
    split: str = "train",
    difficulty: int | Sequence[int] = LEVELS,
    domains: Sequence[str] | None = None,
    seed: int = 0,
    size: int = 1_000_000,
    databases_per_domain: int = 8,
    twins: int = 2,
    sample_rows: int = 3,
    test_fraction: float = 0.1,
    stratify: bool = False,
) -> SQLTasks:
    """Procedural text-to-SQL tasks (see `QuestionGenerator`); `twins` test-suite databases per
    task, `sample_rows` example rows per table in the prompt (0 for the schema alone);
    `stratify` gives each question template of a level an equal share of the split
    (`ProceduralSource`)."""
    domains = options.subset(domains, DOMAINS, name="domains")
    levels = options.levels(difficulty, TEMPLATES)
    options.integer(databases_per_domain, name="databases_per_domain")
    options.integer(twins, name="twins", minimum=0)
    options.integer(sample_rows, name="sample_rows", minimum=0)
    catalog = DomainCatalog()
    generator = QuestionGenerator(
        catalog,
        domains=domains,
        databases_per_domain=databases_per_domain,
        twins=twins,
        sample_rows=sample_rows,
    )
    source = ProceduralSource(
        generator,
        name="sql",
        split=split,
        difficulty=levels,
        seed=seed,
        size=size,
        test_fraction=test_fraction,
        stratify=stratify,
    )
    return SQLTasks(source, catalog, name="sql")
