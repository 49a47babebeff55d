"""Families: a family is one folder holding its envs, judge, task source and data, audit, suite
and a descriptor (`family.toml`); the registry, `rlvr.builtin_envs.FAMILIES`, names the built-in
ones, one line each, and `register_family(folder)` adds one of your own.

Standard library only, and imported only when something asks for the families (registering the
envs with Gymnasium, a listing, a suite or an audit looked up by name): `import rlvr` stays
cheap. docs/design.md ("Families") says why a family is a folder with a descriptor.
"""

from __future__ import annotations

import re
import sys
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlvr.builtin_envs import FAMILIES, EnvEntry, register_entries
from rlvr.core.errors import RlvrError

ENVS_FOLDER = Path(__file__).parent / "envs"
"""`rlvr.envs`'s folder (found by path, not imported: reading the registry imports no env)."""
DESCRIPTOR = "family.toml"
SHARED_SUITES = Path(__file__).parent / "leaderboards" / "suites"
"""The suites across families (`all`, `demo`): a family's suite may not take their names."""


@dataclass(frozen=True)
class Family:
    """A family as its descriptor states it (`load_family` reads and checks one)."""

    name: str
    """The family's name; also the name of its suite (`rlvr bench --suite NAME`)."""
    folder: Path
    envs: tuple[EnvEntry, ...]
    """Its Gymnasium envs, self-correction variants last."""
    multiagent_envs: tuple[EnvEntry, ...] = ()
    """Its PettingZoo envs (`rlvr.envs.multiagent.make`)."""
    self_correct: Mapping[str, tuple[str, Mapping[str, Any]]] = field(default_factory=dict)
    """Base id -> (variant id, SelfCorrectEnv kwargs), as in `SELF_CORRECT_VARIANTS`."""
    suite: Path | None = None
    """Its leaderboard suite file, or None."""
    audits: Mapping[str, str] = field(default_factory=dict)
    """Env id -> "module:Auditor" (`rlvr audit ENV_ID`)."""
    docs: str = ""
    """Its docs page, relative to the repository root."""

    @property
    def env_ids(self) -> list[str]:
        return [entry.id for entry in (*self.envs, *self.multiagent_envs)]


class FamilyError(RlvrError, ValueError):
    """A family descriptor that cannot be used; the message names the file and the key."""


_Fail = Callable[[str, str], FamilyError]  # (key, problem) -> the error naming file and key


# --- reading a descriptor ------------------------------------------------------------------------

FAMILY_KEYS = ("name", "docs", "suite", "envs", "multiagent_envs")
ENV_KEYS = ("id", "entry_point", "max_episode_steps", "kwargs", "audit", "self_correct")
MULTIAGENT_KEYS = ("id", "entry_point", "kwargs")
SELF_CORRECT_KEYS = ("id", "feedback")
SELF_CORRECT_ENTRY_POINT = "rlvr.envs.self_correct:SelfCorrectEnv"
SELF_CORRECT_ATTEMPTS = 3
_ENV_ID = re.compile(r"^[\w:.-]+/[\w:.-]+-v\d+$")  # Gymnasium's namespace/Name-vN


def load_family(folder: str | Path) -> Family:
    """The family whose descriptor is `folder/family.toml`, checked (`FamilyError` naming the
    file and the key otherwise). Imports none of the family's code."""
    path = Path(folder) / DESCRIPTOR
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FamilyError(f"{path}: no family descriptor; a family folder holds one") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise FamilyError(f"{path}: cannot read it: {exc}") from None
    return _family(data, path)


