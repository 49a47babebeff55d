"""Training a tiny model a few steps: parameters move, losses stay finite, runs resume exactly."""

from __future__ import annotations

import dataclasses
import json
import math
import re

import gymnasium as gym
import pytest

torch = pytest.importorskip("torch")

from rlvr.agents import SamplingParams  # noqa: E402
from rlvr.agents.errors import InfraErrorRateError, TrainingError  # noqa: E402
from rlvr.agents.hf import HFPolicy, LoraSettings  # noqa: E402
from rlvr.agents.learners.base import LEARNERS  # noqa: E402
from rlvr.agents.learners.grpo import GRPOConfig, GRPOLearner  # noqa: E402
from rlvr.agents.learners.ppo import PPOConfig  # noqa: E402
from rlvr.agents.learners.rloo import RLOOConfig  # noqa: E402
from rlvr.agents.metrics import read_metrics  # noqa: E402
from rlvr.agents.rollouts import EnvSpec, RolloutCollector, check_env_specs  # noqa: E402
from rlvr.agents.selfplay import SelfPlayConfig  # noqa: E402
from rlvr.agents.train import TrainConfig, Trainer, train  # noqa: E402
from rlvr.cli import main  # noqa: E402
from rlvr.config import read_config  # noqa: E402
from rlvr.envs import register_task_env  # noqa: E402
from rlvr.verifiers import Verdict  # noqa: E402
from tests.agents.support import FEW, HALF_BROKEN, digits, fixed_additions  # noqa: E402
from tests.agents.support import train_config as config  # noqa: E402

TIMING_KEYS = ("time/", "charts/tokens_per_second")


def snapshot(parameters):
    return [p.detach().clone() for p in parameters]


def training_rows(path):
    rows = [r for r in read_metrics(path) if "losses/policy" in r]
    return [{k: v for k, v in r.items() if not k.startswith(TIMING_KEYS)} for r in rows]


@pytest.mark.parametrize(
    "overrides",
    [
        {"algo": "grpo"},
        {"algo": "grpo", "grpo": GRPOConfig(lr=1e-3, loss_type="grpo", beta=0.1, mu=2)},
        {"algo": "grpo", "grpo": GRPOConfig(lr=1e-3, loss_type="dr_grpo", clip_high=0.28)},
        {"algo": "ppo"},
        {"algo": "ppo", "ppo": PPOConfig(lr=1e-3, value_model="critic", kl_coef=0.05)},
        {"algo": "grpo", "envs": [EnvSpec("test/RetryDigits-v0")]},
        {"algo": "ppo", "envs": [EnvSpec("test/RetryDigits-v0")]},
        {"algo": "rloo", "rloo": RLOOConfig(lr=1e-3, kl_coef=0.05, micro_batch_size=5)},
        {"algo": "rloo", "envs": [EnvSpec("test/RetryDigits-v0")]},
    ],
    ids=[
        "grpo-dapo",
        "grpo-kl-mu2",
        "dr-grpo",
        "ppo-head",
        "ppo-critic-kl",
        "grpo-2turn",
        "ppo-2turn",
        "rloo-kl-micro",
        "rloo-2turn",
    ],
)
def test_every_trainable_parameter_changes_and_losses_are_finite(tiny_path, tmp_path, overrides):
    trainer = Trainer(config(tiny_path, tmp_path, **overrides))
    learner = trainer.learner
    trainable = dict(trainer.policy.model.named_parameters())
    extra = {}
    if overrides["algo"] == "ppo":
        extra = {f"value/{n}": p for n, p in learner.value_head.named_parameters()}
        if learner.critic is not None:
            extra.update({f"critic/{n}": p for n, p in learner.critic.named_parameters()})
    watched = {**trainable, **extra}
    before = {name: p.detach().clone() for name, p in watched.items()}
    for _ in range(2):
        metrics = trainer.train_step()
        losses = {k: v for k, v in metrics.items() if k.startswith("losses/")}
        assert losses and all(math.isfinite(v) for v in losses.values()), metrics
    unchanged = [name for name, p in watched.items() if torch.equal(before[name], p)]
    assert not unchanged, f"parameters that did not change: {unchanged}"
    assert metrics["rollout/episodes"] == 12
    if "envs" in overrides:
        assert metrics["rollout/turns"] > 1
    sanity = {"grpo": "charts/sampler_logprob_gap", "ppo": "losses/value", "rloo": "losses/kl"}
    assert abs(metrics[sanity[overrides["algo"]]]) < 1


def test_lora_training_changes_only_the_adapters(tiny_path, tmp_path):
    trainer = Trainer(
        config(
            tiny_path, tmp_path, lora=LoraSettings(r=2, alpha=4), grpo=GRPOConfig(lr=1e-3, beta=0.1)
        )
    )
    assert trainer.learner.reference.model is None, "LoRA's reference is the base model itself"
    named = dict(trainer.policy.model.named_parameters())
    before = {name: p.detach().clone() for name, p in named.items()}
    trainer.train_step()
    metrics = trainer.train_step()
    assert metrics["losses/kl"] > 0 and math.isfinite(metrics["losses/kl"])
    changed = {name for name, p in named.items() if not torch.equal(before[name], p)}
    adapters = {name for name, p in named.items() if p.requires_grad}
    assert changed == adapters and all("lora_" in name for name in adapters)


