"""`rlvr.agents.tiny`: a tiny chat model built fully offline, for demos, tests and benchmarks.

`build_tiny(env_id, folder)` makes everything from nothing but the environment:

1. text: chat-rendered episodes of the env (prompts, the reference replies, the env's feedback);
2. a byte-level BPE tokenizer trained on that text with `tokenizers` (digits stay one token each,
   as in Qwen and Llama, so arithmetic is learnable), ChatML special tokens and chat template;
3. a small Qwen2 model (a few hundred thousand parameters) initialised from a seed;
4. a short supervised warm-start on the env's reference replies, optionally stopped once greedy
   held-out accuracy reaches a target, so RL starts from a model that already solves some tasks;
5. a normal HF folder: `HFPolicy(folder)` (or `AutoModelForCausalLM.from_pretrained`) loads it.

Nothing is downloaded and the same arguments give the same model.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import gymnasium as gym
import numpy as np

from rlvr.agents.errors import require_agents_extra
from rlvr.agents.policy import Conversation, SamplingParams
from rlvr.config import Positive, Seed, check_numbers, cli

if TYPE_CHECKING:
    from rlvr.envs.core import TextEnv

require_agents_extra("rlvr.agents.tiny")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

PAD, BOS_OF_TURN, END_OF_TURN = "<|endoftext|>", "<|im_start|>", "<|im_end|>"
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@dataclass(frozen=True)
class TinyModelConfig:
    """Shape of the tiny model and its tokenizer."""

    vocab_size: int = 512
    """BPE vocabulary size, the 256 byte symbols and 3 special tokens included."""
    hidden_size: Positive = 64
    """Width of the residual stream."""
    layers: Positive = 4
    """Number of transformer blocks."""
    heads: Positive = 4
    """Attention heads per block."""
    kv_heads: Positive = 2
    """Key/value heads (grouped-query attention, as in Qwen2); must divide `heads`."""
    intermediate_size: Positive = 256
    """Width of the MLP."""
    max_positions: Positive = 512
    """Longest sequence (prompt and completions) the model handles."""
    corpus_episodes: Positive = 2000
    """How many env episodes to render as tokenizer training text."""
    line_merges: bool | None = None
    """Let the tokenizer's merges cross spaces (`train_tokenizer(lines=True)`: a board row
    becomes a token or two, so long game views stay short; digits then are not single tokens).
    None: on for multi-agent games, off otherwise. A small board (tic-tac-toe) learns faster
    with it off: each cell's number is then a token of its own."""

    def __post_init__(self) -> None:
        check_numbers(self)
        if self.vocab_size < 300:
            raise ValueError(
                f"vocab_size must be >= 300 (256 bytes + specials), got {self.vocab_size}"
            )
        if self.heads % self.kv_heads or self.hidden_size % self.heads:
            raise ValueError(
                "heads must be a multiple of kv_heads and hidden_size a multiple of heads, got "
                f"hidden_size={self.hidden_size}, heads={self.heads}, kv_heads={self.kv_heads}"
            )


@dataclass(frozen=True)
class WarmStartConfig:
    """The supervised warm-start on the env's reference replies."""

    steps: int = field(default=1500, metadata=cli("--steps"))
    """Maximum number of optimizer steps."""
    batch_size: int = 64
    """Examples per step."""
    lr: float = 3e-3
    """AdamW learning rate."""
    target_accuracy: float | None = field(default=None, metadata=cli("--target-accuracy"))
    """Stop as soon as greedy held-out accuracy reaches this (None: run all `steps`)."""
    pool_size: Positive = 8000
    """Distinct training examples drawn from the env (train split)."""
    eval_every: Positive = 25
    """Steps between held-out evaluations (when `target_accuracy` is set)."""
    eval_episodes: Positive = 100
    """Held-out episodes per evaluation."""

    def __post_init__(self) -> None:
        check_numbers(self)
        if self.steps < 0 or self.batch_size < 1 or self.lr <= 0:
            raise ValueError("warm-start steps must be >= 0, batch_size >= 1 and lr > 0")
        if self.target_accuracy is not None and not 0 < self.target_accuracy <= 1:
            raise ValueError(f"target_accuracy must be in (0, 1], got {self.target_accuracy}")


@dataclass(frozen=True)
class TinyConfig:
    """`rlvr tiny`: a tiny model for one env, built offline and saved (see `build_tiny`)."""

    env_id: str = field(metadata=cli("--env"))
    """Env id whose tasks the model learns, e.g. rlvr/Math-v0."""
    output_dir: str = field(metadata=cli("--out"))
    """Folder to write the model to."""
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    """`gym.make` keyword arguments of the env."""
    heldout_kwargs: Mapping[str, Any] | None = None
    """Keyword arguments of the env the warm start measures held-out accuracy on (None: `kwargs`
    plus split="test"; a multi-agent game has no split: `kwargs`)."""
    seed: Seed = 0
    """Seed of the tokenizer's corpus, the initial weights and the warm start."""
    model: TinyModelConfig = field(default_factory=TinyModelConfig)
    """Shape of the model and its tokenizer."""
    warm_start: WarmStartConfig | None = field(default_factory=WarmStartConfig)
    """The supervised warm start on the env's reference replies (None: an untrained model)."""

    def __post_init__(self) -> None:
        check_numbers(self)

    @property
    def eval_kwargs(self) -> dict[str, Any]:
        if self.heldout_kwargs is not None:
            return dict(self.heldout_kwargs)
        from rlvr.agents.selfplay import is_multiagent

        if is_multiagent(self.env_id):  # the held-out measure is a match, on the same game
            return dict(self.kwargs)
        return {**self.kwargs, "split": "test"}


