"""The learning suite's held-out measurements (`learning_suite.py`): which held-out tasks a task
is evaluated on, and the figures a greedy evaluation gives (accuracy, tool-call rate,
self-correction, how a repository episode went about it)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from learning_suite_provenance import jsonable
from learning_suite_tasks import EVAL_SEED, TASKS, Task

# --- held-out measurements -----------------------------------------------------------------------


def measure(
    task: Task, policy: Any, heldout: Mapping[str, list[int]], *, generalisation: bool = False
) -> dict[str, Any]:
    """Greedy held-out figures of `policy` on `task`: accuracy with its binomial standard error,
    and the task's own figures (tool-call rate, first-attempt accuracy, a level up; with
    `generalisation`, the level up and the sampled accuracy, `Task.sampled_eval`). `heldout`
    holds the task indexes evaluated (`heldout_tasks`)."""
    from rlvr.agents.policy import SamplingParams
    from rlvr.rollout.episodes import evaluate

    def run(kwargs: Mapping[str, Any], indexes: list[int], temperature: float = 0.0) -> Any:
        return evaluate(
            task.env_id,
            policy,
            episodes=len(indexes),
            seed=EVAL_SEED,
            batch_size=min(len(indexes), 500),
            sampling=SamplingParams(temperature=temperature, max_new_tokens=task.max_new_tokens),
            env_kwargs=kwargs,
            reset_options=lambda episode: {"task_index": indexes[episode]},
        )

    report = run(task.heldout, heldout["heldout"])
    judged = report.judged
    correct = [solved(record) for record in judged]
    figures: dict[str, Any] = {**rate("accuracy", correct), "infra_errors": report.infra_errors}
    if task.env_id == "rlvr/ToolMath-v0":
        figures |= rate("tool_call_rate", [called_a_tool(record) for record in judged])
    if task.env_id == "rlvr/MathSelfCorrect-v0":
        figures |= self_correction(judged, correct)
    if task.env_id == "rlvr/Repo-v0":
        figures |= repo_figures(judged)
    if generalisation and task.generalisation is not None:
        harder = run(task.generalisation, heldout["level_up"])
        figures |= rate("level_up", [solved(record) for record in harder.judged])
    if generalisation and task.sampled_eval is not None:
        samples, indexes = task.sampled_eval, heldout["heldout"]
        temperature = 1.0 if task.temperature is None else task.temperature
        played = run(task.heldout, indexes * samples, temperature)
        figures |= per_task_rate("sampled_accuracy", played.judged, len(indexes))
        figures["infra_errors"] += played.infra_errors
    figures["fingerprint"] = _fingerprint(judged)
    return figures


def heldout_tasks(out: Path, name: str) -> dict[str, list[int]]:
    """The held-out task indexes of a task (and of its level up): the first `eval_episodes`
    distinct tasks of the split (`rlvr.rollout.distinct_tasks`), found once and kept in
    out/baseline/<task>-tasks.json with the settings they were found for; a file found for
    other settings (a changed `eval_episodes` or split) is refused, not reused."""
    path = out / "baseline" / f"{name}-tasks.json"
    task = TASKS[name]
    wanted = heldout_settings(task)
    if not path.exists():
        from rlvr.rollout.tasks import distinct_tasks

        def first(kwargs: Mapping[str, Any]) -> list[int]:
            return distinct_tasks(task.env_id, task.eval_episodes, env_kwargs=kwargs, pin=True)

        found = {"heldout": first(task.heldout)}
        if task.generalisation is not None:
            found["level_up"] = first(task.generalisation)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({**found, "settings": wanted}) + "\n")
    stored = json.loads(path.read_text())
    if stored.pop("settings", None) != wanted:
        raise SystemExit(
            f"{path} was found for other held-out settings than {name}'s now: delete "
            f"{out / 'baseline'}/{name}* to find the tasks and measure the warm start again"
        )
    return stored


def heldout_settings(task: Task) -> dict[str, Any]:
    """What decides a task's held-out set."""
    return jsonable(
        {
            "env_id": task.env_id,
            "heldout": task.heldout,
            "generalisation": task.generalisation,
            "eval_episodes": task.eval_episodes,
        }
    )


