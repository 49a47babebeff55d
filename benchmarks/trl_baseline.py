"""TRL's GRPOTrainer set up like our GRPO, for the benchmarks (TRL is the `bench` extra).

Same model folder, same prompts in the same order (the env's opening messages for a list of
seeds), the same reward (the env itself judges each completion), the same batch geometry
(prompts x generations per step), completion length, temperature, loss ("dapo", group-scaled
advantages, clip 0.2, no KL), optimizer (AdamW, constant learning rate, gradient clipping at 1)
and one torch thread. TRL's CPU-unfriendly defaults (bf16, gradient checkpointing, logging,
saving) are switched off. Time is measured from each step's start to its end (generation and
update), as our trainer measures its steps, in wall seconds and in the process's CPU seconds.

Multi-turn envs (tool use, self-correction) go through TRL's `rollout_func` with an `env_mask`
(the documented way to train GRPOTrainer on an environment): `env_rollout` plays each episode
against the env, sampling every reply with the trainer's own model and generation config
(`model.generate`, as TRL's single-turn path does), and returns the ids, with the env's ids
masked out of the loss, and the episode's return as the reward.
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
    spent: wall seconds, or with `cpu=True` the process's CPU seconds (which other processes on a
    shared machine do not inflate). Each step's row (`step`, `time/train_seconds`,
    `time/train_cpu_seconds`, `rollout/reward_mean`) goes to `on_row(row, model)` once TRL has
    logged the step's reward; `on_row` may add to the row (e.g. a held-out evaluation, which then
    happens outside the clock)."""

    def __init__(
        self,
        budget: float | None,
        on_row: Callable[[dict[str, Any], Any], None] | None = None,
        cpu: bool = False,
    ) -> None:
        from transformers import TrainerCallback

        clock = self

        class Callback(TrainerCallback):
            def on_step_begin(self, args, state, control, **kwargs):
                clock._started = time.perf_counter()
                clock._cpu_started = time.process_time()

            def on_step_end(self, args, state, control, **kwargs):
                elapsed = time.perf_counter() - clock._started
                clock.step_seconds.append(elapsed)
                clock.train_seconds += elapsed
                clock.cpu_seconds += time.process_time() - clock._cpu_started
                clock._pending = {
                    "step": state.global_step,
                    "time/train_seconds": clock.train_seconds,
                    "time/train_cpu_seconds": clock.cpu_seconds,
                    "time/step_seconds": elapsed,
                }
                spent = clock.cpu_seconds if clock.cpu else clock.train_seconds
                if clock.budget is not None and spent >= clock.budget:
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
        self.cpu = cpu
        self.train_seconds = 0.0
        self.cpu_seconds = 0.0
        self._cpu_started = 0.0
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
    multi_turn: bool = False,
    max_turns: int | None = None,
    micro_batch: int | None = None,
) -> Any:
    """A `trl.GRPOTrainer` over the tasks `seeds` (prompts_per_step of them per step, in order).

    `multi_turn` plays whole episodes through `env_rollout` (`max_turns` cuts them).
    `micro_batch` episodes go through each forward and backward pass (None: the whole batch):
    TRL then accumulates the gradient over the batch's slices and still takes one optimizer
    step per generated batch, so the update is the same."""
    import os

    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, PrinterCallback
    from trl import GRPOConfig, GRPOTrainer

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is "experimental"
    env = gym.make(env_id, **dict(env_kwargs))
    rows = []
    for task_seed in seeds:
        _, info = env.reset(seed=task_seed)
        rows.append({"prompt": info["messages"], "seed": task_seed})
    env.close()
    if multi_turn:
        rollout = env_rollout(env_id, env_kwargs, rows, max_turns)
        extra = {"rollout_func": rollout, "reward_funcs": [episode_return]}
    else:
        extra = {"reward_funcs": [env_reward(env_id, env_kwargs)]}
    batch = prompts_per_step * group_size
    micro_batch = batch if micro_batch is None else micro_batch
    if micro_batch < 1 or batch % micro_batch:
        raise ValueError(
            f"micro_batch {micro_batch} must be a positive divisor of the batch of {batch} "
            "episodes (None: the whole batch at once)"
        )
    config = GRPOConfig(
        output_dir=output_dir,
        learning_rate=lr,
        lr_scheduler_type="constant",
        adam_beta1=0.9,
        adam_beta2=0.99,
        weight_decay=0.0,
        max_grad_norm=1.0,
        per_device_train_batch_size=micro_batch,
        gradient_accumulation_steps=batch // micro_batch,
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
    trainer = GRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(model_path),
        **extra,
        args=config,
        train_dataset=Dataset.from_list(rows),
        processing_class=AutoTokenizer.from_pretrained(model_path),
        callbacks=list(callbacks),
    )
    trainer.remove_callback(PrinterCallback)  # a printed dict per step (logging_steps=1)
    return trainer


