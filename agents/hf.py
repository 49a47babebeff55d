"""`HFPolicy`: a transformers causal LM and its tokenizer as a `Policy`, trainable.

- Loads a hub id or a local folder (`HFPolicy("path/to/model")`), or takes a model and tokenizer
  you built; `device`/`dtype` choose where and how; `lora=LoraSettings(...)` wraps the model with
  peft so only the adapters train.
- `generate(conversations, n, sampling)` applies the chat template, left-pads the batch and
  samples `n` completions per conversation, returning the text, the generated token ids and their
  log-probabilities.
- Token-in/token-out for training: `encode_prompt` gives an episode's first ids, `sample` extends
  many id sequences at once, and `encode_followup` gives the ids of the environment's new messages
  to append after a reply. A learner therefore trains on exactly the ids that were generated;
  re-applying the chat template to a whole history does not reproduce them (BPE merges across
  turn boundaries differ, templates rewrite earlier turns).

Decoding is a short loop over the model with its KV cache rather than `model.generate`: for the
small models RL research runs on CPU, `generate`'s per-token overhead dominates the step time.
Identical prompts in a batch (a GRPO group) are prefilled once. Llama/Qwen2-style models sample
through `LeanDecoder` (the same modules, less bookkeeping; `lean=False` turns it off).
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlvr.agents.errors import PolicyError, require_agents_extra
from rlvr.agents.policy import Completion, Conversation, Sample, SamplingParams
from rlvr.config import check_numbers, cli

require_agents_extra("rlvr.agents.hf")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from rlvr.agents.compat import cache_of, peft_deprecations_quiet, with_cache  # noqa: E402
from rlvr.agents.lean_decoder import LeanDecoder, expand_cache  # noqa: E402


def _layer_names(texts: Sequence[str]) -> tuple[str, ...]:
    """`["q_proj,k_proj", "v_proj"]` -> `("q_proj", "k_proj", "v_proj")`."""
    return tuple(name.strip() for text in texts for name in text.split(",") if name.strip())


@dataclass(frozen=True)
class LoraSettings:
    """Low-rank adapters through peft; only the adapters train."""

    r: int = field(default=8, metadata=cli("--lora-r"))
    """Rank of each adapter."""
    alpha: int | None = None
    """Scaling numerator: the update is scaled by alpha / r (None: 2 * r)."""
    dropout: float = 0.0
    """Dropout on the adapter input (keep 0 for bit-for-bit reproducible runs)."""
    target_modules: tuple[str, ...] = field(
        default=("q_proj", "k_proj", "v_proj", "o_proj"),
        metadata=cli("--lora-targets", parse=_layer_names),
    )
    """Names of the linear layers to adapt (on the command line also comma-separated; GPT-2's
    attention is c_attn)."""

    def __post_init__(self) -> None:
        check_numbers(self)
        alpha = 2 * self.r if self.alpha is None else self.alpha
        object.__setattr__(self, "alpha", alpha)
        if self.r < 1 or alpha < 1:
            raise ValueError(f"LoRA r and alpha must be >= 1, got r={self.r}, alpha={self.alpha}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"LoRA dropout must be in [0, 1), got {self.dropout}")
        if not self.target_modules:
            raise ValueError("LoRA target_modules is empty; name layers, e.g. ('q_proj', 'v_proj')")


_REPLY_MARKER = "\ue000rlvr-reply\ue001"
_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


class HFPolicy:
    """A causal LM as a policy. See the module docstring."""

    def __init__(
        self,
        model: str | os.PathLike[str] | Any,
        tokenizer: Any = None,
        *,
        device: str = "cpu",
        dtype: str | torch.dtype | None = None,
        lora: LoraSettings | None = None,
        chat_template: str | None = None,
        batch_size: int = 256,
        seed: int = 0,
        lean: bool = True,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        torch_dtype = _resolve_dtype(dtype)
        self.device = _resolve_device(device)
        if isinstance(model, (str, os.PathLike)):
            self.name = str(model)
            model, tokenizer = _load(self.name, tokenizer, torch_dtype)
        else:
            self.name = getattr(getattr(model, "config", None), "name_or_path", "") or "model"
            if tokenizer is None:
                raise ValueError("pass the tokenizer along with a model object")
            if torch_dtype is not None:
                model = model.to(torch_dtype)
        self.tokenizer = tokenizer
        self.tokenizer.padding_side = "left"
        if chat_template is not None:
            self.tokenizer.chat_template = chat_template
        if getattr(self.tokenizer, "chat_template", None) is None:
            raise PolicyError(
                f"{self.name}: the tokenizer has no chat template; pass chat_template=... "
                "(a Jinja template over `messages`; TrainConfig(chat_template=...), "
                "`rlvr train --chat-template FILE`)"
            )
        self.model = model.to(self.device)
        self.lora = lora
        if lora is not None:
            self.model = _apply_lora(self.model, lora, seed)
        self.eos_ids = _eos_ids(self.model, self.tokenizer)
        if self.tokenizer.pad_token_id is None:  # padding is masked: any end-of-sequence id will do
            pad = self.tokenizer.eos_token_id
            pad = min(self.eos_ids) if pad is None else pad
            self.tokenizer.pad_token = self.tokenizer.convert_ids_to_tokens(pad)
        self.context_length = _context_length(self.model)
        self._lean = LeanDecoder(self.model) if lean and LeanDecoder.supports(self.model) else None
        self.batch_size = batch_size
        self.generator = torch.Generator(device=self.device).manual_seed(seed)

    # --- the Policy protocol ----------------------------------------------------------------------

    def generate(
        self,
        conversations: Sequence[Conversation],
        n: int = 1,
        sampling: SamplingParams | None = None,
    ) -> list[list[Completion]]:
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        sampling = sampling or SamplingParams()
        prompts = [self.encode_prompt(conversation) for conversation in conversations]
        samples = self.sample([p for p in prompts for _ in range(n)], sampling)
        completions = [self.to_completion(sample) for sample in samples]
        return [completions[i * n : (i + 1) * n] for i in range(len(conversations))]

    def to_completion(self, sample: Sample) -> Completion:
        return Completion(
            text=self.decode(sample.token_ids),
            token_ids=list(sample.token_ids),
            logprobs=list(sample.logprobs),
            finish_reason=sample.finish_reason,
        )

    # --- tokens in, tokens out --------------------------------------------------------------------

    def encode_prompt(self, messages: Conversation) -> list[int]:
        """Ids of a conversation followed by the assistant's generation prompt."""
        return self._encode(self._render(messages, add_generation_prompt=True))

    def encode_followup(
        self, history: Conversation, new_messages: Conversation, eos_id: int | None
    ) -> list[int]:
        """Ids to append after a generated reply so that the next reply can be sampled.

        `history` ends with that reply (as the assistant message), `new_messages` are what the
        environment said next, `eos_id` is the end-of-sequence id the reply ended with (None if
        it ended otherwise). The ids cover the end of the assistant turn (less that id's text
        when the template's turn ends with it), the new messages and the next generation
        prompt. Only text after the reply is tokenized: the reply's own ids stay as generated.
        """
        if not history or history[-1].get("role") != "assistant":
            raise ValueError("history must end with the assistant reply the followup comes after")
        base = self._render(history, add_generation_prompt=False)
        full = self._render([*history, *new_messages], add_generation_prompt=True)
        if not full.startswith(base):
            raise PolicyError(
                "the chat template rewrites earlier turns when a message is added, so turns "
                "cannot be appended as tokens; use a template that only appends"
            )
        # Where the reply ends in the rendered text: render it with a marker for the content.
        probe = [*history[:-1], {**history[-1], "content": _REPLY_MARKER}]
        rendered = self._render(probe, add_generation_prompt=False)
        at = rendered.rfind(_REPLY_MARKER)
        if at < 0:
            raise PolicyError("the chat template drops the assistant reply's text")
        tail = rendered[at + len(_REPLY_MARKER) :]
        # The id the model ended with, not the tokenizer's eos_token: a model may have several
        # (Qwen2.5: <|im_end|> and <|endoftext|>), and only the one generated is already there.
        eos_text = self.tokenizer.decode([eos_id]) if eos_id is not None else ""
        if eos_text and tail.startswith(eos_text):
            tail = tail[len(eos_text) :]
        return self._encode(tail + full[len(base) :])

    @torch.no_grad()
    def sample(
        self,
        prompts: Sequence[Sequence[int]],
        sampling: SamplingParams,
        generator: torch.Generator | None = None,
    ) -> list[Sample]:
        """Continue each id sequence once (batched, `batch_size` rows at a time)."""
        if any(len(prompt) == 0 for prompt in prompts):
            raise ValueError("every prompt needs at least one token")
        longest = max((len(prompt) for prompt in prompts), default=0)
        if self.context_length is not None and longest >= self.context_length:
            raise PolicyError(
                f"a prompt of {longest} tokens leaves no room to reply in {self.name}'s context of "
                f"{self.context_length} tokens (its learned max_position_embeddings); shorten the "
                "prompt (fewer turns, a shorter system message) or use a model with more positions"
            )
        if generator is None and sampling.seed is not None:
            generator = torch.Generator(device=self.device).manual_seed(sampling.seed)
        generator = generator if generator is not None else self.generator
        was_training = self.model.training
        self.model.eval()
        try:
            samples: list[Sample] = []
            for start in range(0, len(prompts), self.batch_size):
                chunk = prompts[start : start + self.batch_size]
                samples.extend(self._sample_batch(chunk, sampling, generator))
            return samples
        finally:
            self.model.train(was_training)

    def decode(self, token_ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(token_ids), skip_special_tokens=True)

    # --- saving -----------------------------------------------------------------------------------

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write a normal HF folder (LoRA adapters merged in) that `HFPolicy(path)` loads."""
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        model = self.model
        if self.lora is not None:
            model = copy.deepcopy(model).merge_and_unload()
        with _quiet_transformers():
            model.save_pretrained(folder)
        self.tokenizer.save_pretrained(folder)
        return folder

    def trainable_parameters(self) -> list[torch.nn.Parameter]:
        return [p for p in self.model.parameters() if p.requires_grad]

    # --- internals --------------------------------------------------------------------------------

    def _render(self, messages: Conversation, *, add_generation_prompt: bool) -> str:
        return self.tokenizer.apply_chat_template(
            list(messages), tokenize=False, add_generation_prompt=add_generation_prompt
        )

    def _encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _sample_batch(
        self, prompts: Sequence[Sequence[int]], sampling: SamplingParams, generator: torch.Generator
    ) -> list[Sample]:
        rows = len(prompts)
        # Identical prompts (a GRPO group) are prefilled once and their cache shared.
        unique: dict[tuple[int, ...], int] = {}
        source = [unique.setdefault(tuple(prompt), len(unique)) for prompt in prompts]
        firsts = list(unique)
        width = max(len(prompt) for prompt in firsts)
        logits, cache, attention, positions = self._prefill(firsts)
        if len(firsts) < rows:
            expand = torch.tensor(source, device=self.device)
            cache = self._expand(cache, expand)
            logits, attention, positions = logits[expand], attention[expand], positions[expand]
        next_position = positions[:, -1:] + 1  # (B, 1)
        # A reply ends ("length") where learned positions do; rows that ended still run through
        # the model with the batch, at a clamped position (their output is unused).
        limit = self.context_length or (width + sampling.max_new_tokens)
        room = [min(sampling.max_new_tokens, limit - len(prompt)) for prompt in prompts]
        samples = [Sample([], [], "length") for _ in range(rows)]
        running = list(range(rows))
        for step in range(sampling.max_new_tokens):
            tokens, logprobs = _pick(logits.float(), sampling, generator)  # (B,)
            token_list, logprob_list = tokens.tolist(), logprobs.tolist()
            still_running = []
            for row in running:
                sample = samples[row]
                sample.token_ids.append(token_list[row])
                sample.logprobs.append(logprob_list[row])
                if token_list[row] in self.eos_ids or self._hit_stop(sample, sampling.stop):
                    sample.finish_reason = "stop"
                elif len(sample.token_ids) < room[row]:
                    still_running.append(row)
            running = still_running
            if not running or step == sampling.max_new_tokens - 1:
                break
            attention = torch.cat([attention, attention.new_ones((rows, 1))], dim=1)
            logits, cache = self._run(tokens[:, None], attention, next_position, cache)
            next_position = (next_position + 1).clamp(max=limit - 1)
        return samples

    def _prefill(self, prompts: Sequence[tuple[int, ...]]) -> tuple[torch.Tensor, Any, Any, Any]:
        """Run distinct `prompts`: the last logits, the cache, the attention and the positions.

        Their longest common prefix (a long system prompt, or a multi-turn episode's opening that
        every later turn repeats) is run once and its cache shared; each row's rest is
        left-padded after it, the padding masked out."""
        shared = _common_prefix(prompts) if self._lean is not None and len(prompts) > 1 else 0
        if shared < _SHARED_PREFIX_MIN:
            shared = 0
        cache = None
        if shared:
            ids = torch.tensor([prompts[0][:shared]], dtype=torch.long, device=self.device)
            prefix_positions = torch.arange(shared, device=self.device)[None]
            _, cache = self._run(ids, torch.ones_like(ids), prefix_positions, None)
            cache = self._expand(cache, torch.zeros(len(prompts), dtype=torch.long))
        width = max(len(prompt) for prompt in prompts) - shared
        input_ids = torch.full((len(prompts), width), self.tokenizer.pad_token_id, dtype=torch.long)
        attention = torch.zeros((len(prompts), shared + width), dtype=torch.long)
        attention[:, :shared] = 1
        for row, prompt in enumerate(prompts):  # left padding
            rest = prompt[shared:]
            input_ids[row, width - len(rest) :] = torch.tensor(rest, dtype=torch.long)
            attention[row, shared + width - len(rest) :] = 1
        input_ids, attention = input_ids.to(self.device), attention.to(self.device)
        positions = (attention.cumsum(-1) - 1).clamp(min=0)
        if shared and self._lean is not None:  # the mask keeps the rest causal
            logits, cache = self._lean(input_ids, positions[:, shared:], attention, cache)
        else:  # from an empty cache
            logits, cache = self._run(input_ids, attention, positions, None)
        return logits, cache, attention, positions

    def _run(
        self, ids: torch.Tensor, attention: torch.Tensor, positions: torch.Tensor, cache: Any
    ) -> tuple[torch.Tensor, Any]:
        """Logits at the last position (B, V) and the cache, extended by `ids` (B, T)."""
        padding = _unless_full(attention)
        if self._lean is not None:
            return self._lean(ids, positions, padding, cache)
        out = self.model(
            input_ids=ids,
            attention_mask=padding,
            position_ids=positions,
            use_cache=True,
            **with_cache(self.model, cache),
        )
        return out.logits[:, -1, :], cache_of(self.model, out)

    def _expand(self, cache: Any, rows: torch.Tensor) -> Any:
        if self._lean is not None:
            return expand_cache(cache, rows)
        cache.reorder_cache(rows)
        return cache

    def _hit_stop(self, sample: Sample, stop: tuple[str, ...]) -> bool:
        if not stop:
            return False
        # A stop string of B bytes ends within the last B ids (each decodes to at least a byte);
        # a fixed window would miss long stop strings spelled out in short tokens.
        window = max(len(s.encode("utf-8")) for s in stop) + 1
        text = self.tokenizer.decode(sample.token_ids[-window:], skip_special_tokens=True)
        return any(s in text for s in stop)


_SHARED_PREFIX_MIN = 64
"""Shorter common prefixes are not worth a separate forward."""


def _common_prefix(prompts: Sequence[Sequence[int]]) -> int:
    """Length of the ids every prompt starts with, less one: each row keeps an id to run."""
    first, shortest = prompts[0], min(len(prompt) for prompt in prompts)
    for at in range(shortest - 1):
        if any(prompt[at] != first[at] for prompt in prompts):
            return at
    return shortest - 1


def _pick(
    logits: torch.Tensor, sampling: SamplingParams, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Choose the next token of each row and its log-probability under the policy at this
    temperature (before top-k/top-p filtering, which only shapes the proposal)."""
    if sampling.temperature == 0:
        logprobs = F.log_softmax(logits, dim=-1)  # (B, V)
        tokens = logits.argmax(dim=-1)
        return tokens, logprobs.gather(-1, tokens[:, None]).squeeze(-1)
    scaled = logits / sampling.temperature
    logprobs = F.log_softmax(scaled, dim=-1)
    if sampling.top_k > 0 and sampling.top_k < scaled.shape[-1]:
        kth = scaled.topk(sampling.top_k, dim=-1).values[:, -1:]
        scaled = scaled.masked_fill(scaled < kth, float("-inf"))
    if sampling.top_p < 1.0:
        sorted_logits, order = scaled.sort(dim=-1, descending=True)
        mass_before = sorted_logits.softmax(dim=-1).cumsum(dim=-1) - sorted_logits.softmax(dim=-1)
        drop = (mass_before > sampling.top_p).scatter(-1, order, mass_before > sampling.top_p)
        scaled = scaled.masked_fill(drop, float("-inf"))
    tokens = torch.multinomial(scaled.softmax(dim=-1), 1, generator=generator).squeeze(-1)
    return tokens, logprobs.gather(-1, tokens[:, None]).squeeze(-1)


