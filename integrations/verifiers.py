"""rlvr envs as verifiers environments (extra `verifiers-env`; written against verifiers 0.4.0).

    from rlvr.integrations.verifiers import load_environment
    env = load_environment("rlvr/ToolMath-v0", num_tasks=100)       # a verifiers `vf.Env`

or, with verifiers' own command line (the plugin id is `rlvr-gym`, the top-level module
`rlvr_gym` that re-exports this one):

    vf-eval rlvr-gym --env.taskset.env-id rlvr/Math-v0 -m MODEL ...

verifiers 0.4 builds an environment from a *taskset* (the tasks: here the first `num_tasks`
episodes of the rlvr env, episode i reset with seed `seed + i`) and an `Env` whose `run()` plays
one episode: as in verifiers' own OpenEnv and TextArena tasksets, the rlvr env plays the user.
The model's reply is stepped into the env; the env's feedback (a tool's result, a self-correction
hint, a SQL result) comes back as the next user turn, until the env ends the episode: multi-turn
where the env is. The episode's return is recorded as the reward `rlvr_reward`, its verdict in
`trace.info["rlvr_verdict"]`. An episode with `info["infra_error"]` raises `InfraError` in `run()`:
verifiers records it as the episode's error, so it is retried or dropped, never scored 0.

`url=` plays a served env (`rlvr serve`, through `remote/OpenEnv-v0`) instead of making it here.

The agent's harness is `RlvrChatHarness`: verifiers' tool-less chat program (its `null`
harness), run with this interpreter instead of a uv-managed environment, so an evaluation needs
no download. It executes no code; the env's own sandbox judges code.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import os
import sys
from collections.abc import Iterator
from typing import Any

import gymnasium as gym

from rlvr.integrations.errors import InfraError, IntegrationConfigError


def _import_verifiers() -> None:
    """Import PyPI's `verifiers`, not the `verifiers/` folder of an rlvr-gym checkout (the source
    of `rlvr.verifiers`), which shadows it when Python runs from the checkout's root."""
    loaded = sys.modules.get("verifiers")
    if loaded is not None:
        if not hasattr(loaded, "__path__") or not any(
            os.path.isdir(os.path.join(p, "v1")) for p in loaded.__path__
        ):
            raise ImportError(f"`verifiers` is already imported from {loaded.__file__}")
        return
    saved = list(sys.path)
    sys.path[:] = [p for p in saved if not _shadows(p)]
    try:
        importlib.import_module("verifiers.v1")
    finally:
        sys.path[:] = saved


def _shadows(entry: str) -> bool:
    folder = os.path.join(entry or os.getcwd(), "verifiers")
    return os.path.isfile(os.path.join(folder, "__init__.py")) and not os.path.isdir(
        os.path.join(folder, "v1")
    )


try:
    _import_verifiers()
    import verifiers.v1 as vf
    from pydantic import Field
    from verifiers.v1.harnesses.null import NullHarness
    from verifiers.v1.utils.loaders import load_environment as load_vf_environment
    from verifiers.v1.utils.loaders import resolve_env_config
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError(
        f"the verifiers adapter needs the verifiers-env extra: pip install "
        f"'rlvr-gym[verifiers-env]' ({exc})"
    ) from None

PLUGIN_ID = "rlvr-gym"
"""The taskset (and env, and harness) id verifiers resolves: the top-level module `rlvr_gym`."""


class RlvrTasksetConfig(vf.TasksetConfig):
    """Which rlvr env, and which of its episodes, are the tasks."""

    env_id: str = "rlvr/Math-v0"
    """A registered single-agent env id (`rlvr envs`)."""
    env_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Keyword arguments of `gym.make(env_id, ...)`."""
    url: str | None = None
    """A `rlvr serve` server to play instead of making the env here."""
    num_tasks: int = Field(100, ge=1)
    """How many tasks: the episodes of seeds `seed`, `seed + 1`, ..."""
    seed: int = Field(0, ge=0)


class RlvrData(vf.TaskData):
    seed: int
    """The reset seed of this task's episode."""


class RlvrTask(vf.Task[RlvrData]):
    pass


def make_env(config: RlvrTasksetConfig) -> gym.Env:
    """The rlvr env a config names: made here, or the served one at `config.url`."""
    import rlvr  # noqa: F401  (registers the envs)

    if config.url is not None:
        return gym.make("remote/OpenEnv-v0", url=config.url)
    return gym.make(config.env_id, **config.env_kwargs)


