"""The Judge protocol and interactions: a judge used alone, shared, under several interactions."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import rlvr  # noqa: F401
from rlvr.envs import (
    EnvConfigError,
    Outcome,
    Start,
    TextEnv,
    VerifiableEnv,
    check_env,
    register_task_env,
)
from rlvr.envs.interactions import Interaction, SelfCorrect, SingleTurn
from rlvr.envs.judge import Judge, TaskJudge
from rlvr.envs.self_correct import SelfCorrectEnv
from rlvr.leaderboards.provenance import verifier_info
from rlvr.rollout.tasks import task_fingerprint
from rlvr.verifiers.types import Task, TaskFormatError, Verdict
from tests.envs.toy_envs import CAPITALS, GuessNumberEnv, exact_match


class CapitalsVerifier:
    VERSION = "3"

    def verify(self, response: str, task: Task) -> Verdict:
        if exact_match(response, task):
            return Verdict.correct(response.strip())
        return Verdict.incorrect(response.strip()[:20], "not that city")


def capitals_judge() -> TaskJudge:
    return TaskJudge(CAPITALS, CapitalsVerifier(), system_prompt="Name the city.")


class NoLimaJudge(TaskJudge):
    def check(self, task: Task) -> None:
        if task.answer == "Lima":
            raise TaskFormatError(f"task {task.id!r}: Lima is refused")


def test_tasks_known_to_pass_the_check_are_not_checked_again_but_pinned_ones_are():
    with pytest.raises(EnvConfigError, match=r"tasks item 1 \(task .*Lima is refused"):
        NoLimaJudge(CAPITALS, CapitalsVerifier())
    judge = NoLimaJudge(CAPITALS, CapitalsVerifier(), checked=True)  # trusted: not checked
    assert len(judge.tasks) == len(CAPITALS)
    with pytest.raises(EnvConfigError, match=r"options\['task'\]: .*Lima is refused"):
        judge.pose(np.random.default_rng(0), {"task": {"prompt": "Peru?", "answer": "Lima"}})


def test_a_judge_works_without_an_env():
    judge = capitals_judge()
    assert isinstance(judge, Judge)
    task = judge.pose(np.random.default_rng(0), {})
    assert task == judge.pose(np.random.default_rng(0), {})  # drawn with the rng it is given
    assert judge.pose(np.random.default_rng(0), {"task_index": 1}).answer == "Lima"
    assert judge.prompt(task) == task.prompt
    right = judge.judge(judge.reference_reply(task), task)
    assert (right.reward, right.terminated, right.feedback) == (1.0, True, "Correct.")
    wrong = judge.judge("Atlantis", task)
    assert wrong.reward == 0.0 and wrong.feedback == "Incorrect. not that city"
    assert not wrong.infra_error and task.answer not in wrong.feedback
    assert judge.describe() == {
        "name": "tests.envs.test_judge.CapitalsVerifier",
        "version": "3",
        "declared": True,
    }
    with pytest.raises(EnvConfigError, match="unknown reset options"):
        judge.pose(np.random.default_rng(0), {"index": 1})
    judge.close()
    judge.close()  # closing twice is allowed


def test_one_judge_under_two_interactions_poses_the_same_tasks():
    judge = capitals_judge()
    single = TextEnv(judge)
    retry = TextEnv(judge, SelfCorrect(max_attempts=2))
    for seed in range(6):
        assert single.reset(seed=seed) == retry.reset(seed=seed)
        assert single.task == retry.task
    assert single.system_prompt == retry.system_prompt == "Name the city."
    assert single.step("Atlantis")[2] is True  # one reply ends the episode
    observation, reward, terminated, _, _ = retry.step("Atlantis")
    assert reward == 0.0
    assert not terminated and "1 attempt left" in observation
    assert retry.step(retry.oracle_reply())[1] == 1.0
    check_env(single)
    check_env(retry)


def test_a_shared_judge_keeps_no_episode_state():
    judge = capitals_judge()
    first, second = TextEnv(judge), TextEnv(judge)
    first.reset(options={"task_index": 0})
    second.reset(options={"task_index": 1})
    assert first.step("Paris")[1] == 1.0  # judged against its own episode's task
    assert second.step("Lima")[1] == 1.0


class Hinted(Interaction):
    """A custom interaction: the first wrong reply gets the answer's first letter, then one more
    try; a right reply after the hint earns half."""

    def start(self, env: TextEnv, task: Task) -> Start:
        self.hinted = False
        return super().start(env, task)

    def answer(self, env: TextEnv, reply: str) -> Outcome:
        outcome = super().answer(env, reply)
        if outcome.verdict.is_correct or self.hinted or outcome.infra_error:
            outcome.reward *= 0.5 if self.hinted else 1.0
            return outcome
        self.hinted = True
        return Outcome(f"It starts with {str(env.task.answer)[0]}.", 0.0, False)


def test_a_custom_interaction_over_a_judge():
    env = TextEnv(capitals_judge(), Hinted())
    check_env(env)
    env.reset(options={"task_index": 1})  # Lima
    observation, reward, terminated, _, _ = env.step("Quito")
    assert (observation, reward, terminated) == ("It starts with L.", 0.0, False)
    _, reward, terminated, _, info = env.step("Lima")
    assert (reward, terminated, info["turn"]) == (0.5, True, 2)


def test_the_system_prompt_of_an_env_with_a_judge_is_the_judges():
    with pytest.raises(EnvConfigError, match="is the judge's"):
        TextEnv(capitals_judge(), system_prompt="other")


def test_provenance_is_read_from_the_judge():
    class VersionedJudge(TaskJudge):
        VERSION = "7"

        def describe(self):
            return {"name": "mine", "version": self.VERSION, "declared": True}

    env = TextEnv(VersionedJudge(CAPITALS, exact_match))
    assert verifier_info(env) == {"name": "mine", "version": "7", "declared": True}
    wrapped = SelfCorrectEnv(VerifiableEnv(CAPITALS, CapitalsVerifier()))
    assert verifier_info(wrapped) == wrapped.judge.describe()
    assert verifier_info(wrapped)["version"] == "3"

    class VersionedGuess(GuessNumberEnv):
        verifier_version = "2"

    assert verifier_info(VersionedGuess())["version"] == "2"  # an env without a judge
    assert verifier_info(GuessNumberEnv())["version"].startswith("rlvr-gym ")


def test_the_task_fingerprint_comes_from_env_unwrapped_task():
    env = gym.make("rlvr/Math-v0", families=["arithmetic"], difficulty=1)
    env.reset(seed=3)
    fingerprint = task_fingerprint(env)
    wrapped = gym.make("rlvr/MathSelfCorrect-v0", env_kwargs={"families": ["arithmetic"]})
    wrapped.reset(seed=3, options={"task": env.unwrapped.task})
    assert wrapped.unwrapped.task == env.unwrapped.task
    assert task_fingerprint(wrapped) == fingerprint
    env.reset(seed=4)
    assert task_fingerprint(env) != fingerprint
    assert task_fingerprint(GuessNumberEnv()) is None  # no task exposed


def test_wrappers_take_split_and_give_it_to_the_env_they_wrap():
    held_out = SelfCorrectEnv("rlvr/Math-v0", split="test", env_kwargs={"split": "train"})
    assert held_out.judge.tasks.split == "test"
    made = gym.make("rlvr/MathSelfCorrect-v0", split="test")
    assert made.unwrapped.judge.tasks.split == "test"
    with pytest.raises(EnvConfigError, match="only when env is an id"):
        SelfCorrectEnv(gym.make("rlvr/Math-v0"), split="test")
    register_task_env("judgetest/NoSplit-v0", CAPITALS, exact_match, override=True)
    with pytest.raises(EnvConfigError, match="unknown argument.*split"):  # no splits: it says so
        SelfCorrectEnv("judgetest/NoSplit-v0", split="test")


def test_a_wrapper_leaves_the_wrapped_envs_generator_alone():
    base = VerifiableEnv(CAPITALS, exact_match)
    base.reset(seed=1)
    before = base.np_random.bit_generator.state
    wrapper = SelfCorrectEnv(base)
    wrapper.reset(seed=5)
    assert base.np_random.bit_generator.state == before


def test_verifiable_env_subclass_hooks_hold_alone_and_wrapped():
    class Shouting(VerifiableEnv):
        def render_prompt(self, task):
            return super().render_prompt(task).upper()

        def reference_reply(self, task):
            return f"  {task.answer}  "

    env = Shouting(CAPITALS, exact_match)
    observation, _ = env.reset(options={"task_index": 0})
    assert observation == CAPITALS[0]["prompt"].upper()
    wrapped = SelfCorrectEnv(Shouting(CAPITALS, exact_match))
    assert wrapped.reset(options={"task_index": 0})[0] == observation
    assert wrapped.oracle_reply() == "  Paris  "
    assert isinstance(wrapped.interaction, SelfCorrect)
    assert isinstance(env.interaction, SingleTurn)


def test_every_registered_env_is_a_text_env_built_from_a_judge_one_level_down():
    from rlvr.envs.registration import rlvr_env_ids

    for env_id in rlvr_env_ids():
        env = gym.make(env_id)
        base = env.unwrapped
        assert type(base).__bases__ == (TextEnv,), env_id
        assert isinstance(base.judge, Judge) and isinstance(base.interaction, Interaction)
        env.close()


def test_the_tool_wrapper_takes_split_and_its_judge_works_alone():
    from rlvr.envs.tools import ToolUse, VerifiableToolEnv, calculator_tool

    env = VerifiableToolEnv("rlvr/Math-v0", [calculator_tool()], split="test")
    assert env.judge.tasks.split == "test" and isinstance(env.interaction, ToolUse)
    tool_math = gym.make("rlvr/ToolMath-v0")
    tool_math.reset(seed=0)
    judge, task = tool_math.unwrapped.judge, tool_math.unwrapped.task
    assert judge.judge(judge.reference_reply(task), task).reward == 1.0  # no tools needed
    assert judge.judge("\\boxed{1}", task).reward == 0.0
    assert tool_math.unwrapped.oracle_reply().startswith("<tool_call>")  # the env's strategy


def test_webshop_judges_a_final_reply_and_grades_a_purchase():
    env = gym.make("rlvr/WebShop-v0", site_size=300)
    env.reset(seed=2)
    judge, task = env.unwrapped.judge, env.unwrapped.task
    assert judge.describe()["name"] == "rlvr.envs.web.webshop.WebShopJudge"
    outcome = judge.judge("I would buy the red one.", task)
    assert (outcome.reward, outcome.terminated) == (0.0, True)
    assert outcome.verdict.details == "nothing was bought"
    goal = env.unwrapped.goal
    target = env.unwrapped.catalog.by_id[goal.target]
    purchase = {"product_id": target.id, "title": target.title, "price": "$1.00"}
    assert judge.grade({**purchase, "options": dict(goal.options)}, task).reward == 1.0
    env.close()
