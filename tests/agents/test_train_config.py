"""`rlvr train` and `rlvr tiny` configs: flags generated from the dataclasses, today's flag names
kept, files that reproduce a run, and what may change on resume."""

from __future__ import annotations

import copy
import dataclasses
import math
import re
import types
import typing
from collections.abc import Sequence
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from rlvr.agents.errors import TrainingError  # noqa: E402
from rlvr.agents.hf import HFPolicy, LoraSettings  # noqa: E402
from rlvr.agents.learners.base import LEARNERS  # noqa: E402
from rlvr.agents.learners.grpo import GRPOConfig  # noqa: E402
from rlvr.agents.learners.ppo import PPOConfig  # noqa: E402
from rlvr.agents.learners.rloo import RLOOConfig  # noqa: E402
from rlvr.agents.metrics import read_metrics  # noqa: E402
from rlvr.agents.policy import SamplingParams  # noqa: E402
from rlvr.agents.rollouts import EnvSpec  # noqa: E402
from rlvr.agents.tiny import TinyConfig, TinyModelConfig, WarmStartConfig  # noqa: E402
from rlvr.agents.train import TrainConfig, train  # noqa: E402
from rlvr.cli import build_parser, main  # noqa: E402
from rlvr.config import ConfigError, build, parse_toml, read_config, resolve  # noqa: E402
from tests.agents.support import train_config  # noqa: E402


def parsed(*argv: str) -> TrainConfig:
    args = build_parser().parse_args(["train", *argv])
    return resolve(TrainConfig, args, args.config)


def field_paths(cls: type, prefix: str = "") -> list[str]:
    """Dotted paths of every field, nested dataclasses (and list elements) included."""
    paths = []
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        paths.append(prefix + field.name)
        inner = [a for a in typing.get_args(hints[field.name]) if a is not type(None)]
        for candidate in [hints[field.name], *inner]:
            if dataclasses.is_dataclass(candidate):
                paths += field_paths(candidate, f"{prefix}{field.name}.")
    return paths


@pytest.mark.parametrize("command", ["train", "tiny"])
def test_every_field_has_a_generated_flag(command):
    parser = build_parser()._subparsers._group_actions[0].choices[command]  # type: ignore[union-attr]
    parser.format_help()  # makes the flags
    flags = {name for action in parser._actions for name in action.option_strings}
    cls = {"train": TrainConfig, "tiny": TinyConfig}[command]
    wanted = {"--" + path.replace("_", "-") for path in field_paths(cls)}
    # tables are reached through their fields (--grpo.lr); each env's id comes from --env ID
    sections = {f"--{name}" for name in LEARNERS}
    wanted -= {*sections, "--sampling", "--envs.id"} if command == "train" else {"--model"}
    assert wanted <= flags, wanted - flags


def test_no_flags_give_the_dataclass_defaults():
    assert parsed("--env", "test/Add-v0", "--model", "m") == TrainConfig(
        envs=[EnvSpec("test/Add-v0")], model="m"
    )


def test_todays_flag_names_keep_their_meaning(tmp_path):
    """Every flag `rlvr train` took before its flags were generated, with what it set then."""
    template = tmp_path / "chat.jinja"
    template.write_text("{{ messages }}")
    args = build_parser().parse_args(
        ["train", "--env", "test/Add-v0=2", "--env", "test/Digits-v0", "--kwargs", '{"a": 1}',
         "--heldout-kwargs", '{"split": "test"}', "--model", "m", "--chat-template", str(template),
         "--algo", "ppo", "--out", "o", "--steps", "3", "--prompts", "4", "--group-size", "5",
         "--max-new-tokens", "6", "--max-turns", "2", "--temperature", "0.7", "--lr", "0.001",
         "--loss-type", "grpo", "--clip-low", "0.1", "--clip-high", "0.3", "--beta", "0.05",
         "--mu", "2", "--mask-truncated", "--micro-batch", "4", "--value-model", "critic",
         "--kl-coef", "0.01", "--epochs", "3", "--eval-every", "7", "--eval-episodes", "8",
         "--save-every", "9", "--time-budget", "60", "--max-infra-error-rate", "0.5",
         "--infra-error-window", "4", "--seed", "11", "--threads", "1", "--device", "cpu",
         "--dtype", "bfloat16", "--lora-r", "4", "--lora-targets", "c_attn,c_proj",
         "--no-tensorboard", "--no-progress", "--resume"]
    )  # fmt: skip
    kwargs, heldout = {"a": 1}, {"split": "test"}
    assert args.resume is True
    assert resolve(TrainConfig, args) == TrainConfig(
        envs=[
            EnvSpec("test/Add-v0", 2.0, kwargs, heldout),
            EnvSpec("test/Digits-v0", 1.0, kwargs, heldout),
        ],
        model="m",
        chat_template="{{ messages }}",
        algo="ppo",
        output_dir="o",
        steps=3,
        prompts_per_step=4,
        group_size=5,
        sampling=SamplingParams(max_new_tokens=6, temperature=0.7),
        max_turns=2,
        eval_every=7,
        eval_episodes=8,
        save_every=9,
        time_budget=60.0,
        max_infra_error_rate=0.5,
        infra_error_window=4,
        seed=11,
        threads=1,
        device="cpu",
        dtype="bfloat16",
        lora=LoraSettings(r=4, alpha=8, target_modules=("c_attn", "c_proj")),  # alpha 2r as before
        tensorboard=False,
        progress=False,
        grpo=GRPOConfig(
            lr=1e-3,
            loss_type="grpo",
            clip_low=0.1,
            clip_high=0.3,
            beta=0.05,
            mu=2,
            mask_truncated=True,
            micro_batch_size=4,
        ),
        ppo=PPOConfig(lr=1e-3, value_model="critic", kl_coef=0.01, epochs=3, micro_batch_size=4),
        rloo=RLOOConfig(lr=1e-3, kl_coef=0.01, micro_batch_size=4),  # a learner since: shared
    )


