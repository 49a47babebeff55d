"""The shared checks of env arguments (`rlvr.envs.options`), and that every family uses them."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import rlvr  # noqa: F401
from rlvr.envs import EnvConfigError, Problem, ProceduralSource, options


def _problem(rng, difficulty):
    return Problem(f"{int(rng.integers(10**6))}+{difficulty}?", "0")


@pytest.mark.parametrize(
    ("value", "accepted", "expected"),
    [
        (2, None, [2]),
        ([3, 1], None, [3, 1]),
        ((1, 2), (1, 2, 3), [1, 2]),
        (range(1, 3), (1, 2, 3), [1, 2]),
        (np.int64(2), (1, 2), [2]),
    ],
)
def test_levels_accepts_a_level_or_a_list(value, accepted, expected):
    assert options.levels(value, accepted) == expected


@pytest.mark.parametrize("value", [0, -1, [], [0, 1], True, [True], "1", [1.5], None, {1: 1}])
def test_levels_refuses_the_rest_naming_argument_value_and_accepted(value):
    with pytest.raises(EnvConfigError) as caught:
        options.levels(value, (1, 2, 3))
    message = str(caught.value)
    assert message.startswith("difficulty must be a level in [1, 2, 3] or a list of them")
    assert f"got {value!r}" in message


def test_subset_choice_integer_number():
    assert options.subset(None, {"a": 1, "b": 2}, name="x") == ("a", "b")
    assert options.subset("b", ("a", "b"), name="x") == ("b",)
    assert options.subset(["b", "a", "b"], ("a", "b"), name="x") == ("b", "a", "b")
    with pytest.raises(EnvConfigError, match=r"families must be .*\['a', 'b'\].*unknown: \['c'\]"):
        options.subset(["a", "c"], ("a", "b"), name="families")
    with pytest.raises(EnvConfigError, match="non-empty"):
        options.subset([], ("a", "b"), name="families")
    assert options.choice("x", ("x", "y"), name="mode") == "x"
    with pytest.raises(EnvConfigError, match=r"mode must be one of \['x', 'y'\], got 'z'"):
        options.choice("z", ("x", "y"), name="mode")
    assert options.integer(0, name="twins", minimum=0) == 0
    for bad in (0, 1.0, True, "2"):
        with pytest.raises(EnvConfigError, match="rows must be an int >= 1, got"):
            options.integer(bad, name="rows")
    assert options.number(0.5, name="w", low=0.0, high=1.0, high_open=True) == 0.5
    with pytest.raises(EnvConfigError, match=r"w must be in \[0, 1\), got 1"):
        options.number(1, name="w", low=0.0, high=1.0, high_open=True)
    with pytest.raises(EnvConfigError, match=r"t must be in \(0, inf\), got 0"):
        options.number(0, name="t", low=0.0, low_open=True)


def test_refuse_replaced_names_every_clashing_setting():
    options.refuse_replaced({"split": None, "seed": None})
    with pytest.raises(EnvConfigError, match="^split, seed configure the built-in generator"):
        options.refuse_replaced({"split": "test", "difficulty": None, "seed": 0})


@pytest.mark.parametrize(
    ("make", "argument"),
    [
        (lambda: ProceduralSource(_problem, name="p", difficulty=0), "difficulty"),
        (lambda: gym.make("rlvr/Math-v0", difficulty=6), "difficulty"),
        (lambda: gym.make("rlvr/Code-v0", difficulty=4), "difficulty"),
        (lambda: gym.make("rlvr/SQL-v0", difficulty=6), "difficulty"),
        (lambda: gym.make("rlvr/ToolMath-v0", difficulty=0), "difficulty"),
        (lambda: gym.make("rlvr/WikiQA-v0", difficulty=[]), "difficulty"),
        (lambda: gym.make("rlvr/Math-v0", families=["calculus"]), "families"),
        (lambda: gym.make("rlvr/SQL-v0", domains=["zoo"]), "domains"),
    ],
)
def test_every_family_refuses_a_bad_level_or_name_the_same_way(make, argument):
    with pytest.raises(EnvConfigError, match=f"^{argument} must be "):
        make()


@pytest.mark.parametrize(
    ("env_id", "kwargs", "clashing"),
    [
        ("rlvr/Math-v0", {"difficulty": 1, "seed": 3}, "difficulty, seed"),
        ("rlvr/Code-v0", {"split": "test"}, "split"),
        ("rlvr/SQL-v0", {"twins": 0}, "twins"),
    ],
)
def test_every_family_refuses_generator_options_beside_tasks(env_id, kwargs, clashing):
    from rlvr.envs.sql.tasks import procedural_tasks

    tasks = procedural_tasks() if env_id == "rlvr/SQL-v0" else [{"prompt": "1+1?", "answer": "2"}]
    with pytest.raises(EnvConfigError, match=f"^{clashing} configure the (built-in|procedural) "):
        gym.make(env_id, tasks=tasks, **kwargs)
