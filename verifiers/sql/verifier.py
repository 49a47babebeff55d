"""`SQLVerifier`: execution accuracy for text-to-SQL replies.

verify(reply, task):
1. extract the SQL (last ```sql block, else the reply), and let the guard accept exactly one
   read-only query (`UNPARSABLE` for empty/garbled/several statements, `INCORRECT` with
   `data["refused"]` for anything that is not a read-only query);
2. run the gold query (cached) and the predicted one on `task.metadata["db_id"]`, and then on
   each database in `task.metadata["test_suite"]` (copies of the same schema with other rows, so
   a query that hard-codes the answer it saw fails), each run on a pristine database, read-only,
   under a time limit and result caps;
3. compare the results (`compare.py`): every database must match for a score of 1.

A task's `answer` is its gold SQL. Failures of our own (a dead server, a gold query that does not
run) give status `error` and no score; the reply's failures (timeouts, SQL errors, refusals) give
0 and a message fit to show the model, which never contains gold rows.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from rlvr.verifiers.sql.backend import Backend, Limits
from rlvr.verifiers.sql.catalog import Catalog, lookup
from rlvr.verifiers.sql.compare import Tolerance, compare_results
from rlvr.verifiers.sql.database import DatabaseSource
from rlvr.verifiers.sql.errors import (
    BackendError,
    QueryError,
    QueryRefused,
    QueryTimeout,
    ResultTooLarge,
    SQLParseError,
    UnknownDatabase,
    UnsafeQuery,
    VerifierConfigError,
)
from rlvr.verifiers.sql.extract import extract_sql
from rlvr.verifiers.sql.guard import CheckedQuery, check_query
from rlvr.verifiers.sql.results import QueryResult
from rlvr.verifiers.sql.ties import boundary_choice, literal_limit, tied_rows, with_order_keys
from rlvr.verifiers.types import Task, TaskFormatError, Verdict

_DIALECTS = ("sqlite", "postgres", "mysql", "duckdb", "bigquery", "snowflake", "tsql", "oracle")


@dataclass(frozen=True)
class SQLVerifierConfig:
    """How replies are read, run and compared."""

    dialect: str = "sqlite"
    """SQL dialect the replies (and gold queries) are written in; sqlglot translates it to the
    backend's when they differ."""
    timeout_s: float = 2.0
    """Time limit of each execution, fetching included."""
    max_rows: int = 10_000
    """A predicted result with more rows (or more than the gold's, when that is more) is capped:
    scored 0 without being fetched."""
    max_result_bytes: int = 32 << 20
    """Same for the approximate size of a result."""
    rel_tol: float = 1e-6
    """Relative tolerance when comparing numbers (ints and floats compare numerically)."""
    abs_tol: float = 1e-9
    """Absolute tolerance when comparing numbers."""
    ignore_column_order: bool = True
    """Accept the right columns in another order (Spider's execution accuracy)."""
    partial_credit: bool = False
    """Score a wrong result by row overlap (F1, or positions for ordered results) instead of 0.
    Never 1.0 unless correct; with a test suite, the lowest score across its databases counts."""
    use_test_suite: bool = True
    """Also check the databases in `task.metadata["test_suite"]` (defeats hard-coded answers)."""
    gold_cache_size: int = 4096
    """Gold results (and parsed gold queries) kept in memory; 0 turns the cache off."""

    def __post_init__(self) -> None:
        if self.dialect not in _DIALECTS:
            raise VerifierConfigError(f"dialect must be one of {_DIALECTS}, got {self.dialect!r}")
        if self.rel_tol < 0 or self.abs_tol < 0:
            raise VerifierConfigError("rel_tol and abs_tol must be >= 0")
        if self.gold_cache_size < 0:
            raise VerifierConfigError(f"gold_cache_size must be >= 0, got {self.gold_cache_size}")
        Limits(self.timeout_s, self.max_rows, self.max_result_bytes)  # validates them

    @property
    def limits(self) -> Limits:
        return Limits(self.timeout_s, self.max_rows, self.max_result_bytes)

    @property
    def tolerance(self) -> Tolerance:
        return Tolerance(self.rel_tol, self.abs_tol)


