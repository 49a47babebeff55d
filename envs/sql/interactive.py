"""`rlvr/SQLInteractive-v0`: text-to-SQL where the agent may explore the database first."""

from __future__ import annotations

import re
from typing import Any

from rlvr.envs import options as checks
from rlvr.envs.core import Outcome, Start, TextEnv
from rlvr.envs.interactions import Interaction
from rlvr.envs.options import declare
from rlvr.envs.sql import ARGUMENTS, SQLJudge
from rlvr.envs.sql.tasks.generate import SQLTasks
from rlvr.verifiers.sql import (
    BackendError,
    QueryError,
    SQLParseError,
    UnknownDatabase,
    UnsafeQuery,
    extract_sql,
    format_table,
)
from rlvr.verifiers.types import Task, Verdict

_TAG = re.compile(r"<(/?)(query|answer)>", re.IGNORECASE)


def tagged_blocks(reply: str) -> list[tuple[str, str]]:
    """(kind, body) of each <query>...</query> or <answer>...</answer> block, in order; a block
    ends at the first closing tag of its kind. Linear in the reply (a lazy regular expression
    would rescan the rest of the reply from every unclosed opening tag)."""
    tags = [
        (match.start(), match.end(), bool(match.group(1)), match.group(2).lower())
        for match in _TAG.finditer(reply)
    ]
    next_close: dict[str, int | None] = {"query": None, "answer": None}
    closes: list[dict[str, int | None]] = [{}] * len(tags)
    for index in range(len(tags) - 1, -1, -1):  # for each tag, the next closing tag of each kind
        closes[index] = dict(next_close)
        if tags[index][2]:
            next_close[tags[index][3]] = index
    blocks, index = [], 0
    while index < len(tags):
        _, end, closing, kind = tags[index]
        close = closes[index][kind]
        if closing or close is None:
            index += 1
            continue
        blocks.append((kind, reply[end : tags[close][0]]))
        index = close + 1
    return blocks


class SQLInteractiveEnv(TextEnv):
    """Text-to-SQL over several turns: explore with queries, then submit one.

    ## Description
    Like `rlvr/SQL-v0` (same tasks, verifier and safety rules), but each reply is either an
    exploratory query, answered with its result (at most `explore_rows` rows) or its error, or
    the final answer, which is judged and ends the episode. Exploration runs on the task's
    database only; the answer is also checked on the test-suite twins, so copying rows seen
    while exploring into the answer does not pay.

    ## Action Space
    `TextSpace`. A reply holds `<query>SQL</query>` to explore or `<answer>SQL</answer>` to
    submit (an answer wins if both appear; of several blocks of a kind the last counts). The SQL
    may sit in a ```sql fence inside the tags.

    ## Observation Space
    `TextSpace`: first the schema, question and protocol; then the result table of each
    exploratory query (or its error), with the number of replies left.

    ## Rewards
    0 for exploring; the verifier's score for the answer (1.0 when its result is right).

    ## Starting State
    As in `rlvr/SQL-v0`.

    ## Episode End
    Terminates on an answer; truncated by Gymnasium's `TimeLimit` at `max_episode_steps`
    (registered: 8 replies, with `max_turns=8` so the prompt states it; pass both together to
    change it). A reply with neither tag costs a turn and gets a reminder.

    ## Arguments
    Those of `rlvr/SQL-v0`, plus `explore_rows` (rows shown per exploratory query, default 20)
    and `max_turns` (the turn limit stated in the prompt and the turns-left notes; the limit
    itself is `max_episode_steps`).

    ## Version History
    - v0: initial release.
    """

    argument_checks = declare(
        **ARGUMENTS, explore_rows=checks.whole(1), max_turns=checks.optional(checks.whole(1))
    )

    def __init__(
        self,
        tasks: SQLTasks | None = None,
        *,
        explore_rows: int = 20,
        max_turns: int | None = None,
        render_mode: str | None = None,
        max_text_length: int = 1 << 16,
        **judge_options: Any,
    ) -> None:
        interaction = Explore(explore_rows=explore_rows, max_turns=max_turns)  # checked first
        judge = SQLJudge(tasks, **judge_options)
        super().__init__(
            judge, interaction, render_mode=render_mode, max_text_length=max_text_length
        )
        self.tasks = judge.tasks


