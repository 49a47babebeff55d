"""The learning suite's warm starts (`learning_suite.py`): each task's tiny model, built once
into out/models/<task> and warm-started below its ceiling by supervised training on
demonstrations (`learning_suite_demos.py`): math's, ToolMath's two, Repo-v0's, the
self-correction task's retries and SQL's reference queries."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from learning_suite_demos import (
    RepoDemos,
    ToolDemos,
    call_chances,
    episode_ids,
    quick_accuracy,
    quick_records,
    shared_prefix_loss,
)
from learning_suite_heldout import called_a_tool, self_correction, solved
from learning_suite_tasks import TASKS, Task

# --- warm starts ---------------------------------------------------------------------------------


def model_folder(out: Path, name: str) -> Path:
    task = TASKS[name]
    if task.warm.get("kind") == "same":
        return model_folder(out, task.warm["as"])
    return out / "models" / name


def build_model(out: Path, name: str) -> None:
    """The warm-started tiny model of a task, built once into out/models/<task>."""
    task = TASKS[name]
    folder = model_folder(out, name)
    if (folder / "config.json").exists():
        return
    started = time.perf_counter()
    if task.warm["kind"] == "tool":
        build_tool_model(task, folder)
    elif task.warm["kind"] == "tool-mix":
        build_tool_mix_model(task, folder)
    elif task.warm["kind"] == "repo-mix":
        build_repo_mix_model(task, folder)
    elif task.warm["kind"] == "retry":
        build_model(out, task.warm["from"])
        build_retry_model(task, model_folder(out, task.warm["from"]), folder)
    elif task.warm["kind"] == "schema":
        build_schema_model(task, folder)
    else:
        from rlvr.agents.tiny import WarmStartConfig, build_tiny

        warm = WarmStartConfig(
            steps=task.warm["steps"],
            target_accuracy=task.warm["target"],
            eval_episodes=200,
            eval_every=25,
        )
        build_tiny(
            task.env_id,
            folder,
            env_kwargs=task.kwargs,
            heldout_kwargs=task.heldout,
            warm=warm,
            seed=0,
            log=print,
        )
    print(f"built {folder} in {time.perf_counter() - started:.0f} s", flush=True)


def build_tool_mix_model(task: Task, folder: Path) -> None:
    """ToolMath's natural warm start: one supervised phase on demonstrations of which a share
    `call_share` use the calculator and the rest answer directly, for a fixed `steps` steps (no
    stopping rule on what the model does). It calls on some problems and answers in its head on
    others, as a model fine-tuned on mixed data would; RL must find which pays."""
    import numpy as np
    import torch

    warm = task.warm
    demos = ToolDemos(task, direct_count=warm["demos"])
    optimizer = torch.optim.AdamW(demos.policy.trainable_parameters(), lr=warm["lr"])
    rng = np.random.default_rng(0)

    def progress() -> bool:  # printed only: the phase runs its fixed steps whatever it shows
        judged = quick_records(task, demos.policy, 64, 1.0)
        called = [record for record in judged if called_a_tool(record)]
        right = sum(solved(record) for record in called)
        print(f"tool mix warm-start: sampled, {len(called)}/64 call, {right} of them right")
        demos.policy.model.train()
        return False

    demos.train(optimizer, rng, warm["batch"], warm["call_share"], warm["steps"], progress, 250)
    demos.save(task, folder, steps=warm["steps"])


def build_repo_mix_model(task: Task, folder: Path) -> None:
    """Repo-v0's warm start: supervised for a fixed number of steps on scripted fixers of which
    a share `careful_share` inspect (run the tests, read the file) before patching and the rest
    patch at once (`RepoDemos`). What RL may change: how often the model inspects first, and
    how often its patch applies and fixes the bug."""
    import numpy as np
    import torch

    warm = task.warm
    demos = RepoDemos(task)
    optimizer = torch.optim.AdamW(demos.policy.trainable_parameters(), lr=warm["lr"])
    rng = np.random.default_rng(0)
    demos.train(optimizer, rng, warm["batch"], warm["careful_share"], warm["steps"])
    demos.save(task, folder, steps=warm["steps"])


def build_tool_model(task: Task, folder: Path) -> None:
    """The "recover a suppressed skill" ToolMath warm start, in two supervised phases:

    1. calculator episodes until *sampled* (temperature 1, as RL samples) held-out accuracy
       reaches `tool_target`: the model learns to copy the numbers into a call and the result
       into `\\boxed{}` without garbling a digit;
    2. mostly direct answers (a share `direct_tool_share` of calculator episodes keeps the skill
       alive) at a lower learning rate until greedy decoding no longer starts a reply with a
       call on more than `greedy_calls` of the probe prompts: greedily it now answers in its
       head and fails; sampled, it still calls sometimes.

    RL must then bring back a choice the warm start was trained out of. This is a labelled
    experiment, not the suite's ToolMath task (`build_tool_mix_model` is): the stop of phase 2
    is knife-edge, and "RL taught the calculator" would overstate what it shows.
    """
    import numpy as np
    import torch

    from rlvr.agents.hf import HFPolicy

    warm = task.warm
    calculator = folder.with_name(f"{folder.name}-calculator")  # phase 1, kept: it is the slow one
    demos = ToolDemos(task, direct_count=4000)

    def sampled_accuracy() -> bool:
        accuracy = quick_accuracy(task, demos.policy, temperature=1.0)
        print(f"tool warm-start, calculator phase: sampled accuracy {accuracy:.3f}", flush=True)
        demos.policy.save(calculator.with_name(f"{calculator.name}-partial"))
        demos.policy.model.train()
        return accuracy >= warm["tool_target"]

    def calls_rare() -> bool:
        chances = call_chances(demos.policy, demos.probes, demos.calls)
        greedy = sum(greedy for _, greedy in chances) / len(chances)
        mean = sum(chance for chance, _ in chances) / len(chances)
        print(
            f"tool warm-start, direct phase: P(reply starts a call) {mean:.3f}, "
            f"greedy calls {greedy:.3f}",
            flush=True,
        )
        demos.policy.model.train()
        return greedy <= warm["greedy_calls"]

    if (calculator / "config.json").exists():
        demos.policy = HFPolicy(calculator)
    else:
        optimizer = torch.optim.AdamW(demos.policy.trainable_parameters(), lr=warm["lr"])
        rng = np.random.default_rng(0)
        demos.train(optimizer, rng, warm["batch"], 1.0, warm["tool_steps"], sampled_accuracy)
        demos.policy.model.eval()
        demos.policy.save(calculator)
    # a fresh optimizer and generator: phase 2 is the same whether phase 1 ran now or was
    # loaded (with phase 1's generator carried over, a rebuild from scratch differed from one
    # that loaded the kept phase 1: P(call) 0.199 against 0.147 at the stop)
    optimizer = torch.optim.AdamW(demos.policy.trainable_parameters(), lr=warm["direct_lr"])
    demos.train(
        optimizer,
        np.random.default_rng(0),
        warm["batch"],
        warm["direct_tool_share"],
        warm["direct_steps"],
        calls_rare,
        every=1,  # it falls fast
    )
    demos.save(task, folder)


def retry_demos(
    task: Task, count: int, right_share: float, seed: int
) -> list[tuple[list[dict], list[int], list[int]]]:
    """Two-attempt demonstrations of a self-correction task, played in its env (train split),
    as (messages, positions of the replies, positions of the replies to learn):

    - `round(count * right_share)` episodes whose first attempt is the reference reply (it
      ends the episode; learnt);
    - the others: a first attempt with a near miss of the answer in the reference's format
      (`_near_miss`; not learnt: the model must not learn to err), the env's feedback, and
      the reference reply as the second attempt (learnt).

    Episode i is the env's task of seed `seed + i`; which episodes are right first is drawn
    with `seed`."""
    import gymnasium as gym
    import numpy as np

    if not 0.0 <= right_share <= 1.0:
        raise ValueError(f"right_share must be in [0, 1], got {right_share}")
    rng = np.random.default_rng(seed)
    right = set(rng.permutation(count)[: round(count * right_share)].tolist())
    env = gym.make(task.env_id, **dict(task.kwargs))
    demos = []
    try:
        for i in range(count):
            _, info = env.reset(seed=seed + i)
            reference = env.unwrapped.oracle_reply()
            if i not in right:
                posed = env.unwrapped.task
                miss = _near_miss(posed.answer, rng, posed.metadata.get("options"))
                wrong = reference.replace(f"\\boxed{{{posed.answer}}}", f"\\boxed{{{miss}}}")
                _, _, terminated, _, info = env.step(wrong)
                if terminated:
                    raise RuntimeError(f"{task.env_id}: a wrong first attempt ended the episode")
            _, _, terminated, _, info = env.step(reference)
            if not terminated or info["verdict"]["status"] != "correct":
                raise RuntimeError(f"{task.env_id}: the reference reply was not judged correct")
            messages = info["messages"]
            replies = [k for k, m in enumerate(messages) if m["role"] == "assistant"]
            demos.append((messages[: replies[-1] + 1], replies, replies[-1:]))
    finally:
        env.close()
    return demos


def _near_miss(answer: str, rng: Any, options: list[str] | None = None) -> str:
    """A wrong answer close to an integer `answer`: off by 1-9, 10 or 100 (a slip, a carry);
    one of the wrong `options` when the task offers a choice."""
    from rlvr.envs.math.families import SLIPS

    if options:
        return str(rng.choice([option for option in options if option != answer]))
    try:
        value = int(answer)
    except ValueError:
        raise ValueError(f"retry demos need integer answers, got {answer!r}") from None
    size = int(rng.choice(SLIPS))
    return str(value + size * int(rng.choice([-1, 1])))


def build_retry_model(task: Task, base: Path, folder: Path) -> None:
    """The self-correction task's warm start: the model at `base` (the math task's) supervised
    on `retry_demos` (`demos` of them, `right_share` right first), `batch` episodes a step at
    `lr`, until greedy decoding on `eval_episodes` held-out tasks gives a second attempt that
    beats the first by `delta_target` (accuracy after the second attempt minus after the
    first), or the first attempt passes `first_cap` (the demos teach the retry's format and
    some re-solving; the rest is RL's to find), or `steps` run out. The figures at each check
    go to `warm_start.json` beside the model."""
    import numpy as np
    import torch

    from rlvr.agents.hf import HFPolicy
    from rlvr.agents.tiny import supervised_loss

    warm = task.warm
    policy = HFPolicy(base)
    demos = [
        episode_ids(policy, messages, replies, learnt)
        for messages, replies, learnt in retry_demos(task, warm["demos"], warm["right_share"], 0)
    ]
    optimizer = torch.optim.AdamW(policy.trainable_parameters(), lr=warm["lr"])
    rng = np.random.default_rng(0)
    history = []
    for step in range(warm["steps"] + 1):
        if step % warm["eval_every"] == 0 or step == warm["steps"]:
            judged = quick_records(task, policy, warm["eval_episodes"], 0.0)
            figures = self_correction(judged, [solved(record) for record in judged])
            history.append({"step": step, **figures})
            print(
                f"retry warm-start step {step}: first attempt {figures['first_attempt']:.3f}, "
                f"delta {figures['delta']:+.3f}, fix {figures['fix_rate']:.3f}, "
                f"repeat {figures['repeat_rate']:.3f}, {time.process_time():.0f} CPU s",
                flush=True,
            )
            done = figures["delta"] >= warm["delta_target"]
            if done or figures["first_attempt"] > warm["first_cap"] or step == warm["steps"]:
                break
            policy.model.train()
        picked = rng.choice(len(demos), warm["batch"], replace=False)
        loss = supervised_loss(policy, [demos[i] for i in picked])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    policy.model.eval()
    policy.save(folder)
    (folder / "warm_start.json").write_text(
        json.dumps({"warm": warm, "history": history}, indent=1)
    )


def build_schema_model(task: Task, folder: Path) -> None:
    """SQL's warm start: supervised on reference queries until greedy held-out accuracy on a
    few tasks reaches `target`. Each batch holds `per_schema` examples of every schema, and the
    examples of one schema (most of the prompt) share its forward. The tokenizer learns from
    each distinct prompt line once and every reference query, so that a query takes ~20 ids,
    not ~36 (COUNT spelt in five), and fits `max_new_tokens`."""
    import numpy as np
    import torch

    from rlvr.agents.hf import HFPolicy
    from rlvr.agents.tiny import (
        TinyModelConfig,
        build_model,
        reference_episodes,
        train_tokenizer,
    )

    warm = task.warm
    shape = TinyModelConfig(vocab_size=warm["vocab"], max_positions=warm["max_positions"])
    corpus = reference_episodes(task.env_id, 500, seed=1_000_000, env_kwargs=task.kwargs)
    # Each distinct line once: whole prompts would repeat the five schemas hundreds of times
    # and leave no merges for the queries (COUNT spelt in five ids, replies past the budget).
    lines = {
        line for messages, _, _ in corpus for m in messages for line in m["content"].split("\n")
    }
    tokenizer = train_tokenizer(
        [*sorted(lines), *(reply for _, reply, _ in corpus)], shape.vocab_size
    )
    policy = HFPolicy(build_model(tokenizer, shape, seed=0), tokenizer, seed=0)
    eos = tokenizer.eos_token_id
    buckets: dict[str, list[tuple[list, list]]] = {}
    for messages, reply, _ in reference_episodes(
        task.env_id, warm["demos"], seed=0, env_kwargs=task.kwargs
    ):
        prompt, answer = policy.encode_prompt(messages), [*policy._encode(reply), eos]
        schema = messages[-1]["content"].split("Question:")[0]
        example = (prompt + answer, [0] * len(prompt) + [1] * len(answer))
        buckets.setdefault(schema, []).append(example)
    groups = list(buckets.values())
    optimizer = torch.optim.AdamW(policy.trainable_parameters(), lr=warm["lr"])
    rng = np.random.default_rng(0)
    for step in range(warm["steps"]):
        if step % warm["eval_every"] == 0:
            accuracy = quick_accuracy(task, policy)
            print(
                f"schema warm-start step {step}: greedy accuracy {accuracy:.3f}, "
                f"{time.process_time():.0f} CPU s",
                flush=True,
            )
            if accuracy >= warm["target"]:
                break
            policy.model.train()
        # Every schema in every batch: batches of one schema let the model ignore the schema
        # (all rows share it) and swing from domain to domain between steps.
        loss = sum(
            shared_prefix_loss(policy, [group[i] for i in rng.choice(len(group), per, False)])
            for group in groups
            for per in [min(warm["per_schema"], len(group))]
        ) / len(groups)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    policy.model.eval()
    policy.save(folder)
