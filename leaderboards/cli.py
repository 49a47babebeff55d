"""`rlvr bench` (run a suite, re-judge results) and `rlvr leaderboard` (show, list, html)."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def add_commands(subparsers: Any) -> None:
    from rlvr.config import add_command

    bench = add_command(
        subparsers,
        "bench",
        _config_class("BenchConfig"),
        run_bench,
        help="run a benchmark suite with an agent and store the result",
    )
    actions = bench.add_subparsers(dest="bench_command", metavar="{reverify,suites,arena}")
    add_command(
        actions,
        "reverify",
        _config_class("ReverifyConfig"),
        run_reverify,
        help="re-judge stored results with today's verifiers",
    )
    suites = actions.add_parser("suites", help="list the built-in suites")
    suites.set_defaults(func=list_suites)
    add_command(
        actions,
        "arena",
        _config_class("ArenaConfig"),
        run_arena_command,
        help="rank agents by Elo from head-to-head games on a multi-agent suite, and store it",
    )

    db = argparse.ArgumentParser(add_help=False)
    db.add_argument(
        "--db",
        help="result store (SQLite file); default $RLVR_LEADERBOARD_DB, else "
        "~/.local/share/rlvr/leaderboard.sqlite (under $XDG_DATA_HOME if set)",
    )
    board = subparsers.add_parser("leaderboard", help="rank stored results")
    views = board.add_subparsers(dest="board_command", metavar="{show,html,list,delete,import}")
    show = views.add_parser("show", parents=[db], help="print a ranked table per suite")
    _selection_arguments(show)
    show.set_defaults(func=show_board)
    html = views.add_parser("html", parents=[db], help="write a static leaderboard site")
    html.add_argument("out", help="folder for index.html and traces/, or a .html file")
    _selection_arguments(html)
    html.set_defaults(func=write_html)
    listing = views.add_parser("list", parents=[db], help="list every stored result with its id")
    listing.add_argument("--suite", help="only this suite")
    listing.add_argument("--all", action="store_true", help="include re-judged (superseded) ones")
    listing.set_defaults(func=list_results)
    delete = views.add_parser("delete", parents=[db], help="delete stored results and their traces")
    delete.add_argument("ids", nargs="+", type=int, help="result ids (see rlvr leaderboard list)")
    delete.add_argument("--yes", action="store_true", help="delete without asking")
    delete.set_defaults(func=delete_results)
    imports = views.add_parser(
        "import",
        parents=[db],
        help="add results that rlvr bench saved in a file because the store could not take them",
    )
    imports.add_argument("files", nargs="+", help="the .json files rlvr bench named")
    imports.set_defaults(func=import_results)
    board.set_defaults(func=lambda args: board.print_help() or 2)


def _config_class(name: str) -> Any:
    """The config class `name` of `rlvr.leaderboards.config`, imported on first use."""

    def config_class() -> type:
        from rlvr.leaderboards import config

        return getattr(config, name)

    return config_class


def _selection_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--suite", help="only this suite (default: every suite in the store)")
    parser.add_argument("--ids", type=_id_list, help="rank only these results, e.g. 3,5,8")
    parser.add_argument(
        "--latest",
        action="store_true",
        help="rank the results comparable with each suite's newest; list the others and why",
    )


def _id_list(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--ids takes result ids like 3,5,8, got {text!r}"
        ) from None


SAVED_ASIDE = 3
"""Exit status of `rlvr bench` when the run finished but the store could not take the result,
which was saved in a file beside it instead (`rlvr leaderboard import FILE` adds it)."""


def _db_path(db: str | None) -> Path:
    """The store `--db` names, else the default one."""
    from rlvr.leaderboards.store import default_db_path

    return Path(db) if db else default_db_path()


def _store(db: str | None, *, readonly: bool = False) -> Any:
    from rlvr.leaderboards.store import ResultStore

    return ResultStore(_db_path(db), readonly=readonly)


def _store_result(db: str | None, result: Any, *, supersedes: int | None = None) -> Any:
    """Add a finished result to the store; if the store cannot take it (locked past its wait,
    read-only, full), save it in a file beside the store instead and say how to import it.
    Returns that file's path, or None when the result is in the store."""
    import shlex
    import sqlite3

    from rlvr.leaderboards.errors import InvalidResultError, LeaderboardError, StoreError
    from rlvr.leaderboards.unsaved import save_unsaved

    with _ctrl_c_deferred():
        try:
            with _store(db) as store:
                store.add(result, supersedes=supersedes)
            return None
        except InvalidResultError as exc:  # no store (nor import) takes it: saving it aside is moot
            raise InvalidResultError(f"the result cannot be stored: {exc}") from None
        except (LeaderboardError, sqlite3.Error, OSError) as exc:
            try:
                path = save_unsaved(result, _db_path(db), supersedes=supersedes)
            except StoreError as again:
                raise StoreError(f"{exc}; {again}: the result is lost") from None
            command = f"rlvr leaderboard import {shlex.quote(str(path))}"
            _say(
                f"error: {exc}\nthe finished result is saved in {path}; add it to the store "
                f"with\n  {command} --db {shlex.quote(str(_db_path(db)))}"
            )
            return path


