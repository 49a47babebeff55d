"""The self-correction wrapper over single-turn envs registered with `register_task_env`."""

from __future__ import annotations

import re

import gymnasium as gym
import pytest

from rlvr.envs import EnvConfigError, Verdict, check_env, register_task_env
from rlvr.envs.self_correct import SelfCorrectEnv, mentions_gold
from tests.conftest import require_service

BASE_ID = "test/SelfCorrectBase-v0"
TASKS = [{"id": f"t{i}", "prompt": f"What is {i} + {i}?", "answer": 2 * i} for i in range(1, 9)]


def verify(reply: str, task) -> Verdict:
    """Reads the last integer; 'crash' is an infrastructure failure; 'half' earns 0.5."""
    if "crash" in reply:
        return Verdict.error("the judge fell over")
    numbers = re.findall(r"-?\d+", reply)
    if not numbers:
        return Verdict.unparsable("no integer in the reply")
    value = int(numbers[-1])
    if value == task.answer:
        return Verdict.correct(str(value))
    if "half" in reply:
        return Verdict.incorrect(str(value), "half right", score=0.5)
    # A careless verifier that puts the gold into its details: the wrapper must withhold them.
    if "leak" in reply:
        return Verdict.incorrect(str(value), f"expected {task.answer}")
    return Verdict.incorrect(str(value), f"{value} is off by {value - task.answer}")


register_task_env(BASE_ID, TASKS, verify, system_prompt="Answer with an integer.", override=True)


def make(**kwargs) -> SelfCorrectEnv:
    return SelfCorrectEnv(BASE_ID, **kwargs)


def play(env: SelfCorrectEnv, replies, seed=0):
    """Plays replies (strings, or None for the gold answer) and returns (rewards, infos)."""
    env.reset(seed=seed, options={"task_index": 2})  # the answer is 6
    rewards, infos = [], []
    for reply in replies:
        _, reward, terminated, truncated, info = env.step(reply or env.oracle_reply())
        rewards.append(reward)
        infos.append(info)
        if terminated or truncated:
            break
    return rewards, infos


@pytest.mark.parametrize(
    ("feedback", "reward"),
    [("binary", "final"), ("details", "shaped"), ("none", "shaped"), ("none", "final")],
)
def test_passes_check_env(feedback, reward):
    check_env(make(feedback=feedback, reward=reward, max_attempts=3))


def test_final_reward_pays_the_last_attempt_and_stops_when_correct():
    env = make(max_attempts=3)
    rewards, infos = play(env, ["5", "7", None, "6"])
    assert rewards == [0.0, 0.0, 1.0]  # stopped at the correct third attempt
    assert infos[-1]["attempt_scores"] == [0.0, 0.0, 1.0]
    assert infos[-1]["step_rewards"] == rewards
    assert infos[-1]["verdict"]["status"] == "correct"
    rewards, _ = play(env, ["5", "7", "8"])
    assert rewards == [0.0, 0.0, 0.0]


def test_shaped_reward_bonus_and_penalty():
    # K=2, bonus=0.5: weights 0.25 and 0.75.
    env = make(max_attempts=2, reward="shaped", bonus=0.5, feedback="none")
    right_right, _ = play(env, [None, None])
    wrong_right, _ = play(env, ["5", None])
    right_wrong, _ = play(env, [None, "5"])
    wrong_wrong, _ = play(env, ["5", "5"])
    assert right_right == [0.25, 0.75] and sum(right_right) == 1.0
    assert wrong_right == [0.0, 0.75]
    assert right_wrong == [0.25, 0.0]
    assert wrong_wrong == [0.0, 0.0]
    # Relative to the unshaped mean (0.5 for both), wrong->right gains and right->wrong loses.
    assert sum(wrong_right) == pytest.approx(0.5 + 0.5 / 2)
    assert sum(right_wrong) == pytest.approx(0.5 - 0.5 / 2)