def _unless_full(attention: torch.Tensor) -> torch.Tensor | None:
    """No mask when nothing is padded: the model then takes its faster purely causal path."""
    return None if bool(attention.all()) else attention


def _resolve_dtype(dtype: str | torch.dtype | None) -> torch.dtype | None:
    if dtype is None or isinstance(dtype, torch.dtype):
        return dtype
    if dtype not in _DTYPES:
        raise ValueError(f"dtype must be one of {sorted(_DTYPES)} or a torch.dtype, got {dtype!r}")
    return _DTYPES[dtype]


def _resolve_device(device: str) -> torch.device:
    """The device, checked before a model loads: torch's own errors come late and cryptic."""
    try:
        resolved = torch.device(device)
    except RuntimeError:
        raise ValueError(
            f"device must be 'cpu', 'cuda', 'cuda:1', 'mps', ...; got {device!r}"
        ) from None
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise PolicyError(f"device={device!r}, but torch sees no CUDA GPU here: use device='cpu'")
    if resolved.type == "mps" and not torch.backends.mps.is_available():
        raise PolicyError(f"device={device!r}, but torch has no MPS backend here: use device='cpu'")
    return resolved


def _load(name: str, tokenizer: Any, dtype: torch.dtype | None) -> tuple[Any, Any]:
    from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedTokenizerFast

    try:
        if tokenizer is None and _generic_tokenizer(Path(name)):
            # A tokenizer saved as a plain `tokenizers` one (a tiny model's, and every checkpoint
            # trained from it), as it was trained: AutoTokenizer (transformers 5) would load a
            # qwen2 model's with Qwen2's pre-tokenizer instead, splitting text differently from
            # what the model learned (a game tokenizer's merges across spaces would be lost).
            tokenizer = PreTrainedTokenizerFast.from_pretrained(name)
        elif tokenizer is None:
            tokenizer = AutoTokenizer.from_pretrained(name)
        with _quiet_transformers():
            model = AutoModelForCausalLM.from_pretrained(name, dtype=dtype)
    except OSError as exc:
        raise PolicyError(
            f"cannot load a model from {name!r}: {exc}. Pass a local folder with config.json "
            "and weights (e.g. from `rlvr tiny`), or a hub id reachable from this machine"
        ) from None
    return model, tokenizer


