"""HFPolicy on a tiny local model: batching, sampling settings, saving, LoRA, token-in/token-out."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from rlvr.agents import Policy, SamplingParams  # noqa: E402
from rlvr.agents.errors import PolicyError  # noqa: E402
from rlvr.agents.hf import HFPolicy, LoraSettings  # noqa: E402
from rlvr.agents.kinds import make_policy  # noqa: E402
from rlvr.agents.learners.common import forward, make_batch  # noqa: E402
from rlvr.agents.rollouts import EnvSpec, RolloutCollector  # noqa: E402

GREEDY = SamplingParams(temperature=0.0, max_new_tokens=12)


def chat(text: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "Add."}, {"role": "user", "content": text}]


CONVERSATIONS = [
    chat("What is 12 + 30?"),
    chat("What is 99 + 99? Think step by step, please."),
    chat("Hi"),
]


@pytest.fixture(scope="module")
def policy(tiny_path) -> HFPolicy:
    return HFPolicy(tiny_path)


def test_generate_returns_n_completions_with_ids_and_logprobs(policy):
    assert isinstance(policy, Policy)
    results = policy.generate(CONVERSATIONS, n=3, sampling=SamplingParams(max_new_tokens=8, seed=1))
    assert [len(samples) for samples in results] == [3, 3, 3]
    for samples in results:
        for completion in samples:
            assert 1 <= len(completion.token_ids) <= 8
            assert len(completion.logprobs) == len(completion.token_ids)
            assert all(lp <= 0.0 for lp in completion.logprobs)
            assert completion.text == policy.decode(completion.token_ids)
            ended = completion.token_ids[-1] in policy.eos_ids
            assert completion.finish_reason == ("stop" if ended else "length")


def test_seeded_sampling_repeats_and_different_seeds_differ(policy):
    params = SamplingParams(max_new_tokens=10, seed=7)
    first = policy.generate(CONVERSATIONS, n=2, sampling=params)
    again = policy.generate(CONVERSATIONS, n=2, sampling=params)
    other = policy.generate(CONVERSATIONS, n=2, sampling=SamplingParams(max_new_tokens=10, seed=8))
    ids = lambda results: [c.token_ids for samples in results for c in samples]  # noqa: E731
    assert ids(first) == ids(again)
    assert ids(first) != ids(other)


def test_left_padded_batch_gives_the_same_greedy_replies_as_one_at_a_time(policy):
    batched = policy.generate(CONVERSATIONS, sampling=GREEDY)
    alone = [policy.generate([c], sampling=GREEDY)[0] for c in CONVERSATIONS]
    assert [s[0].token_ids for s in batched] == [s[0].token_ids for s in alone]
    for b, a in zip(batched, alone):
        assert b[0].logprobs == pytest.approx(a[0].logprobs, abs=1e-4)


def test_a_tokenizer_without_pad_or_eos_pads_with_the_models_end_of_sequence(policy, tiny_path):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_path)
    tokenizer.pad_token = tokenizer.eos_token = None  # the model's generation config names it
    bare = HFPolicy(policy.model, tokenizer)
    assert bare.tokenizer.pad_token_id in policy.eos_ids
    replies = bare.generate(CONVERSATIONS, sampling=GREEDY)
    assert replies == policy.generate(CONVERSATIONS, sampling=GREEDY)


def test_sampled_logprobs_match_a_training_forward(policy):
    prompt = policy.encode_prompt(CONVERSATIONS[1])
    (sample,) = policy.sample([prompt], SamplingParams(temperature=0.7, max_new_tokens=10, seed=3))
    episode_ids = prompt + sample.token_ids
    batch = make_batch(
        [_fake_episode(episode_ids, len(prompt))], policy.tokenizer.pad_token_id, "cpu"
    )
    with torch.no_grad():
        logprobs, _ = forward(policy.model, batch, temperature=0.7)
    recomputed = logprobs[0, len(prompt) - 1 :].tolist()
    assert recomputed == pytest.approx(sample.logprobs, abs=1e-4)


def _fake_episode(ids, prompt_length):
    from rlvr.agents.rollouts import Episode
    from rlvr.rollout.records import EpisodeRecord

    record = EpisodeRecord(0, 0, 0, "t", [], [0.0], None, False, False)
    mask = [0] * prompt_length + [1] * (len(ids) - prompt_length)
    return Episode(record, "e", 0, ids, mask, [0.0] * len(ids), [len(ids) - 1], prompt_length)


def test_a_rotary_model_samples_past_its_configured_positions(policy):
    positions = policy.model.config.max_position_embeddings
    prompt = policy.encode_prompt(CONVERSATIONS[0])
    long = (prompt * positions)[: positions + 10]
    (sample,) = policy.sample([long], SamplingParams(temperature=0.0, max_new_tokens=6))
    assert sample.finish_reason == "length" and len(sample.token_ids) == 6


def test_max_new_tokens_and_stop_strings(policy):
    long = SamplingParams(temperature=0.0, max_new_tokens=40)
    (reference,) = policy.generate([CONVERSATIONS[0]], sampling=long)[0]
    text = reference.text
    assert len(text) > 6, "the untrained model should babble for a while"
    stop = text[3:5]
    (stopped,) = policy.generate(
        [CONVERSATIONS[0]],
        sampling=SamplingParams(temperature=0.0, max_new_tokens=40, stop=(stop,)),
    )[0]
    assert stopped.finish_reason == "stop"
    assert stop in stopped.text and stop not in policy.decode(stopped.token_ids[:-1])
    assert stopped.token_ids == reference.token_ids[: len(stopped.token_ids)]
    (short,) = policy.generate(
        [CONVERSATIONS[0]], sampling=SamplingParams(temperature=0.0, max_new_tokens=2)
    )[0]
    if short.token_ids[-1] not in policy.eos_ids:
        assert short.finish_reason == "length" and len(short.token_ids) == 2


def test_a_stop_string_spanning_many_tokens_is_found(policy):
    long = SamplingParams(temperature=0.0, max_new_tokens=40)
    (reference,) = policy.generate([CONVERSATIONS[0]], sampling=long)[0]
    assert len(reference.token_ids) == 40, "the untrained model should babble"
    stop = policy.decode(reference.token_ids[2:24])  # 22 ids
    (stopped,) = policy.generate(
        [CONVERSATIONS[0]],
        sampling=SamplingParams(temperature=0.0, max_new_tokens=40, stop=(stop,)),
    )[0]
    assert stopped.finish_reason == "stop" and stop in stopped.text
    assert len(stopped.token_ids) <= 24
    assert stopped.token_ids == reference.token_ids[: len(stopped.token_ids)]


def test_save_and_load_round_trip(policy, tmp_path):
    policy.save(tmp_path / "copy")
    loaded = make_policy(f"hf:{tmp_path / 'copy'}")
    assert isinstance(loaded, HFPolicy)
    ids = lambda p: [s[0].token_ids for s in p.generate(CONVERSATIONS, sampling=GREEDY)]  # noqa: E731
    assert ids(loaded) == ids(policy)


def test_a_checkpoint_of_a_game_model_keeps_its_tokenizer(tmp_path):
    """A trained checkpoint has no rlvr_tiny.json; loading it with AutoTokenizer gave Qwen2's
    pre-tokenizer, so a game model (merges across spaces) was evaluated on text split in a way
    it never saw (a board row became a dozen ids instead of one)."""
    from rlvr.agents.tiny import TinyModelConfig, build_tiny

    shape = TinyModelConfig(
        vocab_size=400, hidden_size=16, layers=1, heads=2, kv_heads=1, intermediate_size=32,
        corpus_episodes=200,
    )  # fmt: skip
    tiny = HFPolicy(build_tiny("rlvr/TicTacToe-v0", tmp_path / "tiny", model=shape, warm=None))
    checkpoint = HFPolicy(tiny.save(tmp_path / "checkpoint"))  # as the trainer saves one
    assert not (tmp_path / "checkpoint" / "rlvr_tiny.json").exists()
    text = "Your opponent played cell 5.\n\n1 2 3\n4 X 6\n7 8 9\n\nYour move."
    assert checkpoint._encode(text) == tiny._encode(text)
    assert len(tiny._encode("1 2 3")) == 1


def test_missing_model_folder_names_the_fix(tmp_path):
    with pytest.raises(PolicyError, match="Pass a local folder with config.json"):
        HFPolicy(tmp_path / "nothing-here")


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA GPU")
def test_a_device_this_machine_lacks_is_refused_with_the_fix(tiny_path):
    with pytest.raises(PolicyError, match="no CUDA GPU here: use device='cpu'"):
        HFPolicy(tiny_path, device="cuda")
    with pytest.raises(ValueError, match="device must be 'cpu', 'cuda'"):
        HFPolicy(tiny_path, device="gpu")


def test_lora_trains_only_adapters_and_saves_a_merged_model(tiny_path, tmp_path):
    lora = HFPolicy(tiny_path, lora=LoraSettings(r=2, alpha=4))
    names = [n for n, p in lora.model.named_parameters() if p.requires_grad]
    assert names and all("lora_" in n for n in names)
    with torch.no_grad():  # make the adapters do something, then check the merge keeps it
        for name, parameter in lora.model.named_parameters():
            if "lora_B" in name:
                parameter.fill_(0.05)
    lora.save(tmp_path / "merged")
    merged = HFPolicy(tmp_path / "merged")
    assert not any("lora" in n for n, _ in merged.model.named_parameters())
    prompt = [lora.encode_prompt(CONVERSATIONS[0])]
    a = lora.sample(prompt, GREEDY)[0]
    b = merged.sample(prompt, GREEDY)[0]
    assert a.token_ids == b.token_ids
    assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)


def test_lora_adapters_start_from_the_seed_not_the_global_generator(tiny_path):
    def adapters(seed):
        policy = HFPolicy(tiny_path, lora=LoraSettings(r=2, alpha=4), seed=seed)
        return [p.detach() for n, p in policy.model.named_parameters() if "lora_A" in n]

    global_state = torch.random.get_rng_state()
    first, again, other = adapters(0), adapters(0), adapters(1)
    assert all(torch.equal(a, b) for a, b in zip(first, again))
    assert not all(torch.equal(a, b) for a, b in zip(first, other))
    assert torch.equal(torch.random.get_rng_state(), global_state)


def test_multi_turn_rollouts_train_on_exactly_the_generated_ids(policy):
    collector = RolloutCollector(
        policy,
        [EnvSpec("test/Retry-v0")],
        group_size=3,
        sampling=SamplingParams(max_new_tokens=6),
    )
    generator = torch.Generator().manual_seed(0)
    episodes = collector.collect([(0, 11), (0, 12)], generator)
    assert len(episodes) == 6
    assert any(e.record.turns == 2 for e in episodes), "the untrained model fails turn one"
    for episode in episodes:
        assert [e.record.task_id for e in episodes if e.group == episode.group].count(
            episode.record.task_id
        ) == 3, "a group shares one task"
        ids, mask = episode.token_ids, episode.loss_mask
        assert len(ids) == len(mask) == len(episode.sampler_logprobs)
        assert mask[: episode.prompt_length] == [0] * episode.prompt_length
        roles = [m["role"] for m in episode.record.messages]
        opening = episode.record.messages[: roles.index("assistant")]
        assert policy.encode_prompt(opening) == ids[: episode.prompt_length]
        replies = [m["content"] for m in episode.record.messages if m["role"] == "assistant"]
        spans = _spans(mask)
        assert len(spans) == len(replies) == episode.record.turns == len(episode.turn_ends)
        for (start, end), reply, turn_end in zip(spans, replies, episode.turn_ends):
            assert policy.decode(ids[start:end]) == reply
            assert turn_end == end - 1
        if episode.record.turns == 2:  # the env's feedback went in as masked ids
            between = ids[spans[0][1] : spans[1][0]]
            assert "Incorrect, try again." in policy.tokenizer.decode(between)
        # what the learner trains on is the generated ids, position for position
        batch = make_batch([episode], policy.tokenizer.pad_token_id, "cpu")
        trained = batch.input_ids[0, 1:][batch.loss_mask[0] > 0].tolist()
        assert trained == [t for t, m in zip(ids, mask) if m]


def _spans(mask):
    spans, start = [], None
    for i, m in enumerate([*mask, 0]):
        if m and start is None:
            start = i
        elif not m and start is not None:
            spans.append((start, i))
            start = None
    return spans


def test_followup_needs_an_append_only_template(tiny_path):
    rewriting = (
        "{% for m in messages %}{{ m['role'] }}:{{ m['content'] }}|{{ messages|length }}\n"
        "{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}"
    )
    policy = HFPolicy(tiny_path, chat_template=rewriting)
    history = [*chat("What is 1 + 2?"), {"role": "assistant", "content": "3"}]
    with pytest.raises(PolicyError, match="rewrites earlier turns"):
        policy.encode_followup(history, [{"role": "user", "content": "again"}], None)


def test_followup_drops_only_the_end_of_turn_the_model_generated(policy):
    """A model may end a turn with any of its end-of-sequence ids (Qwen2.5: <|im_end|> or
    <|endoftext|>); the template's own end of turn is appended unless it is the one generated."""
    history = [*chat("What is 1 + 2?"), {"role": "assistant", "content": "3"}]
    feedback = [{"role": "user", "content": "again"}]
    end_of_turn, other_eos = policy.tokenizer.convert_tokens_to_ids(["<|im_end|>", "<|endoftext|>"])
    expected = "\n<|im_start|>user\nagain<|im_end|>\n<|im_start|>assistant\n"
    for eos_id, prefix in ((end_of_turn, ""), (other_eos, "<|im_end|>"), (None, "<|im_end|>")):
        ids = policy.encode_followup(history, feedback, eos_id)
        assert policy.tokenizer.decode(ids) == prefix + expected