def test_lr_sets_every_learner_and_a_specific_flag_wins():
    config = parsed("--env", "e", "--model", "m", "--lr", "0.5", "--ppo.lr", "0.25")
    assert (config.grpo.lr, config.ppo.lr, config.rloo.lr) == (0.5, 0.25, 0.5)


def test_a_file_with_flags_over_it(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text(
        'model = "m"\nsteps = 5\n\n[[envs]]\nid = "test/Add-v0"\nweight = 3.0\n'
        'kwargs = { difficulty = 1 }\n\n[[envs]]\nid = "test/Digits-v0"\n\n[grpo]\nlr = 0.01\n'
    )
    config = parsed("--config", str(path), "--steps", "7", "--heldout-kwargs", "{}")
    assert config == TrainConfig(
        envs=[
            EnvSpec("test/Add-v0", 3.0, {"difficulty": 1}, {}),
            EnvSpec("test/Digits-v0", 1.0, {}, {}),
        ],
        model="m",
        steps=7,
        grpo=GRPOConfig(lr=0.01),
    )


def test_print_config_reads_back_equal(tmp_path, capsys):
    argv = ["train", "--env", "test/Add-v0", "--kwargs", '{"levels": [1, 2], "x": null}',
            "--model", "m", "--algo", "ppo", "--stop", "</answer>", "--lora-r", "2",
            "--ppo.value-clip", "none", "--grpo.scale-rewards", "false",
            "--max-turns", "3"]  # fmt: skip
    assert main([*argv, "--print-config"]) == 0
    printed = capsys.readouterr().out
    (tmp_path / "run.toml").write_text(printed)
    assert build(TrainConfig, parse_toml(printed)) == parsed(*argv[1:])
    assert main(["train", "--config", str(tmp_path / "run.toml"), "--print-config"]) == 0
    assert capsys.readouterr().out == printed


def test_bad_config_files_are_refused_in_one_line(tmp_path, capsys):
    path = tmp_path / "run.toml"
    path.write_text('model = "m"\n\n[[envs]]\nid = "test/Add-v0"\n\n[grpo]\nlearning_rate = 1\n')
    assert main(["train", "--config", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}: unknown key 'learning_rate' in [grpo]; GRPOConfig ")
    assert "accepts: lr, weight_decay" in err and "Traceback" not in err
    path.write_text('model = "m"\nsteps = "ten"\n\n[[envs]]\nid = "test/Add-v0"\n')
    assert main(["train", "--config", str(path)]) == 1
    assert f"error: {path}: steps: expected an integer, got 'ten'" in capsys.readouterr().err
    assert main(["train", "--model", "m"]) == 1
    assert "envs is required: give --env" in capsys.readouterr().err


def test_the_written_config_reproduces_the_run(tiny_path, tmp_path):
    first = train_config(tiny_path, tmp_path / "a", lora=LoraSettings(r=2), seed=3)
    train(first)
    assert read_config(TrainConfig, tmp_path / "a" / "config.toml") == first
    again = ["train", "--config", str(tmp_path / "a" / "config.toml"), "--out", str(tmp_path / "b")]
    assert main(again) == 0
    a = HFPolicy(tmp_path / "a" / "final").model.state_dict()
    b = HFPolicy(tmp_path / "b" / "final").model.state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[key], b[key]) for key in a)


