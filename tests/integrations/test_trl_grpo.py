"""TRL's real GRPOTrainer trains a few steps with our reward functions, and the rewards it logged
are the env's own verdicts on the very completions it generated."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

from rlvr.integrations.columns import decode_task
from tests.conftest import require_extra
from tests.integrations import support

MATH_KWARGS = {"families": ["arithmetic"], "difficulty": 1}


def train_grpo(
    env_id: str, env_kwargs: dict[str, Any], folder: Path, *, memorise: int = 200, **config: Any
) -> Any:
    """Two GRPO steps (2 prompts x 4 completions each) on the first two tasks of the env, by a
    tiny model that memorised their reference replies (in `memorise` supervised steps): sampled
    at `temperature`, it writes them back, mixes them up or garbles them, so a batch holds 0s and
    1s."""
    require_extra("trl", "trl")
    from trl import GRPOConfig, GRPOTrainer

    from rlvr.integrations.trl import dataset, reward_funcs

    rows = dataset(env_id, n=2, **env_kwargs)
    model = support.overfit_tiny(env_id, list(rows), folder / "model", steps=memorise, **env_kwargs)
    rewards = reward_funcs(env_id, **env_kwargs)
    args = GRPOConfig(
        output_dir=str(folder / "run"),
        max_steps=2,
        per_device_train_batch_size=8,
        num_generations=4,
        use_cpu=True,
        report_to=[],
        logging_steps=1,
        save_strategy="no",
        seed=0,
        reward_weights=[function.weight for function in rewards],
        **config,
    )
    trainer = GRPOTrainer(model=str(model), reward_funcs=rewards, args=args, train_dataset=rows)
    try:
        trainer.train()
    finally:
        rewards[0].close()
    return trainer, rows


def our_verdicts(env_id: str, env_kwargs: dict[str, Any], trainer: Any, rows: Any) -> list:
    """The env's judge on each completion of the last step TRL logged, to the row's task."""
    task_of = {row["prompt"][-1]["content"]: decode_task(row) for row in rows}
    env = gym.make(env_id, **env_kwargs).unwrapped
    try:
        return [
            env.judge.judge(completion[-1]["content"], task_of[prompt[-1]["content"]])
            for prompt, completion in zip(trainer._logs["prompt"], trainer._logs["completion"])
        ]
    finally:
        env.close()


def check_logged_rewards(env_id: str, env_kwargs: dict[str, Any], trainer: Any, rows: Any):
    outcomes = our_verdicts(env_id, env_kwargs, trainer, rows)
    assert len(outcomes) == 8  # the last step's batch: 2 prompts x 4 generations
    assert not any(outcome.infra_error for outcome in outcomes)
    logged = {name: list(values) for name, values in trainer._logs["rewards"].items()}
    for term, values in logged.items():
        assert values == [outcome.rewards[term] for outcome in outcomes], term
    last = [entry for entry in trainer.state.log_history if "reward" in entry][-1]
    expected = sum(outcome.reward for outcome in outcomes) / len(outcomes)
    assert math.isclose(last["reward"], expected, abs_tol=1e-6)
    return outcomes


@pytest.mark.slow  # minutes: TRL trains a tiny model for a few steps
def test_grpo_on_math_logs_the_math_verifiers_verdicts(tmp_path):
    kwargs = {**MATH_KWARGS, "format_weight": 0.2}
    trainer, rows = train_grpo(
        "rlvr/Math-v0", kwargs, tmp_path, max_completion_length=24, temperature=1.5
    )
    outcomes = check_logged_rewards("rlvr/Math-v0", kwargs, trainer, rows)
    assert set(trainer._logs["rewards"]) == {"correctness", "format"}
    statuses = {outcome.verdict.status.value for outcome in outcomes}
    assert "correct" in statuses and statuses - {"correct"}, statuses  # not all one verdict


@pytest.mark.slow
def test_grpo_on_code_runs_the_hidden_tests_in_the_sandbox(tmp_path):
    from tests.sandboxes.conftest import require_local_sandbox

    require_local_sandbox()
    trainer, rows = train_grpo(
        "rlvr/Code-v0", {}, tmp_path, max_completion_length=64, temperature=1.5, memorise=100
    )
    outcomes = check_logged_rewards("rlvr/Code-v0", {}, trainer, rows)
    assert set(trainer._logs["rewards"]) == {"correctness"}
    scores = {outcome.rewards["correctness"] for outcome in outcomes}
    assert scores == {0.0, 1.0}, [o.verdict.status for o in outcomes]