@contextmanager
def _ctrl_c_deferred() -> Iterator[None]:
    """Hold Ctrl-C back until the block ends. SQLite's wait for a locked store cannot be
    interrupted: a Ctrl-C pressed during it would land right after, in the middle of saving
    the result aside, and lose it."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be set from the main thread
        return
    pressed: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda number, frame: pressed.append(number))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if pressed:
        raise KeyboardInterrupt


def _fail(message: str) -> int:
    _say(f"error: {message}")
    return 1


def _say(message: str) -> None:
    """Print to stderr with control characters escaped (messages quote names from the store)."""
    from rlvr.leaderboards.views import printable

    print(printable(message, keep_newlines=True), file=sys.stderr)


# --- bench ----------------------------------------------------------------------------------------


def run_bench(config: Any, args: argparse.Namespace) -> int:
    from dataclasses import replace

    from rlvr.leaderboards.errors import LeaderboardError
    from rlvr.leaderboards.runner import run_suite
    from rlvr.leaderboards.suites import load_suite
    from rlvr.leaderboards.views import result_summary
    from rlvr.rollout.hosts import EnvWorkersError
    from rlvr.workers import env_workers

    try:
        suite = load_suite(config.suite)
        if config.episodes is not None:
            suite = suite.with_episodes(config.episodes)
        if config.sampling is not None:  # the suite's own, with the keys given replaced
            suite = replace(suite, sampling=config.sampling)
        # Open the store once first: a wrong path, a foreign or unwritable file must not be
        # found out only after the run. (Closed again: no SQLite connection across fork.)
        _store(config.db).close()
        with env_workers(config.ray, config.env_workers) as ray_workers:
            result = run_suite(
                suite,
                config.agent,
                name=config.name,
                parallel=config.parallel,
                workers=config.workers,
                batch_size=config.batch_size,
                progress=config.progress,
                env_host=ray_workers.host if ray_workers is not None else None,
            )
        saved_in = _store_result(config.db, result)
        print(result_summary(result))
        if saved_in is not None:
            return SAVED_ASIDE
        print(f"stored in {_db_path(config.db)}")
    except (LeaderboardError, ValueError, ImportError, EnvWorkersError) as exc:
        return _fail(str(exc))
    return 0


def run_reverify(config: Any, args: argparse.Namespace) -> int:
    from rlvr.leaderboards.errors import LeaderboardError
    from rlvr.leaderboards.runner import reverify
    from rlvr.leaderboards.views import fmt_score, printable
    from rlvr.rollout.hosts import EnvWorkersError
    from rlvr.workers import env_workers

    try:
        # Read, then close the store before forking workers: a SQLite connection must not be
        # carried across fork.
        with _store(config.db) as store:
            ids = list(config.ids)
            if config.stale:
                ids += [i for i in _stale_ids(store) if i not in ids]
            olds = [store.get(result_id) for result_id in ids]
        if not ids:
            return _fail("name result ids to re-judge, or pass --stale")
        status = 0
        with env_workers(config.ray, config.env_workers) as ray_workers:
            for old in olds:
                new = reverify(
                    old,
                    parallel=config.parallel,
                    workers=config.workers,
                    progress=config.progress,
                    env_host=ray_workers.host if ray_workers is not None else None,
                )
                saved_in = _store_result(config.db, new, supersedes=old.id)
                changes = ", ".join(
                    f"{printable(env.label)} {fmt_score(before.score)} -> {fmt_score(env.score)}"
                    for env, before in zip(new.envs, old.envs)
                )
                as_what = f"#{new.id}" if saved_in is None else f"{saved_in} (not in the store yet)"
                print(f"#{old.id} {printable(old.name)!r} re-judged as {as_what}: {changes}")
                status = status if saved_in is None else SAVED_ASIDE
    except (LeaderboardError, ValueError, ImportError, EnvWorkersError) as exc:
        return _fail(str(exc))
    return status


def _stale_ids(store: Any) -> list[int]:
    """Current results whose recorded verifier differs from what the env uses today."""
    from rlvr.leaderboards.compare import stale_results

    return [result.id for result in stale_results(store.results()) if result.id is not None]


def list_suites(args: argparse.Namespace) -> int:
    import gymnasium as gym

    import rlvr  # noqa: F401  (registers the environments)
    from rlvr.leaderboards.suites import builtin_suite_names, load_suite

    for name in builtin_suite_names():
        suite = load_suite(name)
        envs = ", ".join(
            env.label + ("" if env.id in gym.registry else " (not registered)")
            for env in suite.envs
        )
        print(f"{name:<6} {suite.description}\n       envs: {envs}")
    from rlvr.leaderboards.arena import arena_names, load_arena

    for name in arena_names():  # multi-agent: `rlvr bench arena --suite NAME`
        arena = load_arena(name)
        print(f"{name:<6} [arena] {arena.description}")
    return 0


# --- leaderboard ----------------------------------------------------------------------------------


def _boards(args: argparse.Namespace, store: Any) -> tuple[list[Any], list[str]]:
    """Ranked boards per suite, and the refusals: suites whose results are not comparable, and
    stored rows that cannot be read (left out of their boards)."""
    from rlvr.leaderboards.compare import rank, split_comparable
    from rlvr.leaderboards.errors import NotComparableError
    from rlvr.leaderboards.webpage import Board

    boards: list[Any] = []
    refusals: list[str] = []
    if args.ids:
        chosen = [store.get(result_id, traces=False) for result_id in args.ids]
        suites = sorted({result.suite.name for result in chosen})
        groups = {s: [r for r in chosen if r.suite.name == s] for s in suites}
    else:
        suites = [args.suite] if args.suite else store.suites()
        groups = {
            suite: store.results(suite=suite, on_damaged=_left_out(refusals)) for suite in suites
        }
    for suite, results in groups.items():
        if args.latest and results:
            newest = max(results, key=lambda r: r.id)
            results, excluded = split_comparable(results, newest)
            for result, reasons in excluded:
                _say(f"suite {suite}: left out #{result.id} {result.name!r}: {'; '.join(reasons)}")
        try:
            boards.append(Board(suite, rank(results)))
        except NotComparableError as exc:
            refusals.append(str(exc))
    return boards, refusals


def run_arena_command(config: Any, args: argparse.Namespace) -> int:
    from dataclasses import replace

    from rlvr.config import dump
    from rlvr.leaderboards.arena import load_arena, run_arena
    from rlvr.leaderboards.errors import LeaderboardError
    from rlvr.leaderboards.views import arena_table

    try:
        suite = load_arena(config.suite)
        if config.sampling is not None:  # the arena's table, with the keys that changed
            own = dump(suite.sampling_params)
            changed = {k: v for k, v in dump(config.sampling).items() if v != own[k]}
            suite = replace(suite, sampling={**suite.sampling, **changed})
        result = run_arena(suite, {agent.name: agent.spec for agent in config.agents})
        with _store(config.db) as store:
            store.add_arena(result)
    except (LeaderboardError, ValueError) as exc:
        return _fail(str(exc))
    print(arena_table(result))
    return 0


def _left_out(refusals: list[str]) -> Any:
    """`on_damaged` of the store's readers: a damaged row is named among the refusals."""
    return lambda error: refusals.append(f"left out: {error}")


