"""TRL's GRPOTrainer set up like our GRPO, for the benchmarks (TRL is the `bench` extra).

Same model folder, same prompts in the same order (the env's opening messages for a list of
seeds), the same reward (the env itself judges each completion), the same batch geometry
(prompts x generations per step), completion length, temperature, loss ("dapo", group-scaled
advantages, clip 0.2, no KL), optimizer (AdamW, constant learning rate, gradient clipping at 1)
and one torch thread. TRL's CPU-unfriendly defaults (bf16, gradient checkpointing, logging,
saving) are switched off. Time is measured from each step's start to its end (generation and
update), as our trainer measures its steps.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import gymnasium as gym


def task_seeds(seed: int, count: int) -> list[int]:
    """The task seeds our trainer draws for a single-env run with this seed, in order."""
    import numpy as np

    rng = np.random.default_rng(seed)
    return [int(rng.integers(2**31 - 1)) for _ in range(count)]


def env_reward(env_id: str, env_kwargs: Mapping[str, Any]) -> Callable[..., list[float | None]]:
    """A TRL reward function that replays each completion in the env (reset with its seed)."""
    env = gym.make(env_id, **dict(env_kwargs))

    def reward(prompts: Sequence, completions: Sequence, seed: Sequence[int], **_: Any) -> list:
        values: list[float | None] = []
        for completion, task_seed in zip(completions, seed):
            text = completion[-1]["content"] if isinstance(completion, list) else completion
            env.reset(seed=int(task_seed))
            _, value, _, _, info = env.step(text)
            values.append(None if info["infra_error"] else float(value))
        return values

    reward.__name__ = "env_reward"
    return reward


class StepClock:
    """A TrainerCallback that times steps and stops training once `budget` seconds of steps are
    spent. Each step's row (`step`, `time/train_seconds`, `rollout/reward_mean`) goes to
    `on_row(row, model)` once TRL has logged the step's reward; `on_row` may add to the row
    (e.g. a held-out evaluation, which then happens outside the clock)."""

    def __init__(
        self,
        budget: float | None,
        on_row: Callable[[dict[str, Any], Any], None] | None = None,
    ) -> None:
        from transformers import TrainerCallback

        clock = self

        class Callback(TrainerCallback):
            def on_step_begin(self, args, state, control, **kwargs):
                clock._started = time.perf_counter()

            def on_step_end(self, args, state, control, **kwargs):
                elapsed = time.perf_counter() - clock._started
                clock.step_seconds.append(elapsed)
                clock.train_seconds += elapsed
                clock._pending = {
                    "step": state.global_step,
                    "time/train_seconds": clock.train_seconds,
                    "time/step_seconds": elapsed,
                }
                if clock.budget is not None and clock.train_seconds >= clock.budget:
                    control.should_training_stop = True

            def on_log(self, args, state, control, logs=None, model=None, **kwargs):
                if not logs or "reward" not in logs:
                    return
                clock.rewards.append(float(logs["reward"]))
                clock.lengths.append(float(logs.get("completions/mean_length", 0.0)))
                row = {**clock._pending, "rollout/reward_mean": float(logs["reward"])}
                if clock.on_row is not None:
                    clock.on_row(row, model)

        self.callback = Callback()
        self.budget = budget
        self.on_row = on_row
        self.train_seconds = 0.0
        self.step_seconds: list[float] = []
        self.rewards: list[float] = []
        self.lengths: list[float] = []
        self._started = 0.0
        self._pending: dict[str, Any] = {}


def make_trainer(
    *,
    model_path: str,
    env_id: str,
    env_kwargs: Mapping[str, Any],
    seeds: Sequence[int],
    prompts_per_step: int,
    group_size: int,
    max_new_tokens: int,
    lr: float,
    steps: int,
    output_dir: str,
    temperature: float = 1.0,
    seed: int = 0,
    callbacks: Sequence[Any] = (),
) -> Any:
    """A `trl.GRPOTrainer` over the tasks `seeds` (prompts_per_step of them per step, in order)."""
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    env = gym.make(env_id, **dict(env_kwargs))
    rows = []
    for task_seed in seeds:
        _, info = env.reset(seed=task_seed)
        rows.append({"prompt": info["messages"], "seed": task_seed})
    env.close()
    config = GRPOConfig(
        output_dir=output_dir,
        learning_rate=lr,
        lr_scheduler_type="constant",
        adam_beta1=0.9,
        adam_beta2=0.99,
        weight_decay=0.0,
        max_grad_norm=1.0,
        per_device_train_batch_size=prompts_per_step * group_size,
        gradient_accumulation_steps=1,
        num_generations=group_size,
        max_completion_length=max_new_tokens,
        max_steps=steps,
        temperature=temperature,
        top_p=1.0,
        beta=0.0,
        loss_type="dapo",
        scale_rewards="group",
        epsilon=0.2,
        num_iterations=1,
        shuffle_dataset=False,
        use_cpu=True,
        bf16=False,
        fp16=False,
        gradient_checkpointing=False,
        report_to="none",
        logging_steps=1,
        save_strategy="no",
        disable_tqdm=True,
        seed=seed,
        dataloader_num_workers=0,
        log_completions=False,
    )
    return GRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(model_path),
        reward_funcs=[env_reward(env_id, env_kwargs)],
        args=config,
        train_dataset=Dataset.from_list(rows),
        processing_class=AutoTokenizer.from_pretrained(model_path),
        callbacks=list(callbacks),
    )
