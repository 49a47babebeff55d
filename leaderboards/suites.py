"""Benchmark suites: which envs, which tasks, how many samples, how to sample. Kept as TOML files.

A suite pins everything that decides a score, so two results of the same suite are comparable:
env ids with their version, env kwargs, the held-out split, seeds, episodes, samples per task,
pass@k, the sampling settings and the bootstrap settings of the confidence intervals. Built-in
suites ship in their families' folders (`rlvr.builtin_envs`) and in `rlvr/leaderboards/suites/`
(those across families); any other `.toml` file with the same keys works too.
See docs/leaderboards.md for the format.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

import gymnasium as gym

from rlvr.agents.policy import SamplingParams
from rlvr.families import family_suites
from rlvr.leaderboards.errors import SuiteError

SUITE_KEYS = {
    "name": "the suite's name (results of different suites are never ranked together)",
    "description": "one line saying what the suite measures",
    "split": 'held-out split passed to every env as kwargs["split"], or false for none',
    "seed": "episode i of an env resets with seed + i",
    "episodes": "tasks per env",
    "index_tasks": "true: episode i poses task i of the split (each task once), not a seeded draw",
    "samples": "samples per task (pass@k needs samples >= k)",
    "pass_at_k": "list of k for which pass@k is reported",
    "imports": "modules to import before making the envs (they register the envs)",
    "include": "other suites (built-in names or paths) whose envs this suite runs too",
    "sampling": "table: temperature, top_p, top_k, max_new_tokens, stop, seed",
    "bootstrap": "table: resamples, confidence, seed of the confidence intervals",
    "envs": (
        "array of tables [[envs]] with id, and optionally label, kwargs, split, seed, episodes, "
        "index_tasks"
    ),
}
ENV_KEYS = ("id", "label", "kwargs", "split", "seed", "episodes", "index_tasks")
ENV_FIELDS = ("id", "label", "kwargs", "seed", "episodes", "index_tasks")
"""The keys of a resolved env (`SuiteEnv.to_dict`)."""
SUITE_FIELDS = (
    "name", "description", "envs", "samples", "pass_at_k", "sampling", "bootstrap", "imports"
)  # fmt: skip
"""The keys of a resolved suite (`Suite.to_dict`)."""
BOOTSTRAP_KEYS = ("resamples", "confidence", "seed")
MAX_RESAMPLES = 100_000
"""Bootstrap replicates a suite may ask for (more only costs memory and time after a run)."""
MAX_EPISODES = 10_000_000
"""Tasks per env a suite may pose. Counts are bounds on work (a suite read back from a stored
result or a side file is checked before anything iterates over its counts)."""
MAX_SAMPLES = 10_000
"""Samples per task a suite may ask for."""
MAX_SEED = 2**63 - 1
"""Largest seed of any episode (SQLite's largest integer: the store indexes traces by seed)."""


@dataclass(frozen=True)
class SuiteEnv:
    """One env of a suite, fully resolved: `gym.make(id, **kwargs)`, episode i seeded seed + i."""

    id: str
    """Gymnasium id with its version, e.g. `rlvr/Math-v0`."""
    label: str
    """Unique name of this entry within the suite (the id unless an id appears twice)."""
    kwargs: Mapping[str, Any]
    """Keyword arguments of `gym.make`, the held-out split included."""
    seed: int
    """Seed of episode 0; episode i uses seed + i."""
    episodes: int
    """Number of tasks posed."""
    index_tasks: bool = False
    """True: episode i resets with `options={"task_index": i}` (each task of the split once)."""

    def __post_init__(self) -> None:
        # Checked here, not only when a suite file is parsed: a suite is also rebuilt from
        # stored results and from side files (`from_dict`), which anyone can edit.
        _env_id(self.id, "env id")
        where = f"env {_text(_typed(self.label, str, 'env label'), 'env label')!r}"
        kwargs = _typed(self.kwargs, Mapping, f"{where}: kwargs")
        if not all(isinstance(key, str) for key in kwargs):
            raise SuiteError(f"{where}: kwargs must have string keys, got {list(kwargs)!r}")
        _non_negative(self.seed, f"{where}: seed")
        _positive(self.episodes, f"{where}: episodes")
        if self.episodes > MAX_EPISODES:
            raise SuiteError(f"{where}: episodes must be <= {MAX_EPISODES}, got {self.episodes}")
        if self.seed + self.episodes - 1 > MAX_SEED:
            raise SuiteError(f"{where}: seed + episodes must stay <= {MAX_SEED}")
        _typed(self.index_tasks, bool, f"{where}: index_tasks")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "kwargs": dict(self.kwargs)}

    @classmethod
    def from_dict(cls, data: Any, where: str) -> SuiteEnv:
        """Inverse of `to_dict` (`where`: the entry's path, for messages)."""
        _check_keys(_typed(data, Mapping, where), ENV_FIELDS, where)
        missing = [key for key in ENV_FIELDS if key not in data and key != "index_tasks"]
        if missing:
            raise SuiteError(f"{where} lacks {missing}")
        return cls(**data)


