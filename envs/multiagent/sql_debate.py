"""`rlvr/SQLDebate-v0`: two agents argue for SQL queries answering a question on a database."""

from __future__ import annotations

from typing import Any, ClassVar

from rlvr.envs.multiagent.debate import DebateEnv
from rlvr.envs.multiagent.parallel import TextParallelEnv
from rlvr.envs.options import declare
from rlvr.envs.sql import ARGUMENTS, SQLJudge
from rlvr.envs.sql.tasks.generate import SQLTasks

# The SQL envs' arguments but those of a single agent's reply (its system prompt, a format term).
SQL_ARGUMENTS = {
    name: check
    for name, check in ARGUMENTS.items()
    if name not in ("system_prompt", "format_weight")
}


class SQLDebateEnv(DebateEnv):
    """Two debaters argue, simultaneously over a few rounds, for SQL queries answering a question.

    ## Description
    The debate of `rlvr/Debate-v0` on the tasks of `rlvr/SQL-v0`: a database schema (CREATE
    statements and a few example rows) and a question, whose gold is a SQL query with its
    result on a real database. Procedural tasks by default (five domains, five levels), or
    Spider/BIRD/JSONL tasks (`tasks=`, a `SQLTasks` from `rlvr.envs.sql.tasks`). `debater_0` (A)
    and `debater_1` (B) each write an argument per round at the same time, ending with their
    current final answer: one SQL query in a ```sql fenced block; then each reads the other's.
    The last round's queries are the final stated answers. They are judged by the SQL family's
    execution-match verifier (`SQLJudge`, `SQLVerifier` underneath): each query runs read-only
    on a pristine copy of the task's database and its test-suite twins (same schema, other
    rows), and is correct when its result matches the gold query's on every one of them. With
    `judge="policy"` a third agent, `judge_0`, reads the debate (never the gold) and names the
    winner with `<winner>A</winner>` or `<winner>B</winner>`.

    ## Agents
    `debater_0`, `debater_1`, and `judge_0` when `judge="policy"`.

    ## Action Space
    `TextSpace`: an argument (a debater; its query is the last ```sql block, else the whole
    reply, as in `SQL-v0`) or a decision (the judge).

    ## Observation Space
    `TextSpace`: the schema, the question and the rules after `reset`; a debater then reads the
    other's argument (with its query) each round; the judge reads the whole debate once it
    ends. The gold query and its result are in no observation or message (`infos[agent]
    ["messages"]`); the verdicts in `infos[agent]["verdict"]` describe a wrong result by its
    shape only, never by gold rows.

    ## Rewards
    From the gold, whichever judge: when exactly one final query is correct, its debater gets
    +1 and the other -1; when both or neither are, 0 for both (zero-sum always). A malformed
    query (no SQL, a syntax error, several statements), one that fails (an SQL error, past the
    time limit or the row cap) or one that is refused (anything but one read-only query: no
    INSERT/UPDATE/DELETE/DDL, ATTACH, PRAGMA, temporary tables, ...) is incorrect: it loses to
    a correct one. What a debater writes about the outcome is just text. A policy judge earns
    1.0 when it names the only debater the gold confirms, else 0, and its decision never pays a
    debater. `infos[agent]["winner"]` is the debater the gold confirms, `infos[judge_0]["pick"]`
    the judge's choice. A failure of our machinery (a database or worker that breaks, a gold
    query that does not run) leaves the outcome unknown: every agent scores 0 and has
    `infra_error` set (drop the samples).

    ## Starting State
    A task drawn with `np_random`, or pinned with `options={"task_index": i}` or
    `options={"task": {...}}` (a task of the source's databases).

    ## Episode End
    After the last round (verifier judge) or the judge's decision (policy judge).

    ## Arguments
    - `judge`: "verifier" (default) or "policy".
    - `rounds`: arguments per debater, 1 to 5 (default 2).
    - `tasks`: a `SQLTasks` (from `rlvr.envs.sql.tasks`) replacing the procedural tasks.
    - The arguments of `rlvr/SQL-v0` but `system_prompt` and `format_weight`: `backend`
      ("sqlite" (default), "postgres" or a `Backend` you own), `config` (`SQLEnvConfig`) or
      its fields: `postgres_dsn`, `dialect`, `split`, `difficulty`, `domains`, `seed`,
      `databases_per_domain`, `twins`, `sample_rows`, `timeout_s` (per query execution,
      default 2), `max_rows`, `partial_credit`, `ignore_column_order`, `rel_tol`. With
      `partial_credit` a debater's query is still correct only when its result matches.
    - `render_mode`, `max_text_length`: as for every `TextAECEnv`.

    ## Version History
    - v0: initial release: the SQL-v0 tasks; SQL queries as final answers judged by execution
      match; verifier or policy judge.
    """

    metadata: ClassVar[dict[str, Any]] = {**DebateEnv.metadata, "name": "sql_debate_v0"}
    argument_checks = declare(**SQL_ARGUMENTS)
    final_answer: ClassVar[str] = (
        "your current final answer: one SQL query in a ```sql fenced block"
    )

    def __init__(
        self,
        *,
        judge: str = "verifier",
        rounds: int = 2,
        tasks: SQLTasks | None = None,
        render_mode: str | None = None,
        max_text_length: int = 1 << 16,
        **sql_options: Any,
    ) -> None:
        # The judge of rlvr/SQL-v0 poses the questions and runs the queries.
        questions = SQLJudge(tasks, system_prompt=None, **sql_options)
        self._set_up(questions, judge, rounds, render_mode, max_text_length)

    def _question(self) -> str:
        assert self.task is not None
        return self.questions.prompt(self.task)  # the schema, the question, how it is judged


def env(**kwargs: Any) -> SQLDebateEnv:
    """The AEC env (PettingZoo module style); it enforces call order itself."""
    return SQLDebateEnv(**kwargs)


def parallel_env(**kwargs: Any) -> TextParallelEnv:
    """The Parallel env: both arguments of a round in one step (then the judge's decision)."""
    return TextParallelEnv(SQLDebateEnv(**kwargs))


raw_env = SQLDebateEnv