def _family(data: Mapping[str, Any], path: Path) -> Family:
    def fail(key: str, problem: str) -> FamilyError:
        return FamilyError(f"{path}: {key}: {problem}")

    _known_keys(data, FAMILY_KEYS, "the descriptor", fail)
    name = _text(data, "name", fail, required=True)
    envs, self_correct, audits = [], {}, {}
    for where, table in _tables(data, "envs", fail):
        _known_keys(table, ENV_KEYS, where, fail)
        entry = _entry(table, where, fail)
        envs.append(entry)
        if "audit" in table:
            audits[entry.id] = _import_string(table, "audit", where, fail)
        if "self_correct" in table:
            self_correct[entry.id] = _variant(table["self_correct"], f"{where}.self_correct", fail)
    multiagent = []
    for where, table in _tables(data, "multiagent_envs", fail):
        _known_keys(table, MULTIAGENT_KEYS, where, fail)
        multiagent.append(_entry(table, where, fail))
    if not envs and not multiagent:
        raise fail("envs", "a family has at least one [[envs]] or [[multiagent_envs]] table")
    suite = _text(data, "suite", fail)
    if suite is not None and not (path.parent / suite).is_file():
        raise fail("suite", f"no file {suite!r} in {path.parent}")
    family = Family(
        name=name,
        folder=path.parent,
        envs=(*envs, *self_correct_entries(envs, self_correct)),
        multiagent_envs=tuple(multiagent),
        self_correct=self_correct,
        suite=None if suite is None else path.parent / suite,
        audits=audits,
        docs=_text(data, "docs", fail) or "",
    )
    ids = family.env_ids
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise fail("envs", f"{repeated} listed more than once; give each env its own id")
    return family


def _known_keys(
    table: Mapping[str, Any], allowed: tuple[str, ...], where: str, fail: _Fail
) -> None:
    unknown = sorted(set(table) - set(allowed))
    if unknown:
        raise fail(where, f"unknown keys {unknown}; allowed: {list(allowed)}")


def _text(
    table: Mapping[str, Any], key: str, fail: _Fail, *, where: str = "", required: bool = False
) -> Any:
    name = f"{where}.{key}" if where else key
    if key not in table:
        if required:
            raise fail(name, "missing; add it")
        return None
    value = table[key]
    if not isinstance(value, str) or not value.strip():
        raise fail(name, f"must be a non-empty string, got {value!r}")
    return value


