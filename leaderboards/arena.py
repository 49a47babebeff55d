"""Multi-agent leaderboards: agents ranked by an Elo rating from head-to-head matches.

An arena suite pins a multi-agent env (`rlvr.envs.multiagent`), its kwargs, the games per pair,
the seed and the sampling. `run_arena(suite, agents)` plays a round robin: every pair of agents
plays `games` games (game i resets with seed + i; seats alternate, so each side moves first
equally often) through the episode loop's `rlvr.rollout.play_match`. A game scores 1 for the side
that earned more, 1/2 for equal, 0 for less; a game with an infrastructure error counts for
nobody.

Ratings are the Bradley-Terry maximum-likelihood fit of all games, on the Elo scale (a 400-point
gap is 10:1 odds) with the agents' mean at 1500, and a percentile interval from a parametric
bootstrap: each pair's games are drawn again from the fitted ratings' odds and the ratings
refitted, `resamples` times, from a generator seeded by the suite (resampling the games played
would give an agent that won every game an interval of zero width). An `ArenaResult` is stored
in the result store next to the single-agent results (`ResultStore.add_arena`) and shown on the
HTML page.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from rlvr.agents.policy import Policy, SamplingParams
from rlvr.leaderboards.errors import LeaderboardError, SuiteError

ELO_SCALE = 400.0 / math.log(10.0)
ELO_MEAN = 1500.0
ARENA_DIR = Path(__file__).parent / "suites" / "arena"
_KEYS = (
    "name", "description", "env", "kwargs", "games", "seed", "max_turns", "sampling", "bootstrap"
)  # fmt: skip


@dataclass(frozen=True)
class ArenaSuite:
    """A pinned head-to-head benchmark on one multi-agent env."""

    name: str
    env: str
    description: str = ""
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    games: int = 20
    """Games per pair of agents (seats alternate)."""
    seed: int = 0
    """Game i of a pair resets with seed + i."""
    max_turns: int | None = None
    """Cut a game after a seat's this many replies (counted as played, by the returns so far)."""
    sampling: Mapping[str, Any] = field(default_factory=lambda: {"temperature": 0.0})
    """`SamplingParams` of the agents' replies."""
    resamples: int = 1000
    confidence: float = 0.95
    bootstrap_seed: int = 0

    def __post_init__(self) -> None:
        if self.games < 1 or self.seed < 0 or self.resamples < 1:
            raise SuiteError(f"arena {self.name!r}: games and resamples >= 1, seed >= 0")
        if not 0 < self.confidence < 1:
            raise SuiteError(f"arena {self.name!r}: confidence must be in (0, 1)")
        from rlvr.envs.multiagent import registry

        if self.env not in registry:
            raise SuiteError(
                f"arena {self.name!r}: {self.env} is not a multi-agent env (registered: "
                f"{sorted(registry)})"
            )
        SamplingParams(**self.sampling)  # fails now, naming the bad setting

    @property
    def fingerprint(self) -> str:
        text = json.dumps(asdict(self), sort_keys=True, default=str)
        return hashlib.blake2b(text.encode("utf-8"), digest_size=8).hexdigest()

    @classmethod
    def from_toml(cls, text: str, source: str = "<string>") -> ArenaSuite:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise SuiteError(f"{source}: {exc}") from None
        unknown = sorted(set(data) - set(_KEYS))
        if unknown:
            raise SuiteError(f"{source}: unknown keys {unknown}; an arena takes {list(_KEYS)}")
        bootstrap = dict(data.pop("bootstrap", {}))
        try:
            return cls(
                **data,
                resamples=bootstrap.get("resamples", 1000),
                confidence=bootstrap.get("confidence", 0.95),
                bootstrap_seed=bootstrap.get("seed", 0),
            )
        except TypeError as exc:
            raise SuiteError(f"{source}: {exc}") from None


def arena_names() -> list[str]:
    return sorted(path.stem for path in ARENA_DIR.glob("*.toml"))


def load_arena(name_or_path: str | Path) -> ArenaSuite:
    """A built-in arena suite by name (`arena_names()`), or a TOML file."""
    path = Path(name_or_path)
    if not path.suffix:
        path = ARENA_DIR / f"{name_or_path}.toml"
        if not path.is_file():
            raise SuiteError(f"no arena suite {name_or_path!r}; built-in: {arena_names()}")
    return ArenaSuite.from_toml(path.read_text(encoding="utf-8"), str(path))


@dataclass
class PairGames:
    """The games of one pair: `first`'s score in each judged game (1, 1/2, 0)."""

    first: str
    second: str
    scores: list[float]
    infra_errors: int = 0


@dataclass
class Rating:
    agent: str
    elo: float
    low: float
    high: float
    games: int
    points: float
    """Games won plus half the draws."""