@dataclass(frozen=True)
class Bootstrap:
    """How confidence intervals are computed (a percentile bootstrap over tasks)."""

    resamples: int = 1000
    """Bootstrap replicates; more gives steadier interval ends."""
    confidence: float = 0.95
    """Coverage of the interval, in (0, 1)."""
    seed: int = 0
    """Seed of the resampling generator, so intervals are reproducible."""

    def __post_init__(self) -> None:
        if not _is_int(self.resamples) or self.resamples < 10:
            raise SuiteError(f"bootstrap.resamples must be an int >= 10, got {self.resamples!r}")
        if self.resamples > MAX_RESAMPLES:
            raise SuiteError(
                f"bootstrap.resamples must be <= {MAX_RESAMPLES}, got {self.resamples}"
            )
        if not isinstance(self.confidence, (int, float)) or not 0.0 < self.confidence < 1.0:
            raise SuiteError(f"bootstrap.confidence must be in (0, 1), got {self.confidence!r}")
        # Checked here, not when scoring: a bad seed would otherwise fail after the whole run.
        if not _is_int(self.seed) or self.seed < 0:
            raise SuiteError(f"bootstrap.seed must be an int >= 0, got {self.seed!r}")


@dataclass(frozen=True)
class Suite:
    """A benchmark suite (see the module docstring). Build one with `load_suite`."""

    name: str
    description: str
    envs: tuple[SuiteEnv, ...]
    samples: int = 1
    pass_at_k: tuple[int, ...] = (1,)
    sampling: SamplingParams = field(default_factory=SamplingParams)
    bootstrap: Bootstrap = field(default_factory=Bootstrap)
    imports: tuple[str, ...] = ()
    source: str = ""
    """Where the suite was read from (not part of its definition)."""

    def __post_init__(self) -> None:
        _text(_typed(self.name, str, "name"), "name")
        _typed(self.description, str, "description")
        if not self.envs:
            raise SuiteError(f"suite {self.name!r} has no envs; add at least one [[envs]] table")
        if not all(isinstance(env, SuiteEnv) for env in self.envs):
            raise SuiteError("envs must be SuiteEnv entries")
        if not _is_int(self.samples) or not 1 <= self.samples <= MAX_SAMPLES:
            raise SuiteError(f"samples must be an int in [1, {MAX_SAMPLES}], got {self.samples!r}")
        if not isinstance(self.sampling, SamplingParams):
            raise SuiteError(f"sampling must be SamplingParams, got {self.sampling!r}")
        if not isinstance(self.bootstrap, Bootstrap):
            raise SuiteError(f"bootstrap must be a Bootstrap, got {self.bootstrap!r}")
        if not all(isinstance(module, str) for module in self.imports):
            raise SuiteError(f"imports must be module names, got {list(self.imports)!r}")
        bad = [k for k in self.pass_at_k if not _is_int(k) or not 1 <= k <= self.samples]
        if bad or not self.pass_at_k:
            raise SuiteError(
                f"pass_at_k {list(self.pass_at_k)} must be ints between 1 and samples="
                f"{self.samples}; raise samples or drop {bad}"
            )
        try:
            self.sampling.check_samples(self.samples, "set sampling.temperature > 0")
        except ValueError as exc:
            raise SuiteError(str(exc)) from None
        labels = [env.label for env in self.envs]
        repeated = sorted({label for label in labels if labels.count(label) > 1})
        if repeated:
            raise SuiteError(
                f"suite {self.name!r} lists {repeated} more than once; give each entry a distinct "
                "label = '...'"
            )

    def to_dict(self) -> dict[str, Any]:
        """The definition as plain data (what the fingerprint covers; `source` is left out)."""
        sampling = asdict(self.sampling)
        sampling["stop"] = list(self.sampling.stop)
        return {
            "name": self.name,
            "description": self.description,
            "envs": [env.to_dict() for env in self.envs],
            "samples": self.samples,
            "pass_at_k": list(self.pass_at_k),
            "sampling": sampling,
            "bootstrap": asdict(self.bootstrap),
            "imports": list(self.imports),
        }

    @classmethod
    def from_dict(cls, data: Any, source: str = "") -> Suite:
        """Inverse of `to_dict` (rebuilds the suite of a stored result or a side file, checking
        every value as parsing a suite file does)."""
        _check_keys(_typed(data, Mapping, "the suite"), SUITE_FIELDS, "the suite")
        entries = _require(data, "envs", list, "the suite")
        try:
            return cls(
                name=_require(data, "name", str, "the suite"),
                description=data.get("description", ""),
                envs=tuple(SuiteEnv.from_dict(env, f"envs[{i}]") for i, env in enumerate(entries)),
                samples=_require(data, "samples", int, "the suite"),
                pass_at_k=tuple(_require(data, "pass_at_k", list, "the suite")),
                sampling=sampling_table(data, source or "the suite"),
                bootstrap=Bootstrap(**_table(data, "bootstrap", BOOTSTRAP_KEYS)),
                imports=tuple(_strings(data, "imports")),
                source=source,
            )
        except (TypeError, ValueError) as exc:  # SamplingParams checks its own values
            raise SuiteError(f"the suite: {exc}") from None

    def fingerprint(self) -> str:
        """sha256 of the canonical definition: equal fingerprints mean the same benchmark."""
        text = json.dumps(self.to_dict(), sort_keys=True, default=str)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def env(self, label: str) -> SuiteEnv:
        for env in self.envs:
            if env.label == label:
                return env
        raise SuiteError(f"suite {self.name!r} has no env {label!r}; it has {self.labels}")

    @property
    def labels(self) -> list[str]:
        return [env.label for env in self.envs]

    def with_episodes(self, episodes: int) -> Suite:
        """The same suite with `episodes` tasks per env (a different benchmark: quick checks)."""
        if episodes < 1:
            raise SuiteError(f"episodes must be >= 1, got {episodes}")
        envs = tuple(replace(env, episodes=episodes) for env in self.envs)
        return replace(self, envs=envs)

    def import_modules(self) -> None:
        """Import the modules listed in `imports` (they register the suite's envs)."""
        import rlvr.envs  # noqa: F401  (registers the built-in envs)

        for module in self.imports:
            try:
                importlib.import_module(module)
            except ImportError as exc:
                raise SuiteError(
                    f"suite {self.name!r}: cannot import {module!r} listed in imports: {exc}"
                ) from None

    def check_envs(self, *, make: bool = False) -> None:
        """Raise `SuiteError` unless every env is registered and accepts its kwargs' names.

        `make=True` also builds each env once, so kwargs it rejects (a bad value, an unknown
        split) stop the run before a model is loaded or other envs have run.
        """
        self.import_modules()
        problems = [problem for env in self.envs if (problem := _env_problem(env))]
        if make and not problems:
            problems = [problem for env in self.envs if (problem := _make_problem(env))]
        if problems:
            raise SuiteError(f"suite {self.name!r} cannot run:\n- " + "\n- ".join(problems))


