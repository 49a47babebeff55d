"""The table of learners: `--algo`'s choices, `TrainConfig`'s sections and checks, and the
learners it builds, all from `LEARNERS`. (CONTRIBUTING.md's "Adding a learner" walk-through,
which registers a learner of its own and trains a step with it, runs in tests/test_docs.py: a
fresh interpreter, since `TrainConfig` takes its sections when it is defined.)"""

from __future__ import annotations

import dataclasses

import pytest

torch = pytest.importorskip("torch")

from rlvr.agents.hf import HFPolicy  # noqa: E402
from rlvr.agents.learners.base import (  # noqa: E402
    LEARNERS,
    Learner,
    LearnerKind,
    RunSettings,
    register_learner,
    with_learner_sections,
)
from rlvr.agents.train_config import TrainConfig  # noqa: E402
from rlvr.cli import build_parser  # noqa: E402
from tests.agents.support import train_config  # noqa: E402

BUILTIN = ["grpo", "ppo", "rloo"]


def test_each_learner_of_the_table_has_a_section_holding_its_config():
    assert list(LEARNERS) == BUILTIN
    fields = {field.name: field for field in dataclasses.fields(TrainConfig)}
    config = TrainConfig(envs=["test/Add-v0"], model="m")
    for name, kind in LEARNERS.items():
        assert name in fields
        assert getattr(config, name) == kind.config_class()
    assert [name for name in fields if name in LEARNERS] == BUILTIN  # in the table's order, last
    assert list(fields)[-len(BUILTIN) :] == BUILTIN


def test_an_unknown_algo_is_refused_naming_the_tables_choices(tiny_path, tmp_path):
    with pytest.raises(ValueError, match=r"algo must be one of \('grpo', 'ppo', 'rloo'\)"):
        train_config(tiny_path, tmp_path, algo="a2c")


def test_algo_help_lists_every_learner_with_its_line():
    parser = build_parser()._subparsers._group_actions[0].choices["train"]  # type: ignore[union-attr]
    text = " ".join(parser.format_help().split())
    for kind in LEARNERS.values():
        assert f"{kind.name}: {' '.join(kind.help.split())}" in text


@pytest.mark.parametrize("name", BUILTIN)
def test_the_table_builds_each_learner_with_its_config_and_the_runs_settings(tiny_path, name):
    run = RunSettings(
        temperature=0.5, max_new_tokens=4, completion_budget=8, seed=3, group_size=2,
        episodes_per_step=4,
    )  # fmt: skip
    config = LEARNERS[name].config_class(lr=1e-3)
    learner = LEARNERS[name].make(HFPolicy(tiny_path), config, run)
    assert isinstance(learner, Learner)
    assert learner.config is config and learner.temperature == 0.5  # type: ignore[attr-defined]
    learner.load_state_dict(learner.state_dict())


@pytest.mark.parametrize(
    ("kwargs", "fix"),
    [
        ({"name": "Re-Inforce"}, "use a lower-case identifier"),
        ({"name": ""}, "use a lower-case identifier"),
        ({"config": "no_colon"}, "import string 'module:attribute'"),
        ({"build": "rlvr.agents.learners.rloo"}, "import string 'module:attribute'"),
        ({"min_group_size": 0}, "min_group_size must be >= 1"),
    ],
)
def test_a_bad_table_entry_is_refused_naming_the_fix(kwargs, fix):
    entry = {"name": "mine", "config": "m:Config", "build": "m:Learner", "help": "mine"}
    with pytest.raises(ValueError, match=fix):
        LearnerKind(**{**entry, **kwargs})


def test_registering_once_train_config_exists_is_refused_naming_the_fix():
    kind = LearnerKind("late", "m:Config", "m:Learner", "too late")
    with pytest.raises(RuntimeError, match="before importing rlvr.agents.train"):
        register_learner(kind)
    assert "late" not in LEARNERS


def test_a_learner_named_like_a_run_setting_is_refused():
    class Run:
        seed: int = 0
        rloo: int = 1  # a setting that a learner's section would shadow

    with pytest.raises(ValueError, match="learner 'rloo' is also a Run setting: rename it"):
        with_learner_sections(Run)