class SQLVerifier:
    """Judges SQL replies by executing them (see the module docstring).

    Arguments:
        catalog: maps `task.metadata["db_id"]` to a database (`Database`, `SQLiteFile`).
        backend: where queries run (default: a new `SQLiteBackend`).
        config: a `SQLVerifierConfig`.
    """

    def __init__(
        self,
        catalog: Catalog | Mapping[str, DatabaseSource],
        backend: Backend | None = None,
        config: SQLVerifierConfig | None = None,
    ) -> None:
        if backend is None:
            from rlvr.verifiers.sql.sqlite import SQLiteBackend

            backend = SQLiteBackend()
        self.catalog = catalog
        self.backend = backend
        self.config = config or SQLVerifierConfig()
        self._gold_cache: OrderedDict[tuple, QueryResult] = OrderedDict()
        self._gold_queries: OrderedDict[tuple, CheckedQuery | None] = OrderedDict()
        self._gold_ties: OrderedDict[tuple, tuple[QueryResult, tuple, tuple] | None] = OrderedDict()
        self._cache_lock = threading.Lock()
        self.cache_hits = 0
        self.cache_misses = 0

    # --- judging ----------------------------------------------------------------------------------

    def verify(self, response: str, task: Task) -> Verdict:
        sql = extract_sql(response)
        if sql is None:
            return Verdict.unparsable(
                "the reply is empty: reply with one SQL query in a ```sql block"
            )
        try:
            predicted = check_query(sql, self.config.dialect)
        except SQLParseError as exc:
            return Verdict.unparsable(str(exc), extracted=sql)
        except UnsafeQuery as exc:
            return Verdict.incorrect(sql, f"refused: {exc}", refused=True)
        try:
            db_ids = self.databases_of(task)
            gold_sql = self.gold_sql_of(task)
        except (UnknownDatabase, VerifierConfigError) as exc:
            return Verdict.error(f"task {task.id}: {exc}")
        score, reason = 1.0, ""
        for position, db_id in enumerate(db_ids):
            outcome = self._judge_on(db_id, gold_sql, predicted, task, held_out=position > 0)
            if isinstance(outcome, Verdict):
                return outcome
            if outcome[0] < score:
                score, reason = outcome
            if score == 0.0:
                break
        if score == 1.0:
            return Verdict.correct(sql, "the query's result matches", databases=len(db_ids))
        return Verdict.incorrect(sql, reason, score=score, databases=len(db_ids))

    def _judge_on(
        self, db_id: str, gold_sql: str, predicted: CheckedQuery, task: Task, held_out: bool
    ) -> tuple[float, str] | Verdict:
        """(score, reason) on one database, or a final verdict (an error, a failed run)."""
        sql = predicted.text
        try:
            database = lookup(self.catalog, db_id)
            gold_query, gold = self.gold_result(gold_sql, database)
        except UnknownDatabase as exc:
            return Verdict.error(f"task {task.id}: {exc}")
        except BackendError as exc:
            return Verdict.error(f"database {db_id!r}: {exc}", db_id=db_id)
        except (QueryError, SQLParseError, UnsafeQuery) as exc:
            return Verdict.error(f"task {task.id}: the gold query fails on {db_id!r}: {exc}")
        limits = self.config.limits
        if len(gold.rows) > limits.max_rows:  # a dataset's answer longer than the cap must fit
            limits = replace(limits, max_rows=len(gold.rows))
        try:
            result = self.backend.execute(database, predicted, limits)
        except BackendError as exc:
            return Verdict.error(f"database {db_id!r}: {exc}", db_id=db_id)
        except QueryTimeout as exc:
            return Verdict.incorrect(sql, str(exc), timeout=True, db_id=db_id)
        except ResultTooLarge as exc:
            return Verdict.incorrect(sql, str(exc), capped=True, db_id=db_id)
        except QueryRefused as exc:
            return Verdict.incorrect(sql, str(exc), refused=True, db_id=db_id)
        except (QueryError, SQLParseError) as exc:
            return Verdict.incorrect(sql, f"SQL error: {exc}", sql_error=True, db_id=db_id)
        ordered = bool(task.metadata.get("ordered", gold_query is not None and gold_query.ordered))
        if gold_query is None:  # a dataset gold that sqlglot cannot parse: Spider's rule
            ordered = bool(
                task.metadata.get("ordered", re.search(r"\border\s+by\b", gold_sql, re.I))
            )
        comparison = self._compare(gold, result, ordered)
        if not comparison.match and ordered and gold_query is not None:
            try:
                tied = self._tied_gold(gold_sql, gold_query, gold, database)
            except BackendError as exc:
                return Verdict.error(f"database {db_id!r}: {exc}", db_id=db_id)
            if tied is not None:
                tied_gold, ties, pool = tied
                chosen = boundary_choice(tied_gold, ties, pool, result, self.config.tolerance)
                if self._compare(chosen, result, True, ties).match:
                    return 1.0, ""
        where = " on a held-out copy of the database with other rows (do not hard-code values)"
        reason = f"the query ran ({result.shape}) but its result differs from the expected one"
        return comparison.score, reason + (where if held_out else "")

    def _compare(self, gold, result, ordered, ties=None):
        return compare_results(
            gold,
            result,
            ordered=ordered,
            ignore_column_order=self.config.ignore_column_order,
            tolerance=self.config.tolerance,
            partial_credit=self.config.partial_credit,
            ties=ties,
        )

    # --- gold results -----------------------------------------------------------------------------

    def gold_result(
        self, gold_sql: str, database: DatabaseSource
    ) -> tuple[CheckedQuery | None, QueryResult]:
        """The gold query's result on `database`, from the cache when possible.

        Gold queries pass the same guard as replies; one that sqlglot cannot parse still runs on
        SQLite in the reply dialect (the engine's own gate applies), as Spider's gold sometimes
        needs.
        """
        gold_query = self._gold_query(gold_sql)
        key = self._gold_key(gold_sql, database)
        with self._cache_lock:
            cached = self._gold_cache.get(key)
            if cached is not None:
                self._gold_cache.move_to_end(key)
                self.cache_hits += 1
                return gold_query, cached
            self.cache_misses += 1
        if gold_query is None:
            result = self.backend.run_sql(database, gold_sql, self._gold_limits)
        else:
            result = self.backend.execute(database, gold_query, self._gold_limits)
        self._remember(self._gold_cache, key, result)
        return gold_query, result

    def _gold_key(self, gold_sql: str, database: DatabaseSource) -> tuple:
        return (self.backend.name, database.fingerprint, gold_sql, self.config.dialect)

    @property
    def _gold_limits(self) -> Limits:
        return Limits(
            max(self.config.timeout_s, 10.0),
            max(self.config.max_rows, 100_000),
            self.config.max_result_bytes,
        )

    def _tied_gold(
        self, gold_sql: str, gold_query: CheckedQuery, gold: QueryResult, database: DatabaseSource
    ) -> tuple[QueryResult, tuple, tuple] | None:
        """The gold result with each row's ORDER BY key (rows with equal keys are tied, and their
        order is the engine's whim) and, under a LIMIT, every row tied with its last one (the
        LIMIT may keep any of them); None when the keys cannot be read."""
        key = self._gold_key(gold_sql, database)
        with self._cache_lock:
            if key in self._gold_ties:
                self._gold_ties.move_to_end(key)
                return self._gold_ties[key]
        tied = None
        limit = literal_limit(gold_query.expression)
        plan = with_order_keys(gold_query, len(gold.columns), without_limit=limit is not None)
        if plan is not None:
            sql, positions = plan
            try:
                full = gold
                if sql is not None:
                    keyed = check_query(sql, self.config.dialect)
                    full = self.backend.execute(database, keyed, self._gold_limits)
            except (QueryError, SQLParseError, UnsafeQuery):  # then the gold's own order counts
                full = None
            if full is not None:
                tied = tied_rows(gold, full, positions, limit)
        self._remember(self._gold_ties, key, tied)
        return tied

    def _gold_query(self, gold_sql: str) -> CheckedQuery | None:
        """The checked gold query (parsed once: sqlglot costs more than a small SQLite query)."""
        key = (gold_sql, self.config.dialect)
        with self._cache_lock:
            if key in self._gold_queries:
                return self._gold_queries[key]
        try:
            gold_query: CheckedQuery | None = check_query(gold_sql, self.config.dialect)
        except SQLParseError:
            if self.backend.dialect != self.config.dialect:
                raise
            gold_query = None
        self._remember(self._gold_queries, key, gold_query)
        return gold_query

    def _remember(self, cache: OrderedDict, key: tuple, value: object) -> None:
        if self.config.gold_cache_size > 0:
            with self._cache_lock:
                cache[key] = value
                while len(cache) > self.config.gold_cache_size:
                    cache.popitem(last=False)

    def clear_cache(self) -> None:
        with self._cache_lock:
            self._gold_cache.clear()
            self._gold_queries.clear()
            self._gold_ties.clear()

    # --- exploration (multi-turn envs) ------------------------------------------------------------

    def run(self, sql: str, db_id: str) -> QueryResult:
        """Run one reply query on a database behind every gate, for exploration.

        Raises `SQLParseError`, `UnsafeQuery`, `QueryError` (and subclasses) for the query's own
        faults and `BackendError`/`UnknownDatabase` for ours.
        """
        query = check_query(sql, self.config.dialect)
        return self.backend.execute(lookup(self.catalog, db_id), query, self.config.limits)

    def check_task(self, task: Task) -> None:
        """Raise `TaskFormatError` for a task that cannot be judged: no gold SQL, no database,
        or a gold query that does not run on its database or a test-suite database (its
        results are cached for the replies). `BackendError` when our backend fails."""
        try:
            gold_sql = self.gold_sql_of(task)
            for db_id in self.databases_of(task):
                try:
                    self.gold_result(gold_sql, lookup(self.catalog, db_id))
                except (QueryError, SQLParseError, UnsafeQuery) as exc:
                    raise TaskFormatError(
                        f"task {task.id!r}: the gold query does not run on {db_id!r}: "
                        + " ".join(str(exc).split())
                    ) from None
        except (VerifierConfigError, UnknownDatabase) as exc:
            raise TaskFormatError(f"task {task.id!r}: {exc}") from None

    # --- task fields ------------------------------------------------------------------------------

    def databases_of(self, task: Task) -> list[str]:
        """The task's database, then its test-suite databases (when enabled)."""
        db_id = task.metadata.get("db_id")
        if not isinstance(db_id, str) or not db_id:
            raise VerifierConfigError("metadata['db_id'] must name the task's database")
        suite = (task.metadata.get("test_suite") or ()) if self.config.use_test_suite else ()
        if isinstance(suite, str) or not isinstance(suite, Sequence):
            raise VerifierConfigError("metadata['test_suite'] must be a list of database ids")
        return [db_id, *(str(other) for other in suite)]

    @staticmethod
    def gold_sql_of(task: Task) -> str:
        if not isinstance(task.answer, str) or not task.answer.strip():
            raise VerifierConfigError("the task's answer must be its gold SQL query (a str)")
        return task.answer

    def close(self) -> None:
        self.backend.close()

    def __repr__(self) -> str:
        return f"SQLVerifier({self.backend!r}, dialect={self.config.dialect!r})"