def test_lean_decoder_samples_like_the_model_forward(tiny_path):
    lean, plain = HFPolicy(tiny_path), HFPolicy(tiny_path, lean=False)
    assert lean._lean is not None and plain._lean is None
    for params in (GREEDY, SamplingParams(temperature=1.0, max_new_tokens=12, seed=3)):
        a = lean.generate(CONVERSATIONS, n=4, sampling=params)
        b = plain.generate(CONVERSATIONS, n=4, sampling=params)
        for x, y in zip([c for s in a for c in s], [c for s in b for c in s]):
            assert x.token_ids == y.token_ids
            assert x.logprobs == pytest.approx(y.logprobs, abs=1e-4)


def test_group_prompts_are_prefilled_once_and_sampled_independently(policy):
    prompt = policy.encode_prompt(CONVERSATIONS[0])
    other = policy.encode_prompt(CONVERSATIONS[1])
    greedy = policy.sample([prompt, other, prompt, prompt], GREEDY)
    assert greedy[0].token_ids == greedy[2].token_ids == greedy[3].token_ids
    assert greedy[0].token_ids == policy.sample([prompt], GREEDY)[0].token_ids
    assert greedy[1].token_ids == policy.sample([other], GREEDY)[0].token_ids
    sampled = policy.sample([prompt] * 6, SamplingParams(max_new_tokens=10, seed=0))
    assert len({tuple(s.token_ids) for s in sampled}) > 1


