"""What a stored result may hold: every field of a result record and of an episode, checked.

A result enters the store from a run, a re-judging or a side file (`rlvr leaderboard import`),
and is read back from a file anyone can edit. `check_record` and `episode_from_dict` check each
field's type and range (`fields.py`) and its agreement with the suite the record carries (one env
result per suite env, in order; `episodes` = tasks x samples; judged + infrastructure errors =
episodes; a score is NaN exactly when nothing was judged), so that ranking and formatting never
meet a string, an infinity or a count that would take forever to use. Whether the figures are
the ones the traces give is `results.check_result`'s business.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from rlvr.leaderboards.fields import (
    FieldError,
    array,
    count,
    flag,
    number,
    optional_count,
    optional_text,
    table,
    text,
)
from rlvr.leaderboards.suites import MAX_EPISODES, MAX_SAMPLES, MAX_SEED, Suite, SuiteEnv
from rlvr.rollout.records import EpisodeRecord

MAX_REWARD = 1e9
"""Largest reward magnitude of one turn (env rewards are O(1); bounded so that sums stay finite)."""
MAX_EPISODE_TOKENS = 10**9
"""Most tokens one episode may report (generated or prompt)."""
MAX_SECONDS = 1e9
"""Longest run, in seconds (31 years)."""

RECORD_REQUIRED = (
    "name", "suite", "agent", "score", "ci_low", "ci_high", "pass_at_k", "envs", "code", "run"
)  # fmt: skip
"""Keys of `BenchResult.to_record()` every stored result has (`suite_source`,
`suite_fingerprint` and `reverified_from` may be missing from old ones)."""
ENV_REQUIRED = (
    "label", "env_id", "score", "ci_low", "ci_high", "success_rate", "pass_at_k", "episodes",
    "judged", "infra_errors", "completion_tokens", "prompt_tokens", "seconds", "entry_point",
    "verifier", "dataset_hash",
)  # fmt: skip
"""Keys of an env result (`traces_digest` may be missing from old ones)."""
EPISODE_REQUIRED = (
    "episode", "sample", "seed", "task_id", "messages", "rewards", "verdict", "infra_error",
    "truncated",
)  # fmt: skip
_EPISODE_FIELDS = tuple(field.name for field in dataclasses.fields(EpisodeRecord))


def check_record(record: Any) -> Suite:
    """Check every field of a result record (`BenchResult.to_record()`); return its suite.

    Raises `FieldError` or `SuiteError` (both `ValueError`s) naming the field.
    """
    table(record, "the result", RECORD_REQUIRED)
    text(record["name"], "name")
    optional_text(record.get("suite_source"), "suite_source")
    optional_text(record.get("suite_fingerprint"), "suite_fingerprint")
    suite = Suite.from_dict(record["suite"])
    _check_agent(record["agent"])
    _check_interval(record, "", judged=None)
    _check_passes(record["pass_at_k"], "pass_at_k", suite)
    envs = array(record["envs"], "envs")
    if len(envs) != len(suite.envs):
        raise FieldError(f"envs has {len(envs)} entries for the suite's {len(suite.envs)} envs")
    for index, (data, env) in enumerate(zip(envs, suite.envs)):
        _check_env(data, f"envs[{index}]", env, suite)
    _check_code(record["code"])
    _check_run(record["run"])
    if record.get("reverified_from") is not None:
        count(record["reverified_from"], "reverified_from", MAX_SEED, minimum=1)
    return suite


def _check_env(data: Any, where: str, env: SuiteEnv, suite: Suite) -> None:
    table(data, where, ENV_REQUIRED, optional=("traces_digest",))
    for key, expected in (("label", env.label), ("env_id", env.id)):
        if text(data[key], f"{where}.{key}") != expected:
            raise FieldError(
                f"{where}.{key} is {data[key]!r}, the suite's env there is {expected!r}"
            )
    episodes = env.episodes * suite.samples
    if count(data["episodes"], f"{where}.episodes", MAX_EPISODES * MAX_SAMPLES) != episodes:
        raise FieldError(
            f"{where}.episodes is {data['episodes']}, the suite runs {env.episodes} tasks x "
            f"{suite.samples} samples = {episodes}"
        )
    judged = count(data["judged"], f"{where}.judged", episodes)
    if judged + count(data["infra_errors"], f"{where}.infra_errors", episodes) != episodes:
        raise FieldError(
            f"{where}: judged ({judged}) + infra_errors ({data['infra_errors']}) must make the "
            f"{episodes} episodes"
        )
    _check_interval(data, f"{where}.", judged=judged)
    _nan_exactly_when_unjudged(data, "success_rate", where, judged, low=0.0, high=1.0)
    _check_passes(data["pass_at_k"], f"{where}.pass_at_k", suite)
    for key in ("completion_tokens", "prompt_tokens"):
        optional_count(data[key], f"{where}.{key}", MAX_EPISODE_TOKENS * episodes)
    number(data["seconds"], f"{where}.seconds", low=0.0, high=MAX_SECONDS)
    text(data["entry_point"], f"{where}.entry_point")
    verifier = table(data["verifier"], f"{where}.verifier", ("name", "version"))
    text(verifier["name"], f"{where}.verifier.name")
    text(verifier["version"], f"{where}.verifier.version")
    text(data["dataset_hash"], f"{where}.dataset_hash")
    text(data.get("traces_digest", ""), f"{where}.traces_digest")


def _check_interval(data: Mapping[str, Any], prefix: str, judged: int | None) -> None:
    """score, ci_low, ci_high: numbers, or NaN all three-or-interval when nothing was judged;
    the interval's ends in order."""
    if judged is None:
        score = number(data["score"], f"{prefix}score", nan=True)
    else:
        score = _nan_exactly_when_unjudged(data, "score", prefix.rstrip("."), judged)
    low = number(data["ci_low"], f"{prefix}ci_low", nan=True)
    high = number(data["ci_high"], f"{prefix}ci_high", nan=True)
    if (low != low) != (high != high):  # one end NaN, the other not
        raise FieldError(f"{prefix}ci_low and {prefix}ci_high must both be numbers, or both NaN")
    if low > high:
        raise FieldError(f"{prefix}ci_low ({low}) is above {prefix}ci_high ({high})")
    if score != score and low == low:
        raise FieldError(f"{prefix}score is NaN but its interval is not")


