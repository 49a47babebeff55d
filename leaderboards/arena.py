"""Multi-agent leaderboards: agents ranked by an Elo rating from head-to-head matches.

An arena suite pins a multi-agent env (`rlvr.envs.multiagent`), its kwargs, the games per pair,
the seed and the sampling. `run_arena(suite, agents)` plays a round robin: every pair of agents
plays `games` games (game i resets with seed + i; seats alternate, so each side moves first
equally often) through the episode loop's `rlvr.rollout.play_match`. A game scores 1 for the side
that earned more, 1/2 for equal, 0 for less; a game with an infrastructure error counts for
nobody.

Ratings are Bayesian, on the Elo scale (a 400-point gap is 10:1 odds): the Bradley-Terry model of
all games, a draw counting half a win each way, with a Gaussian prior on every rating (mean 1500,
standard deviation `PRIOR_SD` = 400). The rating is the posterior's mode; its interval is the
central interval of the Gaussian (Laplace) approximation of the posterior at the mode: the mode
plus or minus z standard deviations, from the inverse of the log posterior's curvature. A
maximum-likelihood fit gives an agent that won every game an infinite rating (any higher rating
explains a perfect record better), so some prior is needed; the Gaussian one keeps the rating
finite and its interval around it on both sides, where a bootstrap put a perfect record's rating
on the edge of its own interval (every resample it won again refitted to the same, highest,
rating). An `ArenaResult` is stored in the result store next to the single-agent results
(`ResultStore.add_arena`) and shown on the HTML page.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np

from rlvr.agents.policy import Policy, SamplingParams
from rlvr.config import build
from rlvr.leaderboards.errors import InvalidResultError, LeaderboardError, SuiteError
from rlvr.leaderboards.fields import (
    FieldError,
    array,
    count,
    number,
    optional_count,
    table,
    text,
)
from rlvr.leaderboards.suites import parse_toml, read_suite_file, sampling_table

ELO_SCALE = 400.0 / math.log(10.0)
"""Elo points per unit of log-odds (400 points: 10:1 odds)."""
ELO_MEAN = 1500.0
"""The prior's mean (and so the mean of the ratings)."""
PRIOR_SD = 400.0
"""Standard deviation of the Gaussian prior on every rating, in Elo points: before any game, a
rating is within +-800 of the mean with 95% probability."""
RATING_METHOD = "posterior mode, Gaussian prior, Laplace interval"
LEGACY_METHOD = "maximum likelihood, parametric bootstrap interval"
"""What results stored before `RATING_METHOD` used (their suites carry `resamples` and
`bootstrap_seed`)."""
MAX_GAMES = 100_000
"""Games per pair a suite may ask for."""
ARENA_DIR = Path(__file__).parent / "suites" / "arena"


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
    """The `[sampling]` table of the agents' replies (the keys of `SamplingParams`, the sampling
    section of every command; greedy by default). Kept as written: it is part of the
    fingerprint; `sampling_params` is it read."""
    confidence: float = 0.95
    """Coverage of the ratings' intervals."""

    def __post_init__(self) -> None:
        try:
            text(self.name, "name", empty=False)
            text(self.env, "env")
            text(self.description, "description")
            table(self.kwargs, "kwargs")
            count(self.games, "games", MAX_GAMES, minimum=1)
            count(self.seed, "seed", 2**63 - 1 - MAX_GAMES)
            optional_count(self.max_turns, "max_turns", 10**9)
            table(self.sampling, "sampling")
            if not 0 < number(self.confidence, "confidence") < 1:
                raise FieldError(f"confidence must be in (0, 1), got {self.confidence}")
        except FieldError as exc:
            raise SuiteError(f"arena {self.name!r}: {exc}") from None
        from rlvr.envs.multiagent import registry

        if self.env not in registry:
            raise SuiteError(
                f"arena {self.name!r}: {self.env} is not a multi-agent env (registered: "
                f"{sorted(registry)})"
            )
        _ = self.sampling_params  # fails now, naming the bad setting

    @property
    def sampling_params(self) -> SamplingParams:
        return sampling_table({"sampling": self.sampling}, f"arena {self.name!r}")

    @property
    def fingerprint(self) -> str:
        definition = json.dumps(asdict(self), sort_keys=True, default=str)
        return hashlib.blake2b(definition.encode("utf-8"), digest_size=8).hexdigest()

    @classmethod
    def from_toml(cls, text: str, source: str = "<string>") -> ArenaSuite:
        data = parse_toml(text, source)
        if "bootstrap" in data:
            raise SuiteError(
                f"{source}: arena intervals come from the ratings' posterior, not a bootstrap: "
                "replace the [bootstrap] table by a top-level confidence = 0.95"
            )
        try:  # keys and types as every config file's (rlvr.config), values by __post_init__
            return build(cls, data, source)
        except ValueError as exc:
            raise SuiteError(str(exc)) from None