def test_a_float16_model_trains_its_lora_adapters_without_nans(tiny_path, tmp_path):
    trainer = Trainer(config(tiny_path, tmp_path, dtype="float16", lora=LoraSettings(r=2)))
    adapters = trainer.policy.trainable_parameters()
    before = snapshot(adapters)
    for _ in range(2):
        assert math.isfinite(trainer.train_step()["losses/policy"])
    assert all(p.dtype == torch.float32 and bool(p.isfinite().all()) for p in adapters)
    assert all(not torch.equal(a, b) for a, b in zip(before, adapters))


@pytest.mark.slow
@pytest.mark.parametrize(
    "overrides",
    [
        {"algo": "grpo", "grpo": GRPOConfig(lr=1e-3, beta=0.05, mu=2, micro_batch_size=5)},
        {"algo": "ppo", "ppo": PPOConfig(lr=1e-3, kl_coef=0.05, minibatches=2)},
        {"algo": "rloo", "rloo": RLOOConfig(lr=1e-3, kl_coef=0.05)},
    ],
    ids=["grpo", "ppo", "rloo"],
)
def test_resume_continues_bit_for_bit(tiny_path, tmp_path, overrides):
    straight = config(tiny_path, tmp_path / "a", steps=4, save_every=2, **overrides)
    train(straight)
    resumed = config(tiny_path, tmp_path / "b", steps=4, **overrides)
    train(resumed, resume=tmp_path / "a" / "checkpoints" / "step-2")
    a = HFPolicy(tmp_path / "a" / "final").model.state_dict()
    b = HFPolicy(tmp_path / "b" / "final").model.state_dict()
    assert a.keys() == b.keys()
    assert all(torch.equal(a[key], b[key]) for key in a)
    assert training_rows(tmp_path / "a" / "metrics.jsonl")[2:] == training_rows(
        tmp_path / "b" / "metrics.jsonl"
    )
    # the state files hold plain data only: they load without unpickling any object
    learner_a = torch.load(tmp_path / "a/checkpoints/step-4/trainer.pt", weights_only=True)
    learner_b = torch.load(tmp_path / "b/checkpoints/step-4/trainer.pt", weights_only=True)
    assert torch.equal(learner_a["sample_generator"], learner_b["sample_generator"])
    assert learner_a["task_rng"] == learner_b["task_rng"]


