"""Bad configuration and malformed tasks are refused when the env is made or the task pinned
(issue 17): each of the ordinary mistakes below used to be accepted and misbehave later."""

from __future__ import annotations

import importlib

import gymnasium as gym
import pytest

import rlvr.envs
from rlvr.envs import DatasetError, EnvConfigError, EnvError, services
from rlvr.envs.errors import ToolInfraError
from rlvr.envs.multiagent import make as make_multiagent
from rlvr.envs.multiagent import registry as multiagent_registry
from rlvr.envs.options import CheckedArguments, declaration
from rlvr.envs.registration import multiagent_env_ids
from tests.conftest import require_extra

CODE_ANSWER = {"entry_point": "f", "asserts": ["assert f() == 1"]}
UNREACHABLE = "127.0.0.1:9"  # the discard port: nothing listens on loopback


def one_line(error: BaseException) -> str:
    message = str(error)
    assert "\n" not in message, message
    return message


# --- settings ------------------------------------------------------------------------------------


def _env_class(env_id):
    if env_id in multiagent_registry:
        return multiagent_registry[env_id].load()
    module, _, name = gym.spec(env_id).entry_point.partition(":")
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("env_id", [*rlvr.envs.rlvr_env_ids(), *multiagent_env_ids()])
def test_every_builtin_env_checks_every_argument_it_accepts(env_id):
    cls = _env_class(env_id)
    assert issubclass(cls, CheckedArguments)
    spec = declaration(cls)
    assert spec.accepted is not None, "unknown names would pass unchecked"
    assert sorted(spec.accepted - set(spec.checks)) == []


def test_an_unknown_sandbox_backend_is_refused_at_make():
    with pytest.raises(EnvConfigError) as caught:
        gym.make("rlvr/Code-v0", backend="nope")
    message = one_line(caught.value)
    assert "backend" in message and "'nope'" in message and "'local'" in message


def test_unknown_backend_options_are_refused_at_make():
    with pytest.raises(EnvConfigError) as caught:
        gym.make("rlvr/Code-v0", backend_options={"docker_host": "x"})
    message = one_line(caught.value)
    assert "backend_options" in message and "docker_host" in message and "start_timeout" in message


def test_an_unreachable_docker_engine_is_refused_at_make():
    require_extra("docker", "docker")
    with pytest.raises(EnvConfigError) as caught:
        gym.make(
            "rlvr/Code-v0", backend="docker", backend_options={"base_url": f"tcp://{UNREACHABLE}"}
        )
    message = one_line(caught.value)
    assert "Docker engine unreachable" in message and UNREACHABLE in message


def test_an_unanswered_postgres_dsn_is_refused_at_make():
    require_extra("psycopg", "postgres")
    dsn = f"postgresql://nobody@{UNREACHABLE}/none"
    with pytest.raises(EnvConfigError) as caught:
        gym.make("rlvr/SQL-v0", backend="postgres", postgres_dsn=dsn)
    message = one_line(caught.value)
    assert "postgres_dsn" in message and "127.0.0.1" in message and "port 9" in message


def test_an_unanswered_server_url_is_refused_at_make():
    with pytest.raises(EnvConfigError) as caught:
        gym.make("rlvr/WikiQA-v0", server_url=f"http://{UNREACHABLE}")
    message = one_line(caught.value)
    assert "server_url" in message and "rlvr web serve" in message


@pytest.mark.parametrize(
    ("env_id", "accepted"),
    [
        ("rlvr/ToolMath-v0", "[1, 2, 3]"),
        ("rlvr/WebShop-v0", "[1, 2, 3]"),
        ("rlvr/WikiQA-v0", "[1, 2, 3, 4]"),
        ("rlvr/Math-v0", "[1, 2, 3, 4, 5]"),
        ("rlvr/SQL-v0", "[1, 2, 3, 4, 5]"),
    ],
)
def test_an_unknown_difficulty_is_refused_by_every_family(env_id, accepted):
    with pytest.raises(EnvConfigError) as caught:
        gym.make(env_id, difficulty=99)
    assert one_line(caught.value) == (
        f"difficulty must be a level in {accepted} or a list of them, got 99"
    )


@pytest.mark.parametrize("env_id", ["rlvr/Math-v0", "rlvr/Code-v0", "rlvr/MathSelfCorrect-v0"])
def test_an_unknown_argument_names_the_accepted_ones(env_id):
    with pytest.raises(EnvConfigError) as caught:
        gym.make(env_id, difficulti=2)
    message = one_line(caught.value)
    assert "difficulti" in message and "accepts" in message and "render_mode" in message


@pytest.mark.parametrize("env_id", ["rlvr/Math-v0", "rlvr/Code-v0"])
@pytest.mark.parametrize("tasks", ["not a list", 7, b"bytes"])
def test_tasks_that_are_not_tasks_are_refused(env_id, tasks):
    with pytest.raises((DatasetError, EnvConfigError)) as caught:
        gym.make(env_id, tasks=tasks)
    assert "tasks" in one_line(caught.value)


# --- pinned tasks --------------------------------------------------------------------------------


@pytest.mark.parametrize("answer", [None, CODE_ANSWER, "", "  ", "\x00", "?!"])
@pytest.mark.parametrize(
    "env_id", ["rlvr/SQL-v0", "rlvr/ToolMath-v0", "rlvr/WikiQA-v0", "rlvr/Code-v0"]
)
def test_a_pinned_task_with_an_answer_of_the_wrong_shape_is_refused(env_id, answer):
    if env_id == "rlvr/Code-v0" and answer == CODE_ANSWER:
        answer = {"entry_point": "f", "asserts": ["assert f( == 1"]}  # tests that do not parse
    env = gym.make(env_id)
    try:
        with pytest.raises(EnvConfigError) as caught:
            env.reset(seed=0, options={"task": {"prompt": "q", "answer": answer}})
        assert one_line(caught.value).startswith("options['task']")
    finally:
        env.close()