# --- loading --------------------------------------------------------------------------------------


def builtin_suite_names() -> list[str]:
    """Names of the suites shipped with rlvr-gym: the families' (`rlvr.builtin_envs`), and the
    ones across families in `rlvr/leaderboards/suites/`."""
    folder = resources.files("rlvr.leaderboards") / "suites"
    shared = [item.name[:-5] for item in folder.iterdir() if item.name.endswith(".toml")]
    return sorted({*shared, *family_suites()})


def load_suite(name_or_path: str | Path) -> Suite:
    """A built-in suite by name (`"math"`), or a suite file by path (`"my_suite.toml"`)."""
    path = Path(name_or_path)
    if path.suffix == ".toml" or path.is_file():  # a folder named like a suite is no suite
        if not path.is_file():
            raise SuiteError(f"{path}: no such suite file")
        return parse_suite(read_suite_file(path), source=str(path), base=path.parent)
    name = str(name_or_path)
    names = builtin_suite_names()
    if name not in names:
        raise SuiteError(
            f"no built-in suite {name!r}; use one of {names} or the path of a .toml suite file"
        )
    return parse_suite(_builtin_text(name), source=f"builtin:{name}", base=None)


def _builtin_text(name: str) -> str:
    path = (
        family_suites().get(name)
        or resources.files("rlvr.leaderboards") / "suites" / f"{name}.toml"
    )
    return path.read_text("utf-8")