def _tables(data: Mapping[str, Any], key: str, fail: _Fail) -> list[tuple[str, Mapping[str, Any]]]:
    tables = data.get(key, [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise fail(key, f"must be an array of tables: write [[{key}]] above each env")
    return [(f"{key}[{i}]", table) for i, table in enumerate(tables)]


def _entry(table: Mapping[str, Any], where: str, fail: _Fail) -> EnvEntry:
    env_id = _text(table, "id", fail, where=where, required=True)
    if not _ENV_ID.match(env_id):
        raise fail(f"{where}.id", f"ids look like 'namespace/Name-v0', got {env_id!r}")
    steps = table.get("max_episode_steps")
    if steps is not None and (type(steps) is not int or steps < 1):
        raise fail(f"{where}.max_episode_steps", f"must be an int >= 1, got {steps!r}")
    kwargs = table.get("kwargs", {})
    if not isinstance(kwargs, dict):
        raise fail(f"{where}.kwargs", f"must be a table, got {kwargs!r}")
    entry_point = _import_string(table, "entry_point", where, fail)
    return EnvEntry(env_id, entry_point, steps, kwargs)


def _import_string(table: Mapping[str, Any], key: str, where: str, fail: _Fail) -> str:
    value = _text(table, key, fail, where=where, required=True)
    module, _, attribute = value.partition(":")
    if not module or not attribute.isidentifier():
        raise fail(f"{where}.{key}", f"must be 'module:attribute', got {value!r}")
    return value


def _variant(table: Any, where: str, fail: _Fail) -> tuple[str, Mapping[str, Any]]:
    if not isinstance(table, dict):
        raise fail(where, f"must be a table {{ id = ..., feedback = ... }}, got {table!r}")
    _known_keys(table, SELF_CORRECT_KEYS, where, fail)
    variant = _text(table, "id", fail, where=where, required=True)
    feedback = table.get("feedback", "binary")
    if feedback not in ("binary", "details"):
        raise fail(f"{where}.feedback", f"must be 'binary' or 'details', got {feedback!r}")
    return variant, {"feedback": feedback}


def self_correct_entries(
    entries: Iterable[EnvEntry],
    variants: Mapping[str, tuple[str, Mapping[str, Any]]] | None = None,
) -> tuple[EnvEntry, ...]:
    """The self-correction variants (`variants`, by default `SELF_CORRECT_VARIANTS`) whose base
    env is among `entries`."""
    present = {entry.id for entry in entries}
    chosen = self_correct_variants() if variants is None else variants
    return tuple(
        EnvEntry(
            variant,
            SELF_CORRECT_ENTRY_POINT,
            kwargs={"env": base, "max_attempts": SELF_CORRECT_ATTEMPTS, **kwargs},
        )
        for base, (variant, kwargs) in chosen.items()
        if base in present
    )


# --- the registry --------------------------------------------------------------------------------

_builtin: tuple[Family, ...] | None = None
_registered: list[Family] = []


def builtin_families() -> tuple[Family, ...]:
    """The families of `FAMILIES`, read once."""
    global _builtin
    if _builtin is None:
        families = tuple(load_family(ENVS_FOLDER / folder) for folder in FAMILIES)
        _check_distinct(families)
        _builtin = families
    return _builtin


def families() -> tuple[Family, ...]:
    """Every family: the built-in ones, then those added with `register_family`."""
    return (*builtin_families(), *_registered)


def register_family(folder: str | Path) -> Family:
    """Add the family in `folder` (a folder holding a `family.toml`) to the registry and register
    its envs with Gymnasium: what a line of `FAMILIES` does for a built-in family. Its suite is
    then found by name (`rlvr.leaderboards.load_suite`), its audits by `rlvr audit`."""
    family = load_family(folder)
    if family.multiagent_envs:
        raise FamilyError(
            f"{family.folder / DESCRIPTOR}: multiagent_envs: register a multi-agent env of your "
            "own with rlvr.envs.multiagent.register"
        )
    if any(other.folder.resolve() == family.folder.resolve() for other in families()):
        return family  # registering twice is harmless
    _check_distinct((*families(), family))
    _check_unregistered(family)
    _registered.append(family)
    if "gymnasium" in sys.modules:  # else `import gymnasium` registers it with the built-in ones
        import gymnasium as gym

        register_entries(gym, family.envs)
    return family


def _check_distinct(all_families: Iterable[Family]) -> None:
    """Every env id, family name and suite name belongs to exactly one family (a family's suite
    is named after it, so its name is no suite's across families either)."""
    owner: dict[str, Path] = {}
    for family in all_families:
        path = family.folder / DESCRIPTOR
        shared = SHARED_SUITES / f"{family.name}.toml"
        if family.suite is not None and shared.is_file():
            raise FamilyError(f"{path}: name {family.name!r} is the suite {shared}; rename it")
        for key in (f"name {family.name!r}", *family.env_ids):
            if key in owner:
                raise FamilyError(f"{path}: {key} is already taken by {owner[key]}; rename it")
            owner[key] = path


def _check_unregistered(family: Family) -> None:
    """A family's ids are its own: an id something else registered with Gymnasium
    (`register_task_env`, `gym.register`) is not silently kept in its place."""
    gym = sys.modules.get("gymnasium")
    taken = [env_id for env_id in family.env_ids if gym is not None and env_id in gym.registry]
    if taken:
        raise FamilyError(
            f"{family.folder / DESCRIPTOR}: envs: {taken} already registered with Gymnasium; "
            "give the family's envs new ids (or versions)"
        )


def family_suites() -> dict[str, Path]:
    """Suite name (the family's name) -> suite file, for the families that have one."""
    return {family.name: family.suite for family in families() if family.suite is not None}


def family_audits() -> dict[str, str]:
    """Audited env id -> "module:Auditor", over every family."""
    return {env_id: auditor for family in families() for env_id, auditor in family.audits.items()}


def family_of(env_id: str) -> Family | None:
    """The family an env id belongs to, if any."""
    return next((family for family in families() if env_id in family.env_ids), None)


def builtin_envs() -> tuple[EnvEntry, ...]:
    """The built-in families' Gymnasium envs (`rlvr.builtin_envs.BUILTIN_ENVS`)."""
    return tuple(entry for family in builtin_families() for entry in family.envs)


def builtin_multiagent_envs() -> tuple[EnvEntry, ...]:
    """The built-in families' PettingZoo envs (`rlvr.builtin_envs.MULTIAGENT_ENVS`)."""
    return tuple(entry for family in builtin_families() for entry in family.multiagent_envs)


def self_correct_variants() -> dict[str, tuple[str, Mapping[str, Any]]]:
    """Base id -> (variant id, kwargs) over the built-in families (`SELF_CORRECT_VARIANTS`)."""
    return {base: v for family in builtin_families() for base, v in family.self_correct.items()}
