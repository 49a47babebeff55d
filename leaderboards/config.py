"""The configs of `rlvr bench`, `rlvr bench reverify` and `rlvr bench arena`.

`rlvr.config` makes each command's flags, `--config FILE.toml` and `--print-config` from these
classes, as it does for `rlvr eval` and `rlvr train`: the same thing has the same flag in every
command (`--agent`, `--episodes`, `--batch-size`, `--ray`, `--env-workers`, `--progress`, the
sampling flags). A suite pins its own sampling: here `sampling` holds what overrides it, taken
over the suite's `[sampling]` table (`table_bases`), so the keys left out keep the suite's values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from rlvr.agents.kinds import agent_help
from rlvr.agents.policy import SamplingParams
from rlvr.config import Positive, check_numbers, cli
from rlvr.leaderboards import runner

ParallelMode = Literal["auto", "processes", "threads", "serial"]
"""`runner.PARALLEL_MODES` as a type (a test keeps them equal). The runner owns the defaults of
the run options: those left out keep `run_suite`'s."""


_PARALLEL: ParallelMode = runner.DEFAULT_PARALLEL


def _suite_sampling(data: Mapping[str, Any], load: Any) -> dict[str, SamplingParams]:
    """{"sampling": the suite's own} when `data` gives a sampling table in part (the keys it
    leaves out keep the suite's values), else nothing to load."""
    given = data.get("sampling")
    if not isinstance(given, Mapping) or "suite" not in data:
        return {}
    if set(given) >= {f.name for f in fields(SamplingParams)}:
        return {}  # every key given (a --print-config file): the suite's values are moot
    return {"sampling": load(data["suite"])}


@dataclass(frozen=True)
class RunOptions:
    """How a suite's episodes are run (they change the speed, never the result)."""

    db: str | None = None
    """Result store (SQLite file); none: $RLVR_LEADERBOARD_DB, else
    ~/.local/share/rlvr/leaderboard.sqlite (under $XDG_DATA_HOME if set)."""
    parallel: ParallelMode = _PARALLEL
    """auto: processes for scripted agents, threads for openai:, serial for hf:."""
    workers: Positive | None = None
    """Worker processes or threads (none: one per core)."""
    progress: bool = True
    """Show a progress bar."""
    ray: str | None = field(default=None, metadata=cli(const="local", metavar="ADDRESS"))
    """Run the envs on Ray env workers: "local" starts Ray on this machine, else the address of
    a cluster to join ("auto", "ray://HOST:10001"). The results are the same as without Ray."""
    env_workers: Positive = 2
    """Ray env workers (with --ray)."""

    def __post_init__(self) -> None:
        check_numbers(self)


@dataclass(frozen=True, kw_only=True)
class BenchConfig(RunOptions):
    """`rlvr bench`: an agent on a benchmark suite, its result stored on the leaderboard."""

    suite: str = field(metadata=cli(metavar="NAME|FILE.toml"))
    """Built-in suite name (`rlvr bench suites` lists them) or path of a suite .toml file."""
    agent: str = field(metadata=cli(help=agent_help))
    """The agent, as a spec."""
    name: str | None = None
    """Name on the leaderboard (none: the agent spec)."""
    episodes: Positive | None = None
    """Tasks per env instead of the suite's (a different, smaller benchmark; none: the suite's)."""
    batch_size: Positive = runner.DEFAULT_BATCH_SIZE
    """Episodes per generate call."""
    sampling: SamplingParams | None = None
    """How replies are sampled, over the suite's own `[sampling]` table: a key given (a flag,
    e.g. --temperature 0.7, or a key of this table) replaces the suite's value (a different
    benchmark), the keys left out keep the suite's; none: the suite's sampling as it is."""

    @staticmethod
    def table_bases(data: Mapping[str, Any]) -> dict[str, SamplingParams]:
        from rlvr.leaderboards.suites import load_suite

        return _suite_sampling(data, lambda suite: load_suite(suite).sampling)


@dataclass(frozen=True)
class ReverifyConfig(RunOptions):
    """`rlvr bench reverify`: re-judge stored results with today's verifiers."""

    ids: Sequence[int] = field(default=(), metadata=cli(positional=True))
    """Result ids (see rlvr leaderboard list)."""
    stale: bool = False
    """Also every current result whose verifier changed since it was judged."""

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "ids", tuple(self.ids))


@dataclass(frozen=True)
class ArenaAgent:
    """An arena player: the agent `spec` under `name`."""

    name: str
    """Its name in the ranking."""
    spec: str
    """The agent, as a spec."""

    @staticmethod
    def parse(text: str) -> ArenaAgent:
        """`NAME=SPEC` or `SPEC` (named by itself); a spec's own `=` (fixed:a=b) stays in the
        spec when NAME would hold a `:`."""
        name, equals, spec = text.partition("=")
        if equals and ":" not in name:
            return ArenaAgent(name, spec)
        return ArenaAgent(text, text)


def _arena_agent_help() -> str:
    return f"Command line: --agent [NAME=]SPEC, repeated. {agent_help()}"


@dataclass(frozen=True)
class ArenaConfig:
    """`rlvr bench arena`: agents ranked by Elo from head-to-head games on a multi-agent suite."""

    suite: str = field(metadata=cli(metavar="NAME|FILE.toml"))
    """Built-in arena suite (`rlvr bench suites` lists them) or path of an arena .toml file."""
    agents: Sequence[ArenaAgent] = field(
        metadata=cli("--agent", parse=ArenaAgent.parse, help=_arena_agent_help),
    )
    """The players, at least two with different names ([[agents]] tables in a file)."""
    db: str | None = None
    """Result store (SQLite file); none: $RLVR_LEADERBOARD_DB, else
    ~/.local/share/rlvr/leaderboard.sqlite (under $XDG_DATA_HOME if set)."""
    sampling: SamplingParams | None = None
    """How replies are sampled, over the arena's own `[sampling]` table: a key given replaces
    the arena's value, the keys left out keep the arena's; none: the arena's sampling as it is."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "agents", tuple(self.agents))
        if len({agent.name for agent in self.agents}) < 2:
            raise ValueError(
                "an arena needs at least two agents with different names: --agent A --agent B"
            )

    @staticmethod
    def table_bases(data: Mapping[str, Any]) -> dict[str, SamplingParams]:
        from rlvr.leaderboards.arena import load_arena

        return _suite_sampling(data, lambda suite: load_arena(suite).sampling_params)
