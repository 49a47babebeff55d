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
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

import gymnasium as gym

from rlvr.agents.policy import SamplingParams
from rlvr.config import ConfigError, Range, build, check_numbers, read_text_file
from rlvr.config import parse_toml as config_toml
from rlvr.families import family_suites
from rlvr.leaderboards.errors import SuiteError

MAX_RESAMPLES = 100_000
"""Bootstrap replicates a suite may ask for (more only costs memory and time after a run)."""
MAX_EPISODES = 10_000_000
"""Tasks per env a suite may pose. Counts are bounds on work (a suite read back from a stored
result or a side file is checked before anything iterates over its counts)."""
MAX_SAMPLES = 10_000
"""Samples per task a suite may ask for."""
MAX_SEED = 2**63 - 1
"""Largest seed of any episode (SQLite's largest integer: the store indexes traces by seed)."""

SuiteSeed = Annotated[int, Range(0, why="seeds are non-negative")]
"""A suite's seed: any non-negative int whose episodes' seeds stay <= `MAX_SEED`."""
Episodes = Annotated[int, Range(1)]
"""A count of tasks (at most `MAX_EPISODES`, checked on the resolved env)."""


@dataclass(frozen=True)
class SuiteEnv:
    """One env of a suite, fully resolved: `gym.make(id, **kwargs)`, episode i seeded seed + i."""

    id: str
    """Gymnasium id with its version, e.g. `rlvr/Math-v0`."""
    label: str
    """Unique name of this entry within the suite (the id unless an id appears twice)."""
    kwargs: Mapping[str, Any]
    """Keyword arguments of `gym.make`, the held-out split included."""
    seed: SuiteSeed
    """Seed of episode 0; episode i uses seed + i."""
    episodes: Annotated[int, Range(1, MAX_EPISODES)]
    """Number of tasks posed."""
    index_tasks: bool = False
    """True: episode i resets with `options={"task_index": i}` (each task of the split once)."""

    def __post_init__(self) -> None:
        # Checked here, not only when a suite file is parsed: a suite is also made in Python.
        _env_id(self.id)
        label = _nonempty(self.label, "env label")
        where = f"env {label!r}"
        _check_numbers(self, f"{where}: ")
        if not isinstance(self.kwargs, Mapping) or not all(isinstance(k, str) for k in self.kwargs):
            raise SuiteError(f"{where}: kwargs must be a table with string keys")
        if self.seed + self.episodes - 1 > MAX_SEED:
            raise SuiteError(f"{where}: seed + episodes must stay <= {MAX_SEED}")
        if not isinstance(self.index_tasks, bool):
            raise SuiteError(f"{where}: index_tasks must be true or false")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "kwargs": dict(self.kwargs)}


@dataclass(frozen=True)
class Bootstrap:
    """How confidence intervals are computed (a percentile bootstrap over tasks)."""

    resamples: Annotated[int, Range(10, MAX_RESAMPLES)] = 1000
    """Bootstrap replicates; more gives steadier interval ends."""
    confidence: Annotated[float, Range(0, 1, why="below 1, e.g. 0.95", open=True)] = 0.95
    """Coverage of the interval, in (0, 1)."""
    seed: SuiteSeed = 0
    """Seed of the resampling generator, so intervals are reproducible."""

    def __post_init__(self) -> None:
        # Checked here, not when scoring: a bad seed would otherwise fail after the whole run.
        _check_numbers(self, "bootstrap.")
        if self.confidence == 1:
            raise SuiteError("bootstrap.confidence must be below 1, e.g. 0.95")


