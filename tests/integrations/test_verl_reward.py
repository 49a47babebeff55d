"""verl's own reward managers, on verl's own `DataProto`, score responses with
`rlvr.integrations.verl.compute_score` loaded the way verl's config loads it: the reward at each
response's last token is the env's verdict."""

from __future__ import annotations

import importlib.util
import os
from typing import Any

import numpy as np
import pytest

from rlvr.integrations.errors import InfraError
from rlvr.verifiers.types import Verdict
from tests.conftest import require_extra
from tests.integrations import support

FLAKY = "test/IntegrationsFlaky-v0"

# verl 0.9 pins transformers < 5.11 and the suite's venv pins 5.24, so these tests run in a venv
# of their own (.ci/test-verl.sh); the suite's run (RLVR_VERL_TESTS=elsewhere, .ci/test.sh)
# leaves them to it. Anywhere else a missing verl skips them locally and fails them in CI.
pytestmark = pytest.mark.skipif(
    os.environ.get("RLVR_VERL_TESTS") == "elsewhere" and importlib.util.find_spec("verl") is None,
    reason="the verl tests run in .venv-verl (.ci/test-verl.sh)",
)


def tokenizer_for(texts: list[str]) -> Any:
    from rlvr.agents.tiny import train_tokenizer

    tokenizer = train_tokenizer(texts, 400)
    tokenizer.padding_side = "left"
    return tokenizer


def data_proto(rows: list[dict[str, Any]], responses: list[str], tokenizer: Any) -> Any:
    """A batch as verl's rollout hands it to the reward manager: left-padded prompts,
    right-padded responses, one attention mask over both, the rows' non-tensor fields."""
    import torch
    from verl import DataProto

    pad = tokenizer.pad_token_id
    prompts = [tokenizer.apply_chat_template(row["prompt"], tokenize=False) for row in rows]
    prompt_ids = [tokenizer(text)["input_ids"] for text in prompts]
    response_ids = [tokenizer(text)["input_ids"] + [tokenizer.eos_token_id] for text in responses]
    width, length = max(map(len, prompt_ids)), max(map(len, response_ids))
    batch = {
        "prompts": torch.tensor([[pad] * (width - len(ids)) + ids for ids in prompt_ids]),
        "responses": torch.tensor([ids + [pad] * (length - len(ids)) for ids in response_ids]),
    }
    mask = [
        [0] * (width - len(p)) + [1] * len(p) + [1] * len(r) + [0] * (length - len(r))
        for p, r in zip(prompt_ids, response_ids)
    ]
    batch["attention_mask"] = torch.tensor(mask)
    batch["input_ids"] = torch.cat([batch["prompts"], batch["responses"]], dim=1)
    non_tensors = {
        key: np.array([row[key] for row in rows], dtype=object)
        for key in ("data_source", "reward_model", "extra_info")
    }
    return DataProto.from_dict(tensors=batch, non_tensors=non_tensors)


def last_token_rewards(reward_tensor: Any, data: Any) -> list[float]:
    ends = data.batch["attention_mask"][:, data.batch["prompts"].shape[1] :].sum(dim=1) - 1
    assert reward_tensor.sum().item() == pytest.approx(
        sum(reward_tensor[i, end].item() for i, end in enumerate(ends))
    )  # nothing but the last token of each response is rewarded
    return [reward_tensor[i, end].item() for i, end in enumerate(ends)]


def math_batch(tokenizer_rows: int = 3) -> tuple[list, list[str], list[float], Any]:
    from rlvr.integrations.verl import rows

    kwargs = {"format_weight": 0.5}
    verl_rows = rows("rlvr/Math-v0", tokenizer_rows, **kwargs)
    gold = support.reference_replies("rlvr/Math-v0", [_columns(row) for row in verl_rows])
    responses = [gold[0], "The answer is \\boxed{-1}.", "I do not know."]
    expected = [1.0, 0.5, 0.0]  # correct; readable but wrong (format term only); unreadable
    texts = [m["content"] for row in verl_rows for m in row["prompt"]] + responses
    return verl_rows, responses, expected, tokenizer_for(texts)


def _columns(row: dict[str, Any]) -> dict[str, Any]:
    return {**row["extra_info"], "answer": row["reward_model"]["ground_truth"]}


def verl_config(**reward_kwargs: Any) -> Any:
    from omegaconf import OmegaConf

    return OmegaConf.create(
        {
            "reward": {
                "custom_reward_function": {
                    "path": "pkg://rlvr.integrations.verl",
                    "name": "compute_score",
                    "reward_kwargs": reward_kwargs,
                },
                "reward_manager": {"source": "register", "name": "naive"},
            }
        }
    )


def test_the_legacy_naive_reward_manager_on_a_data_proto():
    require_extra("verl", "verl")
    from verl.trainer.ppo.reward import get_custom_reward_fn
    from verl.workers.reward_manager import NaiveRewardManager

    verl_rows, responses, expected, tokenizer = math_batch()
    compute_score = get_custom_reward_fn(verl_config(env_kwargs={"format_weight": 0.5}))
    manager = NaiveRewardManager(tokenizer, num_examine=0, compute_score=compute_score)
    data = data_proto(verl_rows, responses, tokenizer)
    result = manager(data, return_dict=True)
    assert last_token_rewards(result["reward_tensor"], data) == expected
    assert result["reward_extra_info"]["acc"] == [1.0, 0.0, 0.0]
    assert result["reward_extra_info"]["format"] == [1.0, 1.0, 0.0]


def test_the_reward_loop_manager_verl_trains_with():
    require_extra("verl", "verl")
    from verl.trainer.ppo.reward import load_reward_manager

    verl_rows, responses, expected, tokenizer = math_batch()
    config = verl_config(env_kwargs={"format_weight": 0.5})
    manager = load_reward_manager(config, tokenizer)  # verl's reward loop, as its workers do
    data = data_proto(verl_rows, responses, tokenizer)

    async def score_all() -> list[dict[str, Any]]:
        return [await manager.run_single(data[i : i + 1]) for i in range(len(data))]

    results = manager.loop.run_until_complete(score_all())  # the loop verl's worker runs it on
    assert [result["reward_score"] for result in results] == expected
    scores = manager.assemble_rm_scores(data, [result["reward_score"] for result in results])
    assert last_token_rewards(scores, data) == expected


def flaky(reply: str, task: Any) -> Verdict:
    if task.answer == "down":
        return Verdict.error("grading service unreachable")
    return Verdict.correct() if reply.strip() == task.answer else Verdict.incorrect()


def test_an_infra_error_raises_instead_of_scoring_zero():
    from rlvr.envs.registration import register_task_env
    from rlvr.integrations.verl import compute_score, rows

    tasks = [
        {"id": "up", "prompt": "say up", "answer": "up"},
        {"id": "x", "prompt": "?", "answer": "down"},
    ]
    register_task_env(FLAKY, tasks, flaky, override=True)
    up, down = rows(FLAKY)
    score = compute_score(FLAKY, "up", up["reward_model"]["ground_truth"], up["extra_info"])
    assert score == {"score": 1.0, "acc": 1.0, "format": 1.0}
    with pytest.raises(InfraError, match="could not be judged"):
        compute_score(FLAKY, "down", down["reward_model"]["ground_truth"], down["extra_info"])