@dataclass
class ArenaResult:
    suite: ArenaSuite
    agents: dict[str, str]
    """Name -> agent spec (or a description of a Policy object)."""
    pairs: list[PairGames]
    ratings: list[Rating]
    """Best first."""
    created_at: str = ""
    id: int | None = None

    def to_record(self) -> dict[str, Any]:
        return {
            "suite": asdict(self.suite),
            "agents": self.agents,
            "pairs": [asdict(pair) for pair in self.pairs],
            "ratings": [asdict(rating) for rating in self.ratings],
            "created_at": self.created_at,
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any], id: int | None = None) -> ArenaResult:
        return cls(
            suite=ArenaSuite(**record["suite"]),
            agents=dict(record["agents"]),
            pairs=[PairGames(**pair) for pair in record["pairs"]],
            ratings=[Rating(**rating) for rating in record["ratings"]],
            created_at=record["created_at"],
            id=id,
        )


def run_arena(suite: ArenaSuite, agents: Mapping[str, str | Policy]) -> ArenaResult:
    """Every pair of `agents` (name -> spec or Policy) plays `suite.games` games; rate them."""
    from rlvr.agents.kinds import make_policy
    from rlvr.rollout import play_match

    if len(agents) < 2:
        raise ValueError("an arena needs at least two agents")
    policies = {n: make_policy(a) if isinstance(a, str) else a for n, a in agents.items()}
    sampling = SamplingParams(**suite.sampling)
    pairs = []
    for first, second in itertools.combinations(policies, 2):
        try:
            report = play_match(
                suite.env,
                policies[first],
                policies[second],
                games=suite.games,
                seed=suite.seed,
                env_kwargs=suite.kwargs,
                sampling=sampling,
                batch_size=min(suite.games, 32),
                max_turns=suite.max_turns,
            )
        except Exception as exc:  # name the match: a policy's traceback alone hides it
            raise LeaderboardError(
                f"{suite.env}: {first} vs {second} failed: {type(exc).__name__}: {exc}"
            ) from exc
        pairs.append(PairGames(first, second, report.scores(), report.infra_errors))
    described = {n: a if isinstance(a, str) else type(a).__name__ for n, a in agents.items()}
    return ArenaResult(
        suite=suite,
        agents=described,
        pairs=pairs,
        ratings=rate(list(agents), pairs, suite),
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )


def rate(names: Sequence[str], pairs: Sequence[PairGames], suite: ArenaSuite) -> list[Rating]:
    """Elo ratings (Bradley-Terry fit) with parametric bootstrap intervals, best first."""
    elo = fit_elo(names, pairs)
    rng = np.random.default_rng([suite.bootstrap_seed, int(suite.fingerprint, 16) % 2**32])
    replicates = np.empty((suite.resamples, len(names)))
    # Parametric bootstrap: each pair's games are drawn again from the fitted model's odds. A
    # resample of the games themselves could not move an agent that won every game (all its
    # resamples are perfect too), and would report no uncertainty where it is largest.
    first_wins = [1.0 / (1.0 + 10 ** ((elo[p.second] - elo[p.first]) / 400)) for p in pairs]
    for r in range(suite.resamples):
        resampled = [
            PairGames(p.first, p.second, [float(x) for x in rng.random(len(p.scores)) < chance])
            for p, chance in zip(pairs, first_wins)
        ]
        replicates[r] = [fit_elo(names, resampled)[n] for n in names]
    tail = (1 - suite.confidence) / 2 * 100
    low, high = np.percentile(replicates, [tail, 100 - tail], axis=0)
    games = {n: 0 for n in names}
    points = {n: 0.0 for n in names}
    for pair in pairs:
        first_points = sum(pair.scores)
        for name, got in (
            (pair.first, first_points),
            (pair.second, len(pair.scores) - first_points),
        ):
            games[name] += len(pair.scores)
            points[name] += got
    ratings = [
        Rating(n, elo[n], float(low[i]), float(high[i]), games[n], points[n])
        for i, n in enumerate(names)
    ]
    return sorted(ratings, key=lambda rating: -rating.elo)


def fit_elo(
    names: Sequence[str], pairs: Sequence[PairGames], iterations: int = 200
) -> dict[str, float]:
    """Bradley-Terry strengths by minorization-maximization (Hunter 2004), a draw counting as
    half a win each way, with a half-game prior against a virtual average player so that an
    agent that won (or lost) every game still has a finite rating; on the Elo scale, mean 1500."""
    index = {name: i for i, name in enumerate(names)}
    n = len(names)
    wins = np.full(n, 0.5)  # the prior: half a win ...
    meetings = np.zeros((n, n))
    for pair in pairs:
        a, b = index[pair.first], index[pair.second]
        wins[a] += sum(pair.scores)
        wins[b] += len(pair.scores) - sum(pair.scores)
        meetings[a, b] += len(pair.scores)
        meetings[b, a] += len(pair.scores)
    strength = np.ones(n)
    for _ in range(iterations):
        # ... and one game against a player of strength 1 (the geometric mean)
        denominator = (meetings / (strength[:, None] + strength[None, :])).sum(axis=1)
        denominator += 1.0 / (strength + 1.0)
        strength = wins / denominator
        strength /= np.exp(np.mean(np.log(strength)))
    elo = ELO_SCALE * np.log(strength)
    elo += ELO_MEAN - elo.mean()
    return {name: float(elo[index[name]]) for name in names}