def test_a_long_common_prefix_is_run_once_and_samples_as_the_plain_prefill(policy, monkeypatch):
    # a long system prompt (a tool's description) and rows of different lengths
    system = {"role": "system", "content": "Add the numbers, then check the sum. " * 8}
    questions = ["What is 12 + 30?", "What is 99 + 99? Think step by step, please.", "Hi"]
    prompts = [policy.encode_prompt([system, {"role": "user", "content": q}]) for q in questions]
    rows = []
    lean = policy._lean
    monkeypatch.setattr(
        policy, "_lean", lambda ids, *rest: rows.append(len(ids)) or lean(ids, *rest)
    )
    for params in (GREEDY, SamplingParams(temperature=1.0, max_new_tokens=12, seed=3)):
        rows.clear()
        together = policy.sample(prompts, params)
        assert rows[:2] == [1, 3]  # the common prefix once, then each row's rest
        for prompt, sample in zip(prompts, together):
            alone = policy.sample([prompt], params)[0]  # one prompt: nothing shared
            if params is GREEDY:
                assert sample.token_ids == alone.token_ids
            forced = _teacher_forced_logprobs(policy, prompt, sample.token_ids)
            assert sample.logprobs == pytest.approx(forced, abs=1e-4)


def _teacher_forced_logprobs(policy, prompt, reply):
    with torch.no_grad():
        logits = policy.model(input_ids=torch.tensor([prompt + reply])).logits[0]
    picked = logits[len(prompt) - 1 : -1].log_softmax(-1)
    return [float(picked[i, token]) for i, token in enumerate(reply)]
