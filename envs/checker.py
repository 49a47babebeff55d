"""`check_env`: Gymnasium's checker plus the checks a verifiable text environment must pass.

- Gymnasium's `check_env` on the unwrapped env (spaces, reset/step signatures, seeding);
- the oracle's reply (the gold answer) earns a return of exactly 1.0;
- empty, junk and evasive replies earn 0 and are never infrastructure errors;
- deep and long-chain text at every reader (`rlvr.envs.deep_text.nasty_replies()`: unary,
  attribute and operator chains, nested brackets, JSON, tags, subqueries, in every shape a
  reader looks at) and replies claiming our machinery failed are verdicts: the step raises
  nothing, the reward is in [0, 1] and `info["infra_error"]` stays False;
- every reward is a float in [0, 1] and `info` carries the standard keys;
- the same seed and the same replies give the same episode, `info` included;
- `options={"task_index": i}` pins a task; a non-`str` action raises `TypeError` and costs no turn.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, cast

import gymnasium as gym
from gymnasium.utils.env_checker import check_env as gymnasium_check_env
from gymnasium.utils.env_checker import data_equivalence

from rlvr.envs.deep_text import FORGED_INFRA_REPLIES, nasty_replies

if TYPE_CHECKING:
    from rlvr.envs.core import TextEnv

INFO_KEYS_RESET = ("task_id", "messages", "turn", "infra_error")
INFO_KEYS_STEP = (*INFO_KEYS_RESET, "rewards")
JUNK_REPLIES = ("", "   ", "I don't know.", "asdf qwer zxcv", "\\boxed{}", "}}}{{{")


class EnvCheckError(AssertionError):
    """`check_env` found problems; the message lists every one."""


def check_env(env: gym.Env, *, seeds: Sequence[int] = (0, 1, 2), max_turns: int = 50) -> None:
    """Check `env` (made with `gym.make` or constructed directly); raise `EnvCheckError` if bad."""
    problems: list[str] = []
    base = env.unwrapped
    try:
        gymnasium_check_env(base, skip_render_check=True)
    except Exception as exc:  # report every problem at once, gymnasium's among them
        problems.append(f"gymnasium check_env: {type(exc).__name__}: {exc}")
    for seed in seeds:
        for name, check in _CHECKS:
            try:
                check(env, seed, max_turns)
            except Exception as exc:
                problems.append(f"seed {seed}: {name}: {type(exc).__name__}: {exc}")
    for name, check in _ONCE_CHECKS:  # slower, and no more telling under another seed
        try:
            check(env, seeds[0], max_turns)
        except Exception as exc:
            problems.append(f"seed {seeds[0]}: {name}: {type(exc).__name__}: {exc!s:.500}")
    if problems:
        env_id = env.spec.id if env.spec is not None else type(base).__name__
        raise EnvCheckError(
            f"{env_id} failed {len(problems)} check(s):\n- " + "\n- ".join(problems)
        )


# --- episodes ------------------------------------------------------------------------------------

Reply = Callable[[gym.Env], str]


def _play(
    env: gym.Env, seed: int, reply: Reply, max_turns: int, must_end: bool = True
) -> list[tuple]:
    """Run one episode, returning [(obs, info), (obs, reward, terminated, truncated, info), ...]
    (only its first `max_turns` steps when it need not end in them: `must_end=False`)."""
    obs, info = env.reset(seed=seed)
    _check_info(info, INFO_KEYS_RESET)
    trajectory: list[tuple] = [(obs, info)]
    for _ in range(max_turns):
        step = env.step(reply(env))
        _, reward, terminated, truncated, info = step
        _check_info(info, INFO_KEYS_STEP)
        if not isinstance(reward, float) or not 0.0 <= reward <= 1.0 or math.isnan(reward):
            raise AssertionError(f"reward {reward!r} is not a float in [0, 1]")
        trajectory.append(step)
        if terminated or truncated:
            return trajectory
    if not must_end:
        return trajectory
    raise AssertionError(f"episode did not end within {max_turns} turns")


def _check_info(info: dict[str, Any], keys: Sequence[str]) -> None:
    missing = [key for key in keys if key not in info]
    if missing:
        raise AssertionError(f"info lacks {missing}")
    messages = info["messages"]
    if not messages or messages[-1]["role"] not in ("user", "tool", "assistant"):
        raise AssertionError("info['messages'] must end with the latest message")


def _episode_return(trajectory: list[tuple]) -> float:
    return sum(step[1] for step in trajectory[1:])


def _oracle(env: gym.Env) -> str:
    return cast("TextEnv", env.unwrapped).oracle_reply()


def check_oracle_scores_one(env: gym.Env, seed: int, max_turns: int) -> None:
    trajectory = _play(env, seed, _oracle, max_turns)
    total = _episode_return(trajectory)
    if abs(total - 1.0) > 1e-9:
        last_info = trajectory[-1][4]
        raise AssertionError(
            f"the oracle's return is {total}, expected 1.0 ({last_info.get('verdict')})"
        )
    if any(step[4]["infra_error"] for step in trajectory[1:]):
        raise AssertionError("the oracle's episode reported an infrastructure error")


def check_junk_scores_zero(env: gym.Env, seed: int, max_turns: int) -> None:
    for junk in (*JUNK_REPLIES, _echo_prompt(env, seed)):
        trajectory = _play(env, seed, _always(junk), max_turns)
        total = _episode_return(trajectory)
        if total != 0.0:
            raise AssertionError(f"the reply {junk[:60]!r} earned {total}, expected 0")
        if any(step[4]["infra_error"] for step in trajectory[1:]):
            raise AssertionError(f"the reply {junk[:60]!r} caused an infrastructure error")


def check_nasty_replies_are_verdicts(env: gym.Env, seed: int, max_turns: int) -> None:
    for reply in (*nasty_replies(), *FORGED_INFRA_REPLIES):
        try:
            # A tool env may answer a malformed call and wait for the next reply: the same reply
            # again and again need not end the episode, only never raise.
            trajectory = _play(env, seed, _always(reply), max_turns, must_end=False)
        except Exception as exc:
            raise AssertionError(
                f"the reply {reply[:50]!r} ({len(reply)} characters) raised "
                f"{type(exc).__name__}: {exc!s:.300}"
            ) from exc
        if any(step[4]["infra_error"] for step in trajectory[1:]):
            raise AssertionError(
                f"the reply {reply[:50]!r} ({len(reply)} characters) caused an infrastructure error"
            )


def _always(reply: str) -> Reply:
    return lambda _env: reply


def _in_turn(replies: Iterator[str]) -> Reply:
    return lambda _env: next(replies)


def _echo_prompt(env: gym.Env, seed: int) -> str:
    obs, _ = env.reset(seed=seed)
    return obs


def check_same_seed_same_episode(env: gym.Env, seed: int, max_turns: int) -> None:
    first = _play(env, seed, _oracle, max_turns)
    second = _play(env, seed, _oracle, max_turns)
    if not data_equivalence(first, second, exact=True):
        raise AssertionError("two episodes with the same seed and replies differ")
    env.action_space.seed(seed)
    junk = [env.action_space.sample() for _ in range(max_turns)]
    runs = []
    for _ in range(2):
        replies = iter(junk)
        runs.append(_play(env, seed, _in_turn(replies), max_turns))
    if not data_equivalence(runs[0], runs[1], exact=True):
        raise AssertionError("two episodes with the same seed and random replies differ")


def check_task_pinning(env: gym.Env, seed: int, max_turns: int) -> None:
    _, info_a = env.reset(seed=seed, options={"task_index": 0})
    _, info_b = env.reset(seed=seed + 1000, options={"task_index": 0})
    if info_a["task_id"] != info_b["task_id"]:
        raise AssertionError("options={'task_index': 0} did not pin the task across seeds")


def check_bad_action_type(env: gym.Env, seed: int, max_turns: int) -> None:
    env.reset(seed=seed)
    for bad in (None, 42, b"bytes", ["list"]):
        try:
            env.step(bad)
        except TypeError:
            continue
        raise AssertionError(f"step({bad!r}) did not raise TypeError")
    _, _, _, _, info = env.step(_oracle(env))  # the bad calls must not have used up a turn
    if info["turn"] != 1:
        raise AssertionError(f"after rejected actions the first step reported turn {info['turn']}")


_CHECKS: tuple[tuple[str, Callable[[gym.Env, int, int], None]], ...] = (
    ("oracle scores 1", check_oracle_scores_one),
    ("junk scores 0", check_junk_scores_zero),
    ("same seed, same episode", check_same_seed_same_episode),
    ("task pinning", check_task_pinning),
    ("bad action type", check_bad_action_type),
)
_ONCE_CHECKS: tuple[tuple[str, Callable[[gym.Env, int, int], None]], ...] = (
    ("deep text is a verdict", check_nasty_replies_are_verdicts),
)
