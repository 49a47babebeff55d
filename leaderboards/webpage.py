"""A static, self-contained leaderboard site: no CDN, no server, opens from the file system.

`index.html` has, per suite, a sortable ranked table, a bar chart per env with the bootstrap
intervals as error bars, and what is needed to reproduce each result; every bar and table row
links to trace pages (`traces/<id>/<n>-<env>.html`, then `...-p2.html`, ... for long runs)
holding every episode's messages and verdict.

Everything shown comes from results, suites and model replies, so it is treated as hostile: it
is HTML-escaped, its control and bidi-override characters are written out (`printable`), long
strings wrap or are clipped, and a Content-Security-Policy allows only the page's own inline
style and sorting script (no other script, no network).
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from pathlib import Path

from rlvr.leaderboards.arena import ArenaResult
from rlvr.leaderboards.audited import audit_lines
from rlvr.leaderboards.results import BenchResult
from rlvr.leaderboards.views import (
    board_columns,
    fmt_interval,
    fmt_score,
    fmt_seconds,
    fmt_tokens,
    printable,
    rating_method,
    suite_header,
)
from rlvr.rollout.records import EpisodeRecord

TracesLoader = Callable[[int, str], Iterable[EpisodeRecord]]
"""`load(result_id, env_label)`: that env's episodes in order (`ResultStore.iter_traces`)."""

TRACE_PAGE_EPISODES = 500
"""Episodes per trace page (100k episodes make 200 pages, not one page no browser can open)."""
SHOWN_CHARS = 200
"""Names and agent specs longer than this are clipped on the index (the store keeps them whole)."""


@dataclass
class Board:
    """One suite's section of the page: its results, already ranked."""

    suite: str
    ranked: list[BenchResult]


def write_site(
    out: str | Path,
    boards: Sequence[Board],
    load_traces: TracesLoader,
    arenas: Sequence[ArenaResult] = (),
) -> Path:
    """Write the site into `out` (a folder for `index.html`, or an `.html` file); return it.

    Traces are read one env at a time through `load_traces` and written page by page, so memory
    does not grow with the number of episodes.
    """
    out = Path(out)
    page = out if out.suffix == ".html" else out / "index.html"
    traces_dir = page.parent / ("traces" if page.name == "index.html" else f"{page.stem}-traces")
    page.parent.mkdir(parents=True, exist_ok=True)
    for board in boards:
        for result in board.ranked:
            if result.id is None:
                raise ValueError(f"result {result.name!r} is not stored; add it to a store first")
            (traces_dir / str(result.id)).mkdir(parents=True, exist_ok=True)
            for label in result.suite.labels:
                records = load_traces(result.id, label)
                for number, html in trace_pages(result, label, records, "../../" + page.name):
                    path = traces_dir / str(result.id) / trace_file(result, label, number)
                    path.write_text(html, encoding="utf-8")
    prefix = traces_dir.name
    page.write_text(index_page(boards, prefix, arenas), encoding="utf-8")
    return page


