"""Spider-, BIRD- and JSONL-style datasets from small fixtures made here."""

from __future__ import annotations

import json
import sqlite3

import gymnasium as gym
import pytest

from rlvr.envs import DatasetError, EnvConfigError
from rlvr.envs.sql.tasks import load_bird, load_spider, load_sql_jsonl
from rlvr.verifiers.sql import SQLVerifier


def write_database(path, database=None, statements=()):
    """A SQLite file from a `Database` or from SQL statements."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as connection:
        if database is not None:
            for table, create in zip(database.tables, database.create_statements()):
                connection.execute(create)
                marks = ", ".join("?" * len(table.columns))
                connection.executemany(f"INSERT INTO {table.name} VALUES ({marks})", table.rows)
        for statement in statements:
            connection.execute(statement)
    connection.close()


CONCERT = [
    "CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INT)",
    "CREATE TABLE concert (concert_id INTEGER PRIMARY KEY, concert_name TEXT, singer_id INT "
    "REFERENCES singer(singer_id), year TEXT)",
    "INSERT INTO singer VALUES (1, 'Joe Sharp', 'Netherlands', 52), (2, 'Timbaland', "
    "'United States', 32), (3, 'Justin Brown', 'France', 29), (4, 'Rose White', 'France', 41)",
    "INSERT INTO concert VALUES (1, 'Auditions', 1, '2014'), (2, 'Super bootcamp', 2, '2014'), "
    "(3, 'Home Visits', 3, '2015')",
]


@pytest.fixture
def spider(tmp_path):
    write_database(
        tmp_path / "database" / "concert_singer" / "concert_singer.sqlite", statements=CONCERT
    )
    rows = [
        {"db_id": "concert_singer", "question": "How many singers do we have?",
         "query": "SELECT count(*) FROM singer"},
        {"db_id": "concert_singer", "question": "List singer names from France by age.",
         "query": "SELECT name FROM singer WHERE country = 'France' ORDER BY age"},
        {"db_id": "concert_singer", "question": "Names of singers with a concert in 2014?",
         "query": "SELECT T2.name FROM concert AS T1 JOIN singer AS T2 ON T1.singer_id = "
                  "T2.singer_id WHERE T1.year = '2014'"},
    ]  # fmt: skip
    (tmp_path / "dev.json").write_text(json.dumps(rows))
    return tmp_path


def test_spider_layout(spider):
    tasks = load_spider(spider / "dev.json", spider / "database", sample_rows=2)
    assert len(tasks) == 3
    task = tasks[1]
    assert task.metadata["db_id"] == "concert_singer"
    assert "CREATE TABLE singer" in task.prompt and "2 example rows from singer" in task.prompt
    assert task.prompt.endswith("Question: List singer names from France by age.")
    verifier = SQLVerifier(tasks.catalog)
    assert verifier.verify(
        "SELECT name FROM singer WHERE country='France' ORDER BY age ASC", task
    ).is_correct
    assert not verifier.verify(
        "SELECT name FROM singer WHERE country='France' ORDER BY age DESC", task
    ).is_correct


def test_dataset_tasks_drive_the_env(spider):
    tasks = load_spider(spider / "dev.json", spider / "database")
    env = gym.make("rlvr/SQL-v0", tasks=tasks)
    env.reset(options={"task_index": 2})
    join = (
        "SELECT s.name FROM singer s, concert c WHERE s.singer_id = c.singer_id AND c.year = '2014'"
    )
    assert env.step(f"```sql\n{join}\n```")[1] == 1.0
    env.reset(options={"task_index": 0})
    assert env.step("SELECT 3")[1] == 0.0
    assert env.unwrapped.tasks is tasks


def test_dataset_tasks_refuse_the_generator_settings(spider):
    # Held-out evaluation adds split="test"; silently ignored, it would score the training tasks.
    tasks = load_spider(spider / "dev.json", spider / "database")
    for option in ({"split": "test"}, {"difficulty": 2}, {"sample_rows": 5}):
        with pytest.raises(EnvConfigError, match=f"{next(iter(option))} configure the procedural"):
            gym.make("rlvr/SQL-v0", tasks=tasks, **option)
    gym.make("rlvr/SQL-v0", tasks=tasks, timeout_s=1.0).close()  # verifier settings still apply


def test_bird_layout_with_evidence(tmp_path):
    write_database(
        tmp_path / "dev_databases" / "concert_singer" / "concert_singer.sqlite", statements=CONCERT
    )
    gold = "SELECT name FROM singer WHERE country = 'France' ORDER BY age DESC LIMIT 1"
    rows = [{"question_id": 0, "db_id": "concert_singer", "question": "Oldest French singer?",
             "evidence": "French refers to country = 'France'", "difficulty": "simple",
             "SQL": gold}]  # fmt: skip
    (tmp_path / "dev.json").write_text(json.dumps(rows))
    task = load_bird(tmp_path / "dev.json", tmp_path / "dev_databases")[0]
    assert task.prompt.endswith("Hint: French refers to country = 'France'")
    assert task.metadata["difficulty"] == "simple"
    plain = load_bird(tmp_path / "dev.json", tmp_path / "dev_databases", use_evidence=False)[0]
    assert "Hint" not in plain.prompt
    verifier = SQLVerifier(load_bird(tmp_path / "dev.json", tmp_path / "dev_databases").catalog)
    oldest = "SELECT MAX(age) FROM singer WHERE country = 'France'"
    assert verifier.verify(f"SELECT name FROM singer WHERE age = ({oldest})", task).is_correct


def test_jsonl_with_a_field_mapping(tmp_path):
    write_database(tmp_path / "dbs" / "music.sqlite", statements=CONCERT)
    lines = [
        {"nl": "How many concerts?", "sql": "SELECT COUNT(*) FROM concert", "db": "music"},
        {"nl": "Oldest age?", "sql": "SELECT MAX(age) FROM singer", "db": "music", "level": 2},
    ]
    (tmp_path / "q.jsonl").write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    tasks = load_sql_jsonl(tmp_path / "q.jsonl", tmp_path / "dbs",
                           fields={"question": "nl", "query": "sql", "db_id": "db"})  # fmt: skip
    assert len(tasks) == 2 and tasks[1].metadata["level"] == 2
    assert (
        SQLVerifier(tasks.catalog)
        .verify("SELECT age FROM singer ORDER BY age DESC LIMIT 1", tasks[1])
        .is_correct
    )


def test_jsonl_ids_tell_databases_apart(tmp_path):
    """The same question and query on two databases are two tasks. Ids came from the question
    and query alone, and the second line was refused as a duplicate id."""
    write_database(tmp_path / "dbs" / "east.sqlite", statements=CONCERT)
    write_database(tmp_path / "dbs" / "west.sqlite", statements=CONCERT[:1])
    same = {"question": "How many singers?", "query": "SELECT COUNT(*) FROM singer"}
    lines = [{**same, "db_id": "east"}, {**same, "db_id": "west"},
             {**same, "db_id": "east", "id": "mine"}]  # fmt: skip
    (tmp_path / "q.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    tasks = load_sql_jsonl(tmp_path / "q.jsonl", tmp_path / "dbs")
    ids = [tasks[i].id for i in range(3)]
    assert len(set(ids)) == 3 and ids[2] == "mine"  # an id given in the file is kept
    again = load_sql_jsonl(tmp_path / "q.jsonl", tmp_path / "dbs")
    assert [again[i].id for i in range(3)] == ids  # derived ids are stable
    verifier = SQLVerifier(tasks.catalog)
    assert verifier.verify("SELECT 4", tasks[0]).is_correct  # each on its own database
    assert verifier.verify("SELECT 0", tasks[1]).is_correct


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            '[{"db_id": "nowhere", "question": "q", "query": "SELECT 1"}]',
            "item 0: no database 'nowhere'",
        ),
        ('[{"db_id": "concert_singer", "question": "q"}]', "field 'query'"),
        ('[{"db_id": "concert_singer", "question": "", "query": "SELECT 1"}]', "field 'question'"),
        ('{"not": "a list"}', "expected a JSON list"),
        ("[1, 2]", "expected an object"),
        ("[", "invalid JSON"),
        ("[]", "no questions"),
        (
            '[{"db_id": "../database/concert_singer", "question": "q", "query": "SELECT 1"}]',
            "not a valid",
        ),
    ],
)
def test_malformed_datasets_name_the_problem(spider, content, message):
    (spider / "bad.json").write_text(content)
    with pytest.raises(DatasetError, match=message):
        load_spider(spider / "bad.json", spider / "database")


def test_missing_paths(spider):
    with pytest.raises(DatasetError, match="no such file"):
        load_spider(spider / "nope.json", spider / "database")
    with pytest.raises(DatasetError, match="no such folder"):
        load_spider(spider / "dev.json", spider / "nope")
    (spider / "q.jsonl").write_text('{"question": "q", "query": "SELECT 1"}\n')
    with pytest.raises(DatasetError, match="db_id"):
        load_sql_jsonl(spider / "q.jsonl", spider / "database")


def test_unreadable_question_files_name_file_and_line(spider):
    """Invalid UTF-8 and deep nesting raised UnicodeDecodeError and RecursionError naming no
    file; a JSONL row without text fields named a task, not its line."""
    file = spider / "bad.json"
    file.write_bytes(b'[\n{"db_id": "concert_singer", "question": "caf\xe9", "query": "SELECT 1"}]')
    with pytest.raises(DatasetError, match=r"bad\.json: not UTF-8 text \(byte 0xe9 at line 2 "):
        load_spider(file, spider / "database")
    file.write_text("[" * 10_000 + "]" * 10_000)
    with pytest.raises(DatasetError, match=r"bad\.json: JSON nested more than 100 levels deep"):
        load_bird(file, spider / "database")
    lines = spider / "q.jsonl"
    good = {"db_id": "concert_singer", "question": "q", "query": "SELECT 1"}
    for bad, field in (({**good, "db_id": 7}, "db_id"), ({**good, "query": " "}, "query")):
        lines.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
        with pytest.raises(DatasetError, match=rf"q\.jsonl:2: field '{field}' .* non-empty text"):
            load_sql_jsonl(lines, spider / "database")
    lines.write_bytes(json.dumps(good).encode() + b"\n" + b"[" * 5000 + b"\n")
    with pytest.raises(DatasetError, match=r"q\.jsonl:2: JSON nested more than 100"):
        load_sql_jsonl(lines, spider / "database")


def test_questions_saved_with_a_byte_order_mark_load(spider):
    """Editors on Windows save JSON with a UTF-8 BOM; json.loads refuses it."""
    rows = json.loads((spider / "dev.json").read_text())
    (spider / "bom.json").write_text(json.dumps(rows), encoding="utf-8-sig")
    assert len(load_spider(spider / "bom.json", spider / "database")) == 3
    lines = "".join(json.dumps(row) + "\n" for row in rows)
    (spider / "bom.jsonl").write_text(lines, encoding="utf-8-sig")
    assert len(load_sql_jsonl(spider / "bom.jsonl", spider / "database")) == 3


def test_a_lone_surrogate_in_a_question_names_the_item_or_line(spider):
    """JSON's \\ud800 without its pair decodes to text no tokenizer or database can take."""
    row = '{"db_id": "concert_singer", "question": "How many\\ud800?", "query": "SELECT 1"}'
    (spider / "bad.json").write_text(f"[{row}]")
    with pytest.raises(DatasetError, match=r"bad\.json item 0: field 'question' holds a lone"):
        load_spider(spider / "bad.json", spider / "database")
    (spider / "q.jsonl").write_text(row + "\n")
    with pytest.raises(DatasetError, match=r"q\.jsonl:1: field 'question' holds a lone surrogate"):
        load_sql_jsonl(spider / "q.jsonl", spider / "database")
