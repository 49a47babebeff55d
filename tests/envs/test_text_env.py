"""The TextEnv contract, through a user-registered single-turn env and a multi-turn one."""

from __future__ import annotations

import ast
import copy

import gymnasium as gym
import pytest

import rlvr  # noqa: F401
from rlvr.envs import (
    EnvCheckError,
    EnvConfigError,
    ResetNeeded,
    Task,
    TextEnv,
    Verdict,
    VerifiableEnv,
    check_env,
    register_task_env,
)
from rlvr.envs.core import copy_messages
from rlvr.envs.judge import TaskJudge
from tests.envs.toy_envs import CAPITALS, GuessNumberEnv, exact_match

SYSTEM = "Answer with the city name only."
CAPITALS_TASK = Task(id="france", prompt=CAPITALS[0]["prompt"], answer="Paris")


@pytest.fixture(scope="module")
def capitals_id() -> str:
    env_id = "rlvrtest/Capitals-v0"
    register_task_env(env_id, CAPITALS, exact_match, system_prompt=SYSTEM, override=True)
    return env_id


def test_reset_returns_prompt_and_standard_info(capitals_id):
    env = gym.make(capitals_id)
    obs, info = env.reset(seed=3)
    assert obs in {task["prompt"] for task in CAPITALS}
    assert info["messages"] == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": obs},
    ]
    assert info["turn"] == 0 and info["infra_error"] is False
    assert info["task_id"].startswith("task-")


def test_step_judges_the_reply_and_terminates(capitals_id):
    env = gym.make(capitals_id)
    env.reset(seed=0, options={"task_index": 1})  # Peru
    obs, reward, terminated, truncated, info = env.step("Lima")
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert obs == "Correct."
    assert info["verdict"]["status"] == "correct" and info["verdict"]["score"] == 1.0
    assert info["rewards"] == {"correctness": 1.0}
    assert info["messages"][-1] == {"role": "assistant", "content": "Lima"}
    env.reset(seed=0, options={"task_index": 1})
    _, reward, _, _, info = env.step("Paris")
    assert reward == 0.0 and info["verdict"]["status"] == "incorrect"


def test_same_seed_same_task_and_seeds_cover_tasks(capitals_id):
    env = gym.make(capitals_id)
    assert env.reset(seed=7) == env.reset(seed=7)
    seen = {env.reset(seed=seed)[1]["task_id"] for seed in range(40)}
    assert len(seen) == len(CAPITALS)


def test_options_pin_a_task(capitals_id):
    env = gym.make(capitals_id)
    obs, _ = env.reset(options={"task": {"prompt": "Capital of Italy?", "answer": "Rome"}})
    assert obs == "Capital of Italy?"
    assert env.step("rome")[1] == 1.0
    env.reset(options={"task": Task("my-id", "Capital of Spain?", "Madrid")})
    assert env.step("Madrid")[4]["task_id"] == "my-id"
    with pytest.raises(EnvConfigError, match="unknown reset options"):
        env.reset(options={"tsk": 1})
    with pytest.raises(EnvConfigError, match="missing 'answer'"):
        env.reset(options={"task": {"prompt": "no answer"}})
    with pytest.raises(EnvConfigError, match=r"task_index'\] must be an int from 0 to 4, got 99"):
        env.reset(options={"task_index": 99})


def test_a_registered_task_env_survives_a_refused_first_reset(capitals_id):
    env = gym.make(capitals_id)
    with pytest.raises(EnvConfigError, match="unknown reset options"):
        env.reset(options={"tsk": 1})
    obs, _ = env.reset(options={"task_index": 0})
    assert obs == CAPITALS[0]["prompt"] and env.step("Paris")[1] == 1.0


def test_order_is_enforced():
    env = VerifiableEnv(CAPITALS, exact_match)
    with pytest.raises(ResetNeeded, match="reset"):
        env.step("Paris")
    env.reset(seed=0)
    env.step("Paris")
    with pytest.raises(ResetNeeded, match="episode has ended"):
        env.step("Paris")


def test_non_str_action_is_rejected_without_losing_the_turn():
    env = VerifiableEnv(CAPITALS, exact_match)
    env.reset(seed=0, options={"task_index": 0})
    with pytest.raises(TypeError, match="reply as a str"):
        env.step(b"Paris")
    assert env.step("Paris")[1] == 1.0


def test_info_is_fresh_on_every_call():
    env = VerifiableEnv(CAPITALS, exact_match)
    _, info = env.reset(seed=0)
    info["messages"].append({"role": "user", "content": "tampered"})
    _, _, _, _, step_info = env.step("x")
    assert [m["content"] for m in step_info["messages"]][-1] == "x"
    assert "tampered" not in str(step_info["messages"])


def test_copied_messages_equal_a_deepcopy_and_share_nothing_mutable_with_the_original():
    calls = [{"name": "run", "arguments": {"command": "ls"}}]
    shared = {"role": "tool", "content": "out", "calls": calls, "meta": {"calls": calls}}
    messages = [{"role": "user", "content": "hi"}, shared, shared, ("odd", ["message"])]
    copied = copy_messages(messages)
    assert copied == copy.deepcopy(messages)
    assert copied[1] is copied[2] and copied[1]["calls"] is copied[1]["meta"]["calls"]
    copied[1]["calls"][0]["arguments"]["command"] = "rm -rf /"
    copied[0]["content"] = "tampered"
    copied[3][1].append("tampered")
    assert messages[1]["calls"][0]["arguments"]["command"] == "ls"
    assert messages[0]["content"] == "hi" and messages[3] == ("odd", ["message"])