def slug(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", label)


def trace_href(prefix: str, result: BenchResult, label: str, page: int = 1) -> str:
    return f"{prefix}/{result.id}/{trace_file(result, label, page)}"


def trace_file(result: BenchResult, label: str, page: int = 1) -> str:
    # The env's position keeps names unique: labels "a/b" and "a_b" share a slug.
    position = result.suite.labels.index(label) + 1
    suffix = "" if page == 1 else f"-p{page}"
    return f"{position}-{slug(label)[:80]}{suffix}.html"


def _csp(*inline: tuple[str, str]) -> str:
    """A Content-Security-Policy allowing only these inline `<style>`/`<script>` bodies."""
    hashes = {
        kind: " ".join(
            f"'sha256-{base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()}'"
            for body_kind, body in inline
            if body_kind == kind
        )
        or "'none'"
        for kind in ("style", "script")
    }
    policy = (
        f"default-src 'none'; style-src {hashes['style']}; script-src {hashes['script']}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )
    return f'<meta http-equiv="Content-Security-Policy" content="{policy}">'


def _show(text: object, limit: int | None = None) -> str:
    """Untrusted text as HTML: control and bidi characters written out, escaped, maybe clipped."""
    shown = printable(text)
    return escape(_clip(shown, limit) if limit is not None else shown)


# --- the index page -------------------------------------------------------------------------------

_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #1d2330;
       padding: 0 1em; }
h1 { margin-bottom: .2em; } h2 { margin-top: 2em; border-bottom: 1px solid #ccd; }
.meta { color: #667; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { padding: .3em .7em; border-bottom: 1px solid #e3e5ea; text-align: right; }
th { cursor: pointer; user-select: none; background: #f3f4f7; white-space: nowrap; }
th[aria-sort=ascending]::after { content: " \\25B2"; }
th[aria-sort=descending]::after { content: " \\25BC"; }
td.text, th.text { text-align: left; }
.charts { display: flex; flex-wrap: wrap; gap: 1.5em; }
figure.chart { margin: 0; } figcaption { font-weight: 600; }
svg text { font: 12px system-ui, sans-serif; fill: #1d2330; }
svg rect.bar { fill: #4c78a8; } svg a:hover rect.bar { fill: #2b5687; }
svg line.ci { stroke: #1d2330; stroke-width: 1.5; }
svg line.axis { stroke: #99a; }
details { margin: .4em 0; } pre { white-space: pre-wrap; margin: .2em 0; }
h1, h2, p, pre, summary, td.text { overflow-wrap: anywhere; }
td.text { min-width: 8em; max-width: 28em; } .scroll { overflow-x: auto; }
nav.pages { margin: 1em 0; } nav.pages a { margin-right: 1em; }
.msg { border-left: 3px solid #ccd; padding-left: .6em; margin: .4em 0; }
.msg.assistant { border-color: #4c78a8; } .msg.system { border-color: #aaa; }
.correct { color: #18794e; } .incorrect, .unparsable { color: #b42318; } .error { color: #b54708; }
"""

_SORT_JS = """
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("th").forEach(function (th, column) {
    th.addEventListener("click", function () {
      var ascending = th.getAttribute("aria-sort") !== "ascending";
      table.querySelectorAll("th").forEach(function (o) { o.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      var numeric = th.dataset.type === "num";
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      function value(row) { return row.cells[column].dataset.value; }
      rows.sort(function (a, b) {
        var x = value(a), y = value(b);
        if (numeric) {
          if (x === "" || y === "") { return (x === "") - (y === ""); }  // blanks last
          return ascending ? x - y : y - x;
        }
        return ascending ? x.localeCompare(y) : y.localeCompare(x);
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
"""


def index_page(boards: Sequence[Board], prefix: str, arenas: Sequence[ArenaResult] = ()) -> str:
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    sections = "\n".join(_board_section(board, prefix) for board in boards)
    sections += "\n".join(_arena_section(arena) for arena in arenas)
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
{_csp(("style", _CSS), ("script", _SORT_JS))}
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>rlvr-gym leaderboard</title>
<style>{_CSS}</style>
</head>
<body>
<h1>rlvr-gym leaderboard</h1>
<p class="meta">{_contents(boards, arenas)}; generated {now}. Scores are mean
episode returns on held-out tasks; intervals are percentile bootstraps over tasks.
{_elo_note(arenas)}Click a column header to sort; click a bar or an env link to read the traces.</p>
{sections}
<script>{_SORT_JS}</script>
</body>
</html>
"""


def _contents(boards: Sequence[Board], arenas: Sequence[ArenaResult]) -> str:
    """What the page holds, counting every section it shows."""
    shown = [board for board in boards if board.ranked]
    results = sum(len(board.ranked) for board in shown)
    parts = [f"{results} result(s) in {len(shown)} suite(s)"]
    if arenas:
        agents = sum(len(arena.ratings) for arena in arenas)
        parts.append(f"{len(arenas)} head-to-head arena(s) rating {agents} agent(s)")
    return " and ".join(parts)


def _elo_note(arenas: Sequence[ArenaResult]) -> str:
    if not arenas:
        return ""
    return (
        "Elo ratings are posterior modes with a Gaussian prior, so an agent that won every game"
        " still has a finite rating, inside its interval; each arena says how.\n"
    )


def _board_section(board: Board, prefix: str) -> str:
    ranked = board.ranked
    if not ranked:
        return ""
    first = ranked[0]
    return f"""<section class="suite" id="suite-{escape(slug(board.suite))}">
<h2>{_show(board.suite)}</h2>
<p>{_show(first.suite.description, SHOWN_CHARS * 5)}</p>
<p class="meta">{escape(suite_header(first))}{_columns_note(ranked)}</p>
{_audited(first)}
{_table(ranked, prefix)}
<div class="charts">
{"".join(_chart(ranked, label, prefix) for label in first.suite.labels)}
</div>
{_provenance(ranked)}
</section>"""


def _columns_note(ranked: Sequence[BenchResult]) -> str:
    note = board_columns(ranked).note
    return (
        f'<br><span class="columns-note">{_show(note[0].upper() + note[1:])}.</span>'
        if note
        else ""
    )


def _arena_section(result: ArenaResult) -> str:
    """A multi-agent suite: agents ranked by Elo from head-to-head games, with intervals."""
    suite = result.suite
    confidence = round(suite.confidence * 100)
    head = [("#", "num"), ("Agent", "text"), ("Spec", "text"), ("Elo", "num")]
    head += [(f"{confidence}% CI", "num"), ("Points", "num"), ("Games", "num")]
    th = "".join(
        f'<th data-type="{kind}" class="{kind}" scope="col">{_show(title, 40)}</th>'
        for title, kind in head
    )
    rows = []
    for position, rating in enumerate(result.ratings, start=1):
        name = _clip(printable(rating.agent), SHOWN_CHARS)
        spec = _clip(printable(result.agents.get(rating.agent, "")), SHOWN_CHARS)
        cells = [
            _td(str(position), position),
            _td(name, name, text=True),
            _td(spec, spec, text=True),
            _td(f"{rating.elo:.0f}", rating.elo),
            _td(f"[{rating.low:.0f}, {rating.high:.0f}]", rating.high - rating.low),
            _td(f"{rating.points:g}", rating.points),
            _td(str(rating.games), rating.games),
        ]
        rows.append(f"<tr>{''.join(cells)}</tr>")
    board_id = f"arena-{slug(suite.name)}"
    return f"""<section class="suite arena" id="{escape(board_id)}">
<h2>{_show(suite.name)} (head to head)</h2>
<p>{_show(suite.description, SHOWN_CHARS * 5)}</p>
<p class="meta">{_show(suite.env)}: every pair plays {suite.games} games, seats alternating; a
draw counts half a win each way. <span class="method">{_show(rating_method(result))}.</span>
Result #{result.id}, {_show(result.created_at)}.</p>
<div class="scroll"><table class="board sortable"><thead><tr>{th}</tr></thead>
<tbody>{"".join(rows)}</tbody></table></div>
</section>"""


def _audited(result: BenchResult) -> str:
    """The audited error rates of the suite's verifiers (`audited.py`)."""
    lines = audit_lines(env.id for env in result.suite.envs)
    items = "".join(f"<li>{_show(line)}</li>" for line in lines)
    return f'<ul class="meta audit">{items}</ul>'


def _num(value: float | int | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return repr(float(value))


def _table(ranked: Sequence[BenchResult], prefix: str) -> str:
    first = ranked[0]
    columns = board_columns(ranked)
    ks, labels = columns.pass_at, columns.envs
    confidence = round(first.suite.bootstrap.confidence * 100)
    head = [("#", "num"), ("Name", "text"), ("Agent", "text"), ("Score", "num")]
    head += [(f"{confidence}% CI", "num")]
    head += [(f"pass@{k}", "num") for k in ks] + [(label, "num") for label in labels]
    head += [("Tokens", "num"), ("Time", "num"), ("Traces", "text")]
    th = "".join(
        f'<th data-type="{kind}" class="{kind}" scope="col">{_show(title, 40)}</th>'
        for title, kind in head
    )
    rows = []
    for position, result in enumerate(ranked, start=1):
        links = " ".join(
            f'<a class="trace-link" href="{escape(trace_href(prefix, result, label))}">'
            f"{_show(label)}</a>"
            for label in first.suite.labels
        )
        name = _clip(printable(result.name), SHOWN_CHARS)
        spec = _clip(printable(result.agent.get("spec") or ""), SHOWN_CHARS)
        cells = [
            _td(str(position), position),
            _td(name, name, text=True),
            _td(spec, spec, text=True),
            _td(fmt_score(result.score), result.score),
            _td(fmt_interval(result.ci_low, result.ci_high), result.ci_high - result.ci_low),
            *[_td(fmt_score(result.pass_at_k.get(k)), result.pass_at_k.get(k)) for k in ks],
            *[_td(fmt_score(result.env(label).score), result.env(label).score) for label in labels],
            _td(fmt_tokens(result.completion_tokens), result.completion_tokens),
            _td(fmt_seconds(result.seconds), result.seconds),
            f'<td class="text" data-value="">{links}</td>',
        ]
        rows.append(f'<tr data-result="{result.id}">{"".join(cells)}</tr>')
    board_id = f"board-{slug(first.suite.name)}"
    return (
        f'<div class="scroll"><table class="board sortable" id="{escape(board_id)}"><thead><tr>'
        f"{th}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def _td(shown: str, value: float | int | str | None, *, text: bool = False) -> str:
    data = escape(value) if isinstance(value, str) else _num(value)
    css = ' class="text"' if text else ""
    return f'<td{css} data-value="{data}">{escape(shown)}</td>'


def _chart(ranked: Sequence[BenchResult], label: str, prefix: str) -> str:
    name_width, bar_width, row, top = 170, 380, 26, 8
    envs = [result.env(label) for result in ranked]
    scale_max = max([1.0, *(e.ci_high for e in envs if not math.isnan(e.ci_high))])
    height = top + row * len(ranked) + 24
    width = name_width + bar_width + 110
    parts = []
    for index, (result, env) in enumerate(zip(ranked, envs)):
        y = top + index * row
        score = 0.0 if math.isnan(env.score) else env.score
        length = max(0.0, bar_width * score / scale_max)  # a negative score has no bar
        interval = ""
        if not math.isnan(env.ci_low):
            x1 = name_width + bar_width * env.ci_low / scale_max
            x2 = name_width + bar_width * env.ci_high / scale_max
            mid = y + row / 2 - 2
            interval = (
                f'<line class="ci" x1="{x1:.1f}" x2="{x2:.1f}" y1="{mid}" y2="{mid}"/>'
                f'<line class="ci" x1="{x1:.1f}" x2="{x1:.1f}" y1="{mid - 5}" y2="{mid + 5}"/>'
                f'<line class="ci" x1="{x2:.1f}" x2="{x2:.1f}" y1="{mid - 5}" y2="{mid + 5}"/>'
            )
        title = (
            f"{_clip(printable(result.name), SHOWN_CHARS)}: {fmt_score(env.score)} "
            f"{fmt_interval(env.ci_low, env.ci_high)}, {env.judged} judged episodes"
        )
        parts.append(
            f'<a class="bar-link" href="{escape(trace_href(prefix, result, label))}">'
            f'<g class="bar" data-result="{result.id}" data-score="{_num(env.score)}" '
            f'data-ci-low="{_num(env.ci_low)}" data-ci-high="{_num(env.ci_high)}">'
            f"<title>{escape(title)}</title>"
            f'<text x="{name_width - 8}" y="{y + row / 2 + 2}" text-anchor="end">'
            f"{_show(result.name, 24)}</text>"
            f'<rect class="bar" x="{name_width}" y="{y + 3}" width="{length:.1f}" '
            f'height="{row - 10}"/>{interval}'
            f'<text x="{name_width + bar_width + 8}" y="{y + row / 2 + 2}">'
            f"{fmt_score(env.score)}</text></g></a>"
        )
    axis_y = top + row * len(ranked)
    ticks = "".join(
        f'<text x="{name_width + bar_width * t:.1f}" y="{axis_y + 16}" text-anchor="middle">'
        f"{t * scale_max:.2g}</text>"
        for t in (0, 0.5, 1)
    )
    return (
        f'<figure class="chart" data-env="{escape(label)}"><figcaption>{_show(label)}</figcaption>'
        f'<svg role="img" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'xmlns="http://www.w3.org/2000/svg">{"".join(parts)}'
        f'<line class="axis" x1="{name_width}" x2="{name_width + bar_width}" y1="{axis_y}" '
        f'y2="{axis_y}"/>{ticks}</svg></figure>'
    )


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _provenance(ranked: Sequence[BenchResult]) -> str:
    rows = []
    for result in ranked:
        git = result.code.get("git") or {}
        commit = git.get("commit", "")[:12] + (" (dirty)" if git.get("dirty") else "")
        envs = "<br>".join(
            _show(f"{env.label}: {env.verifier_id}; tasks {env.dataset_hash[:16]}", SHOWN_CHARS)
            for env in result.envs
        )
        sampling = json.dumps(result.agent.get("sampling", {}), sort_keys=True)
        rejudged = f" (re-judged #{result.reverified_from})" if result.reverified_from else ""
        rows.append(
            f"<tr><td>{result.id}</td><td class='text'>{_show(result.name, SHOWN_CHARS)}</td>"
            f"<td class='text'>{_show(result.agent.get('spec'), SHOWN_CHARS)}<br>"
            f"<code>{_show(sampling, SHOWN_CHARS * 5)}</code></td>"
            f"<td class='text'>rlvr-gym {_show(result.code.get('rlvr_gym', '?'))} "
            f"{_show(commit or 'no git checkout')}</td><td class='text'>{envs}</td>"
            f"<td class='text'>{_show(result.code.get('created_at', ''))}"
            f"{rejudged}"
            "</td></tr>"
        )
    return (
        "<details class='provenance'><summary>Reproducibility: versions, commits, tasks</summary>"
        "<table><thead><tr><th>id</th><th class='text'>name</th><th class='text'>agent, sampling"
        "</th><th class='text'>code</th><th class='text'>verifiers and dataset hashes</th>"
        f"<th class='text'>run at</th></tr></thead><tbody>{''.join(rows)}</tbody></table></details>"
    )


# --- trace pages ----------------------------------------------------------------------------------


def trace_pages(
    result: BenchResult, label: str, records: Iterable[EpisodeRecord], back: str
) -> Iterator[tuple[int, str]]:
    """(page number, HTML) of the trace pages of one env, `TRACE_PAGE_EPISODES` episodes each."""
    chunks = _chunks(records, TRACE_PAGE_EPISODES)
    chunk = next(chunks, [])
    number = 1
    while True:
        following = next(chunks, None)
        yield number, trace_page(result, label, chunk, back, number, following is not None)
        if following is None:
            return
        chunk, number = following, number + 1


def _chunks(records: Iterable[EpisodeRecord], size: int) -> Iterator[list[EpisodeRecord]]:
    iterator = iter(records)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


def trace_page(
    result: BenchResult,
    label: str,
    records: Sequence[EpisodeRecord],
    back: str,
    page: int = 1,
    more: bool = False,
) -> str:
    env = result.env(label)
    episodes = "\n".join(_episode(record) for record in records)
    nav = _page_nav(result, label, page, more, len(records), env.episodes)
    name = _show(result.name, SHOWN_CHARS)
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
{_csp(("style", _CSS))}
<title>Traces: {name} on {_show(label)}</title>
<style>{_CSS}</style>
</head>
<body>
<p><a href="{escape(back)}">&larr; leaderboard</a></p>
<h1>{name} on {_show(label)}</h1>
<p class="meta">Result #{result.id}, suite {_show(result.suite.name)}; score
{fmt_score(env.score)} {fmt_interval(env.ci_low, env.ci_high)}; {env.episodes} episodes
({env.infra_errors} infrastructure errors); verifier {_show(env.verifier_id)}.</p>
{nav}
{episodes}
{nav}
</body>
</html>
"""


def _page_nav(
    result: BenchResult, label: str, page: int, more: bool, shown: int, total: int
) -> str:
    if page == 1 and not more:
        return ""
    first = (page - 1) * TRACE_PAGE_EPISODES + 1

    def link(number: int, text: str) -> str:
        return f'<a href="{escape(trace_file(result, label, number))}">{text}</a>'

    parts = [f"episodes {first}&ndash;{first + shown - 1} of {total}"]
    if page > 1:
        parts += [link(1, "&laquo; first"), link(page - 1, "&lsaquo; previous")]
    if more:
        parts.append(link(page + 1, "next &rsaquo;"))
    return f'<nav class="pages">{" ".join(parts)}</nav>'


def _episode(record: EpisodeRecord) -> str:
    status = (record.verdict or {}).get("status", "none")
    summary = (
        f"episode {record.episode} · sample {record.sample} · seed {record.seed} · "
        f"task {printable(record.task_id)} · return {record.total_reward:.3f} · "
        f"{printable(status)}"
        + (" · infrastructure error" if record.infra_error else "")
        + (" · truncated" if record.truncated else "")
    )
    messages = "".join(
        f'<div class="msg {escape(slug(str(m.get("role"))))}"><b>{_show(m.get("role"))}</b>'
        f"<pre>{escape(printable(m.get('content'), keep_newlines=True))}</pre></div>"
        for m in record.messages
    )
    verdict = escape(json.dumps(record.verdict, indent=2, default=str))
    return (
        f'<details class="episode" id="ep-{record.episode}-{record.sample}">'
        f'<summary><span class="{escape(slug(str(status)))}">{escape(summary)}</span></summary>'
        f"{messages}<p>rewards per turn: {escape(str(record.rewards))}</p>"
        f"<pre class='verdict'>{verdict}</pre></details>"
    )
