"""`rlvr bench`, `rlvr bench reverify` and `rlvr bench arena` take their flags, `--config` and
`--print-config` from their config classes; the sampling flags override only the keys they give
of the suite's own `[sampling]` table."""

from __future__ import annotations

import typing
from pathlib import Path

import pytest

from rlvr.agents.policy import SamplingParams
from rlvr.cli import build_parser, main
from rlvr.config import resolve
from rlvr.leaderboards import ResultStore, runner
from rlvr.leaderboards.config import ArenaConfig, BenchConfig, ParallelMode
from tests.leaderboards.leaderboard_support import TOY_SUITE, write_toy_suite

# the toy suite pins a sampling that differs from SamplingParams' defaults in two keys
PINNED = TOY_SUITE.replace("temperature = 1.0", "temperature = 0.5\nmax_new_tokens = 32")
ARENA = 'name = "c4-cfg"\nenv = "rlvr/Connect4-v0"\ngames = 2\n[sampling]\nmax_new_tokens = 12\n'


def _bench_config(*argv: str) -> BenchConfig:
    return resolve(BenchConfig, build_parser().parse_args(["bench", *argv]))


@pytest.mark.parametrize(
    "argv",
    [
        ["bench", "--suite", "{suite}", "--agent", "oracle", "--episodes", "3", "--top-k", "5",
         "--no-progress", "--ray", "--name", "mine", "--parallel", "serial", "--workers", "2"],
        ["bench", "--suite", "{suite}", "--agent", "random:3"],
        ["bench", "--parallel", "threads", "reverify", "4", "7", "--stale", "--db", "x.sqlite"],
        ["bench", "arena", "--suite", "{arena}", "--agent", "legal", "--agent", "c=fixed:a=b",
         "--temperature", "0.3"],
    ],
)  # fmt: skip
def test_print_config_round_trips_through_config(tmp_path: Path, capsys, argv) -> None:
    suite, arena = write_toy_suite(tmp_path, PINNED), tmp_path / "arena.toml"
    arena.write_text(ARENA)
    argv = [part.format(suite=suite, arena=arena) for part in argv]
    assert main([*argv, "--print-config"]) == 0
    printed = capsys.readouterr().out
    saved = tmp_path / "run.toml"
    saved.write_text(printed)
    subcommand = [part for part in argv if part in ("reverify", "arena")]
    assert main(["bench", *subcommand, "--config", str(saved), "--print-config"]) == 0
    assert capsys.readouterr().out == printed
    assert not (tmp_path / "x.sqlite").exists()


def test_bench_config_file_runs_and_flags_override_it(tmp_path: Path, capsys) -> None:
    db = tmp_path / "b.sqlite"
    file = tmp_path / "bench.toml"
    suite = write_toy_suite(tmp_path, PINNED)
    file.write_text(f'suite = "{suite}"\nagent = "oracle"\nepisodes = 2\ndb = "{db}"\n')
    assert main(["bench", "--config", str(file), "--no-progress", "--episodes", "3"]) == 0
    assert "stored in" in capsys.readouterr().out
    (result,) = ResultStore(db).results()
    assert {env.episodes for env in result.suite.envs} == {3}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('suite = "math"\nagent = "oracle"\nepisode = 3\n', "unknown key 'episode'"),
        ('suite = "math"\nagent = "oracle"\nbatch_size = 0\n', "batch_size must be >= 1"),
        ('suite = "math"\nagent = "oracle"\nparallel = "gpu"\n', "parallel: expected one of"),
        ('suite = "math"\nagent = "oracle"\n[sampling]\ntop_q = 1\n', "unknown key 'top_q'"),
        ('suite = "math"\nagent = "oracle"\n[sampling]\ntop_k = -1\n', "sampling.top_k must"),
        ('agent = "oracle"\n', "suite"),
    ],
)
def test_a_bad_bench_config_file_is_one_line_naming_the_key(
    tmp_path: Path, capsys, text, message
) -> None:
    file = tmp_path / "bench.toml"
    file.write_text(text)
    db = tmp_path / "b.sqlite"
    assert main(["bench", "--config", str(file), "--db", str(db)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert message in err and "Traceback" not in err
    assert not db.exists()


def test_sampling_flags_override_only_their_keys_of_the_suites_own(tmp_path: Path) -> None:
    suite = str(write_toy_suite(tmp_path, PINNED))
    pinned = SamplingParams(temperature=0.5, max_new_tokens=32)
    assert _bench_config("--suite", suite, "--agent", "oracle").sampling is None  # the suite's
    assert _bench_config("--suite", suite, "--agent", "oracle", "--top-k", "4").sampling == (
        SamplingParams(temperature=0.5, max_new_tokens=32, top_k=4)
    )
    given = _bench_config("--suite", suite, "--agent", "o", "--temperature", "0.9").sampling
    assert given == SamplingParams(temperature=0.9, max_new_tokens=32)
    file = tmp_path / "bench.toml"
    file.write_text(f'suite = "{suite}"\nagent = "oracle"\n[sampling]\nstop = ["</a>"]\n')
    from_file = resolve(BenchConfig, build_parser().parse_args(["bench"]), file)
    assert from_file.sampling == SamplingParams(temperature=0.5, max_new_tokens=32, stop=("</a>",))
    assert pinned != SamplingParams()  # the defaults would have changed the benchmark


def test_a_bench_run_keeps_the_suites_sampling_unless_a_flag_overrides_a_key(
    tmp_path: Path,
) -> None:
    suite = write_toy_suite(tmp_path, PINNED)
    db = tmp_path / "b.sqlite"
    base = ["bench", "--db", str(db), "--suite", str(suite), "--agent", "oracle", "--no-progress"]
    assert main([*base, "--episodes", "2"]) == 0
    assert main([*base, "--episodes", "2", "--max-new-tokens", "8"]) == 0
    plain, overridden = ResultStore(db).results()
    assert plain.suite.sampling == SamplingParams(temperature=0.5, max_new_tokens=32)
    assert overridden.suite.sampling == SamplingParams(temperature=0.5, max_new_tokens=8)


def test_arena_sampling_flags_add_only_the_keys_that_change(tmp_path: Path, capsys) -> None:
    arena = tmp_path / "arena.toml"
    arena.write_text(ARENA)
    db = tmp_path / "a.sqlite"
    argv = ["bench", "arena", "--db", str(db), "--suite", str(arena), "--agent", "legal:1",
            "--agent", "col=fixed:<move>4</move>"]  # fmt: skip
    assert main(argv) == 0
    assert main([*argv, "--temperature", "0.5", "--max-new-tokens", "12"]) == 0
    capsys.readouterr()
    plain, hotter = ResultStore(db).arena_results()
    assert dict(plain.suite.sampling) == {"max_new_tokens": 12}
    assert dict(hotter.suite.sampling) == {"max_new_tokens": 12, "temperature": 0.5}
    assert {
        agent.name for agent in resolve(ArenaConfig, build_parser().parse_args(argv)).agents
    } == {
        "legal:1",
        "col",
    }


def test_a_flag_of_bench_given_before_reverify_is_refused_not_ignored(capsys) -> None:
    assert main(["bench", "--suite", "math", "reverify", "3"]) == 1
    err = capsys.readouterr().err
    assert err == "error: --suite is not an option of this command: drop it\n"


def test_parallel_modes_are_the_runners() -> None:
    assert typing.get_args(ParallelMode) == runner.PARALLEL_MODES
    assert runner.DEFAULT_PARALLEL in runner.PARALLEL_MODES
