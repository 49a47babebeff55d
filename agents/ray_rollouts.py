"""`RayRolloutCollector`: `RolloutCollector` with its envs on Ray env workers.

The collector's `collect(tasks) -> list[Episode]` contract is unchanged, so GRPO and PPO run as
they do in one process: the policy, the token-level actor and the records stay here (the
driver); each round the workers step their episodes' replies at once (`rlvr.distributed`). The
envs of a step are leased from the workers' kept envs, so their sandbox pools and databases stay
warm between steps.

Needs the `ray` extra (`pip install 'rlvr-gym[ray]'`); `import rlvr.agents` does not import it.
"""

from __future__ import annotations

from collections.abc import Sequence

from rlvr.agents.policy import SamplingParams, TrainablePolicy
from rlvr.agents.rollouts import EnvSpec, RolloutCollector
from rlvr.distributed import EnvWorkers
from rlvr.rollout import EnvBatch


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
    ) -> None:
        super().__init__(
            policy, envs, group_size=group_size, sampling=sampling, max_turns=max_turns
        )
        self.workers = workers

    def _batch(self, specs: Sequence[int]) -> EnvBatch:
        return self.workers.batch([(self.specs[i].id, self.specs[i].kwargs) for i in specs])