class RunsCode:
    """A pickle payload: unpickling it calls `exec`, which writes `marker` (what a tampered
    checkpoint would do, with worse code)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').write('ran')",))


def test_a_tampered_checkpoint_is_refused_and_runs_no_code(tiny_path, tmp_path, capsys):
    train(config(tiny_path, tmp_path, steps=1))
    checkpoint = tmp_path / "checkpoints" / "step-1"
    state = torch.load(checkpoint / "trainer.pt", weights_only=True)
    control = tmp_path / "control.pt"  # the same tampering, loaded the old way, runs its code
    torch.save({**state, "evaluations": [RunsCode(tmp_path / "control")]}, control)
    torch.load(control, weights_only=False)
    assert (tmp_path / "control").read_text() == "ran"
    torch.save({**state, "evaluations": [RunsCode(tmp_path / "marker")]}, checkpoint / "trainer.pt")
    with pytest.raises(TrainingError) as refused:  # ...but resuming never unpickles it
        train(config(tiny_path, tmp_path, steps=2), resume=checkpoint)
    assert not (tmp_path / "marker").exists()
    message = str(refused.value)
    assert "trainer.pt holds objects no checkpoint of rlvr train holds" in message
    assert "Unsupported global: GLOBAL exec" in message and "\n" not in message
    assert main(["train", "--out", str(tmp_path), "--resume", "--steps", "2"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "refused" in err
    assert not (tmp_path / "marker").exists()


@pytest.mark.parametrize(
    "payload",
    [
        (exec, ("open(MARKER, 'w')",)),
        (__import__("os").system, ("touch MARKER",)),
        (__import__("subprocess").call, (["touch", "MARKER"],)),
        (__import__("pathlib").Path.touch, (__import__("pathlib").Path("MARKER"),)),
    ],
    ids=["exec", "os.system", "subprocess", "a-method"],
)
def test_a_state_file_with_any_code_object_is_refused_before_it_runs(tmp_path, payload):
    from rlvr.agents.checkpoints import load_state

    marker = str(tmp_path / "marker")
    function, arguments = payload
    arguments = tuple(
        [a.replace("MARKER", marker) for a in arg] if isinstance(arg, list)
        else type(arg)(str(arg).replace("MARKER", marker))
        for arg in arguments
    )  # fmt: skip

    class Payload:
        def __reduce__(self):
            return (function, arguments)

    path = tmp_path / "learner.pt"  # a seat's state file is read the same way
    torch.save({"learner": Payload()}, path)
    with pytest.raises(TrainingError, match="loading it could run code, so it is refused"):
        load_state(path)
    assert not (tmp_path / "marker").exists()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "cannot read the checkpoint file"),
        (b"PK\x03\x04 cut short", "cannot read the checkpoint file"),
        (None, "is not a checkpoint: it holds a list"),
    ],
)
def test_a_broken_state_file_is_one_error_naming_it(tmp_path, content, message):
    from rlvr.agents.checkpoints import load_state

    path = tmp_path / "trainer.pt"
    if content is None:
        torch.save([1, 2], path)
    else:
        path.write_bytes(content)
    with pytest.raises(TrainingError, match=message):
        load_state(path)


def test_a_checkpoint_written_before_plain_state_files_still_resumes(tiny_path, tmp_path):
    # older trainer.pt files hold numpy float64 means and rlvr.config's dict subclass
    import numpy as np

    from rlvr.config import _Inline

    train(config(tiny_path, tmp_path, steps=1, envs=[EnvSpec("test/Digits-v0", kwargs={})]))
    path = tmp_path / "checkpoints" / "step-1" / "trainer.pt"
    state = torch.load(path, weights_only=True)
    state["evaluations"][0]["eval/success_rate"] = np.float64(0.25)
    state["config"]["envs"][0]["kwargs"] = _Inline()
    torch.save(state, path)
    trainer = Trainer(config(tiny_path, tmp_path, steps=2, envs=[EnvSpec("test/Digits-v0")]))
    trainer.load_checkpoint(path.parent)
    assert trainer.step == 1 and trainer.evaluations[0]["eval/success_rate"] == 0.25


def test_state_that_a_checkpoint_cannot_hold_is_refused_when_saved(tmp_path):
    import numpy as np

    from rlvr.agents.checkpoints import plain_state, save_state

    assert plain_state({"a": np.float64(0.5), "b": (np.int64(2), [np.bool_(True)])}) == {
        "a": 0.5,
        "b": (2, [True]),
    }
    assert type(plain_state(np.float64(0.5))) is float
    with pytest.raises(TypeError, match=r"state\['learner'\]\['f'\]: a function cannot go"):
        save_state({"learner": {"f": lambda: 0}}, tmp_path / "x.pt")


def test_resume_true_picks_the_latest_checkpoint_and_keeps_the_metrics_consistent(
    tiny_path, tmp_path
):
    def logged_steps():
        rows = read_metrics(tmp_path / "metrics.jsonl")
        return [row["step"] for row in rows if "losses/policy" in row]

    train(config(tiny_path, tmp_path, steps=2))
    result = train(config(tiny_path, tmp_path, steps=3), resume=True)
    assert result.steps == 3
    assert logged_steps() == [1, 2, 3]
    train(config(tiny_path, tmp_path, steps=1))  # a fresh run in the same folder starts over
    assert logged_steps() == [1]


def test_tensorboard_drops_the_steps_a_resumed_or_fresh_run_repeats(tiny_path, tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    def logged_steps():
        events = EventAccumulator(str(tmp_path / "tb"))
        events.Reload()
        return [event.step for event in events.Scalars("losses/policy")]

    train(config(tiny_path, tmp_path, steps=3, save_every=1, tensorboard=True))
    train(
        config(tiny_path, tmp_path, steps=3, tensorboard=True),
        resume=tmp_path / "checkpoints/step-1",
    )
    assert logged_steps() == [1, 2, 3]
    train(config(tiny_path, tmp_path, steps=1, tensorboard=True))  # starts over
    assert logged_steps() == [1]


def test_a_run_that_dies_while_saving_resumes_from_its_last_complete_checkpoint(
    tiny_path, tmp_path, monkeypatch
):
    save = torch.save
    saves = []

    def dies_on_the_second_save(obj, path, *args, **kwargs):
        saves.append(path)
        if len(saves) == 2:  # the model is written, the trainer state is not: the process dies
            raise KeyboardInterrupt
        return save(obj, path, *args, **kwargs)

    monkeypatch.setattr(torch, "save", dies_on_the_second_save)
    with pytest.raises(KeyboardInterrupt):
        train(config(tiny_path, tmp_path, steps=3, save_every=1))
    monkeypatch.setattr(torch, "save", save)
    result = train(config(tiny_path, tmp_path, steps=3, save_every=1), resume=True)
    assert result.steps == 3
    assert [row["step"] for row in training_rows(tmp_path / "metrics.jsonl")] == [1, 2, 3]
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == [
        "step-1",
        "step-2",
        "step-3",
    ]


def test_resume_drops_a_torn_last_metrics_line_with_a_warning(tiny_path, tmp_path):
    """A run killed while appending a row leaves half a line; the checkpoints are fine, so
    resuming must not stop on a bare JSON error."""
    train(config(tiny_path, tmp_path, steps=2))
    metrics = tmp_path / "metrics.jsonl"
    whole = len(metrics.read_text().splitlines())
    with metrics.open("a") as handle:
        handle.write('{"step": 3, "rollout/reward_mean": 0.2')
    with pytest.warns(UserWarning, match=f"metrics.jsonl:{whole + 1}: dropped a torn last line"):
        result = train(config(tiny_path, tmp_path, steps=3), resume=True)
    assert result.steps == 3
    assert [row["step"] for row in training_rows(metrics)] == [1, 2, 3]


def test_a_bad_metrics_line_before_the_last_names_file_and_line(tiny_path, tmp_path, capsys):
    train(config(tiny_path, tmp_path, steps=1))
    metrics = tmp_path / "metrics.jsonl"
    lines = metrics.read_text().splitlines(keepends=True)
    metrics.write_text("".join([lines[0], "{not json\n", *lines[1:]]))
    code = main(["train", "--out", str(tmp_path), "--resume"])  # the run's config.toml
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    assert f"error: {metrics}:2: invalid JSON" in err and "delete that line" in err


def test_truncating_metrics_is_atomic_when_killed_mid_write(tmp_path):
    """Resuming rewrites metrics.jsonl without the repeated steps; a process killed while doing
    so (here by the file size limit, SIGXFSZ) must leave the old file whole, not cut short."""
    import signal
    import subprocess
    import sys

    from rlvr.agents.metrics import MetricsLog

    path = tmp_path / "metrics.jsonl"
    log = MetricsLog(path)
    for step in range(1, 51):
        log.log(step, {"rollout/reward_mean": step / 100, "notes/padding": "x" * 150})
    before = path.read_bytes()
    killed = (
        "import resource, signal, sys\n"
        "from rlvr.agents.metrics import MetricsLog\n"
        "log = MetricsLog(sys.argv[1])\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_DFL)  # Python ignores it by default\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))\n"
        "log.truncate_after(40)  # about 8 kB to write\n"
    )
    done = subprocess.run([sys.executable, "-c", killed, str(path)], capture_output=True)
    assert done.returncode == -signal.SIGXFSZ, done.stderr.decode()
    assert path.read_bytes() == before
    MetricsLog(path).truncate_after(40)
    assert [row["step"] for row in read_metrics(path)] == list(range(1, 41))


def test_resuming_with_another_learner_or_model_is_refused(tiny_path, tmp_path):
    train(config(tiny_path, tmp_path, steps=1))
    with pytest.raises(TrainingError, match="other settings: algo 'grpo' \\(now 'ppo'\\)"):
        train(config(tiny_path, tmp_path, steps=2, algo="ppo"), resume=True)
    with pytest.raises(TrainingError, match="other settings: lora 'none' \\(now \\{'r': 2"):
        train(config(tiny_path, tmp_path, steps=2, lora=LoraSettings(r=2)), resume=True)
    assert train(config(tiny_path, tmp_path, steps=2), resume=True).steps == 2


def test_infra_errors_are_dropped_from_the_loss_and_counted(tiny_path):
    policy = HFPolicy(tiny_path)
    collector = RolloutCollector(
        policy, [EnvSpec("test/Flaky-v0")], group_size=2, sampling=SamplingParams(max_new_tokens=4)
    )
    episodes = collector.collect([(0, seed) for seed in range(8)], torch.Generator().manual_seed(0))
    broken = [e for e in episodes if e.infra_error]
    assert broken and len(broken) < len(episodes)
    learner = GRPOLearner(policy, GRPOConfig(lr=1e-3), temperature=1.0, completion_budget=4)
    metrics = learner.update(episodes)
    assert metrics["rollout/infra_errors"] == len(broken)
    before = snapshot(learner.parameters)
    skipped = learner.update(broken)
    assert skipped["losses/skipped"] == 1.0
    assert all(torch.equal(a, b) for a, b in zip(before, learner.parameters))


def test_an_infra_error_sample_is_left_out_of_its_groups_baseline(tiny_path):
    """A failed verification says nothing about the reply: the update must be the one of the
    group without it, whatever reward the failed sample carries."""
    policy = HFPolicy(tiny_path)
    collector = RolloutCollector(
        policy, [EnvSpec("test/Digits-v0")], group_size=4, sampling=SamplingParams(max_new_tokens=6)
    )
    episodes = collector.collect([(0, 1), (0, 2)], torch.Generator().manual_seed(3))
    assert len({e.reward for e in episodes if e.group == 0}) > 1
    broken = episodes[1]
    broken.record.infra_error = True
    results = []
    for batch, broken_reward in (
        (episodes, 0.0),
        (episodes, 1.0),
        (episodes[:1] + episodes[2:], 0),
    ):
        broken.record.rewards = [broken_reward]
        learner = GRPOLearner(
            HFPolicy(tiny_path), GRPOConfig(lr=1e-3), temperature=1.0, completion_budget=6
        )
        learner.update(batch)
        results.append(snapshot(learner.parameters))
    for first, *others in zip(*results):
        assert all(torch.equal(first, other) for other in others)


def test_a_run_whose_verifier_keeps_failing_stops_naming_env_rate_and_fix(tiny_path, tmp_path):
    """Half of test/HalfBroken-v0's tasks cannot be graded. Dropping them silently would train
    on the other half only: the run stops, saying which env, how bad, the limit and the fix,
    and leaves a checkpoint to resume from once the machinery works."""
    envs = [EnvSpec("test/Digits-v0"), EnvSpec(HALF_BROKEN, heldout_kwargs={})]
    run = config(tiny_path, tmp_path, envs=envs, steps=6, infra_error_window=2)
    with pytest.raises(InfraErrorRateError) as stopped:
        train(run)
    message = str(stopped.value)
    errors, episodes = map(int, re.search(r"\((\d+) of (\d+)\)", message).groups())
    assert message.startswith(f"{HALF_BROKEN}: {errors / episodes:.0%} of its episodes in the ")
    assert errors / episodes > 0.2 and "last 2 steps" in message
    assert "above max_infra_error_rate=0.2" in message and "rlvr sandbox doctor" in message
    step = int(re.search(r"checkpoints/step-(\d+)\) with --resume", message).group(1))
    assert 2 <= step < 6 and (tmp_path / "checkpoints" / f"step-{step}" / "trainer.pt").is_file()
    rows = [row for row in read_metrics(tmp_path / "metrics.jsonl") if "rollout/episodes" in row]
    assert [row["step"] for row in rows] == list(range(1, step + 1))  # it stopped there
    logged = [row.get(f"rollout/{HALF_BROKEN}/infra_error_rate") for row in rows]
    assert all(rate is not None for rate in logged) and max(logged) > 0
    assert all(row.get("rollout/test/Digits-v0/infra_error_rate", 0.0) == 0.0 for row in rows)


def outage(down: range):
    """A verify function grading by digits that fails (a grading service down) for the calls in
    `down`. A closure: gym.make deep-copies env kwargs, but functions are shared, so every env
    counts the same calls."""
    calls = 0

    def verify(reply, task):
        nonlocal calls
        calls += 1
        if calls - 1 in down:
            return Verdict.error("grading service unreachable")
        return digits(reply, task)

    return verify


@pytest.mark.parametrize(("outage_steps", "stops_at"), [(1, None), (2, 4)])
def test_a_single_step_of_outage_does_not_stop_a_run(tiny_path, tmp_path, outage_steps, stops_at):
    # 4 held-out episodes are graded first, then 12 episodes per step (3 prompts x 4).
    step_two = 4 + 12
    verify = outage(range(step_two, step_two + 12 * outage_steps))
    env_id = f"test/Outage{outage_steps}-v0"
    register_task_env(env_id, fixed_additions(), verify, override=True)
    run = config(
        tiny_path,
        tmp_path,
        envs=[EnvSpec(env_id, heldout_kwargs={})],
        steps=5,
        infra_error_window=4,
        max_infra_error_rate=0.3,
    )
    if stops_at is None:  # one failed step of four is 25% of the window
        assert train(run).steps == 5
    else:  # two of four are 50%
        with pytest.raises(InfraErrorRateError, match="50% of its episodes in the last 4 steps"):
            train(run)
    rows = [row for row in read_metrics(tmp_path / "metrics.jsonl") if "rollout/episodes" in row]
    failed = [1.0] * outage_steps
    expected = [0.0, *failed, *[0.0] * (len(rows) - 1 - outage_steps)]
    assert [row[f"rollout/{env_id}/infra_error_rate"] for row in rows] == expected
    assert len(rows) == (stops_at or 5)
    assert all("rollout/reward_mean" not in row for row in rows[1 : 1 + outage_steps])
    if stops_at is not None:  # the service is back: resuming starts a fresh window and finishes
        assert train(run, resume=True).steps == 5


def test_rlvr_train_stops_on_infra_errors_in_one_line(tiny_path, tmp_path, capsys):
    code = train_command(
        "--env", HALF_BROKEN, "--heldout-kwargs", "{}", "--model", str(tiny_path), "--out",
        str(tmp_path), "--prompts", "4", "--max-infra-error-rate", "0.1",
        "--infra-error-window", "1",
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert err.startswith(f"error: {HALF_BROKEN}: ") and "raise --max-infra-error-rate" in err


def test_gradient_accumulation_matches_one_big_batch(tiny_path):
    updated = []
    for micro in (None, 3):
        policy = HFPolicy(tiny_path)
        collector = RolloutCollector(
            policy,
            [EnvSpec("test/Digits-v0")],
            group_size=4,
            sampling=SamplingParams(max_new_tokens=6),
        )
        episodes = collector.collect([(0, 1), (0, 2)], torch.Generator().manual_seed(5))
        for loss_type in ("grpo", "dapo", "dr_grpo"):
            learner = GRPOLearner(
                policy,
                GRPOConfig(lr=1e-3, loss_type=loss_type, micro_batch_size=micro),
                temperature=1.0,
                completion_budget=256,  # Dr. GRPO's scale as before: small steps, exact sums
            )
            learner.update(episodes)
        updated.append(snapshot(policy.trainable_parameters()))
    for big, small in zip(*updated):
        assert torch.allclose(big, small, atol=1e-6)


def test_truncated_replies_can_be_masked_out(tiny_path):
    moved = {}
    for mask_truncated in (True, False):
        policy = HFPolicy(tiny_path)
        collector = RolloutCollector(
            policy,
            [EnvSpec("test/Digits-v0")],
            group_size=4,
            sampling=SamplingParams(max_new_tokens=3),
        )
        episodes = collector.collect([(0, 1), (0, 2)], torch.Generator().manual_seed(5))
        for episode in episodes:
            episode.completion_truncated = True
        learner = GRPOLearner(
            policy,
            GRPOConfig(lr=1e-3, mask_truncated=mask_truncated),
            temperature=1.0,
            completion_budget=3,
        )
        before = snapshot(learner.parameters)
        learner.update(episodes)
        moved[mask_truncated] = any(
            not torch.equal(a, b) for a, b in zip(before, learner.parameters)
        )
    assert moved == {True: False, False: True}


def test_envs_are_mixed_by_weight(tiny_path, tmp_path):
    envs = [EnvSpec("test/Digits-v0", weight=3.0), EnvSpec("test/Add-v0", weight=1.0)]
    trainer = Trainer(config(tiny_path, tmp_path, envs=envs, prompts_per_step=4))
    drawn = [env for _ in range(200) for env, _ in trainer.draw_tasks()]
    assert 0.70 < drawn.count(0) / len(drawn) < 0.80
    metrics = trainer.train_step()
    assert any(key.startswith("rollout/test/") and key.endswith("/reward_mean") for key in metrics)
    evaluation = trainer.evaluate()
    assert set(evaluation) >= {
        "eval/test/Digits-v0/success_rate",
        "eval/test/Add-v0/success_rate",
        "eval/success_rate",
    }


def test_periodic_held_out_evaluation_and_outputs(tiny_path, tmp_path):
    result = train(config(tiny_path, tmp_path, steps=4, eval_every=2, tensorboard=True, plot=True))
    rows = read_metrics(tmp_path / "metrics.jsonl")
    assert [r["step"] for r in rows if "eval/success_rate" in r] == [0, 2, 4]
    assert [e["step"] for e in result.evaluations] == [0, 2, 4]
    assert (tmp_path / "learning_curve.png").stat().st_size > 10_000
    assert list((tmp_path / "tb").glob("events.out.tfevents.*"))
    assert (tmp_path / "final" / "config.json").exists()
    assert read_config(TrainConfig, tmp_path / "config.toml").steps == 4


DIGITS_SUITE = """
name = "digits"
split = "test"
seed = 500
episodes = 24
[sampling]
temperature = 1.0
seed = 0
max_new_tokens = 8
[[envs]]
id = "test/Digits-v0"
"""


def test_eval_suite_figures_are_the_scores_rlvr_bench_gives(tiny_path, tmp_path, capsys):
    """One measurement: the run's held-out figures before and after training are the scores
    `rlvr bench` stores for the starting and the final model on that suite (sampled, seeded: an
    untrained model's greedy replies hold no digits)."""
    from rlvr.leaderboards import ResultStore

    suite = tmp_path / "digits.toml"
    suite.write_text(DIGITS_SUITE)
    out, db = tmp_path / "run", tmp_path / "board.sqlite"
    code = main(["train", "--env", "test/Digits-v0", "--model", str(tiny_path), "--steps", "3",
                 "--prompts", "3", "--group-size", "4", "--max-new-tokens", "8", "--lr", "1e-2",
                 "--eval-suite", str(suite), "--eval-every", "0", "--out", str(out),
                 "--no-progress", "--no-tensorboard", "--no-plot"])  # fmt: skip
    assert code == 0
    held_out = re.search(r"held-out +([\d.]+) -> ([\d.]+) +\((.*)\)", capsys.readouterr().out)
    assert held_out is not None
    assert held_out.group(3) == f"suite {suite}: the score `rlvr bench --suite {suite}` gives"
    for model in (tiny_path, out / "final"):
        bench = ["bench", "--suite", str(suite), "--agent", f"hf:{model}", "--db", str(db)]
        assert main([*bench, "--no-progress"]) == 0
    with ResultStore(db) as store:
        before, after = (result.score for result in store.results(suite="digits"))
    evaluations = [row["eval/success_rate"] for row in read_metrics(out / "metrics.jsonl")
                   if "eval/success_rate" in row]  # fmt: skip
    assert evaluations == [before, after]
    assert (f"{before:.3f}", f"{after:.3f}") == held_out.group(1, 2)
    assert 0 < before < 1  # a graded figure, not a trivial 0 both ways could share
    rows = read_metrics(out / "metrics.jsonl")
    assert rows[0]["eval/test/Digits-v0/episodes"] == 24.0  # the suite's, not eval_episodes


def test_eval_suite_from_python_figures_are_the_suites_and_needs_its_evaluator(tiny_path, tmp_path):
    """From Python the trainer is given the leaderboards' evaluator (the agents may not import
    them): its held-out row holds the suite's envs under the keys of every evaluation; without an
    evaluator the run is refused, naming the object to pass, before the model loads."""
    from rlvr.leaderboards.training import BenchSuiteEvaluator

    suite = tmp_path / "digits.toml"
    suite.write_text(DIGITS_SUITE.replace("episodes = 24", "episodes = 4"))
    run = config(tiny_path, tmp_path / "run", eval_suite=str(suite))
    trainer = Trainer(run, suite_evaluator=BenchSuiteEvaluator())
    row = trainer.evaluate()
    trainer.close()
    per_env = ["success_rate", "success_rate_se", "episodes", "mean_reward", "infra_error_rate"]
    expected = {f"eval/test/Digits-v0/{name}" for name in per_env}
    assert set(row) >= expected | {"eval/success_rate", "eval/success_rate_se"}
    assert row["eval/test/Digits-v0/episodes"] == 4.0  # the suite's episodes, not eval_episodes
    assert row["eval/success_rate"] == row["eval/test/Digits-v0/success_rate"]

    unloadable = config(tmp_path / "no-model", tmp_path / "refused", eval_suite=str(suite))
    fix = "pass suite_evaluator=rlvr.leaderboards.training.BenchSuiteEvaluator()"
    with pytest.raises(ValueError, match=re.escape(fix)):
        Trainer(unloadable)  # a model that is not there: refused before it would load
    with pytest.raises(ValueError, match=re.escape(fix)):
        train(unloadable)
    assert not (tmp_path / "refused").exists()


def test_an_unknown_eval_suite_is_refused_before_the_model_loads(tmp_path, capsys):
    from rlvr.leaderboards.training import BenchSuiteEvaluator

    unloadable = config(tmp_path / "no-model", tmp_path / "run", eval_suite="maths")
    with pytest.raises(ValueError, match="no built-in suite 'maths'"):
        Trainer(unloadable, suite_evaluator=BenchSuiteEvaluator())
    model, out = str(tmp_path / "no-model"), str(tmp_path / "run")
    command = ["train", "--env", "test/Digits-v0", "--model", model, "--eval-suite", "maths",
               "--out", out, "--no-progress"]  # fmt: skip
    assert main(command) == 1
    error = capsys.readouterr().err
    assert error.startswith("error: no built-in suite 'maths'"), error
    assert len(error.strip().splitlines()) == 1


def test_held_out_split_is_used_for_evaluation():
    spec = EnvSpec("rlvr/Math-v0", kwargs={"difficulty": 1})
    assert spec.eval_kwargs == {"difficulty": 1, "split": "test"}
    custom = EnvSpec("x/Y-v0", kwargs={"a": 1}, heldout_kwargs={"b": 2})
    assert custom.eval_kwargs == {"b": 2}
    # A wrapper env takes split= too and passes it on to the env it wraps.
    wrapper = EnvSpec("rlvr/MathSelfCorrect-v0", kwargs={"env_kwargs": {"difficulty": 1}})
    assert wrapper.eval_kwargs == {"env_kwargs": {"difficulty": 1}, "split": "test"}
    check_env_specs([wrapper])
    heldout = gym.make(wrapper.id, **wrapper.eval_kwargs)
    assert heldout.unwrapped.judge.tasks.split == "test"
    heldout.close()


@pytest.mark.parametrize(
    ("overrides", "fix"),
    [
        ({"algo": "a2c"}, "algo must be one of"),
        ({"group_size": 1}, "set group_size >= 2"),
        ({"envs": []}, "give at least one EnvSpec"),
        ({"temperature": 0.0}, "temperature must be > 0"),
        ({"stop": "</answer>"}, "stop must be a tuple of non-empty strings"),
        ({"stop": ("",)}, "stop must be a tuple of non-empty strings"),
        ({"threads": 0}, "threads must be >= 1"),
        ({"top_p": 0.0}, "top_p must be in"),
        ({"dtype": "fp16"}, "dtype must be"),
        ({"dtype": "float16"}, "use 'bfloat16' or 'float32', or LoRA"),
        ({"algo": "ppo", "ppo": PPOConfig(minibatches=13)}, "lower it or raise the batch"),
        ({"lora": LoraSettings(dropout=0.1)}, "set LoraSettings\\(dropout=0.0\\)"),
        ({"max_infra_error_rate": 1.5}, "max_infra_error_rate must be in \\[0, 1\\]"),
        ({"max_infra_error_rate": -0.1}, "1.0 never stops"),
        ({"infra_error_window": 0}, "infra_error_window must be >= 1"),
        ({"eval_suite": "demo", "self_play": SelfPlayConfig()}, "remove eval_suite"),
    ],
)
def test_train_config_errors_name_the_fix(tiny_path, tmp_path, overrides, fix):
    with pytest.raises(ValueError, match=fix):
        config(tiny_path, tmp_path, **overrides)


def test_rlvr_train_command(tiny_path, tmp_path, capsys):
    code = main(
        [
            "train", "--env", "test/Digits-v0=2", "--env", "test/Add-v0", "--model", str(tiny_path),
            "--algo", "ppo", "--steps", "2", "--prompts", "2", "--group-size", "2",
            "--max-new-tokens", "6", "--lr", "1e-3", "--eval-episodes", "4", "--out",
            str(tmp_path), "--no-progress", "--threads", "1",
        ]
    )  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out
    assert "(greedy, on up to 4 distinct held-out tasks per env)" in out and "final model" in out
    assert (tmp_path / "final" / "model.safetensors").exists()
    assert (tmp_path / "learning_curve.png").exists()
    saved = read_config(TrainConfig, tmp_path / "config.toml")
    assert [(e.id, e.weight) for e in saved.envs] == [("test/Digits-v0", 2.0), ("test/Add-v0", 1.0)]
    assert (saved.algo, saved.ppo.lr, saved.prompts_per_step) == ("ppo", 1e-3, 2)


def test_rlvr_tiny_command_builds_a_loadable_model(tmp_path, capsys):
    code = main(["tiny", "--env", "test/Add-v0", "--out", str(tmp_path / "m"), "--no-warm-start"])
    assert code == 0
    policy = HFPolicy(tmp_path / "m")
    assert 100_000 < sum(p.numel() for p in policy.model.parameters()) < 1_000_000
    card = json.loads((tmp_path / "m" / "rlvr_tiny.json").read_text())
    assert card["env_id"] == "test/Add-v0" and card["warm_start"] is None


def test_rlvr_tiny_says_its_accuracy_is_the_stopping_check_not_a_benchmark(tmp_path, capsys):
    code = main(
        ["tiny", "--env", "test/Add-v0", "--out", str(tmp_path / "m"), "--steps", "1",
         "--target-accuracy", "0.9", "--warm-start.eval-episodes", "4",
         "--model.corpus-episodes", "64", "--model.layers", "1"]
    )  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out
    assert re.search(
        r"^warm-start step 0: held-out accuracy 0\.\d{3} \(greedy, 4 episodes: the "
        r"--target-accuracy check\)$",
        out,
        re.M,
    ), out


def test_rlvr_tiny_warm_starts_a_game_model_measured_on_the_same_game(tmp_path, capsys):
    # a game has no split: the held-out measure is a match on the game with its own kwargs
    # (this failed with "unknown argument(s) split='test'")
    code = main(
        ["tiny", "--env", "rlvr/Nim-v0", "--kwargs", '{"min_stones": 4, "max_stones": 9}',
         "--out", str(tmp_path / "m"), "--steps", "2", "--model.corpus-episodes", "64",
         "--model.layers", "1"]
    )  # fmt: skip
    assert code == 0
    card = json.loads((tmp_path / "m" / "rlvr_tiny.json").read_text())
    assert card["env_kwargs"] == {"min_stones": 4, "max_stones": 9}
    assert 0.0 <= card["warm_start_history"][-1]["accuracy"] <= 1.0


def test_rlvr_eval_with_an_hf_agent(tiny_path, tmp_path, capsys):
    traces = tmp_path / "traces.jsonl"
    code = main(
        ["eval", "test/Add-v0", "--agent", f"hf:{tiny_path}", "--episodes", "3", "--no-progress",
         "--traces", str(traces)]
    )  # fmt: skip
    assert code == 0
    assert "success rate" in capsys.readouterr().out
    rows = [json.loads(line) for line in traces.read_text().splitlines()]
    assert len(rows) == 3 and all(row["completion_tokens"] > 0 for row in rows)


def train_command(*arguments):
    return main(["train", "--steps", "1", "--prompts", "1", "--group-size", "2",
                 "--max-new-tokens", "4", "--eval-episodes", "2", "--no-progress",
                 "--no-tensorboard", *arguments])  # fmt: skip


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--env", "test/Nope-v0"], "doesn't exist"),
        (["--env", "test/Add-v0", "--kwargs", '{"difficult": 1}'], "bad kwargs"),
        (["--env", "test/Add-v0", "--heldout-kwargs", '{"spilt": "test"}'], "bad held-out kwargs"),
        (["--env", "test/NoSplit-v0"], "--heldout-kwargs"),
        (["--env", "test/Add-v0", "--chat-template", "/nonexistent/template.jinja"], "No such"),
    ],
    ids=["unknown-env", "bad-kwargs", "bad-heldout-kwargs", "no-test-split", "missing-template"],
)
def test_rlvr_train_reports_bad_input_in_one_line(tiny_path, tmp_path, capsys, arguments, message):
    code = train_command("--model", str(tiny_path), "--out", str(tmp_path), *arguments)
    assert code == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and "Traceback" not in err
    assert not (tmp_path / "checkpoints").exists()