def reference_episodes(
    env_id: str, count: int, *, seed: int = 0, env_kwargs: Mapping[str, Any] | None = None
) -> list[tuple[Conversation, str, str]]:
    """`count` episodes as (messages at reset, reference reply, the env's feedback to it). For a
    multi-agent game (`rlvr.envs.multiagent`), `count` moves of random legal games instead."""
    from rlvr.agents.selfplay import is_multiagent

    if is_multiagent(env_id):
        return game_moves(env_id, count, seed=seed, env_kwargs=env_kwargs)
    env = gym.make(env_id, **dict(env_kwargs or {}))
    try:
        episodes = []
        for i in range(count):
            _, info = env.reset(seed=seed + i)
            reply = cast("TextEnv", env.unwrapped).oracle_reply()
            feedback, *_ = env.step(reply)
            episodes.append((info["messages"], reply, feedback))
        return episodes
    finally:
        env.close()


def game_moves(
    env_id: str, count: int, *, seed: int = 0, env_kwargs: Mapping[str, Any] | None = None
) -> list[tuple[Conversation, str, str]]:
    """`count` decisions of games between random legal movers (`legal`), as (the mover's view
    before its move, the move, what the env told it next): a game has no reference reply, so a
    legal one stands in, which teaches the format and the rules, not how to win."""
    from rlvr.agents.scripted import LegalMovePolicy
    from rlvr.rollout.games import play_match

    moves: list[tuple[Conversation, str, str]] = []
    games = 0
    while len(moves) < count:
        report = play_match(
            env_id,
            LegalMovePolicy(seed + games),
            LegalMovePolicy(seed + games + 1),
            games=64,
            seed=seed + games,
            env_kwargs=env_kwargs,
            batch_size=64,
        )
        games += 64
        for game in report.games:
            for record in game.seats.values():
                view = record.messages
                for i, message in enumerate(view):
                    if message["role"] == "assistant":
                        after = view[i + 1]["content"] if i + 1 < len(view) else ""
                        moves.append((view[:i], message["content"], after))
    order = np.random.default_rng(seed).permutation(len(moves))[:count]
    return [moves[i] for i in order]


def train_tokenizer(texts: Sequence[str], vocab_size: int = 512, *, lines: bool = False) -> Any:
    """A byte-level BPE tokenizer with ChatML specials and chat template, trained on `texts`.

    `lines=True` lets merges cross spaces (pieces are split at newlines only), so a board row
    such as `. . X O . . .` or a whole `<move>4</move>` can become one token: game views, which
    repeat a board every move, get several times shorter (built for multi-agent games)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    if lines:
        core.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split("\n", "isolated"),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ]
        )
    else:
        core.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Digits(individual_digits=True),
                pre_tokenizers.ByteLevel(add_prefix_space=False),
            ]
        )
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[PAD, BOS_OF_TURN, END_OF_TURN],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    core.train_from_iterator(texts, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, eos_token=END_OF_TURN, pad_token=PAD, padding_side="left"
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def build_model(tokenizer: Any, config: TinyModelConfig, seed: int = 0) -> Any:
    """A freshly initialised Qwen2 causal LM sized by `config` (global RNG state untouched)."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    qwen = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=config.hidden_size,
        intermediate_size=config.intermediate_size,
        num_hidden_layers=config.layers,
        num_attention_heads=config.heads,
        num_key_value_heads=config.kv_heads,
        max_position_embeddings=config.max_positions,
        tie_word_embeddings=True,
        attention_dropout=0.0,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = Qwen2ForCausalLM(qwen)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model