@dataclass(frozen=True)
class Suite:
    """A benchmark suite (see the module docstring). Build one with `load_suite`."""

    name: str
    description: str
    envs: tuple[SuiteEnv, ...]
    samples: Annotated[int, Range(1, MAX_SAMPLES)] = 1
    pass_at_k: tuple[int, ...] = (1,)
    sampling: SamplingParams = field(default_factory=SamplingParams)
    bootstrap: Bootstrap = field(default_factory=Bootstrap)
    imports: tuple[str, ...] = ()
    source: str = ""
    """Where the suite was read from (not part of its definition)."""

    def __post_init__(self) -> None:
        _nonempty(self.name, "name")
        if not self.envs:
            raise SuiteError(f"suite {self.name!r} has no envs; add at least one [[envs]] table")
        _check_numbers(self)
        if not all(isinstance(env, SuiteEnv) for env in self.envs):
            raise SuiteError("envs must be SuiteEnv entries")
        bad = [k for k in self.pass_at_k if type(k) is not int or not 1 <= k <= self.samples]
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
        every key and value as `rlvr.config` checks a config file)."""
        if not isinstance(data, Mapping):
            raise SuiteError(f"the suite must be a table, got {data!r:.100}")
        try:
            return build(cls, {**data, "source": source}, "the suite")
        except ValueError as exc:
            raise SuiteError(str(exc)) from None

    @staticmethod
    def from_older(data: Mapping[str, Any]) -> Mapping[str, Any]:
        """A stored suite without a description (`rlvr.config.upgraded`) reads as an empty one."""
        return {"description": "", **data}

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


# --- the suite file -------------------------------------------------------------------------------
# A suite file is read into `SuiteFile` by `rlvr.config.build`, as the commands read their
# --config files: the same one-line errors naming the file, the key and what is accepted.


@dataclass(frozen=True)
class EnvEntry:
    """One `[[envs]]` table of a suite file; the keys it leaves out take the suite's values."""

    id: str
    """Gymnasium id with its version, e.g. "rlvr/Math-v0"."""
    label: str | None = None
    """Unique name of the entry (default: the id; needed when an id appears twice)."""
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    """Keyword arguments of `gym.make` (the split is set with split = ..., not here)."""
    split: str | bool | None = None
    """Held-out split of this env, or false for none (default: the suite's split)."""
    seed: SuiteSeed | None = None
    """Seed of episode 0 (default: the suite's seed)."""
    episodes: Episodes | None = None
    """Tasks posed (default: the suite's episodes)."""
    index_tasks: bool | None = None
    """Pose task i of the split in episode i (default: the suite's index_tasks)."""

    def __post_init__(self) -> None:
        check_numbers(self)
        _env_id(self.id)
        if self.label is not None:
            _nonempty(self.label, "label")
        if self.split is not None:
            _split(self.split)


@dataclass(frozen=True)
class SuiteFile:
    """A suite's TOML file, as written (`Suite` is the suite it resolves to)."""

    name: str
    """The suite's name (results of different suites are never ranked together)."""
    description: str = ""
    """One line saying what the suite measures."""
    split: str | bool = "test"
    """Held-out split passed to every env as kwargs["split"], or false for none."""
    seed: SuiteSeed = 0
    """Episode i of an env resets with seed + i."""
    episodes: Episodes = 100
    """Tasks per env."""
    index_tasks: bool = False
    """True: episode i poses task i of the split (each task once), not a seeded draw."""
    samples: Annotated[int, Range(1, MAX_SAMPLES)] = 1
    """Samples per task (pass@k needs samples >= k)."""
    pass_at_k: tuple[int, ...] = (1,)
    """The k for which pass@k is reported."""
    imports: tuple[str, ...] = ()
    """Modules to import before making the envs (they register the envs)."""
    include: tuple[str, ...] = ()
    """Other suites (built-in names or .toml paths) whose envs this suite runs too."""
    sampling: SamplingParams = field(default_factory=SamplingParams)
    """How replies are sampled: the sampling section of `rlvr eval` and `rlvr train`."""
    bootstrap: Bootstrap = field(default_factory=Bootstrap)
    """The confidence intervals: resamples, confidence, seed."""
    envs: tuple[EnvEntry, ...] = ()
    """The envs, each an [[envs]] table with an id."""

    def __post_init__(self) -> None:
        check_numbers(self)
        _nonempty(self.name, "name")
        _split(self.split)
        if self.samples > 1 and self.sampling.seed is not None:
            raise SuiteError(
                f"sampling.seed with samples = {self.samples} gives every sample of a task the "
                "same seed: seeded servers (vLLM, OpenAI) then return one reply k times and "
                "pass@k equals pass@1; remove sampling.seed (the suite's seed already pins the "
                "tasks)"
            )


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
    try:
        return read_text_file(path, what)
    except ConfigError as exc:
        raise SuiteError(str(exc)) from None


