"""`rlvr eval` samples as `rlvr train` does: the same sampling section, flags and checks, and a
greedy `rlvr eval` of a checkpoint reports what training's held-out evaluation reported."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("torch")

from rlvr.agents.cli import EvalConfig
from rlvr.agents.held_out import EVAL_SEED
from rlvr.agents.metrics import read_metrics
from rlvr.agents.policy import SamplingParams
from rlvr.agents.train import train
from rlvr.cli import main
from tests.agents.support import train_config

EPISODES = 6
NEW_TOKENS = 8


def eval_traces(tmp_path, model, *flags):
    """The episodes `rlvr eval` played on training's held-out tasks of test/Digits-v0."""
    traces = tmp_path / f"traces-{len(list(tmp_path.glob('traces-*')))}.jsonl"
    code = main(
        ["eval", "test/Digits-v0", "--agent", f"hf:{model}", "--episodes", str(EPISODES),
         "--distinct", "--seed", str(EVAL_SEED), "--kwargs", '{"split": "test"}',
         "--no-progress", "--traces", str(traces), *flags]
    )  # fmt: skip
    assert code == 0
    return [json.loads(line) for line in traces.read_text().splitlines()]


def test_greedy_eval_of_a_checkpoint_equals_trainings_held_out_evaluation(tiny_path, tmp_path):
    config = train_config(
        tiny_path, tmp_path / "run", steps=1, eval_every=1, eval_episodes=EPISODES,
        max_new_tokens=NEW_TOKENS,
    )  # fmt: skip
    final = train(config).evaluations[-1]  # what training reported (also in metrics.jsonl)
    assert final["step"] == 1
    logged = [row for row in read_metrics(tmp_path / "run" / "metrics.jsonl") if row["step"] == 1]
    assert any(row.items() >= final.items() for row in logged)
    model = tmp_path / "run" / "final"
    for flags in (["--temperature", "0", "--max-new-tokens", str(NEW_TOKENS)],
                  ["--max-new-tokens", str(NEW_TOKENS)]):  # greedy is eval's default  # fmt: skip
        rows = eval_traces(tmp_path, model, *flags)
        rewards = [row["total_reward"] for row in rows]
        assert len(rows) == final["eval/test/Digits-v0/episodes"] == EPISODES
        assert np.mean(rewards) == pytest.approx(
            final["eval/test/Digits-v0/mean_reward"], abs=1e-12
        )
        success = np.mean([reward >= 1.0 for reward in rewards])
        assert success == pytest.approx(final["eval/test/Digits-v0/success_rate"], abs=1e-12)
    # the reply budget counts: a shorter one gives other replies than training's evaluation
    short = eval_traces(tmp_path, model, "--temperature", "0", "--max-new-tokens", "1")
    assert all(row["completion_tokens"] <= 1 for row in short)


def test_eval_takes_trains_sampling_flags_and_file_table(tmp_path, capsys):
    path = tmp_path / "eval.toml"
    path.write_text('env_id = "test/Digits-v0"\n[sampling]\ntop_p = 0.5\nstop = ["</a>"]\n')
    argv = ["eval", "--config", str(path), "--temperature", "0.7", "--top-k", "3",
            "--max-new-tokens", "12", "--sampling.seed", "4", "--print-config"]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "[sampling]" in printed
    wanted = SamplingParams(
        temperature=0.7, top_p=0.5, top_k=3, max_new_tokens=12, stop=("</a>",), seed=4
    )
    assert EvalConfig("test/Digits-v0").sampling == SamplingParams(temperature=0.0)
    path.write_text(printed)
    assert main(["eval", "--config", str(path), "--print-config"]) == 0
    assert capsys.readouterr().out == printed
    from rlvr.config import read_config

    assert read_config(EvalConfig, path).sampling == wanted


BAD = [
    (["--temperature", "-1"], "sampling.temperature must be >= 0", "--temperature 0"),
    (["--max-new-tokens", "0"], "sampling.max_new_tokens must be >= 1", "--max-new-tokens 64"),
    (["--top-p", "2"], "sampling.top_p must be in (0, 1]", "--top-p 1"),
    (["--top-p", "0"], "sampling.top_p must be in (0, 1]", "--top-p 1"),
    (["--temperature", "nan"], "sampling.temperature must be a finite number", ""),
]
COMMANDS = {
    "train": ["train", "--env", "test/Digits-v0", "--model", "nowhere", "--out", "{tmp}"],
    "eval": ["eval", "test/Digits-v0", "--agent", "oracle", "--no-progress"],
    "bench": ["bench", "--suite", "demo", "--agent", "oracle", "--db", "{tmp}/db.sqlite"],
    "arena": ["bench", "arena", "--suite", "connect4", "--agent", "legal", "--agent", "random",
              "--db", "{tmp}/db.sqlite"],
}  # fmt: skip


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(("flags", "message", "fix"), BAD, ids=lambda v: str(v))
def test_bad_sampling_values_get_one_line_errors_from_every_command(
    command, flags, message, fix, tmp_path, capsys
):
    argv = [part.replace("{tmp}", str(tmp_path)) for part in COMMANDS[command]]
    assert main([*argv, *flags]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert message in err and fix in err and "Traceback" not in err
    assert not (tmp_path / "db.sqlite").exists() and not (tmp_path / "checkpoints").exists()


def test_eval_refuses_several_greedy_samples_naming_the_fix(capsys):
    assert main(["eval", "test/Digits-v0", "--samples", "3", "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "samples=3 with temperature=0" in err and "--temperature 1" in err


def test_train_refuses_greedy_rollouts_and_a_sampling_seed(tmp_path, capsys):
    base = [*COMMANDS["train"][:-1], str(tmp_path)]
    assert main([*base, "--temperature", "0"]) == 1
    assert "RL trains on sampled replies" in capsys.readouterr().err
    assert main([*base, "--sampling.seed", "3"]) == 1
    assert "the run's seed drives sampling" in capsys.readouterr().err


def test_one_sampling_flag_keeps_the_commands_other_sampling_defaults():
    """A table given in part used to start from `SamplingParams`' defaults, not the command's:
    `--max-new-tokens 8` made `rlvr eval` sample at temperature 1, `--temperature 0.7` gave
    `rlvr train` replies of 256 tokens instead of 64."""
    from rlvr.agents.train_config import TrainConfig
    from rlvr.cli import build_parser
    from rlvr.config import resolve

    args = build_parser().parse_args(
        ["train", "--env", "a/B-v0", "--model", "m", "--temperature", "0.7"]
    )
    assert resolve(TrainConfig, args).sampling == SamplingParams(temperature=0.7, max_new_tokens=64)
    args = build_parser().parse_args(["eval", "a/B-v0", "--max-new-tokens", "8"])
    assert resolve(EvalConfig, args).sampling == SamplingParams(temperature=0.0, max_new_tokens=8)