def test_resume_refuses_other_settings_naming_them(tiny_path, tmp_path, capsys):
    train(train_config(tiny_path, tmp_path, steps=1))
    changed = train_config(tiny_path, tmp_path, prompts_per_step=2, grpo=GRPOConfig(lr=2e-3))
    with pytest.raises(TrainingError) as refused:
        train(changed, resume=True)
    message = str(refused.value)
    assert "prompts_per_step 3 (now 2); grpo.lr 0.001 (now 0.002)." in message
    assert "Only output_dir, steps, time_budget" in message and "steps 1" not in message
    # the command line resumes from OUTDIR/config.toml: only the run's length is given
    assert main(["train", "--out", str(tmp_path), "--resume", "--steps", "2"]) == 0
    rows = read_metrics(tmp_path / "metrics.jsonl")
    assert [row["step"] for row in rows if "losses/policy" in row] == [1, 2]
    assert main(["train", "--out", str(tmp_path), "--resume", "--steps", "3", "--lr", "0.5"]) == 1
    assert "grpo.lr 0.001 (now 0.5)" in capsys.readouterr().err


def test_rlvr_tiny_flags(capsys):
    argv = ["tiny", "--env", "test/Add-v0", "--out", "m", "--steps", "5", "--target-accuracy",
            "0.3", "--model.layers", "2", "--heldout-kwargs", "{}", "--print-config"]  # fmt: skip
    assert main(argv) == 0
    assert build(TinyConfig, parse_toml(capsys.readouterr().out)) == TinyConfig(
        "test/Add-v0",
        "m",
        heldout_kwargs={},
        model=TinyModelConfig(layers=2),
        warm_start=WarmStartConfig(steps=5, target_accuracy=0.3),
    )
    assert main(["tiny", "--env", "e", "--out", "m", "--no-warm-start", "--print-config"]) == 0
    config = build(TinyConfig, parse_toml(capsys.readouterr().out))
    assert config.warm_start is None and config.eval_kwargs == {"split": "test"}
    assert main(["tiny", "--env", "e", "--out", "m", "--no-warm-start", "--steps", "3"]) == 1
    assert "--no-warm-start contradicts --warm-start.steps" in capsys.readouterr().err


# --- numbers no field means are refused at load, naming the key ----------------------------------

BASE = {"train": {"model": "m", "envs": [{"id": "test/Add-v0"}]}, "tiny": {"env_id": "e",
        "output_dir": "m"}, "eval": {"env_id": "test/Add-v0"}}  # fmt: skip


REQUIRED = {
    "TrainConfig": {"envs": [EnvSpec("test/Add-v0")], "model": "m"},
    "TinyConfig": {"env_id": "e", "output_dir": "m"},
    "EvalConfig": {"env_id": "e"},
    "EnvSpec": {"id": "e"},
}


def number_fields(cls: type, path: tuple = ()) -> list[tuple[tuple, type, Any]]:
    """(path in file data, owning class, field type) of every number field, nested tables and
    list elements included; a tuple of numbers counts as one field."""
    found = []
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        tp = hints[field.name]
        inner = (
            [a for a in typing.get_args(tp) if a is not type(None)]
            if typing.get_origin(tp) in (typing.Union, types.UnionType)
            else [tp]
        )
        tp = inner[0]
        element = typing.get_args(tp)[0] if typing.get_origin(tp) in (tuple, Sequence) else None
        if dataclasses.is_dataclass(tp):
            found += number_fields(tp, (*path, field.name))
        elif element is not None and dataclasses.is_dataclass(element):
            found += number_fields(element, (*path, field.name, 0))
        elif tp in (int, float) or element in (int, float):
            found.append(((*path, field.name), cls, tp))
    return found


def with_value(data: dict, path: tuple, value: Any) -> dict:
    data = copy.deepcopy(data)
    node = data
    for part in path[:-1]:
        node = node.setdefault(part, {}) if isinstance(part, str) else node[part]
    node[path[-1]] = value
    return data


def bad_values(tp: Any) -> list[Any]:
    if tp is float:
        return [math.nan, math.inf, -math.inf]
    if tp is int:
        return [2**64, -(2**64)]
    element = typing.get_args(tp)[0]
    return [[bad] * len(typing.get_args(tp)) for bad in bad_values(element)]


def config_classes():
    from rlvr.agents.cli import EvalConfig

    return {"train": TrainConfig, "tiny": TinyConfig, "eval": EvalConfig}


