"""Env workers on Ray: the episode loop's envs stepped in other processes, or on other machines.

`EnvWorkers(count)` starts `count` Ray actors (`EnvWorker`), each holding env instances and what
they hold (sandbox pools, databases, site servers) in its own process. The driver keeps the
policy, the actor of the episode loop and the records: `EnvWorkers.batch(...)` is an
`rlvr.rollout.EnvBatch` whose `reset`/`step` send each round's replies to the workers at once
(one call per worker) and gather the results, so `rlvr.rollout.play_episodes` makes the same
records as with envs in this process. `EnvWorkers.host` is the `EnvHost` that `evaluate` and
`run_episodes` take, and `rlvr.agents.ray_rollouts.RayRolloutCollector` the training collector.

Faults: a worker that dies (its process killed, its node lost) is dropped from the pool with a
warning, and each of its running episodes is re-run on a surviving worker, or on a new one when
none survives: reset with the same seed and options (the posed task's fingerprint must match the
record's) and replayed up to the reply that was in flight. Replies that kill the worker of their
re-run too crash the env itself: that stops the run (`EnvWorkersError`), as it would in-process,
however many workers are left (none included). A worker death cannot be told from a reply's
crash by itself, so it never excuses an episode: the only episodes flagged `infra_error` are
those whose re-run env posed another task (never scored 0). When no new worker can start, the
run stops too.

Needs the `ray` extra; `import rlvr`, `rlvr.envs` and `rlvr.agents` never import this module.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import gymnasium as gym

from rlvr.rollout.hosts import EnvWorkersError, reset_env
from rlvr.rollout.records import Start, StepResult

try:
    import ray
    from ray.exceptions import GetTimeoutError, RayActorError
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError(
        f"running envs on Ray needs the ray extra: pip install 'rlvr-gym[ray]' ({exc})"
    ) from None

OBJECT_STORE_BYTES = 200 * 1024**2
"""Object store of a Ray instance started here: rollouts move small texts, not tensors."""


def connect(address: str | None = None, *, num_cpus: int | None = None) -> bool:
    """Join the Ray cluster at `address` (`"auto"`, `"ray://HOST:10001"`, ...), or with None or
    `"local"` start a small one on this machine; nothing if Ray is already initialised (a test or
    a user's program did). Returns whether this call started or joined it (and so should
    `ray.shutdown()` when done)."""
    if ray.is_initialized():
        return False
    if address in (None, "", "local"):
        ray.init(
            address="local",  # a new instance, never one another program on this machine started
            num_cpus=num_cpus,
            include_dashboard=False,
            object_store_memory=OBJECT_STORE_BYTES,
            logging_level=logging.WARNING,
        )
    else:
        ray.init(address=address, logging_level=logging.WARNING)
    return True


# --- the worker -----------------------------------------------------------------------------------


class EnvWorker:
    """A Ray actor holding envs. Envs are made on first use, by kind (an env id and kwargs the
    driver `define`d) and index, and kept for the next batch (their pools stay warm)."""

    def __init__(self) -> None:
        import rlvr  # noqa: F401  (registers the built-in envs once gymnasium loads)

        self.kinds: dict[int, tuple[str, dict[str, Any]]] = {}
        self.envs: dict[tuple[int, int], gym.Env] = {}

    def ready(self) -> int:
        return os.getpid()

    def define(self, kind: int, env_id: str, kwargs: Mapping[str, Any], spec: Any) -> None:
        """Kind `kind` is `env_id` with `kwargs`; `spec` is its registration in the driver (so an
        env registered at run time there, e.g. with `register_task_env`, exists here too)."""
        if env_id not in gym.registry and spec is not None:
            gym.registry[env_id] = spec
        self.kinds[kind] = (env_id, dict(kwargs))

    def reset(
        self, jobs: Sequence[tuple[int, int, Start, dict[str, Any] | None]]
    ) -> list[tuple[Mapping[str, Any], str | None]]:
        return [reset_env(self._env(kind, index), start, opt) for kind, index, start, opt in jobs]

    def step(self, jobs: Sequence[tuple[int, int, str]]) -> list[StepResult]:
        return [self._env(kind, index).step(text) for kind, index, text in jobs]

    def replay(
        self,
        kind: int,
        index: int,
        start: Start,
        options: dict[str, Any] | None,
        texts: Sequence[str],
    ) -> tuple[str | None, StepResult | None]:
        """Re-run an episode another worker lost: reset it as it was, step the replies it had
        taken, and return the task's fingerprint and the result of the last text."""
        env = self._env(kind, index)
        _, fingerprint = reset_env(env, start, options)
        result = None
        for text in texts:
            result = env.step(text)
        return fingerprint, result

    def oracle_reply(self, kind: int, index: int) -> str:
        return str(self._env(kind, index).unwrapped.oracle_reply())  # type: ignore[attr-defined]

    def probe(
        self, kind: int, index: int, probe: Callable[[gym.Env], Mapping[str, Any]]
    ) -> dict[str, Any]:
        return dict(probe(self._env(kind, index)))

    def close(self) -> None:
        for env in self.envs.values():
            env.close()
        self.envs.clear()

    def _env(self, kind: int, index: int) -> gym.Env:
        env = self.envs.get((kind, index))
        if env is None:
            env_id, kwargs = self.kinds[kind]
            env = self.envs[kind, index] = gym.make(env_id, **kwargs)
        return env