class RlvrTaskset(vf.Taskset[RlvrTask, RlvrTasksetConfig]):
    """The first `num_tasks` episodes of an rlvr env: each task's prompt is its episode's
    opening message, its system prompt the env's."""

    def load(self) -> Iterator[RlvrTask]:
        env = make_env(self.config)
        try:
            for seed in range(self.config.seed, self.config.seed + self.config.num_tasks):
                _, info = env.reset(seed=seed)
                system, prompt = _opening(info["messages"])
                yield RlvrTask(
                    RlvrData(
                        id=str(info["task_id"]),
                        name=f"{self.config.url or self.config.env_id}#{seed}",
                        prompt=prompt,
                        system_prompt=system,
                        seed=seed,
                    ),
                    self.config.task,
                )
        finally:
            env.close()


def _opening(messages: list[dict[str, Any]]) -> tuple[str | None, str]:
    system = messages[0]["content"] if messages and messages[0]["role"] == "system" else None
    users = [m["content"] for m in messages if m["role"] != "system"]
    if len(users) != 1:
        raise IntegrationConfigError(
            f"an episode must open with one message to the agent, got {len(users)}"
        )
    return system, str(users[0])


class RlvrEnvConfig(vf.EnvConfig):
    # The chat loop runs here (a subprocess of this interpreter): it executes no code, so it
    # needs no container; the env's own sandbox runs model-written code.
    player: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())


class RlvrEnv(vf.Env[RlvrEnvConfig]):
    """One episode of the rlvr env per task, the env playing the user."""

    async def run(self, task: Any, agents: Any) -> None:
        config = self.taskset.config
        env = await asyncio.to_thread(make_env, config)
        try:
            await asyncio.to_thread(env.reset, seed=task.data.seed)
            total, last_info = 0.0, dict[str, Any]()
            async with agents.player.interaction(task) as interaction:
                segment = await interaction.turn()
                while not segment.terminated:
                    text, reward, terminated, truncated, last_info = await asyncio.to_thread(
                        env.step, segment.last_reply
                    )
                    total += float(reward)
                    if last_info.get("infra_error"):
                        break
                    if terminated or truncated:
                        break
                    segment = await interaction.turn(text or "(no feedback)")
        finally:
            await asyncio.to_thread(env.close)
        trace = interaction.trace
        if last_info.get("infra_error"):
            raise InfraError(
                f"{config.env_id}: our machinery failed on this episode (infra_error); "
                "it is not scored"
            )
        trace.record_reward("rlvr_reward", total)
        trace.info["rlvr_verdict"] = last_info.get("verdict")
        trace.info["rlvr_task_id"] = task.data.id


class _HostPython:
    """A runtime that runs a PEP 723 script with this interpreter (whose packages include
    verifiers' own dependencies) instead of a uv environment it would have to download."""

    def __init__(self, runtime: Any) -> None:
        self._runtime = runtime

    def __getattr__(self, name: str) -> Any:
        return getattr(self._runtime, name)

    async def prepare_uv_script(
        self, script: str | bytes, env: Any = None, *, activate: bool = True
    ) -> list[str]:
        data = script.encode() if isinstance(script, str) else script
        path = f".rlvr-chat-{hashlib.sha256(data).hexdigest()[:16]}.py"
        await self._runtime.write(path, data)
        return [sys.executable, path]


class RlvrChatHarness(NullHarness):
    """verifiers' `null` chat loop (no tools, no code execution), run by this interpreter."""

    NEEDS_CONTAINER = False

    async def setup(self, runtime: Any) -> None:
        return None

    async def launch(self, ctx: Any, trace: Any, runtime: Any, *args: Any, **kwargs: Any) -> Any:
        return await super().launch(ctx, trace, _HostPython(runtime), *args, **kwargs)


def load_environment(
    env_id: str,
    *,
    url: str | None = None,
    num_tasks: int = 100,
    seed: int = 0,
    **env_kwargs: Any,
) -> vf.Env:
    """The verifiers environment of an rlvr env: tasks are its episodes of seeds `seed` to
    `seed + num_tasks - 1`, played multi-turn where the env is (`env_kwargs` go to `gym.make`;
    `url` plays a `rlvr serve` server instead)."""
    import rlvr  # noqa: F401  (registers the envs)

    if url is None and env_id not in gym.registry:
        raise IntegrationConfigError(f"unknown env {env_id!r}; `rlvr envs` lists them")
    taskset = RlvrTasksetConfig(
        id=PLUGIN_ID,
        env_id=env_id,
        env_kwargs=dict(env_kwargs),
        url=url,
        num_tasks=num_tasks,
        seed=seed,
    )
    return load_vf_environment(resolve_env_config({"taskset": taskset.model_dump()}))


__all__ = [
    "PLUGIN_ID",
    "RlvrChatHarness",
    "RlvrData",
    "RlvrEnv",
    "RlvrEnvConfig",
    "RlvrTask",
    "RlvrTaskset",
    "RlvrTasksetConfig",
    "load_environment",
]
