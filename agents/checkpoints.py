"""A training run's checkpoints: what `checkpoints/step-N/` holds, how the trainer writes it
and resumes from it, and how its state files are written as plain data and read without
running code.

A checkpoint folder holds `trainer.pt` (the step, the evaluations, the learner's state, the
random generators, the curricula, the config: `CHECKPOINT_KEYS` and more) and the trained model,
`model/` (an HF folder `HFPolicy` loads); with a policy per seat, a folder per seat instead,
each with its model and `learner.pt` (that seat's learner). A resumed run must have the settings
of the run it continues, but for `MAY_CHANGE_ON_RESUME`.

`torch.load(weights_only=False)` unpickles whatever a file names, so a checkpoint someone
altered (or one downloaded with a run) could run any code at resume. These files are therefore
written in the form `torch.load(weights_only=True)` accepts, tensors and plain dicts, lists,
tuples, numbers, strings and None: `plain_state` turns numpy scalars (a mean of rewards) and
dict subclasses into those, and refuses anything else by name at save time, long before a
resume would need it. `load_state` reads them with `weights_only=True`, which refuses any other
object: a tampered file is a `TrainingError` saying so, and nothing in it runs.

The random generators' states are plain already: numpy's `bit_generator.state` is a dict of
ints, torch's `get_state()` a tensor (Python's `random.getstate()` would be a tuple of ints).
"""

from __future__ import annotations

import contextlib
import pickle
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from rlvr.agents.errors import TrainingError
from rlvr.agents.hf import _quiet_transformers
from rlvr.agents.policy import TrainablePolicy
from rlvr.agents.selfplay import SeatLearners
from rlvr.agents.train_config import TrainConfig
from rlvr.config import differences

if TYPE_CHECKING:
    from rlvr.agents.train import Trainer

SEAT_STATE = "learner.pt"
"""With a policy per seat: the file of a seat's checkpoint folder holding its learner's state."""
CHECKPOINT_KEYS = (
    "step",
    "train_seconds",
    "evaluations",
    "learner",
    "task_rng",
    "sample_generator",
    "trainable",
)
"""What every `trainer.pt` holds (older ones may lack the later keys: config, curricula...)."""
MAY_CHANGE_ON_RESUME = (
    "output_dir",
    "steps",
    "time_budget",
    "eval_every",
    "save_every",
    "max_infra_error_rate",
    "infra_error_window",
    "threads",
    "ray",
    "env_workers",
    "tensorboard",
    "plot",
    "progress",
)
"""The `TrainConfig` fields a resumed run may set differently from the run it continues: how long
it runs, how often it evaluates and saves, and what it shows. Any other difference (envs, model,
learner, sampling, seed, ...) is refused, so that the run stays the one its config describes."""


def save_checkpoint(trainer: Trainer) -> Path:
    """Write `trainer`'s state and models to `checkpoints/step-N/` of its output folder; returns
    the folder."""
    folder = trainer.out / "checkpoints" / f"step-{trainer.step}"
    # Written aside and renamed into place: a run killed while saving leaves the previous
    # checkpoints as they were, and resume=True picks the latest complete one.
    partial = folder.with_name(f"{folder.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    for name, policy in _models(trainer).items():
        policy.save(partial / name)
    if isinstance(trainer.learner, SeatLearners):  # each seat's optimizer beside its model
        for seat, policy in trainer.seat_policies.items():
            seat_state = {
                "learner": trainer.learner.learners[seat].state_dict(),
                "trainable": _trainable_state(policy) if policy.lora else None,
            }
            save_state(seat_state, partial / seat / SEAT_STATE)
    per_seat = bool(trainer.seat_policies)
    state = {
        "step": trainer.step,
        "train_seconds": trainer.train_seconds,
        "evaluations": trainer.evaluations,
        "learner": None if per_seat else trainer.learner.state_dict(),
        "task_rng": trainer.task_rng.bit_generator.state,
        "sample_generator": trainer.sample_generator.get_state(),
        "trainable": (
            _trainable_state(trainer.policy) if trainer.policy.lora and not per_seat else None
        ),
        "curricula": [curriculum.state_dict() for curriculum in trainer.curricula],
        "snapshot": trainer.snapshot.model.state_dict() if trainer.snapshot is not None else None,
        "config": trainer.config.to_dict(),
    }
    save_state(state, partial / "trainer.pt")
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)
    return folder


