"""The warm start's supervised loss counts only the ids its mask marks."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from rlvr.agents.hf import HFPolicy  # noqa: E402
from rlvr.agents.tiny import _supervised_loss, supervised_loss  # noqa: E402


def test_supervised_loss_is_the_cross_entropy_of_the_masked_ids(tiny_path):
    policy = HFPolicy(tiny_path)
    ids = [5, 6, 7, 8, 9, 10]
    mask = [0, 0, 1, 0, 1, 1]  # ids 7, 9, 10: a reply, an env id, a second reply
    with torch.no_grad():
        logprobs = policy.model(input_ids=torch.tensor([ids])).logits.log_softmax(-1)[0]
        expected = -sum(float(logprobs[t - 1, ids[t]]) for t in (2, 4, 5)) / 3
        assert float(supervised_loss(policy, [(ids, mask)])) == pytest.approx(expected, rel=1e-5)
        # a (prompt, reply) pair is the mask 0...0 1...1
        pair = float(_supervised_loss(policy, [([5, 6, 7], [8, 9])]))
        assert pair == pytest.approx(float(supervised_loss(policy, [(ids[:5], [0, 0, 0, 1, 1])])))
