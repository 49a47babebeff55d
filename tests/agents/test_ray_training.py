"""Training through Ray env workers: the same steps as in-process for the same seed (GRPO and
PPO, unchanged), a worker killed during a run, and asynchronous rollouts (lag, importance
weights)."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from rlvr.agents.learners.grpo import GRPOConfig, truncated_importance_weights  # noqa: E402
from rlvr.agents.metrics import read_metrics  # noqa: E402
from rlvr.agents.train import TrainConfig, Trainer  # noqa: E402
from rlvr.cli import main  # noqa: E402
from tests.agents.support import train_config as config  # noqa: E402

NOT_COMPARED = ("time/", "charts/tokens_per_second", "ray/")


def train_rows(trainer: Trainer, steps: int) -> list[dict[str, float]]:
    rows = []
    try:
        for _ in range(steps):
            metrics = trainer.train_step()
            rows.append({k: v for k, v in metrics.items() if not k.startswith(NOT_COMPARED)})
    finally:
        trainer.close()
    return rows


@pytest.mark.slow
@pytest.mark.parametrize("algo", ["grpo", "ppo"])
def test_training_through_ray_takes_the_in_process_steps(ray_cluster, tiny_path, tmp_path, algo):
    here = train_rows(Trainer(config(tiny_path, tmp_path / "here", algo=algo)), 2)
    trainer = Trainer(config(tiny_path, tmp_path / "ray", algo=algo, ray="local", env_workers=2))
    assert trainer.env_workers is not None and len(trainer.env_workers.alive) == 2
    there = train_rows(trainer, 2)
    assert there == here  # same episodes, same updates: the learner cannot tell where envs ran
    assert all(math.isfinite(value) for row in there for value in row.values())


@pytest.mark.slow
@pytest.mark.parametrize("env_workers", [2, 1])
def test_a_worker_killed_during_training_does_not_change_the_run(
    ray_cluster, tiny_path, tmp_path, env_workers
):
    """With 2 workers the episodes move to the other; with 1 (none survives) to a new one.
    No episode is dropped as an infrastructure error either way."""
    from tests.test_distributed import kill_worker

    overrides = dict(envs=["test/RetryDigits-v0"], steps=3)
    here = train_rows(Trainer(config(tiny_path, tmp_path / "here", **overrides)), 3)
    trainer = Trainer(
        config(tiny_path, tmp_path / "ray", ray="local", env_workers=env_workers, **overrides)
    )
    workers = trainer.env_workers
    rows = [trainer.train_step()]
    kill_worker(ray_cluster, workers.workers[0])  # its envs, kept between steps, are gone
    with pytest.warns(RuntimeWarning, match="env-worker-0 died"):
        rows += [trainer.train_step(), trainer.train_step()]
    trainer.close()
    left = float(max(env_workers - 1, 1))
    assert [r["ray/env_workers"] for r in rows] == [float(env_workers), left, left]
    assert rows[-1]["ray/replaced_env_workers"] == float(env_workers == 1)
    assert rows[-1]["ray/lost_episodes"] == 0.0
    compared = [{k: v for k, v in r.items() if not k.startswith(NOT_COMPARED)} for r in rows]
    assert compared == here
    assert all(r["rollout/infra_error_rate"] == 0.0 for r in rows)


@pytest.mark.slow
def test_async_rollouts_lag_one_update_and_are_reweighted(tiny_path, tmp_path):
    trainer = Trainer(
        config(tiny_path, tmp_path, steps=4, async_rollouts=True, grpo=GRPOConfig(lr=1e-2))
    )
    start = [p.detach().clone() for p in trainer.policy.trainable_parameters()]
    rows = train_rows(trainer, 4)
    assert [row["async/policy_lag"] for row in rows] == [0.0, 1.0, 1.0, 1.0]
    assert "charts/importance_weight" not in rows[0]  # on-policy: not reweighted
    for row in rows[1:]:
        assert 0.0 < row["charts/importance_weight"] <= 2.0
        assert math.isfinite(row["losses/policy"])
    # the sampler is a copy that was given the learner's published weights
    sampler = trainer.collector.policy
    assert sampler is not trainer.policy
    moved = [not torch.equal(a, b) for a, b in zip(start, sampler.trainable_parameters())]
    assert any(moved)


@pytest.mark.slow
def test_a_full_async_run_through_ray_writes_its_lag(ray_cluster, tiny_path, tmp_path):
    trainer = Trainer(
        config(tiny_path, tmp_path, steps=3, async_rollouts=True, ray="local", env_workers=1)
    )
    # with Ray the sampler is a generator process (remote_sampler): the driver samples nothing
    assert type(trainer.collector.policy).__name__ == "_RemoteSampling"
    result = trainer.run()
    rows = [r for r in read_metrics(tmp_path / "metrics.jsonl") if "async/policy_lag" in r]
    assert [r["async/policy_lag"] for r in rows] == [0.0, 1.0, 1.0]
    assert [r["ray/env_workers"] for r in rows] == [1.0] * 3
    assert result.steps == 3 and len(result.evaluations) == 2


def test_truncated_importance_weights():
    old = torch.tensor([[-1.0, -2.0, -0.5]])
    sampler = torch.tensor([[-1.0, -1.0, -3.0]])
    weights = truncated_importance_weights(old, sampler, cap=2.0)
    assert torch.allclose(weights, torch.tensor([[1.0, math.exp(-1.0), 2.0]]))


def test_async_settings_are_checked(tiny_path, tmp_path):
    with pytest.raises(ValueError, match="algo='grpo'"):
        config(tiny_path, tmp_path, algo="ppo", async_rollouts=True)
    with pytest.raises(ValueError, match="max_policy_lag must be >= 1"):
        config(tiny_path, tmp_path, async_rollouts=True, max_policy_lag=0)
    with pytest.raises(ValueError, match="env_workers must be >= 1"):
        config(tiny_path, tmp_path, ray="local", env_workers=0)
    with pytest.raises(ValueError, match="tis_cap"):
        GRPOConfig(tis_cap=0.5)


@pytest.mark.parametrize(
    ("flags", "address"),
    [([], None), (["--ray"], "local"), (["--ray", "auto"], "auto")],
)
def test_train_ray_flag_takes_an_optional_address(capsys, flags, address):
    assert main(["train", "--env", "rlvr/Math-v0", "--model", "m", *flags, "--print-config"]) == 0
    printed = capsys.readouterr().out
    expected = f'ray = "{address}"' if address else 'ray = "none"'
    assert expected in printed
    assert TrainConfig.__dataclass_fields__["max_policy_lag"].default == 1
