"""`rlvr.rollout` is a package of modules, one for each thing that changes on its own, and its
top level keeps every name it had as a single module: `from rlvr.rollout import X` still works."""

from __future__ import annotations

import importlib

import pytest

import rlvr.rollout

# every public name of `rlvr.rollout`, by the module that defines it
DEFINED_IN = {
    "records": ["Act", "EpisodeRecord", "ResetOptions", "Start", "StepResult"],
    "episodes": ["evaluate", "play_episodes", "policy_actor", "run_episodes"],
    "reports": ["EvalReport"],
    "hosts": ["EnvBatch", "EnvHost", "EnvWorkersError", "LocalEnvs", "reset_env"],
    "tasks": ["distinct_tasks", "task_fingerprint"],
    "games": [
        "GameRecord",
        "MatchReport",
        "game_policy_actor",
        "play_games",
        "play_match",
        "seat_positions",
        "seat_router",
    ],
}


@pytest.mark.parametrize(
    ("module", "name"), [(module, name) for module, names in DEFINED_IN.items() for name in names]
)
def test_the_package_gives_each_name_of_its_modules(module, name):
    defined = getattr(importlib.import_module(f"rlvr.rollout.{module}"), name)
    assert getattr(rlvr.rollout, name) is defined


def test_the_package_exports_exactly_its_public_names():
    assert sorted(rlvr.rollout.__all__) == sorted(n for names in DEFINED_IN.values() for n in names)