def parse_toml(text: str, source: str) -> dict[str, Any]:
    """The data of a suite's TOML text (`SuiteError` naming `source` when it is not valid TOML
    or nests deeper than any suite)."""
    try:
        return config_toml(text, source)
    except ConfigError as exc:
        raise SuiteError(str(exc)) from None


def parse_suite(text: str, *, source: str = "<string>", base: Path | None = None) -> Suite:
    """Parse and validate a suite from TOML text; `base` resolves relative `include` paths."""
    data = parse_toml(text, source)
    try:
        return _build_suite(data, source, base, seen=(source,))
    except ValueError as exc:  # SuiteError, ConfigError, and SamplingParams' own checks
        if str(exc).startswith(source):
            raise SuiteError(str(exc)) from None
        raise SuiteError(f"{source}: {exc}") from None


def _build_suite(
    data: Mapping[str, Any], source: str, base: Path | None, seen: tuple[str, ...]
) -> Suite:
    spec = build(SuiteFile, data, source)
    envs = [_resolve_env(entry, spec, f"envs[{i}]") for i, entry in enumerate(spec.envs)]
    imports = list(spec.imports)
    for included in spec.include:
        suite = _load_included(included, base, seen)
        envs.extend(suite.envs)
        imports.extend(module for module in suite.imports if module not in imports)
    return Suite(
        name=spec.name,
        description=spec.description,
        envs=tuple(envs),
        samples=spec.samples,
        pass_at_k=spec.pass_at_k,
        sampling=spec.sampling,
        bootstrap=spec.bootstrap,
        imports=tuple(imports),
        source=source,
    )


def sampling_table(data: Mapping[str, Any], source: str) -> SamplingParams:
    """The `[sampling]` table of an arena file as `SamplingParams`, the sampling section every
    command and suite shares: `rlvr.config` checks its keys and their types, `SamplingParams`
    their values."""
    table = data.get("sampling", {})
    if not isinstance(table, Mapping):
        raise SuiteError(f"{source}: sampling must be a table, got {table!r}")
    try:
        return build(SamplingParams, table, source, "sampling")
    except ValueError as exc:
        raise SuiteError(str(exc)) from None


def _resolve_env(entry: EnvEntry, suite: SuiteFile, where: str) -> SuiteEnv:
    """An `[[envs]]` entry with the suite's values for the keys it leaves out."""
    kwargs = dict(entry.kwargs)
    split = suite.split if entry.split is None else entry.split
    if split is not False:
        if "split" in kwargs:
            raise SuiteError(f"{where}: set the split with split = ..., not in kwargs")
        kwargs["split"] = split
    return SuiteEnv(
        id=entry.id,
        label=entry.id if entry.label is None else entry.label,
        kwargs=kwargs,
        seed=suite.seed if entry.seed is None else entry.seed,
        episodes=suite.episodes if entry.episodes is None else entry.episodes,
        index_tasks=suite.index_tasks if entry.index_tasks is None else entry.index_tasks,
    )


def _load_included(included: str, base: Path | None, seen: tuple[str, ...]) -> Suite:
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


def _env_id(env_id: Any) -> str:
    """A Gymnasium id with its version (`rlvr/Math-v0`)."""
    if not isinstance(env_id, str):
        raise SuiteError(f"env id must be a string, got {env_id!r:.100}")
    try:
        _, _, version = gym.envs.registration.parse_env_id(env_id)
    except gym.error.Error as exc:
        raise SuiteError(f"env id: {exc}") from None
    if version is None:
        raise SuiteError(f"env id {env_id!r} has no version; pin one, e.g. {env_id}-v0")
    return env_id


def _nonempty(value: Any, what: str) -> str:
    """What a suite names by text (its name, an env's label): a string with something in it."""
    if not isinstance(value, str) or not value.strip():
        raise SuiteError(f"{what} must not be empty, got {value!r:.100}; name it")
    return value


def _check_numbers(config: Any, prefix: str = "") -> None:
    """`check_numbers` raising `SuiteError`: a suite made in Python fails as a parsed one does."""
    try:
        check_numbers(config)
    except ValueError as exc:
        raise SuiteError(f"{prefix}{exc}") from None


def _split(split: Any) -> None:
    if split is not False and (not isinstance(split, str) or not split):
        raise SuiteError(f"split must be a split name or false, got {split!r}")


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