# --- the driver's side ----------------------------------------------------------------------------


@dataclass(eq=False)
class _Worker:
    name: str
    actor: Any
    alive: bool = True
    kinds: set[int] = field(default_factory=set)
    """Kinds defined on this worker."""


@dataclass
class _Place:
    """Where a batch position's env lives: a worker, the env's kind and its index there."""

    worker: _Worker
    kind: int
    index: int


class EnvWorkers:
    """A pool of `EnvWorker` actors fed by this process. `count` workers are started (Ray is
    started here, or joined at `address`, unless already initialised) and wait until each is up,
    at most `start_timeout` seconds."""

    def __init__(
        self,
        count: int,
        *,
        address: str | None = None,
        cpus_per_worker: float = 1.0,
        start_timeout: float = 120.0,
    ) -> None:
        if count < 1:
            raise ValueError(f"env workers: need at least 1, got {count}")
        local = address in (None, "", "local")
        cpus = max(os.cpu_count() or 1, int(count * cpus_per_worker + 0.999)) if local else None
        self._owns_ray = connect(address, num_cpus=cpus)
        self._remote = ray.remote(EnvWorker).options(num_cpus=cpus_per_worker)
        self._start_timeout = start_timeout
        self.workers = [_Worker(f"env-worker-{i}", self._remote.remote()) for i in range(count)]
        self.started = count
        try:
            ray.get([w.actor.ready.remote() for w in self.workers], timeout=start_timeout)
        except GetTimeoutError:
            self.close()
            raise EnvWorkersError(
                f"{count} env workers did not start in {start_timeout:.0f} s: the Ray cluster "
                f"has {ray.cluster_resources().get('CPU', 0):g} CPUs for {count} workers asking "
                f"{cpus_per_worker:g} each; lower the number of env workers"
            ) from None
        self._lock = threading.Lock()
        self._kinds: list[tuple[str, dict[str, Any]]] = []
        self._leased: set[tuple[int, int, int]] = set()  # (worker id, kind, index) in use
        self.reruns = 0
        """Episodes re-run on another worker after theirs died."""
        self.lost_episodes = 0
        """Episodes flagged infra_error because they could not be re-run."""
        self.replaced = 0
        """Workers started because none was left."""

    # -- what users call --

    @property
    def alive(self) -> list[_Worker]:
        return [worker for worker in self.workers if worker.alive]

    def batch(self, envs: Sequence[tuple[str, Mapping[str, Any] | None]]) -> RemoteEnvs:
        """An `EnvBatch` whose position i is an env of `envs[i]` = (env id, kwargs), spread over
        the workers (consecutive positions on different workers)."""
        kinds = [self._kind(env_id, kwargs) for env_id, kwargs in envs]
        return RemoteEnvs(self, [self._place(kind, i) for i, kind in enumerate(kinds)])

    def host(self, env_id: str, env_kwargs: Mapping[str, Any] | None, size: int) -> RemoteEnvs:
        """The `EnvHost` of `rlvr.rollout.evaluate` / `run_episodes`: `size` envs of `env_id`."""
        return self.batch([(env_id, env_kwargs)] * size)

    def metrics(self) -> dict[str, float]:
        return {
            "ray/env_workers": float(len(self.alive)),
            "ray/rerun_episodes": float(self.reruns),
            "ray/lost_episodes": float(self.lost_episodes),
            "ray/replaced_env_workers": float(self.replaced),
        }

    def close(self) -> None:
        """Close the workers' envs, end the workers, and stop Ray if this pool started it."""
        alive = [w for w in self.workers if w.alive]
        with contextlib.suppress(Exception):  # a dead or stuck worker is killed below either way
            ray.get([w.actor.close.remote() for w in alive], timeout=30)
        for worker in alive:
            ray.kill(worker.actor)
            worker.alive = False
        if self._owns_ray and ray.is_initialized():
            ray.shutdown()
            self._owns_ray = False

    def __enter__(self) -> EnvWorkers:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- kinds, places and lost workers --

    def _kind(self, env_id: str, kwargs: Mapping[str, Any] | None) -> int:
        wanted = (env_id, dict(kwargs or {}))
        with self._lock:
            if wanted not in self._kinds:
                self._kinds.append(wanted)
            return self._kinds.index(wanted)

    def _place(self, kind: int, position: int, avoid: _Worker | None = None) -> _Place:
        """Lease the lowest free index of `kind` on the worker for `position` (on a new worker
        when none is left)."""
        with self._lock:
            candidates = [w for w in self.workers if w.alive and w is not avoid]
            worker = candidates[position % len(candidates)] if candidates else self._replace()
            index = 0
            while (id(worker), kind, index) in self._leased:
                index += 1
            self._leased.add((id(worker), kind, index))
        self._define(worker, kind)
        return _Place(worker, kind, index)

    def _replace(self) -> _Worker:
        """Start a worker in place of the dead ones (under the lock): without it, an episode
        whose worker died could be neither re-run nor judged, and the run could not go on."""
        worker = _Worker(f"env-worker-{self.started}", self._remote.remote())
        self.started += 1
        try:
            ray.get(worker.actor.ready.remote(), timeout=self._start_timeout)
        except (GetTimeoutError, RayActorError) as error:
            ray.kill(worker.actor)
            raise EnvWorkersError(
                f"all env workers died and a new one did not start in {self._start_timeout:.0f} "
                f"s ({type(error).__name__}); nothing can run the envs (the warnings above say "
                "when each was lost)"
            ) from None
        self.workers.append(worker)
        self.replaced += 1
        return worker

    def _define(self, worker: _Worker, kind: int) -> None:
        if kind in worker.kinds:
            return
        env_id, kwargs = self._kinds[kind]
        spec = gym.registry.get(env_id)
        ray.get(worker.actor.define.remote(kind, env_id, kwargs, spec))
        worker.kinds.add(kind)

    def _release(self, places: Sequence[_Place]) -> None:
        with self._lock:
            for place in places:
                self._leased.discard((id(place.worker), place.kind, place.index))

    def _lose(self, worker: _Worker, error: BaseException) -> None:
        with self._lock:
            if not worker.alive:
                return
            worker.alive = False
            left = sum(w.alive for w in self.workers)
        where = f"the {left} env workers left" if left else "a new env worker"
        warnings.warn(
            f"{worker.name} died ({type(error).__name__}); its episodes are re-run on {where}",
            RuntimeWarning,
            stacklevel=2,
        )