def self_correction(records: Sequence[Any], solved: Sequence[bool]) -> dict[str, float]:
    """SCoRe's figures of self-correction episodes (`solved`: whether each ends correct):
    first-attempt accuracy, `delta` = accuracy after the last attempt minus after the first
    (with the standard error of the paired difference), and among episodes given a second
    attempt, how often its answer repeats the first's (`repeat_rate`) or fixes it (`fix_rate`).
    """
    first = [_first_attempt_right(record) for record in records]
    differences = [int(end) - int(start) for end, start in zip(solved, first)]
    n = len(differences)
    delta = sum(differences) / n if n else math.nan
    spread = sum((d - delta) ** 2 for d in differences) / (n - 1) if n > 1 else math.nan
    answers = [_answers(record) for record in records]
    retried = [(tried, end) for tried, end in zip(answers, solved) if len(tried) > 1]
    return {
        **rate("first_attempt", first),
        "delta": delta,
        "delta_se": math.sqrt(spread / n) if n > 1 else math.nan,
        **rate("repeat_rate", [tried[1] == tried[0] for tried, _ in retried]),
        **rate("fix_rate", [end for _, end in retried]),
    }


def repo_figures(records: Sequence[Any]) -> dict[str, float]:
    """How a repository episode went about it: the share that ran the tests before submitting,
    that read a file before its first edit (a shell command counts as one: `sed` fixes too),
    and that submitted at all."""
    tests_first, read_first, submitted = [], [], []
    for record in records:
        names = _tool_names(record)
        submit = names.index("submit") if "submit" in names else len(names)
        edits = [i for i, name in enumerate(names) if name in EDITS]
        tests_first.append("run_tests" in names[:submit] and "submit" in names)
        read_first.append(bool(edits) and "read_file" in names[: edits[0]])
        submitted.append("submit" in names)
    return (
        rate("tests_before_submit", tests_first)
        | rate("read_before_edit", read_first)
        | rate("submitted", submitted)
    )


EDITS = ("apply_patch", "write_file", "replace_in_file", "run")


def _tool_names(record: Any) -> list[str]:
    """The tools an episode called, in order."""
    from rlvr.envs.tools.parsing import parse_tool_calls

    replies = [m["content"] for m in record.messages if m.get("role") == "assistant"]
    return [call.name for reply in replies for call in parse_tool_calls(reply).calls]


def _first_attempt_right(record: Any) -> bool:
    """Whether the first attempt was judged right: with binary feedback a right first attempt
    ends the episode paid 1, in either reward mode, and a wrong one is paid less."""
    return record.rewards[0] >= 1.0 - 1e-9


def _answers(record: Any) -> list[str]:
    """The final answer of each attempt: its last \\boxed{} content, else the reply stripped."""
    from rlvr.verifiers.math.extract import find_boxed

    replies = [m["content"] for m in record.messages if m.get("role") == "assistant"]
    return [(find_boxed(reply) or [reply])[-1].strip() for reply in replies]


def solved(record: Any) -> bool:
    """The episode ends with a correct answer (the verdict of the last attempt)."""
    return bool(record.verdict) and record.verdict.get("status") == "correct"


def called_a_tool(record: Any) -> bool:
    from rlvr.envs.tools.parsing import parse_tool_calls

    replies = [m["content"] for m in record.messages if m.get("role") == "assistant"]
    return any(parse_tool_calls(reply).is_tool_turn for reply in replies)


def per_task_rate(name: str, played: Sequence[Any], tasks: int) -> dict[str, float]:
    """The share solved of `played`, episodes over `tasks` tasks in turn (episode i plays task
    i mod tasks): the mean over tasks of each one's share, its standard error over tasks (the
    samples of one task are not independent), and the number of episodes."""
    by_task: dict[int, list[bool]] = {}
    for record in played:
        by_task.setdefault(record.episode % tasks, []).append(solved(record))
    shares = [sum(outcomes) / len(outcomes) for outcomes in by_task.values()]
    n = len(shares)
    mean = sum(shares) / n if n else math.nan
    spread = sum((share - mean) ** 2 for share in shares) / (n - 1) if n > 1 else math.nan
    se = math.sqrt(spread / n) if n > 1 else math.nan
    return {name: mean, f"{name}_se": se, f"{name}_n": len(played)}


def rate(name: str, outcomes: Sequence[bool]) -> dict[str, float]:
    n = len(outcomes)
    p = sum(outcomes) / n if n else math.nan
    return {name: p, f"{name}_se": math.sqrt(p * (1 - p) / n) if n else math.nan, f"{name}_n": n}


def _fingerprint(records: Sequence[Any]) -> str:
    """A hash of every held-out reply: two evaluations of the same weights must give the same."""
    import hashlib

    text = json.dumps([record.messages for record in records], sort_keys=True)
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
