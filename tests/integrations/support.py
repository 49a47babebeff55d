"""A tiny model that has memorised the reference replies of a few dataset rows, built offline.

An untrained tiny model writes noise, which every verifier scores 0: a test comparing TRL's
rewards with our verdicts would then compare zeros with zeros. A model overfitted on the
reference replies of the very rows it is trained on writes them back often, and noise or near
misses otherwise, so a GRPO batch holds correct and incorrect completions alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym

from rlvr.integrations.columns import decode_task


def reference_replies(env_id: str, rows: Sequence[Mapping[str, Any]], **env_kwargs: Any) -> list:
    env = gym.make(env_id, **env_kwargs).unwrapped
    try:
        return [env.judge.reference_reply(decode_task(row)) for row in rows]
    finally:
        env.close()


def overfit_tiny(
    env_id: str, rows: Sequence[Mapping[str, Any]], folder: Path, *, steps: int = 200, **env_kwargs
) -> Path:
    """A tiny model after `steps` supervised steps on the rows' prompts and reference replies."""
    replies = reference_replies(env_id, rows, **env_kwargs)
    prompts = [list(row["prompt"]) for row in rows]
    conversations = [
        [*prompt, {"role": "assistant", "content": reply}]
        for prompt, reply in zip(prompts, replies)
    ]
    return overfit_conversations(conversations, prompts, folder, steps=steps)


def overfit_conversations(
    conversations: Sequence[Sequence[Mapping[str, Any]]],
    prompts: Sequence[Sequence[Mapping[str, Any]]],
    folder: Path,
    *,
    steps: int = 200,
) -> Path:
    """A tiny model (tokenizer trained on the conversations) after `steps` supervised steps on
    each whole conversation after its prompt."""
    import torch

    from rlvr.agents.hf import HFPolicy
    from rlvr.agents.tiny import TinyModelConfig, _supervised_loss, build_model, train_tokenizer

    def render(tokenizer: Any, messages: Any, **kwargs: Any) -> str:
        return tokenizer.apply_chat_template(list(messages), tokenize=False, **kwargs)

    corpus = [m["content"] for conversation in conversations for m in conversation]
    tokenizer = train_tokenizer(corpus, 512)
    config = TinyModelConfig(hidden_size=64, intermediate_size=128, layers=2, max_positions=2048)
    policy = HFPolicy(build_model(tokenizer, config, seed=0), tokenizer, seed=0)
    examples = []
    for conversation, prompt in zip(conversations, prompts):
        opening = render(tokenizer, prompt, add_generation_prompt=True)
        whole = render(tokenizer, conversation)
        assert whole.startswith(opening), "the chat template must extend the prompt"
        examples.append((policy._encode(opening), policy._encode(whole[len(opening) :])))
    optimizer = torch.optim.AdamW(policy.trainable_parameters(), lr=1e-2)
    policy.model.train()
    with torch.random.fork_rng():
        torch.manual_seed(0)
        for _ in range(steps):
            loss = _supervised_loss(policy, examples)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
    return policy.save(folder)