@pytest.mark.parametrize("command", ["train", "tiny", "eval"])
def test_every_number_field_refuses_nan_infinities_and_ints_beyond_64_bits(command):
    cls = config_classes()[command]
    fields = number_fields(cls)
    assert len(fields) >= {"train": 40, "tiny": 15, "eval": 4}[command]  # the walk finds them
    for path, owner, tp in fields:
        key = ".".join(part if isinstance(part, str) else "" for part in path)
        key = key.replace("..", f"[{0}].")  # envs[0].weight
        for bad in bad_values(tp):
            with pytest.raises(ConfigError) as refused:
                build(cls, with_value(BASE[command], path, bad), "run.toml")
            message = str(refused.value)
            assert message.startswith(f"run.toml: {key}") and "\n" not in message, message
            with pytest.raises(ValueError, match=re.escape(path[-1])):  # and from Python
                owner(**REQUIRED.get(owner.__name__, {}), **{path[-1]: bad})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("temperature = nan", "sampling.temperature must be a finite number, got nan"),
        ("time_budget = nan", "time_budget must be a finite number, got nan"),
        ("time_budget = inf", "time_budget must be a finite number, got inf"),
        ("seed = -1", "seed must be in [0, 4294967295]"),
        (f"seed = {2**63 - 1}", "seed must be in [0, 4294967295]"),
        ("[grpo]\nlr = nan", "grpo.lr must be a finite number, got nan"),
        ("[grpo]\nlr = -1.0", "[grpo] lr must be > 0, got -1.0"),  # the class's own check
        ("[ppo]\ngamma = inf", "ppo.gamma must be a finite number, got inf"),
        ("[[envs]]\nid = 'test/Add-v0'\nweight = inf", "envs[0].weight must be a finite number"),
        ("[grpo]\nadam_betas = [0.9, nan]", "grpo.adam_betas[1] must be a finite number"),
        ("[lora]\nr = -1", "[lora] LoRA r and alpha must be >= 1"),
    ],
)
def test_rlvr_train_refuses_a_bad_number_at_load_in_one_line(tmp_path, capsys, text, message):
    path = tmp_path / "run.toml"
    envs = "" if "[[envs]]" in text else "\n[[envs]]\nid = 'test/Add-v0'\n"
    path.write_text(f'model = "m"\noutput_dir = "{tmp_path / "out"}"\n{text}\n{envs}')
    assert main(["train", "--config", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}: {message}") and err.count("\n") == 1, err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--temperature", "nan"], "temperature must be a finite number, got nan"),
        (["--time-budget", "inf"], "time_budget must be a finite number, got inf"),
        (["--lr", "nan"], "grpo.lr must be a finite number, got nan"),
        (["--seed", "-1"], "seed must be in [0, 4294967295]"),
        (["--seed", str(2**64)], "seed must be in [0, 4294967295]"),
        (["--env", "test/Digits-v0=inf"], "--envs: weight must be a finite number, got inf"),
        (["--env", "test/Digits-v0=0"], "--envs: test/Digits-v0: weight must be > 0, got 0.0"),
    ],
)
def test_rlvr_train_refuses_a_bad_number_flag_in_one_line(tmp_path, capsys, argv, message):
    out = tmp_path / "out"
    assert main(["train", "--env", "test/Add-v0", "--model", "m", "--out", str(out), *argv]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1, err
    assert not out.exists()


def test_a_config_or_template_file_that_is_not_utf8_is_named(tmp_path, capsys):
    path = tmp_path / "run.toml"
    path.write_bytes(b'model = "m\xe9"\n[[envs]]\nid = "test/Add-v0"\n')
    assert main(["train", "--config", str(path)]) == 1
    assert capsys.readouterr().err == (
        f"error: config file {path}: not UTF-8 text (byte 0xe9 at line 1 column 11); save the "
        "file as UTF-8\n"
    )
    template = tmp_path / "chat.jinja"
    template.write_bytes(b"{{ m\xff }}")
    argv = ["train", "--env", "test/Add-v0", "--model", "m", "--chat-template", str(template)]
    assert main(argv) == 1
    assert capsys.readouterr().err.startswith(
        f"error: --chat-template: chat template {template}: not UTF-8 text (byte 0xff"
    )


def test_a_deeply_nested_config_file_is_refused_in_one_line(tmp_path, capsys):
    path = tmp_path / "run.toml"
    deep = "[" * 3000 + "]" * 3000
    path.write_text(f'model = "m"\n[[envs]]\nid = "test/Add-v0"\nkwargs = {{ x = {deep} }}\n')
    assert main(["train", "--config", str(path)]) == 1
    err = capsys.readouterr().err
    assert err == f"error: {path}: tables and arrays nested more than 100 levels deep\n"