def read_suite_file(path: str | Path, what: str = "suite file") -> str:
    """The text of a suite file a user names (`SuiteError` naming it when it is missing,
    unreadable or not UTF-8)."""
    from rlvr.config import ConfigError, read_text_file

    try:
        return read_text_file(path, what)
    except ConfigError as exc:
        raise SuiteError(str(exc)) from None


def parse_toml(text: str, source: str) -> dict[str, Any]:
    """The data of a suite's TOML text (`SuiteError` naming `source` when it is not valid TOML
    or nests deeper than any suite)."""
    from rlvr.config import ConfigError
    from rlvr.config import parse_toml as parse

    try:
        return parse(text, source)
    except ConfigError as exc:
        raise SuiteError(str(exc)) from None


def parse_suite(text: str, *, source: str = "<string>", base: Path | None = None) -> Suite:
    """Parse and validate a suite from TOML text; `base` resolves relative `include` paths."""
    data = parse_toml(text, source)
    try:
        return _build_suite(data, source, base, seen=(source,))
    except SuiteError as exc:
        if str(exc).startswith(source):
            raise
        raise SuiteError(f"{source}: {exc}") from None
    except (TypeError, ValueError) as exc:  # SamplingParams and friends validate themselves
        raise SuiteError(f"{source}: {exc}") from None


def _build_suite(
    data: Mapping[str, Any], source: str, base: Path | None, seen: tuple[str, ...]
) -> Suite:
    _check_keys(data, SUITE_KEYS, "the suite")
    name = _text(_require(data, "name", str, "the suite"), "name")
    defaults = {
        "split": data.get("split", "test"),
        "seed": _non_negative(data.get("seed", 0), "seed"),
        "episodes": _typed(data.get("episodes", 100), int, "episodes"),
        "index_tasks": _typed(data.get("index_tasks", False), bool, "index_tasks"),
    }
    entries = data.get("envs", [])
    if not isinstance(entries, list):
        raise SuiteError(
            "envs must be an array of tables: write [[envs]] (double brackets) above each env"
        )
    envs = [_build_env(entry, defaults, f"envs[{i}]") for i, entry in enumerate(entries)]
    imports = _strings(data, "imports")
    for included in _strings(data, "include"):
        suite = _load_included(included, base, seen)
        envs.extend(suite.envs)
        imports.extend(module for module in suite.imports if module not in imports)
    sampling = sampling_table(data, source)
    samples = _typed(data.get("samples", 1), int, "samples")
    if samples > 1 and sampling.seed is not None:
        raise SuiteError(
            f"sampling.seed with samples = {samples} gives every sample of a task the same seed: "
            "seeded servers (vLLM, OpenAI) then return one reply k times and pass@k equals "
            "pass@1; remove sampling.seed (the suite's seed already pins the tasks)"
        )
    bootstrap = _table(data, "bootstrap", BOOTSTRAP_KEYS)
    return Suite(
        name=name,
        description=_typed(data.get("description", ""), str, "description"),
        envs=tuple(envs),
        samples=samples,
        pass_at_k=tuple(_typed(data.get("pass_at_k", [1]), list, "pass_at_k")),
        sampling=sampling,
        bootstrap=Bootstrap(**bootstrap),
        imports=tuple(imports),
        source=source,
    )


