"""A lean inference forward for Llama/Qwen2-style decoders, used by `HFPolicy` to sample.

It runs the model's own modules (embeddings, projections, norms, MLPs, rotary embedding, LoRA
adapters included) with the attention written out, a plain list of key/value tensors as the
cache, and no output objects. For the small models RL runs on CPU, transformers' per-call
bookkeeping (mask building, cache classes, output capture) costs more than the arithmetic;
this path cuts it. Training never uses it: learners go through the model's ordinary forward.

Supported: `model_type` "qwen2" or "llama" without sliding-window attention. Anything else
samples through the model's ordinary forward (`LeanDecoder.supports(model)` says which).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

SUPPORTED_MODEL_TYPES = ("qwen2", "llama")


class KVCache:
    """Keys and values of every layer, (B, kv_heads, capacity, D) buffers of which the first
    `length` positions are filled: a new id writes in place (the buffers grow by doubling), so
    decoding T ids copies the cache O(log T) times rather than once per id."""

    def __init__(self, layers: list[tuple[torch.Tensor, torch.Tensor]], length: int) -> None:
        self.layers = layers
        self.length = length

    def append(self, index: int, keys: torch.Tensor, values: torch.Tensor) -> tuple[Any, Any]:
        """Write a layer's new keys and values after the filled ones; all of them, as views."""
        end = self.length + keys.shape[2]
        k, v = self.layers[index]
        if end > k.shape[2]:
            room = max(end, 2 * k.shape[2])
            k, v = _grown(k, self.length, room), _grown(v, self.length, room)
            self.layers[index] = (k, v)
        k[:, :, self.length : end] = keys
        v[:, :, self.length : end] = values
        return k[:, :, :end], v[:, :, :end]


def _grown(buffer: torch.Tensor, filled: int, room: int) -> torch.Tensor:
    bigger = buffer.new_empty((*buffer.shape[:2], room, buffer.shape[3]))
    bigger[:, :, :filled] = buffer[:, :, :filled]
    return bigger


class LeanDecoder:
    """`decoder(ids, positions, padding, cache) -> (last logits, cache)`, inference only."""

    def __init__(self, model: Any) -> None:
        base = model.get_base_model() if hasattr(model, "get_base_model") else model
        config = base.config
        self.body = base.model
        self.lm_head = base.lm_head
        self.head_dim = getattr(config, "head_dim", None) or (
            config.hidden_size // config.num_attention_heads
        )
        self.gqa = config.num_attention_heads != config.num_key_value_heads

    @staticmethod
    def supports(model: Any) -> bool:
        base = model.get_base_model() if hasattr(model, "get_base_model") else model
        config = getattr(base, "config", None)
        return (
            getattr(config, "model_type", None) in SUPPORTED_MODEL_TYPES
            and not getattr(config, "use_sliding_window", False)
            and hasattr(base, "model")
            and hasattr(base.model, "rotary_emb")
        )

    @torch.no_grad()
    def __call__(
        self,
        input_ids: torch.Tensor,  # (B, T)
        positions: torch.Tensor,  # (B, T)
        padding: torch.Tensor | None,  # (B, S) 1 for real keys, S = cached + T; None: no padding
        cache: KVCache | None,
    ) -> tuple[torch.Tensor, KVCache]:
        batch, length = input_ids.shape
        past = cache.length if cache is not None else 0
        hidden = self.body.embed_tokens(input_ids)  # (B, T, H)
        cos, sin = self.body.rotary_emb(hidden, positions)  # (B, T, D) each
        cos, sin = cos[:, None], sin[:, None]  # broadcast over heads
        mask = _mask(padding, past, length, hidden.device)
        causal = mask is None and length > 1 and past == 0
        if cache is None:  # each layer adds its buffers below
            cache = KVCache([], 0)
        for index, layer in enumerate(self.body.layers):
            attention = layer.self_attn
            x = layer.input_layernorm(hidden)
            q = attention.q_proj(x).view(batch, length, -1, self.head_dim).transpose(1, 2)
            k = attention.k_proj(x).view(batch, length, -1, self.head_dim).transpose(1, 2)
            v = attention.v_proj(x).view(batch, length, -1, self.head_dim).transpose(1, 2)
            q, k = q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin
            if index == len(cache.layers):
                shape = (*k.shape[:2], length + _SPARE, k.shape[3])
                cache.layers.append((k.new_empty(shape), v.new_empty(shape)))
            k, v = cache.append(index, k, v)
            out = F.scaled_dot_product_attention(  # (B, heads, T, D)
                q,
                k,
                v,
                attn_mask=mask,
                is_causal=causal,
                scale=attention.scaling,
                enable_gqa=self.gqa,
            )
            hidden = hidden + attention.o_proj(out.transpose(1, 2).reshape(batch, length, -1))
            hidden = hidden + layer.mlp(layer.post_attention_layernorm(hidden))
        cache.length += length
        last = self.body.norm(hidden[:, -1, :])  # (B, H)
        return self.lm_head(last), cache


_SPARE = 64
"""Positions a new cache keeps free beyond its first ids."""


def expand_cache(cache: KVCache, rows: torch.Tensor) -> KVCache:
    """The cache with its batch rows picked (and repeated) by `rows`."""
    layers = [(k.index_select(0, rows), v.index_select(0, rows)) for k, v in cache.layers]
    return KVCache(layers, cache.length)


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


def _mask(
    padding: torch.Tensor | None, past: int, length: int, device: torch.device
) -> torch.Tensor | None:
    """Boolean (B, 1, T, S) mask: causal, padded keys hidden. Each query may always see itself,
    so the rows of left-padding queries are never empty (their output is never used)."""
    if padding is None:
        return None
    keys = padding.shape[1]
    query_at = torch.arange(length, device=device)[:, None] + past  # (T, 1)
    key_at = torch.arange(keys, device=device)[None, :]  # (1, S)
    allowed = (key_at <= query_at)[None] & padding.bool()[:, None, :]  # (B, T, S)
    allowed = allowed | (key_at == query_at)[None]
    return allowed[:, None]