def load_checkpoint(trainer: Trainer, folder: str | Path) -> None:
    """Give `trainer` the state of the checkpoint `folder`, written by a run with the same
    config. Its state files are read without unpickling code: a tampered one is refused."""
    folder = Path(folder)
    if not (folder / "trainer.pt").is_file():
        raise TrainingError(f"{folder} is not a checkpoint (no trainer.pt)")
    state = load_state(folder / "trainer.pt")
    missing = sorted(set(CHECKPOINT_KEYS) - set(state))
    if missing:
        raise TrainingError(f"{folder}/trainer.pt is not a checkpoint: it has no {missing}")
    check_same_run(folder, state.get("config", {}), trainer.config)
    if isinstance(trainer.learner, SeatLearners):
        for seat, policy in trainer.seat_policies.items():
            seat_state = load_state(folder / seat / SEAT_STATE)
            _load_weights(policy, folder / seat, seat_state["trainable"])
            trainer.learner.learners[seat].load_state_dict(seat_state["learner"])
    else:
        _load_weights(trainer.policy, folder / "model", state["trainable"])
        trainer.learner.load_state_dict(state["learner"])
    if trainer.snapshot is not None:
        trainer.snapshot.model.load_state_dict(state["snapshot"])
    trainer.task_rng.bit_generator.state = state["task_rng"]
    trainer.sample_generator.set_state(state["sample_generator"])
    for curriculum, saved in zip(trainer.curricula, state.get("curricula", [])):
        curriculum.load_state_dict(saved)
    trainer.step = state["step"]
    trainer.train_seconds = state["train_seconds"]
    trainer.evaluations = state["evaluations"]
    trainer.metrics.truncate_after(trainer.step)


def save_models(trainer: Trainer, folder: Path) -> Path:
    """`trainer`'s trained model in `folder` (HF files), or with a policy per seat each seat's
    in `folder/<seat>`; returns `folder`."""
    if not trainer.seat_policies:
        return trainer.policy.save(folder)
    for seat, policy in trainer.seat_policies.items():
        policy.save(folder / seat)
    return folder


def latest_checkpoint(output_dir: str | Path) -> Path | None:
    """The complete checkpoint of the highest step in `output_dir`, or None."""
    complete = {
        int(folder.name[len("step-") :]): folder
        for folder in (Path(output_dir) / "checkpoints").glob("step-*")
        if folder.name[len("step-") :].isdigit() and (folder / "trainer.pt").is_file()
    }
    return complete[max(complete)] if complete else None


def check_same_run(folder: Path, saved: dict[str, Any], config: TrainConfig) -> None:
    """Refuse a checkpoint written with settings other than `config`'s, but for those in
    `MAY_CHANGE_ON_RESUME`: another algo, model or LoRA shape would load garbage or fail deep
    in torch, and another env, learner or sampling setting would make a run that no config
    describes."""
    changed = [
        f"{key} {before!r} (now {after!r})"
        for key, before, after in differences(
            TrainConfig, TrainConfig.from_older(saved), config.to_dict()
        )
        if key.split(".")[0] not in MAY_CHANGE_ON_RESUME
    ]
    if changed:
        raise TrainingError(
            f"{folder} was written by a run with other settings: {'; '.join(changed)}. "
            f"Only {', '.join(MAY_CHANGE_ON_RESUME)} may change on resume: resume with the "
            "run's settings (rlvr train --resume --out OUTDIR reads OUTDIR/config.toml), or "
            "start a fresh output_dir"
        )


def _models(trainer: Trainer) -> dict[str, TrainablePolicy]:
    """The trained models by the folder they are saved in: `model`, or one per seat."""
    return trainer.seat_policies or {"model": trainer.policy}


