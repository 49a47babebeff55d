"""`rlvr.config`: flags generated from config dataclasses, TOML files read into them and written
back, and `rlvr eval` built on it (the torch-free part; `rlvr train` and `rlvr tiny` are in
tests/agents/test_train_config.py)."""

from __future__ import annotations

import argparse
import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest

from rlvr.agents.cli import EvalConfig
from rlvr.agents.policy import SamplingParams
from rlvr.cli import build_parser, main
from rlvr.config import (
    MAX_SEED,
    ConfigError,
    Positive,
    Seed,
    add_config_arguments,
    build,
    check_numbers,
    differences,
    dump,
    field_docs,
    parse_toml,
    read_config,
    resolve,
    to_toml,
    write_config,
)
from rlvr.config import cli as flag


@dataclass(frozen=True)
class Inner:
    """A nested table."""

    rate: float = field(default=0.5, metadata=flag("--rate"))
    """A rate."""
    limit: int | None = 3
    """A limit (None: no limit)."""


@dataclass(frozen=True)
class Other:
    rate: float = field(default=0.5, metadata=flag("--rate"))
    """Another rate."""


@dataclass(frozen=True)
class Item:
    name: str
    """Each item names itself."""
    options: Mapping[str, Any] = field(default_factory=dict, metadata=flag("--options"))
    """Options of every item."""


def _item(text: str) -> Item:
    if not text:
        raise ValueError("an item needs a name")
    return Item(text)


@dataclass(frozen=True)
class Example:
    """A config using every kind of field the layer supports."""

    items: tuple[Item, ...] = field(metadata=flag("--item", parse=_item))
    """Items, from repeated --item NAME."""
    count: int = field(default=2, metadata=flag("-n"))
    """How many: the first line
    and a second one."""
    ratio: float = 0.25
    """A share, with a percent sign: 100% of it."""
    label: str = "plain"
    """A label."""
    kind: Literal["a", "b"] = "a"
    """A choice."""
    size: Literal["s", "m"] | None = None
    """An optional choice."""
    enabled: bool = True
    """A switch."""
    scaled: bool | None = None
    """True, false or undecided."""
    words: tuple[str, ...] = ("x",)
    """Some words."""
    pair: tuple[float, float] = (0.9, 0.99)
    """Exactly two numbers."""
    inner: Inner = field(default_factory=Inner)
    """A nested table that is always there."""
    extra: Inner | None = None
    """A nested table that is off unless given."""
    other: Other = field(default_factory=Other)
    """A second table declaring --rate too."""
    settings: Mapping[str, Any] = field(default_factory=dict)
    """JSON on the command line, a table in a file."""


@dataclass(frozen=True)
class Numbers:
    """Number fields of every kind, checked as the real configs check theirs."""

    share: float = 0.5
    """A share."""
    limit: float | None = None
    """An optional number."""
    pair: tuple[float, float] = (0.9, 0.99)
    """Two numbers."""
    count: int = 2
    """Any integer."""
    seed: Seed = 0
    """A seed."""
    parts: Positive = 1
    """At least one."""
    first_seed: Seed | None = None
    """An optional seed."""
    inner: Inner = field(default_factory=Inner)
    """A nested table."""
    settings: Mapping[str, Any] = field(default_factory=dict)
    """Free-form (the env they go to checks them)."""

    def __post_init__(self) -> None:
        check_numbers(self)


def parser_of(cls: type = Example) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="example")
    add_config_arguments(parser, cls)
    return parser


def resolved(argv: list[str], file: Any = None, cls: type = Example) -> Any:
    return resolve(cls, parser_of(cls).parse_args(argv), file)


def test_docstrings_are_read_from_the_source_one_line_each():
    docs = field_docs(Example)
    assert docs["count"] == "How many: the first line and a second one."
    assert docs["inner"] == "A nested table that is always there."
    assert field_docs(Inner) == {"rate": "A rate.", "limit": "A limit (None: no limit)."}


def test_no_flags_give_the_dataclass_defaults_and_argparse_holds_none():
    parser = parser_of()
    generated = [a for a in parser._actions if a.dest.startswith("config:")]
    assert generated and all(action.default is argparse.SUPPRESS for action in generated)
    assert resolved(["--item", "one"]) == Example(items=(Item("one"),))


