"""The `rlvr` command line, run as a user runs it."""

from __future__ import annotations

import subprocess
import sys

from rlvr.cli import main


def run_cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rlvr.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_help_lists_commands():
    result = run_cli("--help")
    assert result.returncode == 0
    for command in ("envs", "play", "eval"):
        assert command in result.stdout


def test_envs_lists_rlvr_envs_with_their_card_summary():
    import rlvr.envs

    result = run_cli("envs")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    for env_id in rlvr.envs.rlvr_env_ids():
        line = next(line for line in lines if line.startswith(env_id + " "))
        assert len(line.split(maxsplit=1)) == 2  # id and a non-empty summary
    assert not any(line.startswith("CartPole") for line in lines)
    for env_id in rlvr.envs.registration.multiagent_env_ids():
        line = next(line for line in lines if line.startswith(env_id + " "))
        assert line.split(maxsplit=2)[1] == "[multi-agent]" and len(line.split(maxsplit=2)) == 3


def test_envs_groups_the_ids_by_family_and_lists_the_others_last(capsys):
    from rlvr.envs import register_task_env
    from rlvr.families import builtin_families
    from tests.envs.toy_envs import CAPITALS, exact_match

    register_task_env("rlvrtest/CliGrouped-v0", CAPITALS, exact_match, override=True)
    assert main(["envs"]) == 0
    groups: dict[str, list[str]] = {}
    for line in capsys.readouterr().out.splitlines():
        if line and "/" not in line.split()[0]:  # a header: ids hold a slash, headers do not
            header = line
            groups[header] = []
        elif line:
            groups[header].append(line.split()[0])
    headers = list(groups)
    expected = [f"family {family.name}  ({family.docs})" for family in builtin_families()]
    assert headers[: len(expected)] == expected  # the registry's order
    for family, header in zip(builtin_families(), expected, strict=True):
        assert groups[header] == family.env_ids  # the descriptor's order, variants last
    assert headers[-1] == "not in a family" and "rlvrtest/CliGrouped-v0" in groups[headers[-1]]


def test_play_plays_every_seat_of_a_multiagent_env():
    result = run_cli(
        "play", "rlvr/Connect4-v0", "--seed", "0", stdin="<move>4</move>\n.\nnope\n.\n/quit\n"
    )
    assert result.returncode == 0, result.stderr
    assert "--- player_0 to move ---" in result.stdout
    assert "Your opponent played column 4." in result.stdout
    assert "[final reward 1.000]" in result.stdout and "[final reward -1.000]" in result.stdout


def test_eval_prints_statistics(capsys):
    from rlvr.envs import register_task_env
    from tests.envs.toy_envs import CAPITALS, exact_match

    register_task_env("rlvrtest/CliCapitals-v0", CAPITALS, exact_match, override=True)
    assert (
        main(
            [
                "eval",
                "rlvrtest/CliCapitals-v0",
                "--agent",
                "oracle",
                "--episodes",
                "7",
                "--no-progress",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "episodes       7" in out and "success rate   1.0000" in out


def test_eval_writes_traces(tmp_path, capsys):
    import json

    from rlvr.envs import register_task_env
    from tests.envs.toy_envs import CAPITALS, exact_match

    register_task_env("rlvrtest/CliCapitals2-v0", CAPITALS, exact_match, override=True)
    traces = tmp_path / "traces.jsonl"
    main(
        [
            "eval",
            "rlvrtest/CliCapitals2-v0",
            "--agent",
            "fixed:Lima",
            "--episodes",
            "5",
            "--samples",
            "2",
            "--temperature",
            "1",
            "--traces",
            str(traces),
            "--no-progress",
        ]
    )
    rows = [json.loads(line) for line in traces.read_text().splitlines()]
    assert len(rows) == 10
    assert {row["messages"][-1]["content"] for row in rows} == {"Lima"}
    assert "pass@2" in capsys.readouterr().out


def test_play_reads_replies_from_the_terminal():
    script = (
        "import gymnasium as gym, sys\n"
        "from rlvr.envs import register_task_env\n"
        "register_task_env('rlvrtest/Play-v0', [{'prompt': 'Say hi', 'answer': 'hi'}],"
        " lambda r, t: r.strip() == t.answer)\n"
        "from rlvr.cli import main\n"
        "sys.exit(main(['play', 'rlvrtest/Play-v0', '--seed', '0']))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        input="hi\n.\nnope\n.\n/quit\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("Say hi") == 3  # two played, the third quit
    assert "[reward 1.000, return 1.000]" in result.stdout
    assert "[reward 0.000, return 0.000]" in result.stdout


def test_bad_agent_spec_is_a_clear_error(capsys):
    assert main(["eval", "rlvrtest/CliCapitals-v0", "--agent", "nobody"]) == 1
    assert "unknown agent 'nobody'; use one of: oracle" in capsys.readouterr().err


def test_play_refuses_bad_input_in_one_line():
    for args, message in [
        (("rlvr/Nope-v0",), "error: rlvr/Nope-v0: Environment `Nope` doesn't exist"),
        (("rlvr/Math-v0", "--kwargs", '{"difficulty": 9}'), "error: rlvr/Math-v0: difficulty"),
        (("rlvr/TicTacToe-v0", "--kwargs", '{"x": 1}'), "unknown argument(s) x=1"),
        (("rlvr/Math-v0", "--kwargs", "[1]"), "--kwargs: must be a JSON object"),
        (("rlvr/Math-v0", "--kwargs", '{"difficulty": NaN}'), "NaN is not a JSON number"),
        (("rlvr/Math-v0", "--kwargs", "[" * 5000), "JSON nested more than 100 levels"),
        (("rlvr/Math-v0", "--seed", "-1"), "--seed: must be in [0, 4294967295]"),
    ]:
        result = run_cli("play", *args, stdin="/quit\n")
        assert result.returncode in (1, 2), (args, result.stdout)
        assert message in result.stderr and "Traceback" not in result.stderr, result.stderr
        assert result.stderr.strip().splitlines()[-1].count("error") == 1
