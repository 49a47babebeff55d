"""rlvr/WikiQA-v0: multi-hop questions answered by reading the generated encyclopedia."""

from __future__ import annotations

import time

import gymnasium as gym
import pytest

import rlvr  # noqa: F401
from rlvr.envs import Task, check_env
from rlvr.envs.tools import format_tool_call
from rlvr.envs.web.wikiqa import NormalizedMatchVerifier

SIZE = 300


def make(**kwargs):
    return gym.make("rlvr/WikiQA-v0", site_size=SIZE, **kwargs)


def test_registered_env_passes_check_env():
    env = gym.make("rlvr/WikiQA-v0")
    check_env(env)
    env.close()


@pytest.mark.parametrize("hops", [1, 2, 3, 4])
def test_the_oracle_reads_one_page_per_hop_then_answers(hops):
    env = make(difficulty=hops)
    _, info = env.reset(seed=hops)
    task = env.unwrapped.task
    assert len(task.metadata["pages"]) == hops
    replies = []
    for _ in range(12):
        replies.append(env.unwrapped.oracle_reply())
        _, reward, terminated, _, info = env.step(replies[-1])
        if terminated:
            break
    assert reward == 1.0 and info["verdict"]["status"] == "correct"
    # search + follow the first result, then one link per further page, then the answer
    assert len(replies) == 1 + hops + 1
    assert replies[-1].endswith(f"Answer: {task.answer}")
    visited = [call["name"] for call in env.unwrapped.interaction.calls]
    assert visited == ["search"] + ["follow_link"] * hops
    env.close()


def test_the_oracle_answers_a_pinned_task_that_names_no_pages():
    env = make()
    env.reset(options={"task": {"prompt": "Who founded Acme?", "answer": "Ada Lovelace"}})
    _, reward, terminated, _, info = env.step(env.unwrapped.oracle_reply())
    assert (reward, terminated, info["verdict"]["status"]) == (1.0, True, "correct")
    env.close()


def test_the_oracle_finds_its_way_from_anywhere():
    env = make(difficulty=3)
    env.reset(seed=9)
    env.step(format_tool_call("open_page", url="/category/company"))
    env.step(format_tool_call("follow_link", number=7))
    total = 0.0
    for _ in range(10):
        _, reward, terminated, _, _ = env.step(env.unwrapped.oracle_reply())
        total += reward
        if terminated:
            break
    assert total == 1.0
    env.close()


@pytest.mark.parametrize(
    ("reply", "gold", "status"),
    [
        ("Answer: 1,427,046", "1427046", "correct"),
        ("I read the page.\nanswer: The Kraith Crown.", "kraith crown", "correct"),
        ("<answer>Velmora</answer> is my guess", "Velmora", "correct"),
        ("Velmora", "Velmora", "correct"),
        ("It is Velmora, or maybe Qarth.", "Velmora", "incorrect"),
        ("Answer: Velmora or Qarth", "Velmora", "incorrect"),
        ("Answer:", "Velmora", "unparsable"),
        ("Answer:\nVelmora", "Velmora", "correct"),
        ("<answer>Velmora</answer> <answer>Qarth</answer>", "Velmora", "incorrect"),
        ("Answer: Velmora\nAnswer: Qarth", "Velmora", "incorrect"),
        ("", "Velmora", "unparsable"),
    ],
)
def test_answers_are_matched_after_normalisation(reply, gold, status):
    verdict = NormalizedMatchVerifier().verify(reply, Task("t", "q", gold))
    assert verdict.status.value == status


@pytest.mark.parametrize("reply", ["\n" * 20_000, "<answer>" * 20_000, "\t\n" * 10_000])
def test_adversarial_answers_are_judged_fast(reply):
    start = time.process_time()
    verdict = NormalizedMatchVerifier().verify(reply, Task("t", "q", "Velmora"))
    assert time.process_time() - start < 1.0  # the regular expressions took seconds to hours
    assert verdict.status.value in ("incorrect", "unparsable")


def test_a_wrong_answer_or_a_tool_loop_earns_nothing():
    env = make()
    env.reset(seed=0)
    _, reward, terminated, _, _ = env.step("Answer: Atlantis")
    assert (reward, terminated) == (0.0, True)
    env.reset(seed=0)
    total, steps = 0.0, 0
    while True:
        _, reward, terminated, truncated, _ = env.step(format_tool_call("search", query="x"))
        total, steps = total + reward, steps + 1
        if terminated or truncated:
            break
    assert (steps, truncated, total) == (20, True, 0.0)
    env.close()
