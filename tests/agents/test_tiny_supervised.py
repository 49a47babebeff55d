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


@pytest.mark.parametrize(
    ("line_merges", "pieces"), [(None, ["1 2 3"]), (False, ["1", " ", "2", " ", "3"])]
)
def test_a_game_tokenizer_merges_board_rows_unless_told_not_to(tmp_path, line_merges, pieces):
    from rlvr.agents.tiny import TinyModelConfig, build_tiny

    shape = TinyModelConfig(
        vocab_size=400, hidden_size=16, layers=1, heads=2, kv_heads=1, intermediate_size=32,
        corpus_episodes=200, line_merges=line_merges,
    )  # fmt: skip
    policy = HFPolicy(build_tiny("rlvr/TicTacToe-v0", tmp_path, model=shape, warm=None))
    # the empty top row: one token by default in a game, else each cell's number is one
    assert [policy.decode([i]) for i in policy._encode("1 2 3")] == pieces