def sampling_table(data: Mapping[str, Any], source: str) -> SamplingParams:
    """The `[sampling]` table of a suite or arena file (or of a stored result's suite) as
    `SamplingParams`, the sampling section every command shares: `rlvr.config` checks its keys
    and their types, `SamplingParams` their values."""
    from rlvr.config import build

    table = data.get("sampling", {})
    if not isinstance(table, Mapping):
        raise SuiteError(f"{source}: sampling must be a table, got {table!r}")
    try:
        return build(SamplingParams, table, source, "sampling")
    except ValueError as exc:
        raise SuiteError(str(exc)) from None


def _build_env(entry: Any, defaults: Mapping[str, Any], where: str) -> SuiteEnv:
    if not isinstance(entry, Mapping):
        raise SuiteError(f"{where} must be a table with an id, got {entry!r}")
    _check_keys(entry, ENV_KEYS, where)
    env_id = _env_id(_require(entry, "id", str, where), where)
    kwargs = dict(_typed(entry.get("kwargs", {}), dict, f"{where}.kwargs"))
    split = entry.get("split", defaults["split"])
    if split is not False:
        if not isinstance(split, str) or not split:
            raise SuiteError(f"{where}: split must be a split name or false, got {split!r}")
        if "split" in kwargs:
            raise SuiteError(f"{where}: set the split with split = ..., not in kwargs")
        kwargs["split"] = split
    return SuiteEnv(
        id=env_id,
        label=_text(_typed(entry.get("label", env_id), str, f"{where}.label"), f"{where}.label"),
        kwargs=kwargs,
        seed=_non_negative(entry.get("seed", defaults["seed"]), f"{where}.seed"),
        episodes=_positive(entry.get("episodes", defaults["episodes"]), f"{where}.episodes"),
        index_tasks=_typed(
            entry.get("index_tasks", defaults["index_tasks"]), bool, f"{where}.index_tasks"
        ),
    )


def _load_included(included: Any, base: Path | None, seen: tuple[str, ...]) -> Suite:
    if included.endswith(".toml"):
        if base is None:
            raise SuiteError(f"a built-in suite cannot include the file {included!r}")
        path = base / included
        source, next_base = str(path), path.parent
    else:
        if included not in builtin_suite_names():
            raise SuiteError(f"include: no built-in suite {included!r}")
        path, source, next_base = None, f"builtin:{included}", None
    # Cycles are found by the real file (`sub/../a.toml` is `a.toml`), not by the spelling.
    key = _identity(source, path)
    if key in [_identity(other, None) for other in seen]:
        raise SuiteError(f"include cycle: {' -> '.join((*seen, source))}")
    text = _read(path) if path is not None else _builtin_text(included)
    data = parse_toml(text, f"include: {source}")
    return _build_suite(data, key, next_base, (*seen, key))


def _identity(source: str, path: Path | None) -> str:
    if source.startswith("builtin:") or source.startswith("<"):
        return source
    return str((path if path is not None else Path(source)).resolve())


def _read(path: Path) -> str:
    if not path.is_file():
        raise SuiteError(f"include: no such suite file {path}")
    return read_suite_file(path, "include: suite file")


