"""`rlvr/SQL-v0`: text-to-SQL, one reply, rewarded by executing it."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from rlvr.envs import services
from rlvr.envs.core import TextEnv
from rlvr.envs.errors import EnvConfigError
from rlvr.envs.judge import TaskJudge
from rlvr.envs.options import (
    Check,
    declare,
    flag,
    level,
    names,
    nonempty_text,
    of_type,
    one_of,
    optional,
    real,
    refuse_replaced,
    text,
    whole,
)
from rlvr.envs.sql.tasks.domains import DOMAINS
from rlvr.envs.sql.tasks.generate import SQLTasks, procedural_tasks
from rlvr.envs.sql.tasks.questions import LEVELS
from rlvr.envs.tasks import SPLITS
from rlvr.verifiers.errors import VerifierConfigError
from rlvr.verifiers.sql import (
    Backend,
    BackendError,
    QueryResult,
    SQLVerifier,
    SQLVerifierConfig,
    make_backend,
)
from rlvr.verifiers.types import Task

DIALECT_NAMES = {"sqlite": "SQLite", "postgres": "PostgreSQL", "mysql": "MySQL"}
# Settings of the procedural generator: meaningless (and refused) when `tasks=` replaces it.
PROCEDURAL_OPTIONS = (
    "split", "difficulty", "domains", "seed", "databases_per_domain", "twins", "sample_rows",
    "stratify",
)  # fmt: skip
SYSTEM_PROMPT = "You are an expert data analyst who writes correct, efficient SQL."
BACKENDS = ("sqlite", "postgres")
# What each field of SQLEnvConfig accepts (the dialect: the verifier's config says). The caps
# keep a make or a step bounded: every reply runs on 1 + twins databases.
CONFIG_CHECKS = declare(
    backend=one_of(*BACKENDS),
    postgres_dsn=optional(nonempty_text),
    dialect=text,
    split=one_of(*SPLITS),
    difficulty=level(LEVELS),
    domains=optional(names(DOMAINS)),
    seed=whole(0),
    databases_per_domain=whole(1, 10_000),
    twins=whole(0, 10),
    sample_rows=whole(0, 50),
    stratify=flag,
    timeout_s=real(0.0, low_open=True),
    max_rows=whole(1),
    partial_credit=flag,
    ignore_column_order=flag,
    rel_tol=real(0.0),
)


@dataclass(frozen=True)
class SQLEnvConfig:
    """Settings of the SQL environments (pass them as keyword arguments to `gym.make`)."""

    backend: str = "sqlite"
    """Where queries run: "sqlite" (embedded, a pristine in-memory copy per query) or
    "postgres" (a real server; needs `postgres_dsn` or $RLVR_POSTGRES_DSN and the `postgres`
    extra)."""
    postgres_dsn: str | None = None
    """Admin connection string for the PostgreSQL backend (see docs/sql.md)."""
    dialect: str = "sqlite"
    """Dialect the model writes (and the prompt names); sqlglot translates it for the engine."""
    split: str = "train"
    """Procedural tasks: "train" or "test" (disjoint by a hash of the prompt)."""
    difficulty: int | tuple[int, ...] = LEVELS
    """Procedural tasks: a level 1-5 or several (1 filters ... 5 window functions)."""
    domains: tuple[str, ...] | None = None
    """Procedural tasks: a subset of shop, school, flights, library, hr (default: all)."""
    seed: int = 0
    """Procedural tasks: seed of the task sequence (item i depends only on seed and i)."""
    databases_per_domain: int = 8
    """Procedural tasks: distinct databases per domain."""
    twins: int = 2
    """Procedural tasks: test-suite copies of each database (same schema, other rows) a reply
    must also be right on, so hard-coding the answer fails. 0 turns this off."""
    sample_rows: int = 3
    """Example rows per table shown under the schema (0: schema only)."""
    stratify: bool = False
    """Procedural tasks: give each question template of a level an equal share of the split.
    Off, the split is drawn by rejection on a hash of the prompt, which skews it towards
    templates with many distinct questions (with one domain and no sample rows, a test split
    is mostly "How many ... greater than N?"). On, a template with no question in the split
    is left out of it."""
    timeout_s: float = 2.0
    """Time limit of each query execution."""
    max_rows: int = 10_000
    """Results with more rows are capped and score 0."""
    partial_credit: bool = False
    """Reward a wrong result by its row overlap with the right one (see SQLVerifierConfig)."""
    ignore_column_order: bool = True
    """Accept the right columns in any order (Spider's execution accuracy)."""
    rel_tol: float = 1e-6
    """Relative tolerance for numbers."""

    def __post_init__(self) -> None:
        for name, check in CONFIG_CHECKS.items():
            check(getattr(self, name), name)
        if isinstance(self.difficulty, list):
            object.__setattr__(self, "difficulty", tuple(self.difficulty))
        self.verifier_config()  # validates the verifier's part

    def verifier_config(self) -> SQLVerifierConfig:
        try:
            return SQLVerifierConfig(
                dialect=self.dialect,
                timeout_s=self.timeout_s,
                max_rows=self.max_rows,
                partial_credit=self.partial_credit,
                ignore_column_order=self.ignore_column_order,
                rel_tol=self.rel_tol,
            )
        except ValueError as exc:
            raise EnvConfigError(str(exc)) from None

    @classmethod
    def build(cls, config: SQLEnvConfig | None, options: dict[str, Any]) -> SQLEnvConfig:
        """`config` with `options` (keyword arguments of the env) applied on top."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(options) - names)
        if unknown:
            raise EnvConfigError(
                f"unknown argument(s) {unknown}; the SQL envs accept {sorted(names)}"
            )
        return dataclasses.replace(config or cls(), **options)


def backend_argument(value: Any, name: str) -> Any:
    """A backend's name, or a `Backend` object (its `execute` and `close`) you own."""
    if isinstance(value, str) or not (hasattr(value, "execute") and hasattr(value, "close")):
        return one_of(*BACKENDS)(value, name)
    return value


ARGUMENTS: dict[str, Check] = {
    **CONFIG_CHECKS,
    "backend": backend_argument,
    "tasks": optional(
        of_type(SQLTasks, what="a SQLTasks (from rlvr.envs.sql.tasks: load_spider, ...)")
    ),
    "config": optional(of_type(SQLEnvConfig, what="a SQLEnvConfig")),
    "system_prompt": optional(text),
    "format_weight": real(0.0, 1.0, high_open=True),
}
"""The arguments of the SQL envs (`SQLJudge`'s), checked when one is made."""


class SQLEnv(TextEnv):
    """Text-to-SQL with execution-verified rewards.

    ## Description
    The agent sees a database schema (CREATE statements and a few example rows) and a question,
    and replies with one SQL query. The query is executed; the reward is 1 when its result equals
    the gold query's result (Spider's execution accuracy), on the task's database and on its
    test-suite twins. Tasks are procedural by default: five domains (shop, school, flights,
    library, HR) and question templates in five levels (filters, joins, grouping, nesting and
    ordering with limits, window functions); Spider, BIRD and JSONL datasets load with
    `rlvr.envs.sql.tasks.load_spider/load_bird/load_sql_jsonl` and are passed as `tasks`.

    ## Action Space
    `TextSpace`: the reply. The SQL is the last ```sql fenced block, else the whole reply.

    ## Observation Space
    `TextSpace`: the schema, the question and the answer format; after the step, the verdict
    (the error message, or the shape of a wrong result; never gold rows).

    ## Rewards
    1.0 for a correct result, else 0.0 (with `partial_credit`, the row overlap). Anything but
    exactly one read-only query on the task's own database scores 0 and runs nothing: no DDL/DML,
    ATTACH, PRAGMA, temporary tables, VACUUM INTO, side-effecting functions, schema-qualified
    tables. Queries past the time limit (stopped however they are stuck), and results past the
    row or byte cap, score 0. An infrastructure failure (dead database or worker) sets
    `info["infra_error"]`.

    ## Starting State
    A task drawn with `np_random`, or pinned by `options={"task_index": i}` / `{"task": {...}}`.
    Every query runs on a pristine database.

    ## Episode End
    Terminates after the first reply.

    ## Arguments
    `tasks` (a `SQLTasks`; default procedural, configured by split, difficulty, domains, seed,
    databases_per_domain, twins, sample_rows and stratify, which `tasks` refuses), `backend`
    ("sqlite", "postgres", or a `Backend` object you own and close), `config` (`SQLEnvConfig`)
    or its fields as keywords: postgres_dsn, dialect, split, difficulty, domains, seed,
    databases_per_domain, twins, sample_rows, stratify, timeout_s, max_rows, partial_credit,
    ignore_column_order, rel_tol. Also `system_prompt`, `format_weight`, `render_mode`.

    ## Version History
    - v0: initial release. The `stratify` option came later; off by default, so the default
      tasks are unchanged.
    """

    argument_checks = declare(**ARGUMENTS)

    def __init__(
        self,
        tasks: SQLTasks | None = None,
        *,
        render_mode: str | None = None,
        max_text_length: int = 1 << 16,
        **judge_options: Any,
    ) -> None:
        judge = SQLJudge(tasks, **judge_options)
        super().__init__(judge, render_mode=render_mode, max_text_length=max_text_length)
        self.tasks = judge.tasks


class SQLJudge(TaskJudge):
    """Text-to-SQL tasks judged by running the reply (`SQLVerifier`) on the task's database and
    its test-suite twins; `explore(sql, task)` runs an exploratory query on the task's database.

    Arguments as in `SQLEnv`'s card: `tasks` (a `SQLTasks`, default procedural), `config` (a
    `SQLEnvConfig`) or its fields as keywords, `backend` (a name, or a `Backend` you own and
    close; one the judge makes it closes), `system_prompt`, `format_weight`.
    """

    def __init__(
        self,
        tasks: SQLTasks | None = None,
        *,
        config: SQLEnvConfig | None = None,
        backend: Backend | str | None = None,
        system_prompt: str | None = SYSTEM_PROMPT,
        format_weight: float = 0.0,
        **options: Any,
    ) -> None:
        if isinstance(backend, str):  # a backend by name is a config field
            options["backend"], backend = backend, None
        self.config = SQLEnvConfig.build(config, options)
        if tasks is not None:
            generator_options = {name: options.get(name) for name in PROCEDURAL_OPTIONS}
            refuse_replaced(
                generator_options, what="procedural tasks", hint="; the loaders take sample_rows"
            )
        if tasks is None:
            tasks = procedural_tasks(
                split=self.config.split,
                difficulty=self.config.difficulty,
                domains=self.config.domains,
                seed=self.config.seed,
                databases_per_domain=self.config.databases_per_domain,
                twins=self.config.twins,
                sample_rows=self.config.sample_rows,
                stratify=self.config.stratify,
            )
        if not isinstance(tasks, SQLTasks):
            raise EnvConfigError(
                "tasks must be a SQLTasks (tasks plus their databases): use "
                "rlvr.envs.sql.tasks.load_spider/load_bird/load_sql_jsonl or procedural_tasks"
            )
        self._owns_backend = backend is None
        if backend is None:
            backend = self._make_backend()
        self.sql_verifier = SQLVerifier(tasks.catalog, backend, self.config.verifier_config())
        super().__init__(
            tasks, self.sql_verifier, system_prompt=system_prompt, format_weight=format_weight
        )

    def _make_backend(self) -> Backend:
        """The backend the config names; PostgreSQL is reached now (once per process and DSN),
        so a server that does not answer stops the program here."""
        if self.config.backend == "sqlite":
            return make_backend("sqlite")
        try:
            backend = make_backend("postgres", dsn=self.config.postgres_dsn)
        except (ImportError, VerifierConfigError) as exc:
            raise EnvConfigError(f"backend='postgres': {services.one_line(exc)}") from None

        def ping() -> None:
            try:
                backend.ping()  # type: ignore[attr-defined]
            except BackendError as exc:
                backend.close()
                raise EnvConfigError(
                    f"postgres_dsn: PostgreSQL does not answer ({services.one_line(exc)}); "
                    "start the server, or fix postgres_dsn (or $RLVR_POSTGRES_DSN)"
                ) from None

        services.reach(("postgres", backend.dsn), ping)  # type: ignore[attr-defined]
        return backend

    def check(self, task: Task) -> None:
        self.sql_verifier.check_task(task)

    @property
    def dialect_name(self) -> str:
        return DIALECT_NAMES.get(self.config.dialect, self.config.dialect)

    def prompt(self, task: Task) -> str:
        return (
            f"Database ({self.dialect_name}):\n\n{task.prompt}\n\n"
            f"Write one {self.dialect_name} SELECT query that answers the question, in a ```sql "
            "fenced block. Only its result is compared with the expected one: column names do "
            "not matter, and row order only matters when the question asks for an order. The "
            f"query runs read-only with a time limit of {self.config.timeout_s:g} s."
        )

    def reference_reply(self, task: Task) -> str:
        return f"```sql\n{task.answer}\n```"

    def explore(self, sql: str, task: Task) -> QueryResult:
        """Run `sql` on the task's database (read-only, under the same limits as answers).
        Raises the verifier's errors: the agent's (`SQLParseError`, `UnsafeQuery`,
        `QueryError`) or ours (`BackendError`, `UnknownDatabase`)."""
        return self.sql_verifier.run(sql, task.metadata["db_id"])

    def close(self) -> None:
        if self._owns_backend:
            self.sql_verifier.close()