@pytest.mark.parametrize(
    ("kwargs", "message"), [("{bad", "not valid JSON"), ("[1, 2]", "must be a JSON object")]
)
def test_rlvr_train_refuses_kwargs_that_are_not_a_json_object(tiny_path, capsys, kwargs, message):
    with pytest.raises(SystemExit) as exit_:
        train_command("--env", "test/Add-v0", "--model", str(tiny_path), "--kwargs", kwargs)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("budget", [None, 600.0])
def test_the_progress_bar_counts_what_ends_the_run(tiny_path, tmp_path, capsys, budget):
    # a run ended by its time budget measures progress in seconds of that budget, not in steps
    # of a step limit it will never reach
    train(config(tiny_path, tmp_path, progress=True, time_budget=budget))
    bar = capsys.readouterr().err.replace("\r", "\n").strip().splitlines()[-1]
    if budget is None:
        assert "2/2" in bar and "step/s" in bar
    else:
        assert "/600 s [" in bar and "step=2" in bar and "step/s" not in bar


def test_each_rollout_setting_has_one_owner():
    """Temperature, completion budget and seed belonged to both the run and the learner configs,
    and `TrainConfig.learner_config()` silently overwrote the learner's copy."""
    run = {field.name for field in dataclasses.fields(TrainConfig)} | {"completion_budget"}
    for kind in LEARNERS.values():
        fields = {field.name for field in dataclasses.fields(kind.config_class)}
        assert not run & fields, kind.name
    assert not hasattr(TrainConfig, "learner_config")


