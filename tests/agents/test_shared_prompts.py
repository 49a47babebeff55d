"""The prompt-sharing forward gives the same log-probabilities, values and gradients."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from rlvr.agents import SamplingParams  # noqa: E402
from rlvr.agents.hf import HFPolicy  # noqa: E402
from rlvr.agents.learners.common import forward, make_batch  # noqa: E402
from rlvr.agents.rollouts import EnvSpec, RolloutCollector  # noqa: E402


@pytest.mark.parametrize("env_id", ["test/Digits-v0", "test/Retry-v0"])
def test_shared_prompt_forward_matches_the_plain_forward(tiny_path, env_id):
    policy = HFPolicy(tiny_path)
    collector = RolloutCollector(
        policy, [EnvSpec(env_id)], group_size=3, sampling=SamplingParams(max_new_tokens=5)
    )
    episodes = collector.collect([(0, 1), (0, 2), (0, 3)], torch.Generator().manual_seed(0))
    batch = make_batch(episodes, policy.tokenizer.pad_token_id, "cpu")
    mask = batch.loss_mask > 0
    results = {}
    for share in (True, False):
        policy.model.zero_grad()
        logprobs, states = forward(policy.model, batch, 0.8, hidden=True, share_prompts=share)
        (logprobs[mask].sum() + states.sum(-1)[mask].sum()).backward()
        grads = [p.grad.clone() for p in policy.model.parameters()]
        results[share] = (logprobs[mask].detach(), states[mask].detach(), grads)
    shared, plain = results[True], results[False]
    assert torch.allclose(shared[0], plain[0], atol=1e-5)
    assert torch.allclose(shared[1], plain[1], atol=1e-5)
    for a, b in zip(shared[2], plain[2]):
        assert torch.allclose(a, b, atol=1e-4, rtol=1e-4)
