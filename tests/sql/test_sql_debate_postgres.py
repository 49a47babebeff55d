"""rlvr/SQLDebate-v0 on PostgreSQL: the same judging as on SQLite (execution match on the gold,
writes refused), through the real server (tests/sql/conftest.py provisions it)."""

from __future__ import annotations

import pytest

from rlvr.envs.multiagent import make

pytestmark = pytest.mark.postgres


def test_a_debate_is_judged_by_execution_on_postgres(postgres_dsn):
    env = make("rlvr/SQLDebate-v0", rounds=1, backend="postgres", postgres_dsn=postgres_dsn)
    try:
        for index in range(3):
            env.reset(seed=0, options={"task_index": index})
            assert env.task is not None
            env.step(f"```sql\n{env.task.answer}\n```")
            env.step("```sql\nDELETE FROM loans WHERE 1 = 1 RETURNING *\n```")
            assert env._cumulative_rewards == {"debater_0": 1.0, "debater_1": -1.0}
            assert env.infos["debater_1"]["verdict"]["data"].get("refused") is True
            assert not any(env.infos[agent]["infra_error"] for agent in env.possible_agents)
    finally:
        env.close()
