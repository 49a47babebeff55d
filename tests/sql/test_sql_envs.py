"""rlvr/SQL-v0 and rlvr/SQLInteractive-v0: registration, check_env, tasks, the reply protocol."""

from __future__ import annotations

from collections import Counter

import gymnasium as gym
import pytest

import rlvr
from rlvr.envs import EnvConfigError, check_env
from rlvr.envs.sql.tasks import DOMAINS, LEVELS, TEMPLATES, DomainCatalog, procedural_tasks
from rlvr.envs.sql.tasks.domains import parse_db_id
from rlvr.verifiers.sql import SQLVerifier, UnknownDatabase

ENV_IDS = ("rlvr/SQL-v0", "rlvr/SQLInteractive-v0")


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_check_env_passes(env_id):
    env = gym.make(env_id)
    check_env(env)
    env.close()


@pytest.mark.postgres
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_check_env_passes_on_postgres(env_id, postgres_dsn):
    env = gym.make(env_id, backend="postgres", postgres_dsn=postgres_dsn, difficulty=(2, 5))
    check_env(env, seeds=(0, 1))
    env.close()


def test_envs_are_registered():
    assert set(ENV_IDS) <= set(rlvr.envs.rlvr_env_ids())
    assert gym.spec("rlvr/SQLInteractive-v0").max_episode_steps == 8


def test_train_and_test_are_disjoint():
    train = procedural_tasks(split="train")
    test = procedural_tasks(split="test")
    train_prompts = {train[i].prompt for i in range(300)}
    test_prompts = {test[i].prompt for i in range(100)}
    assert not train_prompts & test_prompts
    assert {test[i].metadata["split"] for i in range(20)} == {"test"}


def test_stratified_split_holds_every_template_with_held_out_questions_equally():
    # One domain, no sample rows: few distinct questions per template, so a plain test split is
    # mostly the template with a number in it (docs/agents.md, the SQL task).
    settings = {"difficulty": 1, "domains": ["flights"], "sample_rows": 0, "stratify": True}
    train = procedural_tasks(split="train", **settings)
    test = procedural_tasks(split="test", **settings)
    test_tasks = [test[i] for i in range(120)]
    train_questions = {train[i].metadata["question"] for i in range(300)}
    assert not {task.metadata["question"] for task in test_tasks} & train_questions
    shares = Counter(task.metadata["template"] for task in test_tasks)
    assert len(shares) >= 2
    assert max(shares.values()) - min(shares.values()) < 0.25 * len(test_tasks)
    assert {train[i].metadata["template"] for i in range(60)} == {
        template.__name__ for template in TEMPLATES[1]
    }
    env = gym.make("rlvr/SQL-v0", split="test", **settings)
    _, info = env.reset(seed=0)
    assert info["task_id"].startswith("sql/test/s0/d1/k")
    env.close()


def test_tasks_are_reproducible_and_cover_every_level():
    first, second = procedural_tasks(seed=7), procedural_tasks(seed=7)
    assert [first[i] for i in (0, 5, 99)] == [second[i] for i in (0, 5, 99)]
    assert first[0].prompt != procedural_tasks(seed=8)[0].prompt
    for level in LEVELS:
        tasks = procedural_tasks(difficulty=level)
        names = {tasks[i].metadata["template"] for i in range(40)}
        assert names == {template.__name__ for template in TEMPLATES[level]}, level
        assert {tasks[i].metadata["difficulty"] for i in range(5)} == {level}
    windows = procedural_tasks(difficulty=5)
    assert all(" OVER (" in windows[i].answer for i in range(10))


def test_gold_answers_are_right_and_not_trivial():
    tasks = procedural_tasks(twins=1)
    verifier = SQLVerifier(tasks.catalog)
    for index in range(40):
        task = tasks[index]
        _, result = verifier.gold_result(task.answer, tasks.catalog[task.metadata["db_id"]])
        assert 1 <= len(result) <= 40
        assert verifier.verify(task.answer, task).is_correct
        assert not verifier.verify("SELECT 1", task).is_correct


def test_procedural_databases_are_consistent():
    catalog = DomainCatalog()
    for name, domain in DOMAINS.items():
        database = catalog[f"{name}/0"]
        assert database is catalog[f"{name}/0"]
        assert database.fingerprint == DomainCatalog()[f"{name}/0"].fingerprint
        assert database.fingerprint != catalog[f"{name}/0~1"].fingerprint
        entities = database.table(domain.entity.table)
        items = database.table(domain.item.table)
        facts = database.table(domain.fact.table)
        entity_ids = {row[0] for row in entities.rows}
        item_ids = {row[0] for row in items.rows}
        assert all(row[1] in entity_ids and row[2] in item_ids for row in facts.rows)  # keys hold
        assert any(None in row for row in entities.rows)  # NULLs exist
        assert len({row[1] for row in entities.rows}) == len(entities.rows)  # unique labels
        pairs = [(row[1], row[3]) for row in facts.rows]
        assert len(set(pairs)) == len(pairs)  # one fact per entity and day
        assert entity_ids - {row[1] for row in facts.rows}  # some entities have no facts
        assert all(len(row[3]) == 10 and row[3][4] == "-" for row in facts.rows)  # ISO dates


@pytest.mark.parametrize("bad", ["shop", "nowhere/1", "shop/x", "shop/-1", "shop/1~z"])
def test_unknown_procedural_ids(bad):
    with pytest.raises(UnknownDatabase):
        parse_db_id(bad)