def test_the_learner_gets_the_runs_rollout_settings_and_its_config_as_given(tiny_path, tmp_path):
    run = config(tiny_path, tmp_path, temperature=0.7, max_new_tokens=8, max_turns=3, seed=5)
    grpo = Trainer(run).learner
    assert (grpo.temperature, grpo.completion_budget) == (0.7, 24)
    assert grpo.config is run.grpo
    run = dataclasses.replace(run, algo="ppo")
    ppo = Trainer(run).learner
    assert ppo.temperature == 0.7 and ppo.config is run.ppo
    assert torch.equal(ppo.generator.get_state(), torch.Generator().manual_seed(5).get_state())
    rloo = Trainer(dataclasses.replace(run, algo="rloo")).learner
    assert rloo.temperature == 0.7 and rloo.config is run.rloo


def test_held_out_evaluation_asks_each_task_once_and_reports_its_standard_error(
    tiny_path, tmp_path
):
    """Seeded episodes of a 6-task held-out set would ask each task ~3 times out of 20: the
    evaluation asks the 6 once each, every time, and its standard error counts 6."""
    trainer = Trainer(
        config(tiny_path, tmp_path, envs=[EnvSpec(FEW, heldout_kwargs={})], eval_episodes=20)
    )
    first, again = trainer.evaluate(), trainer.evaluate()
    assert first[f"eval/{FEW}/episodes"] == 6
    assert first[f"eval/{FEW}/success_rate"] == 0.5  # the 3 tasks with an odd answer
    assert first[f"eval/{FEW}/success_rate_se"] == pytest.approx(math.sqrt(0.25 / 6))
    assert first["eval/success_rate_se"] == first[f"eval/{FEW}/success_rate_se"]
    assert again == {**first, "time/train_seconds": again["time/train_seconds"]}