GENERIC_TOKENIZER_CLASSES = frozenset({"PreTrainedTokenizerFast", "TokenizersBackend"})
"""`tokenizer_class` names of a tokenizer saved from a plain `tokenizers` object (transformers 4
and 5 spell it differently), whose `tokenizer.json` is the whole tokenizer."""


def _generic_tokenizer(folder: Path) -> bool:
    """Whether `folder` holds a tiny model or a tokenizer saved as a plain `tokenizers` one."""
    if (folder / "rlvr_tiny.json").is_file():
        return True
    try:
        config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and config.get("tokenizer_class") in GENERIC_TOKENIZER_CLASSES


@contextlib.contextmanager
def _quiet_transformers() -> Iterator[None]:
    """No per-shard progress bars while loading/saving (checkpoints are written often)."""
    from transformers.utils import logging as hf_logging

    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


def _apply_lora(model: Any, lora: LoraSettings, seed: int) -> Any:
    try:
        import peft
    except ImportError:
        raise ImportError("LoRA needs peft: pip install 'rlvr-gym[agents]'") from None
    layers = {name.rsplit(".", 1)[-1] for name, _ in model.named_modules() if name}
    if not layers & set(lora.target_modules):
        linear = sorted(
            {n.rsplit(".", 1)[-1] for n, m in model.named_modules() if hasattr(m, "weight")}
        )
        raise ValueError(
            f"LoRA target_modules {list(lora.target_modules)} name no layer of this model; pick "
            f"among its layers: {linear} (GPT-2: ('c_attn',); Llama, Qwen: ('q_proj', 'v_proj'); "
            "`rlvr train --lora-targets c_attn`)"
        )
    assert lora.alpha is not None  # LoraSettings sets it
    config = peft.LoraConfig(
        r=lora.r,
        lora_alpha=lora.alpha,
        lora_dropout=lora.dropout,
        target_modules=list(lora.target_modules),
        task_type="CAUSAL_LM",
    )
    with torch.random.fork_rng():  # peft draws lora_A from the global generator: seed it here
        torch.manual_seed(seed)
        with peft_deprecations_quiet():
            return peft.get_peft_model(model, config)


def _context_length(model: Any) -> int | None:
    """How many positions a model with learned position embeddings (GPT-2, OPT) has: past them it
    fails with an index error. None for rotary/ALiBi models, which run on past their config."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    length = getattr(getattr(base, "config", None), "max_position_embeddings", None)
    tokens = base.get_input_embeddings()
    learned = any(
        isinstance(module, torch.nn.Embedding) and module is not tokens for module in base.modules()
    )
    return length if learned and isinstance(length, int) and length > 0 else None


def _eos_ids(model: Any, tokenizer: Any) -> set[int]:
    ids: set[int] = set()
    generation_config = getattr(model, "generation_config", None)
    configured = getattr(generation_config, "eos_token_id", None)
    if isinstance(configured, int):
        ids.add(configured)
    elif configured:
        ids.update(int(i) for i in configured)
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    if not ids:
        raise PolicyError("neither the model nor the tokenizer names an end-of-sequence token")
    return ids