def arena_names() -> list[str]:
    return sorted(path.stem for path in ARENA_DIR.glob("*.toml"))


def load_arena(name_or_path: str | Path) -> ArenaSuite:
    """A built-in arena suite by name (`arena_names()`), or a TOML file."""
    path = Path(name_or_path)
    if not path.suffix:
        path = ARENA_DIR / f"{name_or_path}.toml"
        if not path.is_file():
            raise SuiteError(f"no arena suite {name_or_path!r}; built-in: {arena_names()}")
    return ArenaSuite.from_toml(read_suite_file(path, "arena suite file"), str(path))


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
    method: str = RATING_METHOD
    """How the ratings and intervals were computed (`LEGACY_METHOD` for old stored results)."""

    def to_record(self) -> dict[str, Any]:
        return {
            "suite": asdict(self.suite),
            "agents": self.agents,
            "pairs": [asdict(pair) for pair in self.pairs],
            "ratings": [asdict(rating) for rating in self.ratings],
            "created_at": self.created_at,
            "method": self.method,
        }

    @classmethod
    def from_record(cls, record: Any, id: int | None = None) -> ArenaResult:
        """The result of a stored record, every field checked (a `ValueError` naming it)."""
        table(record, "the arena result", ("suite", "agents", "pairs", "ratings", "created_at"))
        suite = dict(table(record["suite"], "suite"))
        method = record.get("method", RATING_METHOD)
        if "resamples" in suite:  # stored before RATING_METHOD: its ratings are as they were
            method = LEGACY_METHOD
            suite.pop("resamples")
            suite.pop("bootstrap_seed", None)
        text(method, "method")
        agents = table(record["agents"], "agents")
        for name, spec in agents.items():
            text(spec, f"agents[{name!r}]")
        result = cls(
            suite=ArenaSuite(**suite),
            agents=dict(agents),
            pairs=[
                _pair(data, f"pairs[{i}]") for i, data in enumerate(array(record["pairs"], "pairs"))
            ],
            ratings=[
                _rating(data, f"ratings[{i}]")
                for i, data in enumerate(array(record["ratings"], "ratings"))
            ],
            created_at=text(record["created_at"], "created_at"),
            id=id,
            method=method,
        )
        _check_tally(result)
        return result


def check_arena(result: ArenaResult) -> None:
    """Raise `InvalidResultError` unless `result` may be stored: every field in range, the
    tallies its pairs' games, and its ratings and intervals those the games give."""
    try:
        ArenaResult.from_record(result.to_record())
    except ValueError as exc:
        raise InvalidResultError(f"arena result: {exc}") from None
    if result.method != RATING_METHOD:
        raise InvalidResultError(f"arena result: rated by {result.method!r}, not {RATING_METHOD!r}")
    given = {r.agent: r for r in rate(list(result.agents), result.pairs, result.suite)}
    for rating in result.ratings:
        expected = given[rating.agent]
        claimed = (rating.elo, rating.low, rating.high)
        if not np.allclose(claimed, (expected.elo, expected.low, expected.high), atol=1e-6):
            raise InvalidResultError(
                f"arena result: {rating.agent!r} is rated {claimed}, its games give "
                f"{(expected.elo, expected.low, expected.high)}"
            )