def test_every_field_has_a_flag_with_its_docstring_and_default_as_help():
    help_text = " ".join(parser_of().format_help().split())
    for flag_name in (
        "--item", "--count", "-n", "--ratio", "--label", "--kind", "--size", "--enabled",
        "--no-enabled", "--scaled", "--words", "--pair", "--inner.rate", "--inner.limit",
        "--extra", "--no-extra", "--extra.rate", "--extra.limit", "--other.rate", "--rate",
        "--settings", "--items.options", "--options",
    ):  # fmt: skip
        assert f" {flag_name} " in help_text or f" {flag_name}," in help_text, flag_name
    assert "How many: the first line and a second one. (default: 2)" in help_text
    assert "100% of it. (default: 0.25)" in help_text
    assert "Items, from repeated --item NAME. (required)" in help_text
    assert "A nested table that is off unless given. (default: off)" in help_text


def test_flags_of_every_kind():
    config = resolved(
        ["--item", "one", "--item", "two", "--options", '{"k": 1}', "-n", "5", "--ratio", "1e-3",
         "--kind", "b", "--size", "m", "--no-enabled", "--scaled", "false", "--words", "p", "q",
         "--pair", "0.5", "0.6", "--inner.limit", "none", "--extra.limit", "7",
         "--settings", '{"a": [1, 2]}']
    )  # fmt: skip
    assert config == Example(
        items=(Item("one", {"k": 1}), Item("two", {"k": 1})),
        count=5,
        ratio=1e-3,
        kind="b",
        size="m",
        enabled=False,
        scaled=False,
        words=("p", "q"),
        pair=(0.5, 0.6),
        inner=Inner(limit=None),
        extra=Inner(limit=7),  # a field of an optional table turns it on
        settings={"a": [1, 2]},
    )
    assert resolved(["--item", "a", "--extra"]).extra == Inner()
    assert resolved(["--item", "a", "--words"]).words == ()


