"""`rlvr.config` is a package of small modules; the names it had as one module still resolve,
to the very objects its parts define."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import rlvr.config

# The public names of rlvr/config.py before it became a package (and `_Inline`, which
# rlvr.agents.checkpoints imports).
FORMER_NAMES = (
    "CommandParser", "ConfigError", "EACH", "FieldCli", "INT64", "MAX_SEED", "NONE", "Positive",
    "Range", "Seed", "_Inline", "add_command", "add_config_arguments", "add_flags", "build",
    "check_numbers", "cli", "defer", "differences", "dump", "field_default", "field_docs",
    "flag_options", "flag_type", "flag_values", "from_text", "load_file", "parse_toml",
    "read_config", "read_text_file", "resolve", "to_toml", "toml_text", "upgraded",
    "write_config",
)  # fmt: skip
PARTS = ("schema", "values", "files", "flags", "commands")


@pytest.mark.parametrize("name", FORMER_NAMES)
def test_former_name_is_the_object_its_part_defines(name: str) -> None:
    value = getattr(rlvr.config, name)
    owners = [
        part
        for part in PARTS
        if getattr(importlib.import_module(f"rlvr.config.{part}"), name, None) is value
    ]
    core = importlib.import_module("rlvr.core.fields")
    assert owners or getattr(core, name, None) is value, name
    assert name in rlvr.config.__all__


def test_each_part_is_a_readable_size() -> None:
    folder = Path(rlvr.config.__file__).parent
    sizes = {path.name: len(path.read_text().splitlines()) for path in folder.glob("*.py")}
    assert set(sizes) == {"__init__.py", *(f"{part}.py" for part in PARTS)}
    assert max(sizes.values()) <= 600, sizes