def _nan_exactly_when_unjudged(
    data: Mapping[str, Any],
    key: str,
    where: str,
    judged: int,
    low: float = -math.inf,
    high: float = math.inf,
) -> float:
    value = number(data[key], f"{where}.{key}", nan=True, low=low, high=high)
    if (value != value) != (judged == 0):
        raise FieldError(
            f"{where}.{key} must be NaN exactly when no episode was judged (judged = {judged}), "
            f"got {value}"
        )
    return value


def _check_passes(data: Any, where: str, suite: Suite) -> None:
    """pass@k for exactly the suite's k, each a share in [0, 1] (NaN: no task had k samples)."""
    expected = [str(k) for k in suite.pass_at_k]
    passes = table(data, where, expected, optional=())
    for k in expected:
        number(passes[k], f"{where}.{k}", nan=True, low=0.0, high=1.0)


def _check_agent(data: Any) -> None:
    agent = table(data, "agent")
    optional_text(agent.get("spec"), "agent.spec")
    if "sampling" in agent:
        table(agent["sampling"], "agent.sampling")


def _check_code(data: Any) -> None:
    code = table(data, "code")
    for key in ("created_at", "rlvr_gym"):
        if key in code:
            text(code[key], f"code.{key}")
    if code.get("git") is not None:
        git = table(code["git"], "code.git", ("commit", "dirty"))
        text(git["commit"], "code.git.commit")
        flag(git["dirty"], "code.git.dirty")


def _check_run(data: Any) -> None:
    run = table(data, "run")
    if "seconds" in run:
        number(run["seconds"], "run.seconds", low=0.0, high=MAX_SECONDS)


# --- episodes -------------------------------------------------------------------------------------


def episode_from_dict(data: Any) -> EpisodeRecord:
    """An episode from `EpisodeRecord.to_dict()` output, every field checked (`FieldError`);
    derived keys such as `total_reward` are ignored (recomputed from the rewards)."""
    table(data, "an episode", EPISODE_REQUIRED)
    record = EpisodeRecord(**{key: data[key] for key in _EPISODE_FIELDS if key in data})
    check_episode(record)
    return record


def check_episode(record: EpisodeRecord) -> None:
    """Raise `FieldError` unless every field of `record` has its type and range.

    Runs for every episode read from the store (a page of 100k episodes reads them all), so each
    check first tests the common valid case and only then builds its message."""
    if not _is_count(record.episode, MAX_EPISODES - 1):
        count(record.episode, "episode", MAX_EPISODES - 1)
    if not _is_count(record.sample, MAX_SAMPLES - 1):
        count(record.sample, f"episode {record.episode}: sample", MAX_SAMPLES - 1)
    where = f"episode {record.episode} sample {record.sample}"
    if not _is_count(record.seed, MAX_SEED):
        count(record.seed, f"{where}: seed", MAX_SEED)
    text(record.task_id, f"{where}: task_id")
    for index, message in enumerate(array(record.messages, f"{where}: messages")):
        if not _is_message(message):
            path = f"{where}: messages[{index}]"
            table(message, path, ("role", "content"))
            text(message["role"], f"{path}.role")
            text(message["content"], f"{path}.content")
    for index, reward in enumerate(array(record.rewards, f"{where}: rewards")):
        if type(reward) is not float or not -MAX_REWARD <= reward <= MAX_REWARD:  # NaN: False
            number(reward, f"{where}: rewards[{index}]", low=-MAX_REWARD, high=MAX_REWARD)
    if record.verdict is not None:
        table(record.verdict, f"{where}: verdict")
    flag(record.infra_error, f"{where}: infra_error")
    flag(record.truncated, f"{where}: truncated")
    optional_text(record.task_hash, f"{where}: task_hash")
    for key in ("completion_tokens", "prompt_tokens"):
        optional_count(getattr(record, key), f"{where}: {key}", MAX_EPISODE_TOKENS)


def _is_count(value: Any, maximum: int) -> bool:
    return type(value) is int and 0 <= value <= maximum


def _is_message(message: Any) -> bool:
    return (
        isinstance(message, Mapping)
        and isinstance(message.get("role"), str)
        and isinstance(message.get("content"), str)
    )