def warm_start(
    policy: Any,
    env_id: str,
    config: WarmStartConfig,
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    heldout_kwargs: Mapping[str, Any] | None = None,
    seed: int = 0,
    log: Callable[[str], None] | None = None,
) -> list[dict[str, float]]:
    """Supervised steps on reference replies (loss on reply tokens only). Returns the eval log."""
    from rlvr.rollout.episodes import evaluate

    rng = np.random.default_rng(seed)
    size = min(max(config.steps * config.batch_size, config.batch_size), config.pool_size)
    pool = reference_episodes(env_id, size, seed=seed, env_kwargs=env_kwargs)
    examples = [
        (policy.encode_prompt(messages), [*policy._encode(reply), policy.tokenizer.eos_token_id])
        for messages, reply, _ in pool
    ]
    optimizer = torch.optim.AdamW(policy.trainable_parameters(), lr=config.lr)
    history: list[dict[str, float]] = []

    def accuracy() -> float:
        from rlvr.agents.selfplay import is_multiagent

        if is_multiagent(env_id):  # a game: the win rate against a random legal mover
            from rlvr.agents.scripted import LegalMovePolicy
            from rlvr.rollout.games import play_match

            return play_match(
                env_id,
                policy,
                LegalMovePolicy(seed),
                games=config.eval_episodes,
                seed=10_000_000,
                batch_size=config.eval_episodes,
                sampling=SamplingParams(temperature=0.0, max_new_tokens=32),
                env_kwargs=heldout_kwargs if heldout_kwargs is not None else env_kwargs,
            ).win_rate
        report = evaluate(
            env_id,
            policy,
            episodes=config.eval_episodes,
            seed=10_000_000,
            batch_size=config.eval_episodes,
            sampling=SamplingParams(temperature=0.0, max_new_tokens=32),
            env_kwargs=heldout_kwargs if heldout_kwargs is not None else env_kwargs,
        )
        return report.success_rate

    policy.model.train()
    for step in range(config.steps):
        if config.target_accuracy is not None and step % config.eval_every == 0:
            score = accuracy()
            history.append({"step": step, "accuracy": score})
            if log:  # named apart from a benchmark's figures: this is only the stopping check
                log(
                    f"warm-start step {step}: held-out accuracy {score:.3f} (greedy, "
                    f"{config.eval_episodes} episodes: the --target-accuracy check)"
                )
            if score >= config.target_accuracy:
                return history
        batch = [examples[i] for i in rng.choice(len(examples), config.batch_size, replace=False)]
        loss = _supervised_loss(policy, batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    history.append({"step": config.steps, "accuracy": accuracy()})
    return history


def _supervised_loss(policy: Any, batch: Sequence[tuple[list[int], list[int]]]) -> torch.Tensor:
    examples = [(p + t, [0] * len(p) + [1] * len(t)) for p, t in batch]
    return supervised_loss(policy, examples)


def supervised_loss(policy: Any, batch: Sequence[tuple[list[int], list[int]]]) -> torch.Tensor:
    """Cross-entropy on the ids whose mask is 1, for examples given as (ids, mask): a prompt and
    its reply, or a whole multi-turn episode with the environment's ids masked out."""
    width = max(len(ids) for ids, _ in batch)
    pad = policy.tokenizer.pad_token_id
    ids = torch.full((len(batch), width), pad, dtype=torch.long)
    labels = torch.full((len(batch), width), -100, dtype=torch.long)
    attention = torch.zeros((len(batch), width), dtype=torch.long)
    for row, (sequence, mask) in enumerate(batch):  # right padding: positions start at 0
        ids[row, : len(sequence)] = torch.tensor(sequence)
        labels[row, : len(sequence)] = torch.where(
            torch.tensor(mask, dtype=torch.bool), torch.tensor(sequence), -100
        )
        attention[row, : len(sequence)] = 1
    device = policy.device
    logits = policy.model(input_ids=ids.to(device), attention_mask=attention.to(device)).logits
    return F.cross_entropy(
        logits[:, :-1].reshape(-1, logits.shape[-1]).float(), labels[:, 1:].reshape(-1).to(device)
    )


def build_tiny(
    env_id: str,
    folder: str | os.PathLike[str],
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    heldout_kwargs: Mapping[str, Any] | None = None,
    model: TinyModelConfig | None = None,
    warm: WarmStartConfig | None = None,
    seed: int = 0,
    log: Callable[[str], None] | None = None,
) -> Path:
    """Build, warm-start (unless `warm` is None) and save a tiny model for `env_id`."""
    from rlvr.agents.hf import HFPolicy

    model = model or TinyModelConfig()
    corpus = []
    for messages, reply, feedback in reference_episodes(
        env_id, model.corpus_episodes, seed=seed + 1_000_000, env_kwargs=env_kwargs
    ):
        corpus.append("\n".join(message["content"] for message in messages))
        corpus.append(f"{reply}\n{feedback}")
    from rlvr.agents.selfplay import is_multiagent

    lines = is_multiagent(env_id) if model.line_merges is None else model.line_merges
    tokenizer = train_tokenizer(corpus, model.vocab_size, lines=lines)
    policy = HFPolicy(build_model(tokenizer, model, seed), tokenizer, seed=seed)
    history: list[dict[str, float]] = []
    if warm is not None:
        history = warm_start(
            policy,
            env_id,
            warm,
            env_kwargs=env_kwargs,
            heldout_kwargs=heldout_kwargs,
            seed=seed,
            log=log,
        )
    out = policy.save(folder)
    card = {
        "env_id": env_id,
        "env_kwargs": dict(env_kwargs or {}),
        "model": asdict(model),
        "warm_start": asdict(warm) if warm is not None else None,
        "warm_start_history": history,
        "parameters": sum(p.numel() for p in policy.model.parameters()),
        "seed": seed,
    }
    (out / "rlvr_tiny.json").write_text(json.dumps(card, indent=2) + "\n", encoding="utf-8")
    return out
