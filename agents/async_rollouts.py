"""Asynchronous rollouts: step k+1's episodes are played while step k learns.

`AsyncRollouts` keeps a copy of the policy for sampling (the sampler) and a background thread
that plays the next batches with it, through any collector (in-process or on Ray env workers).
After each learner update the new weights are published, and the thread loads them before its
next batch. Batch j is started only after update j-1-max_policy_lag has been published, so the
weights that sampled it are at most `max_policy_lag` updates behind the learner that learns from
it: that lag is set on each `Episode` (`policy_lag`) and logged per step. The learner corrects
the gap with truncated importance sampling against the sampler's log-probabilities (GRPO's
`tis_cap`).

The sampler is a copy of the policy in this process (sampling in the background thread), or with
Ray a generator process (`rlvr.agents.ray_rollouts.remote_sampler`): the thread then only waits
on it and on the envs, and generation truly overlaps the update. On a cluster that process is
where an inference server (vLLM, any OpenAI-compatible server) slots in (docs/scaling.md).
"""

from __future__ import annotations

import copy
import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from rlvr.agents.policy import TrainablePolicy
from rlvr.agents.rollouts import Episode, RolloutCollector

Tasks = list[tuple[int, int]]


def sampler_copy(policy: TrainablePolicy) -> TrainablePolicy:
    """A copy of `policy` with weights of its own, to sample from while `policy` learns."""
    return copy.deepcopy(policy)


class AsyncRollouts:
    """Batches of episodes played ahead of the learner by `collector` (whose policy is the
    sampler, a `sampler_copy` of `policy`); `draw()` gives the tasks of the next batch."""

    def __init__(
        self,
        collector: RolloutCollector,
        policy: TrainablePolicy,
        draw: Callable[[], Tasks],
        *,
        max_policy_lag: int = 1,
        generator: Any = None,
        load_weights: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        """`load_weights(state)` gives the sampler published weights (default: into the
        collector's policy's model, a copy in this process)."""
        if max_policy_lag < 1:
            raise ValueError(f"max_policy_lag must be >= 1, got {max_policy_lag}")
        if collector.policy is policy:
            raise ValueError("the collector must sample from a copy of the policy (sampler_copy)")
        self.collector = collector
        self.policy = policy
        self.draw = draw
        self.generator = generator
        self.load_weights = load_weights or collector.policy.model.load_state_dict
        self.version = 0
        """Updates the learner has made."""
        self._published: tuple[int, dict[str, Any]] | None = None
        self._sampler_version = 0
        self._lock = threading.Lock()
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="rlvr-rollouts")
        self._pending: deque[Future[tuple[list[Episode], int]]] = deque()
        self._publish()  # the sampler starts from the learner's weights (a resumed run's too)
        for _ in range(max_policy_lag + 1):
            self._submit()

    def next(self) -> tuple[list[Episode], int]:
        """The oldest batch (waiting for it if needed) and its policy lag."""
        episodes, version = self._pending.popleft().result()
        lag = self.version - version
        for episode in episodes:
            episode.policy_lag = lag
        return episodes, lag

    def updated(self) -> None:
        """The learner made an update: publish its weights and start the next batch."""
        self.version += 1
        self._publish()
        self._submit()

    def close(self) -> None:
        """Stop: batches not started are dropped, the running one is waited for."""
        for future in self._pending:
            future.cancel()
        self._thread.shutdown(wait=True, cancel_futures=True)
        self._pending.clear()

    def _publish(self) -> None:
        state = {k: v.detach().clone() for k, v in self.policy.model.state_dict().items()}
        with self._lock:
            self._published = (self.version, state)

    def _submit(self) -> None:
        tasks = self.draw()  # here, in order: the trainer's task generator is not shared
        self._pending.append(self._thread.submit(self._collect, tasks))

    def _collect(self, tasks: Sequence[tuple[int, int]]) -> tuple[list[Episode], int]:
        with self._lock:
            published, self._published = self._published, None
        if published is not None:
            self.load_weights(published[1])
            self._sampler_version = published[0]
        return self.collector.collect(tasks, self.generator), self._sampler_version