def test_verifier_exception_is_an_infra_error_not_a_zero():
    def broken(reply, task):
        raise ConnectionError("database went away")

    env = VerifiableEnv(CAPITALS, broken)
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step("Paris")
    assert info["infra_error"] is True
    assert info["verdict"]["status"] == "error" and info["verdict"]["score"] is None
    assert "database went away" in info["verdict"]["details"]
    assert reward == 0.0 and terminated


@pytest.mark.parametrize("returned", [None, "yes", 1.5, float("nan"), -1])
def test_verifier_returning_nonsense_is_an_infra_error(returned):
    env = VerifiableEnv(CAPITALS, lambda reply, task: returned)
    env.reset(seed=0)
    info = env.step("Paris")[4]
    assert info["infra_error"] is True and "return a bool" in info["verdict"]["details"]


def test_format_reward_is_a_separate_term_off_by_default():
    def verify(reply, task):
        if not reply.startswith("ANSWER:"):
            return Verdict.unparsable("start with ANSWER:")
        return exact_match(reply.removeprefix("ANSWER:"), task)

    plain = VerifiableEnv(CAPITALS, verify)
    plain.reset(options={"task_index": 0})
    assert plain.step("ANSWER: Lima")[4]["rewards"] == {"correctness": 0.0}
    shaped = VerifiableEnv(CAPITALS, verify, format_weight=0.1)
    shaped.reset(options={"task_index": 0})
    _, reward, _, _, info = shaped.step("ANSWER: Lima")
    assert info["rewards"] == {"correctness": 0.0, "format": 1.0}
    assert reward == pytest.approx(0.1)
    shaped.reset(options={"task_index": 0})
    assert shaped.step("ANSWER: Paris")[1] == pytest.approx(1.0)
    with pytest.raises(EnvConfigError, match="format_weight"):
        VerifiableEnv(CAPITALS, verify, format_weight=1.5)


def test_render_ansi_shows_the_conversation():
    env = VerifiableEnv(CAPITALS, exact_match, system_prompt=SYSTEM, render_mode="ansi")
    env.reset(options={"task_index": 2})
    env.step("Tokyo")
    text = env.render()
    assert text.index("[system]") < text.index("Japan") < text.index("[assistant]\nTokyo")
    with pytest.raises(EnvConfigError, match="render_mode"):
        VerifiableEnv(CAPITALS, exact_match, render_mode="rgb_array")


def test_registering_twice_needs_a_new_version_or_override(capitals_id):
    with pytest.raises(ValueError, match="already registered"):
        register_task_env(capitals_id, CAPITALS, exact_match)


def test_multi_turn_env_keeps_the_whole_conversation():
    env = GuessNumberEnv()
    env.reset(options={"task_index": 9})  # secret 10
    _, reward, terminated, _, info = env.step("4")
    assert (reward, terminated, info["turn"]) == (0.0, False, 1)
    assert info["messages"][-2:] == [
        {"role": "assistant", "content": "4"},
        {"role": "user", "content": "Higher."},
    ]
    _, reward, terminated, _, info = env.step("10")
    assert (reward, terminated, info["turn"]) == (1.0, True, 2)
    assert [m["role"] for m in info["messages"]] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
    ]


def test_turn_limit_comes_from_time_limit():
    gym.register("rlvrtest/Guess-v0", entry_point=GuessNumberEnv, max_episode_steps=3)
    env = gym.make("rlvrtest/Guess-v0")
    env.reset(options={"task_index": 15})  # secret 16
    results = [env.step("1") for _ in range(3)]
    assert [r[3] for r in results] == [False, False, True]


def test_check_env_passes_good_envs(capitals_id):
    check_env(gym.make(capitals_id))
    gym.register("rlvrtest/GuessChecked-v0", entry_point=GuessNumberEnv, max_episode_steps=8)
    check_env(gym.make("rlvrtest/GuessChecked-v0"))


def test_check_env_catches_a_reward_hack():
    rewards_empty = VerifiableEnv(
        CAPITALS, lambda reply, task: exact_match(reply, task) or not reply
    )
    with pytest.raises(EnvCheckError, match="reply '' earned 1.0"):
        check_env(rewards_empty)
    always_right = VerifiableEnv(CAPITALS, lambda reply, task: True)
    with pytest.raises(EnvCheckError, match="junk scores 0"):
        check_env(always_right)


def test_check_env_catches_a_reader_that_recurses_on_deep_text():
    def normalised_match(reply, task):  # catches only the errors it expects
        try:
            return ast.unparse(ast.parse(reply.strip(), mode="eval")) == task.answer
        except (SyntaxError, ValueError):
            return False

    assert normalised_match("Paris", CAPITALS_TASK) and not normalised_match("Lima", CAPITALS_TASK)
    # The function verifier turns the RecursionError into an error verdict: infra_error.
    with pytest.raises(EnvCheckError, match="deep text is a verdict: .*infrastructure error"):
        check_env(VerifiableEnv(CAPITALS, normalised_match), seeds=(0,))


def test_check_env_catches_a_wrong_oracle():
    class WrongOracle(VerifiableEnv):
        def reference_reply(self, task):
            return "Atlantis"

    with pytest.raises(EnvCheckError, match="oracle's return is 0.0"):
        check_env(WrongOracle(CAPITALS, exact_match))


def test_check_env_catches_nondeterminism():
    import random

    class Unseeded(TaskJudge):
        def pose(self, rng, options):
            return self.tasks[random.randrange(len(self.tasks))]  # global RNG: a bug

    with pytest.raises(EnvCheckError, match="same seed"):
        check_env(TextEnv(Unseeded(CAPITALS, exact_match)), seeds=(0, 1, 2, 3))
