"""`RayRolloutCollector`: `RolloutCollector` with its envs on Ray env workers.

The collector's `collect(tasks) -> list[Episode]` contract is unchanged, so GRPO and PPO run as
they do in one process: the policy, the token-level actor and the records stay here (the
driver); each round the workers step their episodes' replies at once (`rlvr.distributed`). The
envs of a step are leased from the workers' kept envs, so their sandbox pools and databases stay
warm between steps.

Needs the `ray` extra (`pip install 'rlvr-gym[ray]'`); `import rlvr.agents` does not import it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

import ray

from rlvr.agents.policy import Sample, SamplingParams, TrainablePolicy
from rlvr.agents.rollouts import EnvSpec, RolloutCollector
from rlvr.distributed import EnvWorkers
from rlvr.rollout.hosts import EnvBatch


class RayRolloutCollector(RolloutCollector):
    """A `RolloutCollector` whose envs run on `workers` (an `EnvWorkers` pool, which the caller
    owns and closes)."""

    def __init__(
        self,
        policy: TrainablePolicy,
        envs: Sequence[EnvSpec],
        workers: EnvWorkers,
        *,
        group_size: int,
        sampling: SamplingParams,
        max_turns: int | None = None,
        shared_turns: int = 0,
        shared_greedy: bool = False,
    ) -> None:
        super().__init__(
            policy,
            envs,
            group_size=group_size,
            sampling=sampling,
            max_turns=max_turns,
            shared_turns=shared_turns,
            shared_greedy=shared_greedy,
        )
        self.workers = workers

    def _batch(self, specs: Sequence[int]) -> EnvBatch:
        return self.workers.batch([(self.specs[i].id, self.specs[i].kwargs) for i in specs])


# --- a generator process for asynchronous rollouts ------------------------------------------------


class Generator:
    """A Ray actor holding a copy of the policy that samples token ids (the generator of
    asynchronous training): generation runs in its own process, beside the learner's update."""

    def __init__(self, policy: TrainablePolicy, seed: int, threads: int | None) -> None:
        import torch

        if threads is not None:
            torch.set_num_threads(threads)
        self.policy = policy
        self.generator = torch.Generator(device=policy.device).manual_seed(seed)

    def load_weights(self, state: dict[str, Any]) -> None:
        self.policy.model.load_state_dict(state)

    def sample(self, prompts: Sequence[Sequence[int]], sampling: SamplingParams) -> list[Sample]:
        return self.policy.sample(prompts, sampling, self.generator)


class _RemoteSampling:
    """`policy` with its `sample` run by a `Generator` actor: the token-level actor of the
    collector encodes and decodes here (the tokenizer is cheap) and samples there."""

    def __init__(self, policy: TrainablePolicy, generator: Any) -> None:
        self._policy = policy
        self._generator = generator

    def __getattr__(self, name: str) -> Any:
        return getattr(self._policy, name)

    def sample(
        self, prompts: Sequence[Sequence[int]], sampling: SamplingParams, generator: Any = None
    ) -> list[Sample]:
        return ray.get(self._generator.sample.remote([list(p) for p in prompts], sampling))


def remote_sampler(
    policy: TrainablePolicy, seed: int, threads: int | None = None
) -> tuple[TrainablePolicy, Callable[[dict[str, Any]], None], Callable[[], None]]:
    """A sampler for `AsyncRollouts` in a Ray process of its own: (the policy the collector
    samples with, the `load_weights` that publishes weights to it, a function ending it). The
    generator asks Ray for no CPU: like an inference server's GPU, it is not an env worker's."""
    actor: Any = ray.remote(Generator).options(num_cpus=0).remote(policy, seed, threads)
    sampling = cast("TrainablePolicy", _RemoteSampling(policy, actor))

    def load_weights(state: dict[str, Any]) -> None:
        ray.get(actor.load_weights.remote(state))

    return sampling, load_weights, lambda: ray.kill(actor)
