"""Config dataclasses as the one source of settings: flags, files and defaults all come from them.

A config is a dataclass whose fields hold the defaults, each with a docstring under it. From the
class alone this module

- generates the command line (`add_flags`): `--field-name` for every field, `--outer.field-name`
  for the fields of a nested dataclass, the field's docstring and default as its help,
  `--name/--no-name` for booleans and for an optional nested dataclass (`--lora/--no-lora`), and
  the extra names a field declares in its metadata (`field(..., metadata=cli("--out"))`). A name
  declared by several fields (`--lr` on both learners) sets all of them;
- reads a TOML file into it (`load_file` + `build`), refusing an unknown key or a value of the
  wrong type with the file, the key and what is accepted;
- refuses numbers no field means, wherever a config is made (file, flag or Python, through
  `check_numbers` in each config's `__post_init__`): NaN or an infinity in a float field, an int
  beyond 64 bits, and a value outside the `Range` a field's type declares
  (`seed: Seed`, `episodes: Positive`);
- layers the flags over a file (`resolve`: file first, then flags, then the defaults);
- writes it back as TOML (`to_toml`, `write_config`) so that reading the file gives an equal config.

TOML has no null: None is spelled "none" in files and flags (`max_turns = "none"`,
`--max-grad-norm none`), and a mapping holding None is written as a JSON string.

The parts, by what changes together: `schema` (reading a class: field docs, types, defaults),
`values` (type checking and conversion: `build`, `dump`), `files` (TOML reading and writing),
`flags` (the generated command line and `resolve`) and `commands` (subcommands wired to a config
class). Import from `rlvr.config`: these names are its public interface.
"""

from __future__ import annotations

from rlvr.config.commands import CommandParser, add_command, add_config_arguments, defer
from rlvr.config.files import (
    load_file,
    parse_toml,
    read_config,
    read_text_file,
    to_toml,
    toml_text,
    write_config,
)
from rlvr.config.flags import add_flags, flag_options, flag_values, resolve
from rlvr.config.schema import EACH, NONE, ConfigError, field_default, field_docs
from rlvr.config.values import _Inline, build, differences, dump, flag_type, from_text, upgraded
from rlvr.core.fields import (
    INT64,
    MAX_SEED,
    FieldCli,
    Positive,
    Range,
    Seed,
    check_numbers,
    cli,
)

__all__ = [
    "EACH",
    "INT64",
    "MAX_SEED",
    "NONE",
    "CommandParser",
    "ConfigError",
    "FieldCli",
    "Positive",
    "Range",
    "Seed",
    "_Inline",
    "add_command",
    "add_config_arguments",
    "add_flags",
    "build",
    "check_numbers",
    "cli",
    "defer",
    "differences",
    "dump",
    "field_default",
    "field_docs",
    "flag_options",
    "flag_type",
    "flag_values",
    "from_text",
    "load_file",
    "parse_toml",
    "read_config",
    "read_text_file",
    "resolve",
    "to_toml",
    "toml_text",
    "upgraded",
    "write_config",
]