def _latest_arenas(args: argparse.Namespace, store: Any, refusals: list[str]) -> list[Any]:
    """The newest readable arena result of each arena suite (or of `--suite`)."""
    newest: dict[str, Any] = {}
    suite = getattr(args, "suite", None)
    for result in store.arena_results(suite=suite, on_damaged=_left_out(refusals)):
        newest[result.suite.name] = result
    return list(newest.values())


def show_board(args: argparse.Namespace) -> int:
    from rlvr.leaderboards.errors import LeaderboardError
    from rlvr.leaderboards.views import arena_table, terminal_table

    try:
        with _store(args.db, readonly=True) as store:
            boards, refusals = _boards(args, store)
            arenas = [] if args.ids else _latest_arenas(args, store, refusals)
    except LeaderboardError as exc:
        return _fail(str(exc))
    if not boards and not refusals and not arenas:
        print("no results yet: run `rlvr bench --suite SUITE --agent AGENT`")
    for board in boards:
        print(terminal_table(board.ranked) + "\n")
    for arena in arenas:
        print(arena_table(arena) + "\n")
    for refusal in refusals:
        _say(refusal)
    return 1 if refusals else 0


def write_html(args: argparse.Namespace) -> int:
    from rlvr.leaderboards.errors import LeaderboardError
    from rlvr.leaderboards.webpage import write_site

    try:
        with _store(args.db, readonly=True) as store:
            boards, refusals = _boards(args, store)
            arenas = [] if args.ids else _latest_arenas(args, store, refusals)
            if refusals:
                for refusal in refusals:
                    _say(refusal)
                return _fail(
                    "nothing written: a published board must neither mix incomparable results "
                    "nor silently leave stored ones out"
                )
            page = write_site(args.out, boards, store.iter_traces, arenas)
    except LeaderboardError as exc:
        return _fail(str(exc))
    print(f"wrote {page}")
    return 0