def test_shaped_early_stop_pays_the_kept_answer():
    env = make(max_attempts=3, reward="shaped", bonus=0.5, feedback="binary")
    rewards, _ = play(env, [None])
    assert rewards == [1.0]
    rewards, _ = play(env, ["5", None])
    assert rewards == pytest.approx([0.0, 1.0 - 0.5 / 3])
    slower, _ = play(env, ["5", "5", None])
    assert sum(slower) == pytest.approx(1.5 / 3)
    assert sum(slower) < sum(rewards)  # solving sooner earns more
    assert all(0.0 <= r <= 1.0 for r in rewards + slower)


def test_partial_scores_are_shaped_too():
    env = make(max_attempts=2, reward="shaped", bonus=1.0, feedback="none")
    rewards, infos = play(env, ["half 5", "7"])
    assert rewards == [0.0, 0.0]  # bonus 1: the first attempt's weight is 0; the last scored 0
    rewards, infos = play(env, ["5", "half 7"])
    assert rewards == [0.0, 0.5]
    assert infos[-1]["attempt_scores"] == [0.0, 0.5]


def test_binary_feedback_says_only_incorrect():
    env = make(feedback="binary")
    env.reset(seed=0, options={"task_index": 2})
    observation, *_ = env.step("the answer is 5")
    assert observation.startswith("Your answer is incorrect.")
    assert "off by" not in observation and "5" not in observation
    assert "2 attempts left" in observation


@pytest.mark.parametrize("feedback", ["binary", "details", "none"])
def test_restate_ends_the_feedback_with_the_task_again(feedback):
    plain, restating = make(feedback=feedback), make(feedback=feedback, restate=True)
    for env in (plain, restating):
        env.reset(seed=0, options={"task_index": 2})
    before, *_ = plain.step("the answer is 5")
    after, _, terminated, _, info = restating.step("the answer is 5")
    assert after == f"{before}\n\nThe problem again:\nWhat is 3 + 3?" and not terminated
    assert info["messages"][-1]["content"] == after
    # the last attempt's verdict is not followed by the task: no attempt is left
    env = make(feedback=feedback, max_attempts=1, restate=True)
    env.reset(seed=0, options={"task_index": 2})
    last, *_ = env.step("the answer is 5")
    assert "The problem again" not in last


def test_details_feedback_shows_the_verifiers_details_but_never_the_gold():
    env = make(feedback="details", max_attempts=4)
    env.reset(seed=0, options={"task_index": 2})
    observation, *_ = env.step("the answer is 5")
    assert "Your answer was read as: 5" in observation
    assert "5 is off by -1" in observation
    observation, *_ = env.step("leak 9")
    assert "expected" not in observation and "6" not in observation
    assert "Your answer was read as: 9" in observation
    observation, *_ = env.step("no number here")
    assert observation.startswith("No answer could be read from your reply.")
    assert "no integer in the reply" in observation


def test_details_feedback_echoes_a_long_answer_cut_short():
    env = make(feedback="details")
    env.reset(seed=0, options={"task_index": 2})
    observation, *_ = env.step("9" * 4000)
    assert "Your answer was read as: 999" in observation and "more characters]" in observation
    assert len(observation) < 3000


def test_details_feedback_reports_partial_credit():
    env = make(feedback="details")
    env.reset(seed=0, options={"task_index": 2})
    observation, *_ = env.step("half 4")
    assert "Partial credit: 0.50." in observation


def test_neutral_feedback_reveals_nothing_and_runs_every_attempt():
    env = make(feedback="none", max_attempts=3)
    env.reset(seed=0, options={"task_index": 2})
    right, *_ = env.step("6")
    wrong, *_ = env.step("5")
    assert right.replace("2 attempts", "N") == wrong.replace("1 attempt", "N")
    _, _, terminated, _, info = env.step("6")
    assert terminated and info["turn"] == 3