def test_a_name_declared_by_several_fields_sets_them_all_and_a_specific_flag_wins():
    config = resolved(["--item", "a", "--rate", "0.1"])
    assert (config.inner.rate, config.other.rate) == (0.1, 0.1)
    config = resolved(["--item", "a", "--other.rate", "0.9", "--rate", "0.1"])
    assert (config.inner.rate, config.other.rate) == (0.1, 0.9)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-n", "two"], "argument --count/-n: expected an integer, got 'two'"),
        (["--kind", "c"], "argument --kind: expected one of a, b, got 'c'"),
        (["--scaled", "maybe"], "expected true or false or 'none', got 'maybe'"),
        (["--settings", "[1]"], "must be a JSON object"),
        (["--settings", "{bad"], "not valid JSON"),
    ],
)
def test_a_bad_flag_value_is_a_usage_error_naming_flag_and_accepted_values(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        parser_of().parse_args(["--item", "a", *argv])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_bad_input_found_after_parsing_names_the_flag():
    with pytest.raises(ConfigError, match="--items: an item needs a name"):
        resolved(["--item", ""])
    with pytest.raises(ConfigError, match="--no-extra contradicts --extra.limit"):
        resolved(["--item", "a", "--no-extra", "--extra.limit", "2"])
    with pytest.raises(ConfigError, match="items is required: give --item, or set items in a"):
        resolved([])


def test_flags_override_the_file_and_the_file_overrides_the_defaults(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text(
        'count = 4\nlabel = "from file"\n\n[[items]]\nname = "f"\noptions = { k = 1 }\n\n'
        "[inner]\nrate = 0.75\n"
    )
    config = resolved(["-n", "9", "--options", '{"k": 2}'], path)
    assert config == Example(
        items=(Item("f", {"k": 2}),), count=9, label="from file", inner=Inner(rate=0.75)
    )
    # --item replaces the file's list; --options then applies to each item
    config = resolved(["--item", "g", "--item", "h", "--options", "{}"], path)
    assert config.items == (Item("g"), Item("h"))
    # --extra turns an optional table on, keeping what the file gives it; --no-extra turns it off
    path.write_text('[[items]]\nname = "f"\n\n[extra]\nrate = 0.1\n')
    assert resolved(["--extra"], path).extra == Inner(rate=0.1)
    assert resolved(["--no-extra"], path).extra is None


def test_written_config_reads_back_equal(tmp_path):
    config = Example(
        items=(Item("a b", {"nested": {"x": [1, 2.5]}, "none": None}), Item('ü\n"q"\t\\')),
        count=-3,
        ratio=1e300,
        label='He said "hi"\nthen left \x7f\x01',
        kind="b",
        size="s",
        enabled=False,
        scaled=True,
        words=(),
        pair=(1e-300, 2.0),
        inner=Inner(rate=1e-6, limit=None),
        extra=Inner(),
        settings={"key with space": "v", "list": ["a", True], "far": [float("inf"), -1e-300]},
    )  # a float field is finite (refused otherwise); free-form settings may hold an infinity
    path = write_config(config, tmp_path / "config.toml", comment="a comment\nover two lines")
    assert path.read_text().startswith("# a comment\n# over two lines\n")
    assert read_config(Example, path) == config
    assert build(Example, parse_toml(to_toml(config))) == config


def test_none_is_written_as_none_and_a_mapping_holding_none_as_json():
    text = to_toml(Example(items=(Item("a", {"x": None}),)))
    assert 'size = "none"' in text and 'extra = "none"' in text
    assert 'options = "{\\"x\\": null}"' in text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("colour = 1", "run.toml: unknown key 'colour' in the top level; Example accepts: items,"),
        (
            "[inner]\nspeed = 1",
            "run.toml: unknown key 'speed' in [inner]; Inner accepts: rate, limit",
        ),
        ("count = 1.5", "run.toml: count: expected an integer, got 1.5"),
        ("count = true", "run.toml: count: expected an integer, got True"),
        ("kind = 'c'", "run.toml: kind: expected one of a, b, got 'c'"),
        ("words = 'x'", "run.toml: words: expected a list of (a string), got 'x'"),
        ("pair = [1.0]", "run.toml: pair: expected a list of 2 (a number), got [1.0]"),
        ("inner = 3", "run.toml: inner: expected a table of Inner fields, got 3"),
        ("[[items]]\noptions = {}", "run.toml: [items[0]] needs 'name' (Each item names itself.)"),
        ("[[items]]\nname = 1", "run.toml: items[0].name: expected a string, got 1"),
        ("count = ", "run.toml: not valid TOML"),
    ],
)
def test_a_bad_file_is_refused_naming_file_key_and_what_is_accepted(tmp_path, text, message):
    path = tmp_path / "run.toml"
    path.write_text(text if "[[items]]" in text else f'{text}\n[[items]]\nname = "a"\n')
    with pytest.raises(ConfigError) as error:
        resolved([], path)
    assert message in str(error.value).replace(str(tmp_path) + "/", "")


def test_a_missing_or_yaml_file_is_named():
    with pytest.raises(ConfigError, match="cannot read config file /nonexistent.toml"):
        resolved([], "/nonexistent.toml")
    with pytest.raises(ConfigError, match="config files are TOML"):
        resolved([], "run.yaml")


def test_differences_compare_nested_tables_and_skip_keys_an_older_file_lacks():
    before = dump(Example(items=(Item("a"),)))
    after = dump(Example(items=(Item("b"),), inner=Inner(rate=0.1), extra=Inner()))
    del before["label"]
    assert differences(Example, before, after) == [
        ("items", [{"name": "a", "options": {}}], [{"name": "b", "options": {}}]),
        ("inner.rate", 0.5, 0.1),
        ("extra", "none", {"rate": 0.5, "limit": 3}),
    ]
    assert differences(Example, {**after, "settings": None}, after) == [("settings", "none", {})]


# --- rlvr eval -----------------------------------------------------------------------------------


def test_rlvr_eval_flags_and_file(tmp_path, capsys):
    path = tmp_path / "eval.toml"
    path.write_text('env_id = "rlvr/Math-v0"\nepisodes = 3\n[kwargs]\ndifficulty = 1\n')
    assert main(["eval", "--config", str(path), "--seed", "4", "--print-config"]) == 0
    config = build(EvalConfig, parse_toml(capsys.readouterr().out))
    assert config == EvalConfig("rlvr/Math-v0", episodes=3, seed=4, kwargs={"difficulty": 1})
    args = build_parser().parse_args(
        ["eval", "rlvr/SQL-v0", "--no-progress", "--samples", "2", "--temperature", "1"]
    )
    assert resolve(EvalConfig, args) == EvalConfig(
        "rlvr/SQL-v0", samples=2, progress=False, sampling=SamplingParams(temperature=1.0)
    )