# --- multi-turn: TRL's rollout_func over our envs ------------------------------------------------


def episode_return(
    prompts: Sequence, completions: Sequence, env_return: Sequence, **_: Any
) -> list:
    """The reward function of `env_rollout`'s episodes: the return it measured (None for an
    infrastructure error, which TRL leaves out)."""
    return list(env_return)


def env_rollout(
    env_id: str,
    env_kwargs: Mapping[str, Any],
    rows: Sequence[Mapping[str, Any]],
    max_turns: int | None,
) -> Callable[[list, Any], dict[str, list]]:
    """A `rollout_func`: each prompt (TRL passes one per generation) is played to the end in the
    env, every reply sampled with `trainer.model.generate` under `trainer.generation_config`.

    The prompt's task seed is looked up from the dataset rows (TRL passes only the messages).
    The returned `completion_ids` are everything after the prompt (replies and env messages),
    `env_mask` is 1 on the sampled ids only, `env_return` is the episode's return.
    """
    from rlvr.agents.policy import SamplingParams
    from rlvr.agents.rollouts import EnvSpec, RolloutCollector

    seeds = {repr(row["prompt"]): int(row["seed"]) for row in rows}
    state: dict[str, Any] = {}

    def rollout(prompts: list, trainer: Any) -> dict[str, list]:
        if "collector" not in state:  # built on first use: the trainer's model and tokenizer
            policy = generate_policy(trainer)
            sampling = SamplingParams(max_new_tokens=trainer.max_completion_length)
            spec = EnvSpec(env_id, kwargs=dict(env_kwargs))
            state["collector"] = RolloutCollector(
                policy, [spec], group_size=1, sampling=sampling, max_turns=max_turns
            )
        episodes = state["collector"].collect([(0, seeds[repr(p)]) for p in prompts])
        out: dict[str, list] = {"prompt_ids": [], "completion_ids": [], "env_mask": []}
        out["logprobs"], out["env_return"] = None, []
        for episode in episodes:
            cut = episode.prompt_length
            out["prompt_ids"].append(episode.token_ids[:cut])
            out["completion_ids"].append(episode.token_ids[cut:])
            out["env_mask"].append(episode.loss_mask[cut:])
            out["env_return"].append(None if episode.infra_error else episode.reward)
        return out

    return rollout


def generate_policy(trainer: Any) -> Any:
    """An `HFPolicy` over the trainer's model and tokenizer whose `sample` is TRL's sampler."""
    from rlvr.agents.hf import HFPolicy, Sample

    class GeneratePolicy(HFPolicy):
        """Our token bookkeeping (prompt, follow-up ids) around TRL's own sampler:
        `model.generate` with the trainer's generation config."""

        def __init__(self, trainer: Any) -> None:
            super().__init__(trainer.model, trainer.processing_class, lean=False)
            self.trainer = trainer

        def sample(self, prompts, sampling, generator=None):  # TRL seeds its own sampling
            import torch

            pad = self.tokenizer.pad_token_id
            width = max(len(p) for p in prompts)
            ids = torch.full((len(prompts), width), pad, dtype=torch.long)
            attention = torch.zeros_like(ids)
            for row, prompt in enumerate(prompts):
                ids[row, width - len(prompt) :] = torch.tensor(prompt)
                attention[row, width - len(prompt) :] = 1
            model = self.trainer.model
            was_training = model.training
            model.eval()
            with torch.no_grad():
                out = model.generate(
                    input_ids=ids,
                    attention_mask=attention,
                    generation_config=self.trainer.generation_config,
                )
            model.train(was_training)
            samples = []
            eos = set(self.trainer.eos_token_ids)
            for row in out[:, width:].tolist():
                end = next((i for i, t in enumerate(row) if t in eos), None)
                tokens = row if end is None else row[: end + 1]
                reason = "length" if end is None else "stop"
                samples.append(Sample(tokens, [0.0] * len(tokens), reason))
            return samples

    return GeneratePolicy(trainer)