def test_prompt_shows_schema_question_and_format():
    env = gym.make("rlvr/SQL-v0", sample_rows=2, domains=["school"])
    prompt, info = env.reset(seed=0)
    assert "CREATE TABLE students" in prompt and "FOREIGN KEY" in prompt
    assert "2 example rows from students" in prompt
    assert "Question:" in prompt and "```sql" in prompt
    assert info["messages"][0]["role"] == "system"
    bare = gym.make("rlvr/SQL-v0", sample_rows=0)
    assert "example rows" not in bare.reset(seed=0)[0]


def test_single_turn_episode():
    env = gym.make("rlvr/SQL-v0", difficulty=1)
    env.reset(seed=3)
    _, reward, terminated, truncated, info = env.step("DROP TABLE customers")
    assert (reward, terminated, truncated) == (0.0, True, False)
    assert info["verdict"]["data"]["refused"] is True
    env.reset(seed=3)
    _, reward, _, _, info = env.step(env.unwrapped.oracle_reply())
    assert reward == 1.0 and info["verdict"]["status"] == "correct"


def test_config_errors_name_the_fix():
    with pytest.raises(EnvConfigError, match="unknown argument"):
        gym.make("rlvr/SQL-v0", difficulty_level=3)
    with pytest.raises(EnvConfigError, match="backend must be"):
        gym.make("rlvr/SQL-v0", backend="oracle")
    with pytest.raises(EnvConfigError, match="difficulty"):
        gym.make("rlvr/SQL-v0", difficulty=9)
    with pytest.raises(EnvConfigError, match="domains"):
        gym.make("rlvr/SQL-v0", domains=["zoo"])
    with pytest.raises(EnvConfigError, match="timeout_s"):
        gym.make("rlvr/SQL-v0", timeout_s=0)
    with pytest.raises(EnvConfigError, match="stratify"):
        gym.make("rlvr/SQL-v0", stratify="yes")


# --- the interactive protocol ---------------------------------------------------------------------


@pytest.fixture
def interactive():
    env = gym.make("rlvr/SQLInteractive-v0", domains=["shop"], explore_rows=5)
    env.reset(seed=0)
    yield env
    env.close()


def test_exploration_shows_a_truncated_table(interactive):
    feedback, reward, terminated, truncated, info = interactive.step(
        "Let me look.\n<query>\n```sql\nSELECT name, city FROM customers\n```\n</query>"
    )
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert feedback.startswith("Result (") and "name | city" in feedback
    assert len(feedback.splitlines()) == 1 + 1 + 5 + 1 + 1  # header, columns, rows, more, turns
    assert "more rows" in feedback and "(7 replies left.)" in feedback
    assert info["messages"][-1] == {"role": "user", "content": feedback}


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("<query>SELECT nosuch FROM customers</query>", "Error: no such column: nosuch"),
        ("<query>DROP TABLE customers</query>", "Error: only a read-only query"),
        ("<query>SELECT 1; SELECT 2</query>", "Error: expected exactly one SQL statement"),
        ("<query>  </query>", "The <query> block is empty."),
        ("SELECT 1", "No <query> or <answer> block found"),
    ],
)
def test_exploration_errors_are_feedback(interactive, reply, expected):
    feedback, reward, terminated, _, info = interactive.step(reply)
    assert feedback.startswith(expected)
    assert (reward, terminated, info["infra_error"]) == (0.0, False, False)
    _, reward, terminated, _, _ = interactive.step(interactive.unwrapped.oracle_reply())
    assert (reward, terminated) == (1.0, True)  # exploration changed nothing


def test_answer_ends_the_episode(interactive):
    _, reward, terminated, _, info = interactive.step(
        "<query>SELECT 1</query> then <answer>SELECT 1</answer>"
    )
    assert terminated and reward == 0.0 and info["verdict"]["status"] == "incorrect"


def test_turn_limit_truncates(interactive):
    for _ in range(8):
        _, reward, terminated, truncated, _ = interactive.step("<query>SELECT 1</query>")
        assert reward == 0.0 and not terminated
    assert truncated


def test_copying_explored_rows_into_the_answer_fails():
    env = gym.make("rlvr/SQLInteractive-v0", difficulty=1, domains=["library"])
    env.reset(seed=5)
    task = env.unwrapped.task
    rows = env.unwrapped.judge.explore(task.answer, task).rows
    values = ", ".join("(" + ", ".join(repr(v) if v is not None else "NULL" for v in row) + ")"
                       for row in rows)  # fmt: skip
    _, reward, terminated, _, info = env.step(f"<answer>VALUES {values}</answer>")
    assert terminated and reward == 0.0, info["verdict"]
    assert "held-out copy" in info["verdict"]["details"]


def test_exploration_infra_error_ends_the_episode(tmp_path):
    from rlvr.envs.sql.interactive import SQLInteractiveEnv
    from rlvr.envs.sql.tasks import load_sql_jsonl
    from tests.sql.sqlhelpers import shop_database
    from tests.sql.test_sql_loaders import write_database

    write_database(tmp_path / "dbs" / "mini" / "mini.sqlite", shop_database())
    (tmp_path / "q.jsonl").write_text(
        '{"question": "Who?", "query": "SELECT name FROM people", "db_id": "mini"}\n'
    )
    env = SQLInteractiveEnv(load_sql_jsonl(tmp_path / "q.jsonl", tmp_path / "dbs"), max_turns=4)
    env.reset(seed=0)
    (tmp_path / "dbs" / "mini" / "mini.sqlite").write_bytes(b"garbage" * 1000)
    _, _, terminated, _, info = env.step("<query>SELECT 1 FROM people</query>")
    assert terminated and info["infra_error"] and info["verdict"]["status"] == "error"
