"""Training metrics: one JSON line per row, mirrored to TensorBoard, a progress bar, and
learning-curve plots.

Each row has `step` and the metrics logged at that step, with namespaced names
(`rollout/reward_mean`, `losses/policy`, `eval/success_rate`, `time/train_seconds`, ...).
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from rlvr.agents.errors import TrainingError
from rlvr.core.jsonfiles import JSONReadError, numbered_lines, parse_json, write_text_atomic


class MetricsLog:
    """Appends rows to `path` (JSON lines) and, when asked, to a TensorBoard log folder."""

    def __init__(self, path: str | os.PathLike[str], tensorboard_dir: str | None = None) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._tensorboard_dir = tensorboard_dir
        self._writer = None
        if tensorboard_dir is not None:
            from torch.utils.tensorboard import SummaryWriter

            self._writer = SummaryWriter(tensorboard_dir)

    def log(self, step: int, metrics: Mapping[str, float]) -> None:
        row = {"step": step, **{key: _plain(value) for key, value in metrics.items()}}
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(row) + "\n")
        self._add_scalars(row)

    def _add_scalars(self, row: Mapping[str, Any]) -> None:
        if self._writer is not None:
            for key, value in row.items():
                if key != "step" and isinstance(value, (int, float)) and math.isfinite(value):
                    self._writer.add_scalar(key, value, row["step"])

    def truncate_after(self, step: int) -> None:
        """Drop rows logged after `step` (a resumed run repeats them; a fresh run passes -1).

        The file is rewritten aside and renamed over, so a run killed meanwhile leaves it whole.
        """
        rows = []
        if self.path.exists():
            if step >= 0:  # a fresh run keeps nothing: no need to read (or judge) the old file
                rows = [row for row in read_metrics(self.path) if row["step"] <= step]
            write_text_atomic(self.path, "".join(json.dumps(row) + "\n" for row in rows))
        tensorboard = self._tensorboard_dir
        if self._writer is not None and tensorboard is not None:  # TensorBoard: rewritten too
            from torch.utils.tensorboard import SummaryWriter

            self._writer.close()
            for events in Path(tensorboard).glob("events.out.tfevents.*"):
                events.unlink()
            self._writer = SummaryWriter(tensorboard)
            for row in rows:
                self._add_scalars(row)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


def _plain(value: Any) -> Any:
    if hasattr(value, "item"):
        value = value.item()
    return (
        float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value
    )


_TQDM: dict[str, Any] = {"desc": "train", "dynamic_ncols": True}


class ProgressBar:
    """A training run's progress bar (tqdm): the steps done, or with a time budget the training
    seconds spent, and the latest training reward and held-out success rate."""

    def __init__(
        self, steps: int, time_budget: float | None, step: int, train_seconds: float
    ) -> None:
        from tqdm.auto import tqdm

        self.time_budget = time_budget
        if time_budget is not None:  # the budget is what ends such a run: count its seconds
            done = min(train_seconds, time_budget)
            seconds = "{l_bar}{bar}| {n:.0f}/{total:.0f} s [{elapsed}<{remaining}{postfix}]"
            self.bar = tqdm(total=time_budget, initial=done, bar_format=seconds, **_TQDM)
        else:
            self.bar = tqdm(total=steps, initial=step, unit="step", **_TQDM)

    def advance(
        self, step: int, train_seconds: float, metrics: Mapping[str, float], held_out: float
    ) -> None:
        """Show step `step` done, with its `metrics` and the latest `held_out` success rate."""
        if self.time_budget is not None:
            self.bar.update(min(train_seconds, self.time_budget) - self.bar.n)
        else:
            self.bar.update(1)
        postfix = _postfix({**metrics, "eval/success_rate": held_out})
        self.bar.set_postfix({"step": step, **postfix} if self.time_budget else postfix)

    def close(self) -> None:
        self.bar.close()


def _postfix(metrics: Mapping[str, float | None]) -> dict[str, str]:
    shown = {"reward": metrics.get("rollout/reward_mean")}
    if "eval/success_rate" in metrics:
        shown["held_out"] = metrics["eval/success_rate"]
    return {key: f"{value:.3f}" for key, value in shown.items() if value is not None}


def read_metrics(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The rows of a metrics file. A torn last line (a run killed while writing it) is dropped
    with a warning; any other bad line is a `TrainingError` naming the file and line."""
    lines = list(_numbered_lines(path))
    rows = []
    for number, line in lines:
        try:
            rows.append(_metrics_row(line))
        except JSONReadError as exc:
            if number == lines[-1][0]:
                warnings.warn(
                    f"{path}:{number}: dropped a torn last line ({exc}), left by a run stopped "
                    "while writing it",
                    stacklevel=2,
                )
                break
            raise TrainingError(
                f"{path}:{number}: {exc}; delete that line (or the file) to go on"
            ) from None
    return rows


def _numbered_lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, bytes]]:
    try:
        yield from numbered_lines(path)
    except JSONReadError as exc:
        raise TrainingError(f"{path}: {exc}") from None


def _metrics_row(line: bytes) -> dict[str, Any]:
    row = parse_json(line)
    if not isinstance(row, dict) or not isinstance(row.get("step"), int):
        raise JSONReadError(f"expected a JSON object with an integer step, got {line[:60]!r}")
    return row


def series(rows: Sequence[Mapping[str, Any]], key: str, x: str = "step") -> tuple[list, list]:
    """The (x, y) points of metric `key` (rows without it are skipped)."""
    points = [(row[x], row[key]) for row in rows if key in row and x in row]
    return [p[0] for p in points], [p[1] for p in points]


def plot_learning_curves(
    runs: Mapping[str, str | os.PathLike[str] | Sequence[Mapping[str, Any]]],
    out: str | os.PathLike[str],
    *,
    x: str = "time/train_seconds",
    reward_key: str = "rollout/reward_mean",
    eval_key: str = "eval/success_rate",
    title: str = "",
    smooth: int = 10,
) -> Path:
    """Draw training reward (moving average) and held-out success of each run; save a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for label, source in runs.items():
        rows = read_metrics(source) if isinstance(source, (str, os.PathLike)) else list(source)
        xs, ys = series(rows, reward_key, x)
        if ys:
            left.plot(xs, _moving_average(ys, smooth), label=label)
        xs, ys = series(rows, eval_key, x)
        if ys:
            right.plot(xs, ys, marker="o", label=label)
    x_label = "training seconds" if x.startswith("time/") else x
    left.set(title=f"training reward ({smooth}-row mean)", xlabel=x_label, ylabel=reward_key)
    right.set(title="held-out success rate", xlabel=x_label, ylabel=eval_key, ylim=(0, 1))
    for axis in (left, right):
        axis.grid(alpha=0.3)
        axis.legend()
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def _moving_average(values: Sequence[float], window: int) -> list[float]:
    out, total = [], 0.0
    for i, value in enumerate(values):
        total += value
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out
