"""rlvr envs as verifiers environments, run by verifiers' own evaluation loop (`run_eval`, what
`vf-eval` runs) against a scripted OpenAI-compatible model on loopback."""

from __future__ import annotations

import asyncio

import gymnasium as gym
import pytest

import rlvr  # noqa: F401  (registers the envs)
from rlvr.envs import register_task_env
from rlvr.integrations.errors import IntegrationConfigError
from rlvr.verifiers.types import Verdict
from tests.conftest import require_extra
from tests.integrations.scripted_openai import ScriptedChat

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def adapter():
    return require_extra("rlvr.integrations.verifiers", "verifiers-env")


def oracle_script(env_id: str, seeds, **kwargs) -> tuple[dict, dict, set]:
    """The oracle's replies by (opening message, turn), each seed's number of turns, and the
    env's feedback texts (what it answers a reply that does not end the episode)."""
    env = gym.make(env_id, **kwargs)
    script, turns, feedback = {}, {}, set()
    try:
        for seed in seeds:
            _, info = env.reset(seed=seed)
            opening, turn = info["messages"][-1]["content"], 0
            while True:
                reply = env.unwrapped.oracle_reply()
                script[(opening, turn)] = reply
                text, _, terminated, truncated, info = env.step(reply)
                turn += 1
                if terminated or truncated:
                    break
                feedback.add(text)
            turns[seed] = turn
    finally:
        env.close()
    return script, turns, feedback


def run_verifiers_eval(environment, chat: ScriptedChat, tmp_path, monkeypatch):
    from verifiers.v1.cli.eval.runner import run_eval
    from verifiers.v1.configs.cli.eval import EvalConfig

    monkeypatch.setenv("SCRIPTED_API_KEY", "unused")
    config = EvalConfig(
        env=environment.config,
        model="scripted",
        client={"base_url": chat.url, "api_key_var": "SCRIPTED_API_KEY"},
        push=False,
        rich=None,
        output_dir=tmp_path,
    )
    return asyncio.run(run_eval(config))


def test_verifiers_eval_plays_a_multi_turn_env(adapter, tmp_path, monkeypatch):
    script, turns, feedback = oracle_script("rlvr/ToolMath-v0", range(3))
    chat = ScriptedChat(script)
    try:
        environment = adapter.load_environment("rlvr/ToolMath-v0", num_tasks=3)
        assert type(environment).__name__ == "RlvrEnv"
        episodes = run_verifiers_eval(environment, chat, tmp_path, monkeypatch)
    finally:
        chat.close()
    assert len(episodes) == 3 and all(episode.ok for episode in episodes)
    for episode in episodes:
        (trace,) = episode.traces
        assert trace.rewards["rlvr_reward"].score == 1.0
        assert trace.info["rlvr_verdict"]["status"] == "correct"
        assert trace.num_turns == turns[episode.task.data.seed] >= 2  # a tool call, an answer
    # the env's tool results reached the model as the next user turn
    last_user = {
        str(request["messages"][-1]["content"])
        for request in chat.requests
        if request["messages"][-1]["role"] == "user"
    }
    assert feedback and feedback <= last_user


def test_verifiers_eval_scores_wrong_single_turn_replies_zero(adapter, tmp_path, monkeypatch):
    chat = ScriptedChat({})  # every reply: "I don't know."
    try:
        environment = adapter.load_environment("rlvr/Math-v0", num_tasks=2, seed=5)
        episodes = run_verifiers_eval(environment, chat, tmp_path, monkeypatch)
    finally:
        chat.close()
    assert all(episode.ok for episode in episodes)
    assert [e.traces[0].rewards["rlvr_reward"].score for e in episodes] == [0.0, 0.0]
    assert {e.traces[0].info["rlvr_verdict"]["status"] for e in episodes} == {"unparsable"}


def test_an_infra_error_fails_the_episode_never_a_zero(adapter, tmp_path, monkeypatch):
    def broken_grader(reply: str, task) -> Verdict:
        return Verdict.error("grading service unreachable")

    register_task_env(
        "rlvrtest/BrokenGrader-v0",
        tasks=[{"prompt": "2+2?", "answer": "4"}],
        verify=broken_grader,
        override=True,
    )
    chat = ScriptedChat({})
    try:
        environment = adapter.load_environment("rlvrtest/BrokenGrader-v0", num_tasks=1)
        (episode,) = run_verifiers_eval(environment, chat, tmp_path, monkeypatch)
    finally:
        chat.close()
    assert not episode.ok
    assert any("infra_error" in error.message for error in episode.errors)
    assert all("rlvr_reward" not in trace.rewards for trace in episode.traces)


def test_load_environment_refuses_an_unknown_env(adapter):
    with pytest.raises(IntegrationConfigError, match="unknown env 'rlvr/Nope-v0'"):
        adapter.load_environment("rlvr/Nope-v0")


def test_the_plugin_id_resolves_to_the_rlvr_taskset(adapter):
    from verifiers.v1.utils.loaders import load_environment, resolve_env_config

    config = resolve_env_config(
        {"taskset": {"id": "rlvr-gym", "env_id": "rlvr/Math-v0", "num_tasks": 2}}
    )
    environment = load_environment(config)
    tasks = list(environment.taskset)
    assert [task.data.seed for task in tasks] == [0, 1]
    env = gym.make("rlvr/Math-v0")
    _, info = env.reset(seed=1)
    assert tasks[1].data.prompt == info["messages"][-1]["content"]
    system = [m["content"] for m in info["messages"] if m["role"] == "system"]
    assert tasks[1].data.system_prompt == (system[0] if system else None)