def _pair(data: Any, where: str) -> PairGames:
    table(data, where, ("first", "second", "scores"), optional=("infra_errors",))
    scores = array(data["scores"], f"{where}.scores")
    for index, score in enumerate(scores):
        if number(score, f"{where}.scores[{index}]") not in (0.0, 0.5, 1.0):
            raise FieldError(f"{where}.scores[{index}] must be 0, 0.5 or 1, got {score!r}")
    return PairGames(
        text(data["first"], f"{where}.first"),
        text(data["second"], f"{where}.second"),
        scores,
        count(data.get("infra_errors", 0), f"{where}.infra_errors", MAX_GAMES),
    )


def _rating(data: Any, where: str) -> Rating:
    table(data, where, ("agent", "elo", "low", "high", "games", "points"), optional=())
    rating = Rating(
        agent=text(data["agent"], f"{where}.agent"),
        elo=number(data["elo"], f"{where}.elo"),
        low=number(data["low"], f"{where}.low"),
        high=number(data["high"], f"{where}.high"),
        games=count(data["games"], f"{where}.games", 2**53),
        points=number(data["points"], f"{where}.points", low=0.0),
    )
    if rating.low > rating.high:
        raise FieldError(f"{where}: low {rating.low} is above high {rating.high}")
    return rating


def _check_tally(result: ArenaResult) -> None:
    """Each pair of named agents plays once, `games` games in all; each agent rated once, its
    games and points those of its pairs."""
    names = set(result.agents)
    seen: set[frozenset[str]] = set()
    for pair in result.pairs:
        meeting = frozenset((pair.first, pair.second))
        if not meeting <= names or len(meeting) != 2 or meeting in seen:
            raise FieldError(f"pair {pair.first!r} vs {pair.second!r}: not a pair of its agents")
        seen.add(meeting)
        if len(pair.scores) + pair.infra_errors != result.suite.games:
            raise FieldError(
                f"pair {pair.first!r} vs {pair.second!r}: {len(pair.scores)} judged games and "
                f"{pair.infra_errors} infrastructure errors, not the suite's {result.suite.games}"
            )
    rated = [rating.agent for rating in result.ratings]
    if sorted(rated) != sorted(names):
        raise FieldError(f"ratings name {rated}, the agents are {sorted(names)}")
    games, points = tally(list(result.agents), result.pairs)
    for rating in result.ratings:
        if rating.games != games[rating.agent] or rating.points != points[rating.agent]:
            raise FieldError(
                f"{rating.agent!r}: {rating.points:g} points in {rating.games} games, its pairs "
                f"give {points[rating.agent]:g} in {games[rating.agent]}"
            )


def run_arena(suite: ArenaSuite, agents: Mapping[str, str | Policy]) -> ArenaResult:
    """Every pair of `agents` (name -> spec or Policy) plays `suite.games` games; rate them."""
    from rlvr.agents.kinds import make_policy
    from rlvr.rollout.games import play_match

    if len(agents) < 2:
        raise ValueError("an arena needs at least two agents")
    policies = {n: make_policy(a) if isinstance(a, str) else a for n, a in agents.items()}
    sampling = suite.sampling_params
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
    """Ratings with their `suite.confidence` intervals (see the module docstring), best first."""
    elo, covariance = posterior(names, pairs)
    z = NormalDist().inv_cdf(0.5 + suite.confidence / 2)
    spread = z * np.sqrt(np.diag(covariance))
    games, points = tally(names, pairs)
    ratings = [
        Rating(
            n,
            float(elo[i]),
            float(elo[i] - spread[i]),
            float(elo[i] + spread[i]),
            games[n],
            points[n],
        )
        for i, n in enumerate(names)
    ]
    return sorted(ratings, key=lambda rating: -rating.elo)