def _env_id(env_id: Any, where: str) -> str:
    """A Gymnasium id with its version (`rlvr/Math-v0`)."""
    _typed(env_id, str, where)
    try:
        _, _, version = gym.envs.registration.parse_env_id(env_id)
    except gym.error.Error as exc:
        raise SuiteError(f"{where}: {exc}") from None
    if version is None:
        raise SuiteError(f"{where}: {env_id!r} has no version; pin one, e.g. {env_id}-v0")
    return env_id


def _check_keys(data: Mapping[str, Any], allowed: Sequence[str] | Mapping[str, str], where: str):
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise SuiteError(f"{where} has unknown keys {unknown}; allowed: {sorted(allowed)}")


def _table(
    data: Mapping[str, Any], key: str, allowed: Sequence[str] | Mapping[str, Any]
) -> dict[str, Any]:
    table = data.get(key, {})
    if not isinstance(table, Mapping):
        raise SuiteError(f"{key} must be a table, got {table!r}")
    _check_keys(table, allowed, f"[{key}]")
    return dict(table)


def _require(data: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    if key not in data:
        raise SuiteError(f"{where} needs {key!r}")
    return _typed(data[key], kind, f"{where}.{key}")


def _typed(value: Any, kind: type, where: str) -> Any:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        name = _KIND_NAMES.get(kind, f"a {kind.__name__}")
        raise SuiteError(f"{where} must be {name}, got {value!r}")
    return value


_KIND_NAMES: dict[Any, str] = {
    list: "an array", dict: "a table", Mapping: "a table", int: "an int", float: "a float",
    str: "a string",
}  # fmt: skip


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _text(value: str, where: str) -> str:
    if not value.strip():
        raise SuiteError(f"{where} must not be empty")
    return value


def _strings(data: Mapping[str, Any], key: str) -> list[str]:
    values = _typed(data.get(key, []), list, key)
    if not all(isinstance(value, str) for value in values):
        raise SuiteError(f'{key} must be an array of strings, e.g. {key} = ["..."], got {values!r}')
    return list(values)


def _non_negative(value: Any, where: str) -> int:
    if _typed(value, int, where) < 0:
        raise SuiteError(f"{where} must be >= 0 (seeds are non-negative), got {value}")
    return value


def _positive(value: Any, where: str) -> int:
    if _typed(value, int, where) < 1:
        raise SuiteError(f"{where} must be >= 1, got {value}")
    return value


# --- checking against the registry ----------------------------------------------------------------


def _env_problem(env: SuiteEnv) -> str | None:
    if env.id not in gym.registry:
        ours = sorted(i for i in gym.registry if i.startswith("rlvr/"))
        return (
            f"{env.id} is not registered (registered rlvr envs: {ours or 'none'}); upgrade "
            "rlvr-gym to a version that has it, or list the module that registers it in the "
            "suite's imports"
        )
    entry = gym.spec(env.id).entry_point
    try:
        target = _resolve(entry)
        parameters = inspect.signature(target).parameters
    except (ImportError, AttributeError, TypeError, ValueError) as exc:
        return f"{env.id}: cannot inspect its entry point {entry!r}: {exc}"
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return None
    unknown = sorted(set(env.kwargs) - set(parameters))
    if not unknown:
        return None
    hint = " (set split = false in its [[envs]] entry)" if "split" in unknown else ""
    return f"{env.id} ({entry}) takes no argument {unknown}{hint}"


def _make_problem(env: SuiteEnv) -> str | None:
    try:
        gym.make(env.id, **dict(env.kwargs)).close()
    except Exception as exc:  # any failure of the env's constructor is the suite's to fix
        return (
            f"{env.label}: gym.make({env.id!r}, **{dict(env.kwargs)!r}) failed: "
            f"{type(exc).__name__}: {exc} (if the kwargs or split are the cause, fix them in "
            "the suite)"
        )
    return None


def _resolve(entry: Any) -> Any:
    if not isinstance(entry, str):
        return entry
    module, _, attribute = entry.partition(":")
    return getattr(importlib.import_module(module), attribute)
