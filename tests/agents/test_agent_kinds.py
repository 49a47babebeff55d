"""The one table of agent kinds: specs build policies, help texts and `rlvr bench` read it."""

from __future__ import annotations

import pytest

from rlvr.agents import FixedPolicy, OraclePolicy, RandomPolicy
from rlvr.agents.kinds import AGENT_KINDS, AgentKind, agent_kind, make_policy, register_agent
from tests.conftest import run_python

BUILTIN = ["oracle", "random", "fixed", "hf", "openai", "legal"]


@pytest.fixture
def kinds():
    """The table, restored after the test (registering changes it for the whole process)."""
    saved = dict(AGENT_KINDS)
    yield AGENT_KINDS
    AGENT_KINDS.clear()
    AGENT_KINDS.update(saved)


def test_every_kind_has_one_entry_under_its_own_name():
    assert list(AGENT_KINDS) == BUILTIN
    assert all(name == kind.name for name, kind in AGENT_KINDS.items())


def test_help_texts_list_every_kind_once_from_the_table(kinds):
    from rlvr.agents.cli import EvalConfig
    from rlvr.agents.kinds import agent_help
    from rlvr.config import flag_options
    from rlvr.leaderboards.config import BenchConfig

    register_agent("echo", FixedPolicy, "replies ARG", usage="echo:TEXT")
    # `rlvr eval --agent` and `rlvr bench --agent` show the table's help text
    for config in (EvalConfig, BenchConfig):
        (agent,) = [option for option in flag_options(config) if option.path == ("agent",)]
        assert agent.cli.help is agent_help
    text = agent_help()
    for kind in kinds.values():
        assert text.count(kind.spec) == 1, (kind.spec, text)
    assert "random[:SEED]" in text and "echo:TEXT" in text


def test_specs_build_their_policies():
    assert isinstance(make_policy("oracle"), OraclePolicy)
    assert make_policy("fixed:hello: world").generate([[]], n=2)[0][1].text == "hello: world"
    random = make_policy("random:7")
    assert isinstance(random, RandomPolicy)
    again = RandomPolicy(seed=7).generate([[]])[0][0].text
    assert random.generate([[]])[0][0].text == again  # the argument is the seed
    assert agent_kind("hf:runs/tiny").name == "hf"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("gpt", "unknown agent 'gpt'; use one of: oracle, random[:SEED], fixed:TEXT, hf:PATH"),
        ("random:x", "random:SEED takes an integer seed, got 'x'"),
        ("legal:x", "legal:SEED takes an integer seed, got 'x'"),
        ("hf:", "hf:PATH needs a model folder"),
        ("openai:#model", "openai:URL needs the server's base URL"),
    ],
)
def test_bad_specs_are_refused_in_one_line(spec, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[")):
        make_policy(spec)


def test_a_spec_missing_its_argument_is_refused_before_anything_heavy_loads():
    code = (
        "import sys\n"
        "from rlvr.agents.kinds import make_policy\n"
        "for spec in ('hf:', 'openai:'):\n"
        "    try:\n"
        "        make_policy(spec)\n"
        "    except ValueError:\n"
        "        pass\n"
        "loaded = [m for m in ('torch', 'rlvr.agents.hf', 'rlvr.agents.openai_chat') "
        "if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    run_python(code)


def test_an_import_string_builder_loads_its_module_only_to_build():
    code = (
        "import sys\n"
        "from rlvr.agents.kinds import make_policy, register_agent\n"
        "register_agent('echo', 'rlvr.agents.scripted:FixedPolicy', 'replies ARG')\n"
        "assert 'rlvr.agents.scripted' not in sys.modules\n"
        "policy = make_policy('echo:hi there')\n"
        "assert policy.generate([[]])[0][0].text == 'hi there'\n"
    )
    run_python(code)


def test_a_registered_kind_replaces_one_of_the_same_name(kinds):
    register_agent("fixed", lambda argument: FixedPolicy(argument.upper()), "shouts TEXT")
    assert make_policy("fixed:hi").generate([[]])[0][0].text == "HI"
    assert list(kinds).count("fixed") == 1


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"name": "a:b"}, "without ':'"),
        ({"name": ""}, "without ':'"),
        ({"parallelism": "gpu"}, "parallelism must be one of"),
        ({"parallelism": "processes", "shared": True}, "shared policy cannot run in processes"),
        ({"build": "rlvr.agents.scripted.FixedPolicy"}, "import string 'module:function'"),
    ],
)
def test_an_inconsistent_kind_is_refused(fields, message):
    with pytest.raises(ValueError, match=message):
        AgentKind(**{"name": "mine", "build": FixedPolicy, "help": "mine", **fields})