def test_rlvr_eval_needs_an_env(capsys):
    assert main(["eval", "--episodes", "2"]) == 1
    assert "env_id is required: give ENV_ID" in capsys.readouterr().err


# --- numbers no field means, deep or undecodable files -----------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("share = nan", "share must be a finite number, got nan"),
        ("share = -inf", "share must be a finite number, got -inf"),
        ("limit = inf", "limit must be a finite number, got inf"),
        ("pair = [0.5, nan]", "pair[1] must be a finite number, got nan"),
        ("seed = -1", "seed must be in [0, 4294967295] (seeds are 32-bit unsigned integers)"),
        ("seed = 4294967296", "seed must be in [0, 4294967295]"),
        ("first_seed = -3", "first_seed must be in [0, 4294967295]"),
        ("parts = 0", "parts must be >= 1, got 0"),
        ("[inner]\nrate = nan", "inner.rate must be a finite number, got nan"),
    ],
)
def test_a_number_no_field_means_is_refused_at_load_naming_file_and_key(tmp_path, text, message):
    path = tmp_path / "run.toml"
    path.write_text(text + "\n")
    with pytest.raises(ConfigError) as error:
        resolved([], path, Numbers)
    assert str(error.value).startswith(f"{path}: {message}")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--share", "nan"], "share must be a finite number, got nan"),
        (["--pair", "0.1", "1e999"], "pair[1] must be a finite number, got inf"),
        (["--count", str(2**64)], "count must be in [-9223372036854775808, 9223372036854775807]"),
        (["--inner.limit", str(-(2**70))], "inner.limit must be in [-9223372036854775808,"),
        (["--seed", str(2**64)], "seed must be in [0, 4294967295]"),
        (["--parts", "-2"], "parts must be >= 1, got -2"),
    ],
)
def test_a_number_no_field_means_is_refused_from_a_flag(argv, message):
    with pytest.raises(ConfigError, match=re.escape(f"command line: {message}")):
        resolved(argv, cls=Numbers)