def _load_weights(
    policy: TrainablePolicy, folder: Path, trainable: dict[str, torch.Tensor] | None
) -> None:
    """Give `policy` the weights of a checkpoint: its LoRA adapters' trained state, or the
    weights of the HF folder `folder`."""
    if policy.lora is not None:
        assert trainable is not None  # saved with every LoRA checkpoint
        policy.model.load_state_dict(trainable, strict=False)
        return
    from transformers import AutoModelForCausalLM

    with _quiet_transformers():
        saved = AutoModelForCausalLM.from_pretrained(folder)
    policy.model.load_state_dict(saved.state_dict())


def _trainable_state(policy: TrainablePolicy) -> dict[str, torch.Tensor]:
    trainable = {name for name, p in policy.model.named_parameters() if p.requires_grad}
    return {k: v.detach().clone() for k, v in policy.model.state_dict().items() if k in trainable}


# --- state files as plain data --------------------------------------------------------------------


_PLAIN = (bool, int, float, str, bytes, type(None))


def _legacy_globals() -> list[Any]:
    """What checkpoints written before `plain_state` existed hold besides plain data: numpy
    scalars (a float64 evaluation mean) and, in the saved config, `rlvr.config`'s dict subclass.
    Data constructors only: none of them can call anything."""
    from rlvr.config import _Inline

    core = getattr(np, "_core", None) or np.core  # numpy 2 / numpy 1
    dtypes = getattr(np, "dtypes", None)  # numpy >= 1.25
    kinds = ("Float64DType", "Int64DType", "BoolDType")
    return [
        core.multiarray.scalar,
        np.dtype,
        *(getattr(dtypes, kind) for kind in kinds if hasattr(dtypes, kind)),
        _Inline,
    ]


def plain_state(value: Any, where: str = "state") -> Any:
    """`value` as data `torch.load(weights_only=True)` reads back: numpy scalars as Python
    numbers, mappings as dicts; a `TypeError` naming `where` for anything else."""
    if type(value) in _PLAIN or isinstance(value, torch.Tensor):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Mapping):
        return {
            plain_state(key, where): plain_state(item, f"{where}[{key!r}]")
            for key, item in value.items()
        }
    if isinstance(value, (list, tuple)):
        items = [plain_state(item, f"{where}[{i}]") for i, item in enumerate(value)]
        return items if isinstance(value, list) else tuple(items)
    raise TypeError(f"{where}: a {type(value).__name__} cannot go into a checkpoint")


def save_state(state: Mapping[str, Any], path: str | Path) -> None:
    """Write `state` (see `plain_state`) to `path` with `torch.save`."""
    torch.save(plain_state(state), path)


def load_state(path: str | Path) -> dict[str, Any]:
    """The state `save_state` wrote to `path`, read with `weights_only=True`: a file holding
    any other object, or no state at all, is a `TrainingError` and nothing in it runs."""
    allow = getattr(torch.serialization, "safe_globals", None)  # torch >= 2.5
    try:
        with allow(_legacy_globals()) if allow else contextlib.nullcontext():
            state = torch.load(path, weights_only=True)
    except pickle.UnpicklingError as exc:
        raise TrainingError(
            f"{path} holds objects no checkpoint of rlvr train holds ({_reason(exc)}): it was "
            "altered or written by something else, and loading it could run code, so it is "
            "refused. Resume from another checkpoint, or start a fresh output_dir"
        ) from None
    except (OSError, RuntimeError, EOFError, ValueError) as exc:  # cut short, not a torch file
        raise TrainingError(f"cannot read the checkpoint file {path}: {_reason(exc)}") from None
    if not isinstance(state, dict):
        raise TrainingError(f"{path} is not a checkpoint: it holds a {type(state).__name__}")
    return state


def _reason(exc: BaseException) -> str:
    """The telling line of torch's (long, multi-line) message, without its advice to allow the
    object (the one thing not to do with a file nobody vouches for)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    telling = [line for line in lines if line.startswith("WeightsUnpickler error:")]
    if telling:
        detail = telling[0].removeprefix("WeightsUnpickler error:").split(". Please")[0].strip()
        after = lines[lines.index(telling[0]) + 1 :]
        return (detail or (after[0] if after else "an object it does not allow"))[:300]
    return (lines[0] if lines else type(exc).__name__)[:300]