class RemoteEnv:
    """Stands for one remote env where an actor wants the env object: `env.unwrapped` is itself,
    and `oracle_reply()` asks the worker (the oracle agent works on Ray too)."""

    def __init__(self, batch: RemoteEnvs, position: int) -> None:
        self.batch, self.position = batch, position

    @property
    def unwrapped(self) -> RemoteEnv:
        return self

    def oracle_reply(self) -> str:
        place = self.batch.places[self.position]
        return str(ray.get(place.worker.actor.oracle_reply.remote(place.kind, place.index)))


@dataclass
class _History:
    """What a position's episode did so far, to re-run it elsewhere."""

    start: Start
    options: dict[str, Any] | None
    fingerprint: str | None
    messages: list[dict[str, Any]]
    texts: list[str] = field(default_factory=list)


class RemoteEnvs:
    """An `rlvr.rollout.EnvBatch` of envs on `EnvWorkers`' actors."""

    def __init__(self, pool: EnvWorkers, places: list[_Place]) -> None:
        self.pool = pool
        self.places = places
        self.history: dict[int, _History] = {}
        self._stand_ins = [RemoteEnv(self, i) for i in range(len(places))]

    @property
    def envs(self) -> Sequence[gym.Env]:
        # stand-ins, duck-typed for actors that read the env (`unwrapped.oracle_reply()`)
        return cast("Sequence[gym.Env]", self._stand_ins)

    def reset(
        self, starts: Sequence[Start], options: Sequence[dict[str, Any] | None]
    ) -> list[tuple[Mapping[str, Any], str | None]]:
        positions = list(range(len(starts)))
        results = self._spread(
            positions,
            "reset",
            lambda i: (self.places[i].kind, self.places[i].index, starts[i], options[i]),
        )
        for i, result in results.items():
            if result is None:  # the worker died while resetting: reset elsewhere
                self._move(i)
                place = self.places[i]
                job = (place.kind, place.index, starts[i], options[i])
                results[i] = ray.get(place.worker.actor.reset.remote([job]))[0]
        self.history = {
            i: _History(starts[i], options[i], fingerprint, list(info["messages"]))
            for i, (info, fingerprint) in results.items()
            if info is not None
        }
        return [results[i] for i in positions]

    def step(self, positions: Sequence[int], texts: Sequence[str]) -> list[StepResult]:
        text_of = dict(zip(positions, texts))
        results = self._spread(
            list(positions),
            "step",
            lambda i: (self.places[i].kind, self.places[i].index, text_of[i]),
        )
        for i in positions:
            history = self.history[i]
            history.texts.append(text_of[i])
            result = results[i]
            if result is None:
                result = results[i] = self._rerun(i)
            history.messages = list(result[4].get("messages", history.messages))
        return [results[i] for i in positions]

    def probe(self, probe: Callable[[gym.Env], Mapping[str, Any]]) -> Mapping[str, Any]:
        place = self.places[0]
        return ray.get(place.worker.actor.probe.remote(place.kind, place.index, probe))

    def close(self) -> None:
        self.pool._release(self.places)

    # -- one call per worker; lost workers --

    def _spread(
        self, positions: list[int], method: str, job: Callable[[int], Any]
    ) -> dict[int, Any]:
        """Call `method` once on each worker with the jobs of its positions; a position whose
        worker died maps to None (its worker is marked lost)."""
        by_worker: dict[int, list[int]] = {}
        for i in positions:
            by_worker.setdefault(id(self.places[i].worker), []).append(i)
        calls = []
        for mine in by_worker.values():
            actor = self.places[mine[0]].worker.actor
            calls.append((mine, getattr(actor, method).remote([job(i) for i in mine])))
        results: dict[int, Any] = {}
        for mine, call in calls:
            try:
                answers = ray.get(call)
            except RayActorError as error:
                self.pool._lose(self.places[mine[0]].worker, error)
                answers = [None] * len(mine)
            results.update(zip(mine, answers))
        return results

    def _move(self, position: int) -> None:
        """Lease position's env on a surviving worker."""
        old = self.places[position]
        self.pool._release([old])
        self.places[position] = self.pool._place(old.kind, position, avoid=old.worker)

    def _rerun(self, position: int) -> StepResult:
        """Re-run a lost episode on a surviving worker (a new one if none is left), up to its
        latest text; infra_error only if the env poses another task than it did. No worker to
        re-run on is no excuse: a reply that killed the last worker must not escape its score,
        so then the run stops (`EnvWorkersError` from `_place`)."""
        history = self.history[position]
        self._move(position)
        place = self.places[position]
        try:
            fingerprint, result = ray.get(
                place.worker.actor.replay.remote(
                    place.kind, place.index, history.start, history.options, history.texts
                )
            )
        except RayActorError as error:
            # The same replies killed a second worker: the env crashes on them, as it would
            # in-process. Flagging that infra_error would let a reply excuse itself from its
            # score, so the run stops as it would without Ray.
            self.pool._lose(place.worker, error)
            env_id = self.pool._kinds[place.kind][0]
            raise EnvWorkersError(
                f"{env_id}, episode {history.start.episode} (seed {history.start.seed}): its "
                f"replies killed two env workers (the env crashes on them; in-process the run "
                f"would stop too); last reply {history.texts[-1]!r:.200}"
            ) from None
        if fingerprint != history.fingerprint or result is None:
            return self._lost(history, "the re-run env posed another task")
        self.pool.reruns += 1
        return result

    def _lost(self, history: _History, why: str) -> StepResult:
        """The step result of an episode that could not be finished: an infrastructure error
        (dropped from training and scores), truncated."""
        self.pool.lost_episodes += 1
        reply = {"role": "assistant", "content": history.texts[-1]}
        info = {
            "messages": [*history.messages, reply],
            "infra_error": True,
            "infra_reason": f"env worker lost: {why}",
        }
        return None, 0.0, False, True, info