def tally(
    names: Sequence[str], pairs: Sequence[PairGames]
) -> tuple[dict[str, int], dict[str, float]]:
    """Judged games and points (wins plus half the draws) of each agent."""
    games = {n: 0 for n in names}
    points = {n: 0.0 for n in names}
    for pair in pairs:
        first_points = math.fsum(pair.scores)
        for name, got in (
            (pair.first, first_points),
            (pair.second, len(pair.scores) - first_points),
        ):
            games[name] += len(pair.scores)
            points[name] += got
    return games, points


def fit_elo(names: Sequence[str], pairs: Sequence[PairGames]) -> dict[str, float]:
    """The ratings (posterior mode; see the module docstring) by name."""
    elo, _ = posterior(names, pairs)
    return {name: float(elo[i]) for i, name in enumerate(names)}


def posterior(
    names: Sequence[str], pairs: Sequence[PairGames], iterations: int = 100
) -> tuple[np.ndarray, np.ndarray]:
    """Mode of the ratings' posterior (Elo points) and the covariance, in its Gaussian (Laplace)
    approximation there, of the ratings relative to their mean (what a rating says: games only
    tell ratings apart, and the mode's mean is ELO_MEAN; the common level's own uncertainty is
    the prior's and is left out).

    Model: first beats second with probability sigmoid((r_first - r_second) / ELO_SCALE), a game
    scoring s counting as s wins and 1 - s losses; every r ~ Normal(ELO_MEAN, PRIOR_SD**2). The
    log posterior is strictly concave, so Newton's method (with step halving) finds its one
    maximum; by symmetry the maximum has mean ELO_MEAN.
    """
    index = {name: i for i, name in enumerate(names)}
    meetings = [
        (index[p.first], index[p.second], math.fsum(p.scores), len(p.scores)) for p in pairs
    ]
    deviation = np.zeros(len(names))  # from ELO_MEAN

    def log_posterior(r: np.ndarray) -> float:
        total = -float(r @ r) / (2 * PRIOR_SD**2)
        for a, b, wins, played in meetings:
            margin = (r[a] - r[b]) / ELO_SCALE  # log-odds that a beats b
            total -= wins * np.logaddexp(0.0, -margin) + (played - wins) * np.logaddexp(0.0, margin)
        return total

    def slope_and_curvature(r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        slope = -r / PRIOR_SD**2
        curvature = np.eye(len(r)) / PRIOR_SD**2  # of the negative log posterior
        for a, b, wins, played in meetings:
            chance = 1.0 / (1.0 + math.exp(-(r[a] - r[b]) / ELO_SCALE))
            push = (wins - played * chance) / ELO_SCALE
            slope[a] += push
            slope[b] -= push
            weight = played * chance * (1.0 - chance) / ELO_SCALE**2
            curvature[a, a] += weight
            curvature[b, b] += weight
            curvature[a, b] -= weight
            curvature[b, a] -= weight
        return slope, curvature

    for _ in range(iterations):
        slope, curvature = slope_and_curvature(deviation)
        step = np.linalg.solve(curvature, slope)
        current = log_posterior(deviation)
        while log_posterior(deviation + step) < current and np.abs(step).max() > 1e-9:
            step /= 2  # an overshoot: a full Newton step can pass the maximum from far away
        deviation = deviation + step
        if np.abs(step).max() < 1e-7:
            break
    _, curvature = slope_and_curvature(deviation)
    centering = np.eye(len(names)) - 1.0 / len(names)  # r -> r - mean(r)
    return deviation + ELO_MEAN, centering @ np.linalg.inv(curvature) @ centering