# Every name `rlvr.agents.train` gave before the trainer was split into modules (issue 28): user
# code imports them from there, so each is still given, as the object of its defining module.
TRAIN_MODULE_NAMES = {
    "rlvr.agents.train": ["Trainer", "TrainResult", "train", "prepare"],
    "rlvr.agents.train_config": [
        "TrainConfig",
        "OLD_SAMPLING_KEYS",
        "check_envs",
        "make_policy_check",
    ],
    "rlvr.agents.checkpoints": [
        "CHECKPOINT_KEYS",
        "MAY_CHANGE_ON_RESUME",
        "SEAT_STATE",
        "latest_checkpoint",
    ],
    "rlvr.agents.held_out": ["EVAL_SEED"],
    "rlvr.agents.rollout_metrics": [
        "InfraErrorRate",
        "InfraErrorWindow",
        "infra_error_counts",
        "rollout_metrics",
    ],
    "rlvr.agents.curriculum": ["CurriculumConfig", "rollout_specs"],
    "rlvr.agents.rollouts": ["EnvSpec"],
    "rlvr.agents.hf": ["LoraSettings"],
    "rlvr.agents.policy": ["SamplingParams"],
    "rlvr.agents.selfplay": ["SelfPlayConfig"],
}


def test_the_trainer_module_still_gives_every_name_it_gave():
    import importlib

    import rlvr.agents.train as trainer_module

    for module_name, names in TRAIN_MODULE_NAMES.items():
        module = importlib.import_module(module_name)
        for name in names:
            assert getattr(trainer_module, name) is getattr(module, name), name
            assert name in trainer_module.__all__, name  # `import *` gives it too