def list_results(args: argparse.Namespace) -> int:
    from rlvr.leaderboards.errors import LeaderboardError
    from rlvr.leaderboards.views import fmt_score, printable

    damaged: list[str] = []
    try:
        with _store(args.db, readonly=True) as store:
            results = store.results(
                suite=args.suite, include_superseded=args.all, on_damaged=_left_out(damaged)
            )
    except LeaderboardError as exc:
        return _fail(str(exc))
    for r in results:
        note = f"  (re-judged as #{r.superseded_by})" if r.superseded_by else ""
        print(
            f"#{r.id:<4} {printable(r.suite.name):<8} {printable(r.name):<24} "
            f"{fmt_score(r.score)}  {printable(r.agent.get('spec'))}  "
            f"{r.code.get('created_at', '')}{note}"
        )
    for message in damaged:
        _say(message)
    return 1 if damaged else 0


def delete_results(args: argparse.Namespace) -> int:
    from rlvr.leaderboards.errors import LeaderboardError
    from rlvr.leaderboards.views import printable

    try:
        with _store(args.db) as store:
            for result_id in args.ids:
                print(printable(store.describe(result_id)))
            if not args.yes:
                return _fail("nothing deleted: add --yes to delete the results listed above")
            for result_id in args.ids:
                store.delete(result_id)
    except LeaderboardError as exc:
        return _fail(str(exc))
    print(f"deleted {len(args.ids)} result(s)")
    return 0


def import_results(args: argparse.Namespace) -> int:
    from rlvr.leaderboards.errors import LeaderboardError
    from rlvr.leaderboards.unsaved import read_unsaved
    from rlvr.leaderboards.views import printable

    try:
        for file in args.files:
            result, supersedes = read_unsaved(file)
            with _store(args.db) as store:
                result_id, added = store.add_once(result, supersedes=supersedes)
                what = f"{store.describe(result_id)} in {store.path}"
            if added:
                print(printable(f"imported {file} as {what}; the file may be deleted now"))
            else:
                print(printable(f"{file}: already stored as {what}; nothing to do"))
    except LeaderboardError as exc:
        return _fail(str(exc))
    return 0