def test_the_numbers_a_field_means_are_kept(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text(
        f"share = -1e300\ncount = {-(2**63)}\nseed = {MAX_SEED}\nfirst_seed = 0\nparts = 7\n"
        "[settings]\nanything = inf\n"
    )
    config = resolved([], path, Numbers)
    numbers = (config.share, config.count, config.seed, config.parts)
    assert numbers == (-1e300, -(2**63), MAX_SEED, 7)
    assert config.settings == {"anything": float("inf")}


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"share": float("nan")}, "share must be a finite number, got nan"),
        ({"pair": (0.5, float("inf"))}, "pair[1] must be a finite number, got inf"),
        ({"seed": -1}, "seed must be in [0, 4294967295]"),
        ({"count": 2**63}, "count must be in [-9223372036854775808, 9223372036854775807]"),
    ],
)
def test_a_config_made_in_python_is_checked_as_a_file_is(overrides, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        Numbers(**overrides)


@pytest.mark.parametrize(
    "value",
    [
        "[" * 5000 + "]" * 5000,
        "{ a = " * 3000 + "1" + " }" * 3000,
        "[" * 150 + "]" * 150,  # deeper than any config, though within the stack
    ],
    ids=["arrays", "inline-tables", "shallow-enough-for-tomllib"],
)
def test_a_file_nested_too_deeply_is_refused_naming_it(tmp_path, value):
    path = tmp_path / "run.toml"
    path.write_text(f"settings = {{ deep = {value} }}\n")
    with pytest.raises(ConfigError, match=re.escape(f"{path}: tables and arrays nested more than")):
        resolved([], path, Numbers)


def test_a_file_that_is_not_utf8_is_refused_naming_it_and_a_bom_is_no_error(tmp_path):
    path = tmp_path / "run.toml"
    path.write_bytes(b"share = 0.25\nsettings = { label = '\xe9t\xe9' }\n")  # Latin-1
    with pytest.raises(ConfigError) as error:
        resolved([], path, Numbers)
    assert str(error.value) == (
        f"config file {path}: not UTF-8 text (byte 0xe9 at line 2 column 23); save the file as "
        "UTF-8"
    )
    path.write_bytes(b"\xef\xbb\xbfshare = 0.25\n")
    assert resolved([], path, Numbers).share == 0.25


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": NaN}', "NaN is not a JSON number"),
        ('{"a": [1, -Infinity]}', "-Infinity is not a JSON number"),
        ("[" * 5000, "JSON nested more than 100 levels deep"),
        ('{"a": ' * 200 + "1" + "}" * 200, "JSON nested more than 100 levels deep"),
    ],
)
def test_a_json_flag_that_is_not_plain_json_is_a_usage_error(text, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        parser_of(Numbers).parse_args(["--settings", text])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "argument --settings: not valid JSON: " in err and message in err


def test_a_single_table_for_a_list_of_tables_names_double_brackets() -> None:
    """`[items]` written for `[[items]]` (the TOML slip every list of tables invites)."""
    with pytest.raises(ConfigError) as error:
        build(Example, parse_toml('[items]\nname = "a"\n', "run.toml"), "run.toml")
    assert str(error.value) == (
        "run.toml: items: expected a list of (a table of Item fields), got {'name': 'a'}; "
        "write [[items]] (double brackets) above each table"
    )


SAMPLING_FIELDS = {"temperature", "top_p", "top_k", "max_new_tokens", "stop", "seed"}
"""`SamplingParams`' fields (`test_sampling_fields_are_checked_in_one_place` checks the set)."""


def _refusals_of_sampling_fields(path) -> set[str]:
    """The functions of a source file holding an `if` that compares a sampling field (by name, or
    `x.name`) and raises: a check of that field's value."""
    import ast

    def names(node: ast.AST) -> set[str]:
        found = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        return found | {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}

    found = set()
    for function in ast.walk(ast.parse(path.read_text())):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(function):
            if (
                isinstance(node, ast.If)
                and any(isinstance(test, ast.Compare) for test in ast.walk(node.test))
                and names(node.test) & (SAMPLING_FIELDS - {"seed", "stop"})
                and any(isinstance(inner, ast.Raise) for inner in node.body)
            ):
                found.add(function.name)
    return found


def test_sampling_fields_are_checked_in_one_place() -> None:
    """`temperature` was once checked in four places (the train config and each learner): each
    rule about a sampling value now has one owner. `SamplingParams` declares every field's range
    (`Range`, checked by `check_numbers`); each rule across settings has one function: more than
    one greedy sample per task (`check_samples`), training at temperature 0
    (`sampled_temperature`, which `RunSettings` and a learner made directly call) and a GRPO
    overlong buffer as long as the reply budget (`overlong_buffer_fits`)."""
    from pathlib import Path

    from rlvr.core.policy import SamplingParams

    assert {field.name for field in dataclasses.fields(SamplingParams)} == SAMPLING_FIELDS
    root = Path(__file__).resolve().parents[1]
    packages = ("agents", "leaderboards", "envs", "rlvr", "integrations", "verifiers", "sandboxes")
    checks = {
        f"{path.relative_to(root)}:{function}"
        for package in packages
        for path in sorted((root / package).rglob("*.py"))
        if not path.is_symlink() and not any(part.startswith(".") for part in path.parts)
        for function in _refusals_of_sampling_fields(path)
    }
    assert checks == {
        "rlvr/core/policy.py:check_samples",
        "agents/learners/base.py:sampled_temperature",
        "agents/learners/base.py:overlong_buffer_fits",
    }


def test_every_learner_refuses_greedy_training_with_one_message() -> None:
    from rlvr.agents.learners.base import RunSettings

    settings = dict(max_new_tokens=4, completion_budget=4, seed=0, group_size=2)
    with pytest.raises(ValueError) as error:
        RunSettings(temperature=0.0, episodes_per_step=2, **settings)
    assert str(error.value) == (
        "sampling.temperature must be > 0: RL trains on sampled replies (e.g. --temperature 1; "
        "held-out evaluation is greedy either way)"
    )
