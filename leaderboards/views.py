"""Views of ranked results: a terminal table and one-result summaries (the static HTML site is
`webpage.py`)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from rlvr.leaderboards.arena import ELO_MEAN, PRIOR_SD, RATING_METHOD, ArenaResult
from rlvr.leaderboards.results import BenchResult

# C0/C1 controls (escape sequences, carriage returns), bidi embeddings, overrides and isolates,
# and the Unicode line separators.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def printable(text: object, *, keep_newlines: bool = False) -> str:
    """`text` with control and bidi-override characters written out as escapes (`\\x1b`,
    `\\u202e`): a result name or a model's reply can then neither drive the terminal (move the
    cursor, overwrite a row) nor reorder the text displayed around it."""

    def escape(match: re.Match[str]) -> str:
        char = match.group()
        if keep_newlines and char in "\n\r\t":
            return char
        code = ord(char)
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    return _UNSAFE.sub(escape, str(text))


def fmt_score(value: float | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}"


def fmt_interval(low: float, high: float) -> str:
    return f"[{fmt_score(low)}, {fmt_score(high)}]"


def fmt_tokens(count: int | None) -> str:
    if count is None:
        return "-"
    if count >= 1e6:
        return f"{count / 1e6:.2f}M"
    if count >= 1e4:
        return f"{count / 1e3:.1f}k"
    return str(count)


def fmt_seconds(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 60:.1f}m" if seconds >= 120 else f"{seconds:.1f}s"


def suite_header(result: BenchResult) -> str:
    suite = result.suite
    envs = ", ".join(f"{printable(env.label)} x{env.episodes}" for env in suite.envs)
    confidence = round(suite.bootstrap.confidence * 100)
    return (
        f"suite {printable(suite.name)}: {envs}; {suite.samples} sample(s) per task, temperature "
        f"{suite.sampling.temperature}; {confidence}% bootstrap intervals"
    )


@dataclass(frozen=True)
class Columns:
    """The figure columns of a board: no column repeats another's numbers."""

    pass_at: list[str]
    """k of the pass@k columns."""
    envs: list[str]
    """Labels of the per-env score columns."""
    note: str
    """What has no column of its own and why ("" when nothing)."""


def board_columns(ranked: Sequence[BenchResult]) -> Columns:
    """Columns of a board of comparable results: per-env scores only where the suite has several
    envs (one env's score is the suite's score), and pass@1 only where it differs from the
    score for some result (they are equal when every reward is 0 or 1)."""
    first = ranked[0]
    labels = first.suite.labels
    ks = list(first.pass_at_k)
    notes = []
    if len(labels) == 1:
        notes.append(f"the score is {labels[0]}'s")
    if "1" in ks and all(_same_figure(r.pass_at_k.get("1"), r.score) for r in ranked):
        ks.remove("1")
        notes.append("pass@1 equals the score (every reward is 0 or 1)")
    return Columns(ks, labels if len(labels) > 1 else [], "; ".join(notes))


def _same_figure(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def terminal_table(ranked: Sequence[BenchResult]) -> str:
    """A ranked table for the terminal; `ranked` must already be ranked (see `compare.rank`)."""
    if not ranked:
        return "(no results)"
    first = ranked[0]
    confidence = round(first.suite.bootstrap.confidence * 100)
    columns = board_columns(ranked)
    ks, labels = columns.pass_at, columns.envs
    header = ["#", "id", "name", "score", f"{confidence}% CI", *[f"pass@{k}" for k in ks]]
    header += [*map(printable, labels), "tokens", "time", "infra"]
    rows = []
    for position, result in enumerate(ranked, start=1):
        rows.append(
            [
                str(position),
                str(result.id),
                printable(result.name),
                fmt_score(result.score),
                fmt_interval(result.ci_low, result.ci_high),
                *[fmt_score(result.pass_at_k.get(k)) for k in ks],
                *[fmt_score(result.env(label).score) for label in labels],
                fmt_tokens(result.completion_tokens),
                fmt_seconds(result.seconds),
                str(sum(env.infra_errors for env in result.envs)),
            ]
        )
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    numeric = set(range(3, len(header)))

    def line(cells: list[str]) -> str:
        return "  ".join(
            cell.rjust(widths[i]) if i in numeric or i < 2 else cell.ljust(widths[i])
            for i, cell in enumerate(cells)
        ).rstrip()

    title = suite_header(first) + (f"; {columns.note}" if columns.note else "")
    out = [printable(title), line(header), line(["-" * w for w in widths])]
    out += [line(row) for row in rows]
    return "\n".join(out)


def result_summary(result: BenchResult) -> str:
    """A few lines about one result (printed after `rlvr bench`)."""
    number = f"#{result.id}" if result.id is not None else "(not in the store)"
    lines = [
        f"result {number} {printable(result.name)!r} on suite {printable(result.suite.name)}: "
        f"score "
        f"{fmt_score(result.score)} {fmt_interval(result.ci_low, result.ci_high)}"
    ]
    for env in result.envs:
        passes = " ".join(f"pass@{k} {fmt_score(v)}" for k, v in env.pass_at_k.items())
        lines.append(
            f"  {printable(env.label):<28} {fmt_score(env.score)} "
            f"{fmt_interval(env.ci_low, env.ci_high)}  "
            f"{passes}  episodes {env.episodes} (infra errors {env.infra_errors})  "
            f"tokens {fmt_tokens(env.completion_tokens)}  verifier {printable(env.verifier_id)}"
        )
    lines.append(
        f"  time {fmt_seconds(result.seconds)} ({result.run.get('parallel')} x "
        f"{result.run.get('workers')})"
    )
    return "\n".join(lines)


def arena_table(result: ArenaResult) -> str:
    """An arena's ratings as a terminal table, best first."""
    suite = result.suite
    confidence = round(suite.confidence * 100)
    lines = [
        f"arena {printable(suite.name)}: {printable(suite.env)}, {suite.games} games per pair "
        f"(#{result.id}, {printable(result.created_at)})",
        rating_method(result),
        f"{'rank':>4}  {'agent':<24} {'Elo':>6}  {f'{confidence}% interval':<16} "
        f"{'points':>7} / games",
    ]
    for rank, rating in enumerate(result.ratings, 1):
        interval = f"[{rating.low:.0f}, {rating.high:.0f}]"
        lines.append(
            f"{rank:>4}  {printable(rating.agent):<24} {rating.elo:>6.0f}  {interval:<16} "
            f"{rating.points:>7g} / {rating.games}"
        )
    return "\n".join(lines)


def rating_method(result: ArenaResult) -> str:
    """How an arena result's ratings and intervals were computed, in a sentence."""
    confidence = round(result.suite.confidence * 100)
    if result.method == RATING_METHOD:
        return (
            f"Elo: Bradley-Terry posterior mode, Gaussian prior (mean {ELO_MEAN:g}, sd "
            f"{PRIOR_SD:g}) on every rating; {confidence}% interval from the posterior's "
            "Gaussian (Laplace) approximation"
        )
    return (
        f"Elo: {printable(result.method)} ({confidence}%), stored by an older rlvr-gym: re-run "
        "the arena for intervals that always contain the rating"
    )