def test_conversation_alternates_and_starts_with_the_base_prompt():
    base = gym.make(BASE_ID)
    prompt, _ = base.reset(seed=5)
    env = make(max_attempts=3)
    observation, info = env.reset(seed=5)
    assert observation == prompt  # same seed, same task, same prompt
    env.step("1")
    _, _, _, _, info = env.step("2")
    roles = [message["role"] for message in info["messages"]]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user"]
    assert info["messages"][0]["content"] == "Answer with an integer."


def test_an_unjudgeable_attempt_ends_the_episode_as_an_infra_error():
    env = make(max_attempts=3)
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step("crash")
    assert terminated and reward == 0.0 and info["infra_error"]
    assert info["attempt_scores"] == []


def test_wraps_an_env_instance_and_closes_it():
    base = gym.make(BASE_ID)
    env = SelfCorrectEnv(base, max_attempts=2)
    env.reset(seed=0)
    assert env.step(env.oracle_reply())[1] == 1.0
    env.close()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_attempts": 0},
        {"feedback": "verbose"},
        {"reward": "sum"},
        {"bonus": 1.5},
        {"restate": "yes"},
        {"env_kwargs": {"x": 1}, "env": gym.make(BASE_ID)},
    ],
)
def test_bad_configuration_names_the_fix(kwargs):
    kwargs = {"env": BASE_ID, **kwargs}
    with pytest.raises(EnvConfigError):
        SelfCorrectEnv(**kwargs)


def test_rejects_an_env_that_is_not_single_turn_verifiable():
    with pytest.raises(EnvConfigError, match="VerifiableEnv"):
        SelfCorrectEnv(gym.make("CartPole-v1"))


def test_mentions_gold_matches_whole_tokens_only():
    task = type("T", (), {"answer": 6})()
    assert mentions_gold("expected 6.", task)
    assert not mentions_gold("expected 16 or 6.5", task)
    assert not mentions_gold("line 61", task)


def test_variants_are_registered_for_the_built_in_single_turn_envs():
    from rlvr.envs.registration import (
        BUILTIN_ENVS,
        SELF_CORRECT_VARIANTS,
        EnvEntry,
        self_correct_entries,
    )

    fake = [EnvEntry("rlvr/Math-v0", "x:y"), EnvEntry("rlvr/Other-v0", "x:y")]
    (entry,) = self_correct_entries(fake)
    assert entry.id == "rlvr/MathSelfCorrect-v0"
    assert entry.kwargs == {"env": "rlvr/Math-v0", "max_attempts": 3, "feedback": "binary"}
    built_in = {entry.id for entry in BUILTIN_ENVS}
    for base, (variant, _) in SELF_CORRECT_VARIANTS.items():
        assert (variant in built_in) == (base in built_in)
        if base in built_in:
            env = gym.make(variant)
            check_env(env)
            env.close()


@pytest.mark.parametrize("entry_point", ["is_palindrome", "is_leap_year", "word_break"])
def test_code_feedback_cannot_be_probed_to_hard_code_the_hidden_tests(entry_point):
    """With the failing test's input in the feedback, 'return True, then False for each failing
    input seen' passed these hidden tests in 3 attempts without solving anything (as did a
    smarter prober on 5 of the 6 built-in boolean tasks)."""
    from tests.sandboxes.conftest import local_available

    require_service("the local sandbox", local_available()[0])
    env = gym.make("rlvr/CodeSelfCorrect-v0")
    index = next(i for i, t in enumerate(env.unwrapped.judge.tasks) if entry_point in t.id)
    env.reset(seed=0, options={"task_index": index})
    seen_false: list[str] = []  # inputs shown as failing tests, as the feedback writes them
    reward, terminated = 0.0, False
    while not terminated:
        code = (
            f"def {entry_point}(*args):\n"
            f"    return ', '.join(map(repr, args)) not in {seen_false!r}\n"
        )
        observation, reward, terminated, _, _ = env.step(f"```python\n{code}```")
        failure = re.search(rf"First failure: {entry_point}\((.*)\) returned True", observation)
        if failure:
            seen_false.append(failure.group(1))
    env.close()
    assert reward == 0.0 and not seen_false