def test_a_wikiqa_task_without_an_answer_never_pays_the_reply_none():
    env = gym.make("rlvr/WikiQA-v0")
    try:
        with pytest.raises(EnvConfigError):
            env.reset(options={"task": {"prompt": "Who?", "answer": None}})
    finally:
        env.close()


def test_a_sql_task_whose_gold_does_not_run_is_refused():
    env = gym.make("rlvr/SQL-v0")
    try:
        env.reset(seed=0)
        task = env.unwrapped.task.to_dict()
        with pytest.raises(EnvConfigError, match="gold query"):
            env.reset(options={"task": {**task, "answer": "SELECT nope FROM nowhere"}})
        env.reset(options={"task": task})  # the same task with its own gold is fine
    finally:
        env.close()


@pytest.mark.parametrize("index", [-1, 10**9, "3", 1.0, None])
def test_a_bad_task_index_is_a_config_error(index):
    env = gym.make("rlvr/Math-v0")
    with pytest.raises(EnvConfigError, match=r"options\['task_index'\]"):
        env.reset(options={"task_index": index})


def test_reset_options_that_are_not_a_dict_are_our_error_and_still_a_type_error():
    env = gym.make("rlvr/Math-v0")
    with pytest.raises(EnvError) as caught:
        env.reset(options=["task"])
    assert isinstance(caught.value, TypeError)


# --- multi-agent envs go through the same checks -------------------------------------------------


@pytest.mark.parametrize(
    ("env_id", "kwargs", "message"),
    [
        ("rlvr/Debate-v0", {"difficulty": 99}, "difficulty must be a level in"),
        ("rlvr/Debate-v0", {"rounds": 0}, "rounds"),
        ("rlvr/Negotiation-v0", {"max_turns": "6"}, "max_turns"),
        ("rlvr/Connect4-v0", {"colour": "red"}, "accepts"),
        ("rlvr/ProposerSolver-v1", {"solvers": True}, "solvers"),
    ],
)
def test_multiagent_envs_refuse_bad_arguments_at_make(env_id, kwargs, message):
    with pytest.raises(EnvConfigError, match=message) as caught:
        make_multiagent(env_id, **kwargs)
    one_line(caught.value)


# --- found by tests/envs/test_fuzz.py: each raised an exception type not of rlvr's --------------


@pytest.mark.parametrize(
    ("env_id", "kwargs", "message"),
    [
        ("rlvr/SQL-v0", {"domains": [[]]}, "domains must be one or a non-empty list"),  # TypeError
        ("rlvr/MathSelfCorrect-v0", {"env": "train"}, "env='train'"),  # gymnasium's NameNotFound
        ("rlvr/MathSelfCorrect-v0", {"env_kwargs": {0: 1}}, "env_kwargs names must be str"),
        ("rlvr/MathSelfCorrect-v0", {"env_kwargs": {"render_mode": 1}}, "render_mode"),
    ],
)
def test_make_refuses_what_used_to_escape_as_another_error(env_id, kwargs, message):
    with pytest.raises(EnvConfigError, match=message) as caught:
        gym.make(env_id, **kwargs)
    one_line(caught.value)


@pytest.mark.parametrize(
    "options",
    [
        {"task": {"": None, 0: None}},  # keys of mixed types: sorting them for the message failed
        {0: 1, "bogus": 2},
        {"task": {"prompt": "q", "answer": "1", 0: None}},
    ],
)
def test_reset_options_with_keys_of_mixed_types_are_a_config_error(options):
    env = gym.make("rlvr/Math-v0")
    with pytest.raises(EnvConfigError) as caught:
        env.reset(options=options)
    one_line(caught.value)


@pytest.mark.parametrize(
    "change",
    [
        {"max_price_cents": float("inf")},  # OverflowError
        {"max_price_cents": True},
        {"target": ["P00001"]},  # TypeError: unhashable
        {"category": []},  # accepted
        {"options": {"size": 8}},  # accepted
    ],
)
def test_a_webshop_goal_with_a_field_of_the_wrong_type_is_refused(change):
    env = gym.make("rlvr/WebShop-v0")
    try:
        env.reset(seed=0)
        goal = env.unwrapped.task.answer
        with pytest.raises(EnvConfigError, match="must be a goal dict") as caught:
            env.reset(options={"task": {"prompt": "buy", "answer": {**goal, **change}}})
        one_line(caught.value)
    finally:
        env.close()


def test_multiagent_reset_options_with_keys_of_mixed_types_are_ignored_with_a_warning():
    env = make_multiagent("rlvr/Connect4-v0")
    with pytest.warns(UserWarning, match="ignores unknown reset options"):
        env.reset(seed=0, options={0: 1, "bogus": 2})


# --- services are reached once, or not at all when asked -----------------------------------------


def test_a_service_check_that_passed_is_not_run_again_and_one_that_failed_is():
    calls = []

    def check():
        calls.append(1)
        if len(calls) == 1:
            raise EnvConfigError("down")

    key = ("test", object())
    with pytest.raises(EnvConfigError):
        services.reach(key, check)
    services.reach(key, check)  # tried again: the first attempt failed
    services.reach(key, check)  # remembered
    assert len(calls) == 2


def test_lazy_services_skip_the_check_at_make(monkeypatch):
    monkeypatch.setenv(services.LAZY_ENV, "1")
    env = gym.make("rlvr/WikiQA-v0", server_url=f"http://{UNREACHABLE}")
    try:
        with pytest.raises(ToolInfraError, match="not answering"):  # ours, at first use
            env.reset(seed=0)
    finally:
        env.close()