class Explore(Interaction):
    """Exploratory SQL queries, then an answer: each reply holds `<query>SQL</query>` (run on
    the task's database, its result or error shown, at most `explore_rows` rows) or
    `<answer>SQL</answer>` (judged by the `SQLJudge`; ends the episode). `max_turns` is the
    turn limit the prompt and the turns-left notes state (the limit itself is the env's
    `max_episode_steps`)."""

    def __init__(self, *, explore_rows: int = 20, max_turns: int | None = None) -> None:
        self.explore_rows = checks.integer(explore_rows, name="explore_rows")
        self.max_turns = (
            max_turns if max_turns is None else checks.integer(max_turns, name="max_turns")
        )

    def start(self, env: TextEnv, task: Task) -> Start:
        return Start(prompt=self.prompt(_sql_judge(env), task), task_id=task.id)

    def prompt(self, judge: SQLJudge, task: Task) -> str:
        limit = f"You have at most {self.max_turns} replies. " if self.max_turns else ""
        return (
            f"Database ({judge.dialect_name}):\n\n{task.prompt}\n\n"
            "You may explore the database before answering. Each reply must contain exactly one "
            "of these:\n"
            "  <query>a SELECT query</query>   runs it; you will see up to "
            f"{self.explore_rows} rows of its result, or its error.\n"
            "  <answer>a SELECT query</answer>   submits your final query; this ends the "
            "episode.\n"
            f"{limit}Write {judge.dialect_name}. The answer's result is compared with the expected "
            "one on this database and on copies of it with other rows, so do not hard-code "
            "values: column names do not matter, and row order only matters when the question "
            f"asks for an order. Every query runs read-only with a time limit of "
            f"{judge.config.timeout_s:g} s."
        )

    def answer(self, env: TextEnv, reply: str) -> Outcome:
        blocks = tagged_blocks(reply)
        answers = [body for kind, body in blocks if kind == "answer"]
        if answers:
            return super().answer(env, answers[-1])
        queries = [body for kind, body in blocks if kind == "query"]
        if not queries:
            return self._continue(
                env,
                "No <query> or <answer> block found. Reply with <query>SQL</query> to run a "
                "query, or <answer>SQL</answer> to submit your final query.",
            )
        return self._explore(env, queries[-1])

    def _explore(self, env: TextEnv, body: str) -> Outcome:
        judge, task = _sql_judge(env), env.task
        assert task is not None  # TextEnv.step checks the order
        sql = extract_sql(body)
        if sql is None:
            return self._continue(env, "The <query> block is empty.")
        try:
            result = judge.explore(sql, task)
        except (BackendError, UnknownDatabase) as exc:
            verdict = Verdict.error(f"exploration failed: {exc}")
            return Outcome(
                feedback=judge.feedback(verdict),
                reward=0.0,
                terminated=True,
                verdict=verdict,
                rewards={"correctness": 0.0},
                infra_error=True,
            )
        except (SQLParseError, UnsafeQuery, QueryError) as exc:
            return self._continue(env, f"Error: {exc}")
        table = format_table(result.columns, result.rows, max_rows=self.explore_rows)
        return self._continue(env, f"Result ({result.shape}):\n{table}")

    def _continue(self, env: TextEnv, text: str) -> Outcome:
        if self.max_turns:
            left = self.max_turns - env.turn - 1
            text += f"\n({left} repl{'y' if left == 1 else 'ies'} left.)"
        return Outcome(feedback=text, reward=0.0, terminated=False, rewards={"correctness": 0.0})

    def oracle_reply(self, env: TextEnv) -> str:
        assert env.task is not None  # TextEnv checks
        return f"<answer>\n{env.task.answer}\n</answer>"


def _sql_judge(env: TextEnv) -> SQLJudge:
    assert isinstance(env.judge, SQLJudge)  # Explore serves SQL envs only
    return env.judge
