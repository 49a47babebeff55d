"""Run a suite with an agent, or re-judge a stored result, in parallel where it helps.

Work is cut into shards of at most `SHARD_EPISODES` tasks of one env. The cut depends only on the
suite, never on the number of workers, so a run gives the same result however it is spread.

Which parallelism helps depends on where the time goes, so each agent kind says how it runs
(`rlvr.agents.kinds.AgentKind`: `parallelism`, `shared`):

- Scripted agents (`oracle`, `random`, `fixed:`) cost nothing; the time is spent in the envs and
  verifiers (sympy, SQL, test harnesses), which is Python CPU work held by the GIL. Shards run in
  worker **processes**, one per core, each building its own policy from the spec.
- An API agent (`openai:URL`) waits on the network; a server batches concurrent requests. Shards
  run in **threads**, each with its own client.
- A local model (`hf:PATH`) must be loaded once: a copy per process multiplies memory, and its
  batched `generate` already uses every core (or the GPU). Shards run **serially** with one shared
  policy; the batch inside each shard is where its parallelism lives.

Both running and re-judging play their episodes with `rlvr.rollout`'s loop: a run with the
agent's policy, a re-judging with an actor that gives back the stored replies. Re-verification
runs no agent, only envs and verifiers, so it uses processes too.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Final

from rlvr.agents.kinds import AgentKind, agent_kind, make_policy
from rlvr.agents.policy import Completion, Policy, SamplingParams
from rlvr.leaderboards.errors import LeaderboardError, ReverifyError
from rlvr.leaderboards.provenance import code_info, probe_env, prompt_messages, replies
from rlvr.leaderboards.results import BenchResult, EnvRun, score_runs, traces_mismatch
from rlvr.leaderboards.suites import Suite, SuiteEnv
from rlvr.rollout.episodes import evaluate, run_episodes
from rlvr.rollout.hosts import EnvHost
from rlvr.rollout.records import EpisodeRecord, Start
from rlvr.rollout.reports import EvalReport

SHARD_EPISODES = 50
"""Tasks per unit of work (fixed, so results never depend on the number of workers)."""

PARALLEL_MODES = ("auto", "processes", "threads", "serial")
DEFAULT_PARALLEL: Final = "auto"
"""How suites run unless told (`run_suite`, `reverify`, `rlvr bench --parallel`)."""
DEFAULT_BATCH_SIZE = 16
"""Episodes per generate call unless told (`run_suite`, `rlvr bench --batch-size`)."""


@dataclass
class Shard:
    """A unit of work: tasks [first, first + count) of one env of the suite."""

    env: SuiteEnv
    first: int
    count: int
    samples: int = 1
    sampling: SamplingParams | None = None
    agent_spec: str | None = None
    """Built into a policy where the shard runs (None when `policy` is given)."""
    batch_size: int = DEFAULT_BATCH_SIZE
    policy: Any = field(default=None, repr=False)
    """A shared policy (in-process modes only)."""
    records: list[EpisodeRecord] | None = field(default=None, repr=False)
    """For re-verification: the stored episodes to replay."""
    env_host: EnvHost | None = field(default=None, repr=False)
    """Where the envs run (None: here; Ray env workers' `host`, in-process modes only)."""


@dataclass
class ShardOutcome:
    label: str
    records: list[EpisodeRecord]
    env_info: dict[str, Any]
    seconds: float


# --- public entry points --------------------------------------------------------------------------


def run_suite(
    suite: Suite,
    agent: str | Policy,
    *,
    name: str | None = None,
    parallel: str = DEFAULT_PARALLEL,
    workers: int | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: bool = False,
    env_host: EnvHost | None = None,
) -> BenchResult:
    """Run every env of `suite` with `agent` (a spec such as `"oracle"`, or a `Policy`).

    `env_host` runs the envs elsewhere (Ray env workers: `rlvr.distributed.EnvWorkers.host`);
    the shards then run in this process (threads or serially) and the workers step their envs.
    """
    suite.check_envs(make=True)
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    spec = agent if isinstance(agent, str) else None
    kind = agent_kind(spec) if spec is not None else None
    mode = _choose_mode(parallel, kind, env_host)
    shares_policy = kind is None or kind.shared
    if mode == "processes" and shares_policy:  # refuse before loading a model for nothing
        raise ValueError(
            "parallel='processes' rebuilds the policy in each worker from a spec string; this "
            f"agent ({spec or type(agent).__name__}) is built once and shared: use "
            "parallel='serial' or 'threads'"
        )
    described = make_policy(spec) if spec is not None else agent
    shared = described if shares_policy else None
    shards = [
        Shard(
            env, first, count, suite.samples, suite.sampling, spec, batch_size, shared,
            env_host=env_host,
        )
        for env in suite.envs
        for first, count in _cut(env.episodes)
    ]  # fmt: skip
    started = time.perf_counter()
    outcomes, used_workers = _execute(shards, mode, workers, progress, suite.imports, "bench")
    runs = _merge(suite, outcomes)
    return score_runs(
        suite,
        runs,
        name=name or spec or type(agent).__name__,
        agent=_describe_agent(spec, described, suite.sampling, batch_size),
        code=code_info(),
        run={
            "parallel": mode,
            "workers": used_workers,
            "shard_episodes": SHARD_EPISODES,
            "seconds": round(time.perf_counter() - started, 3),
        },
    )


def reverify(
    result: BenchResult,
    *,
    parallel: str = DEFAULT_PARALLEL,
    workers: int | None = None,
    progress: bool = False,
    env_host: EnvHost | None = None,
) -> BenchResult:
    """Re-judge a stored result's replies with today's envs and verifiers; return the new result
    (`env_host`: as `run_suite`'s).

    Each episode is reset with its stored seed (the env must pose the same task: otherwise
    `ReverifyError`) and the stored replies are stepped again in order. A multi-turn episode that
    now ends earlier drops its later replies; one that now wants more replies than were stored
    ends there and is marked truncated (re-verification cannot ask the agent for more).
    """
    if result.superseded_by is not None:
        raise ReverifyError(
            f"result {result.id} was already re-judged as #{result.superseded_by}; "
            "re-judge that one"
        )
    if not result.traces:
        raise ReverifyError(f"result {result.id} has no traces to re-judge")
    if parallel not in PARALLEL_MODES:
        raise ValueError(f"parallel must be one of {PARALLEL_MODES}, got {parallel!r}")
    suite = result.suite
    _check_traces(result)
    suite.check_envs()
    mode = "serial" if parallel == "auto" and _episode_total(result) <= SHARD_EPISODES else parallel
    if mode == "auto":  # no agent: the work is all in envs and verifiers
        mode = "threads" if env_host is not None else "processes"
    mode = _choose_mode(mode, None, env_host)
    shards = []
    for env in suite.envs:
        records = sorted(result.traces[env.label], key=lambda r: (r.episode, r.sample))
        for first, count in _cut(env.episodes):
            chunk = [r for r in records if first <= r.episode < first + count]
            if chunk:
                shards.append(Shard(env, first, count, records=chunk, env_host=env_host))
    started = time.perf_counter()
    outcomes, used_workers = _execute(shards, mode, workers, progress, suite.imports, "reverify")
    runs = _merge(suite, outcomes)
    _check_judged(result, runs)
    # Generation cost belongs to the original run; only the judging is new.
    new = score_runs(
        suite,
        runs,
        name=result.name,
        agent=result.agent,
        code=code_info(),
        run={
            **result.run,
            "reverify": {
                "parallel": mode,
                "workers": used_workers,
                "seconds": round(time.perf_counter() - started, 3),
                "original_code": result.code,
            },
        },
    )
    for redone, old in zip(new.envs, result.envs):
        redone.seconds = old.seconds
    new.reverified_from = result.id
    return new


def _check_traces(result: BenchResult) -> None:
    """Refuse traces that are not the complete, unchanged episodes the result was scored on."""
    problem = traces_mismatch(result)
    if problem is not None:
        raise ReverifyError(
            f"result {result.id}: {problem} (missing, duplicated, edited or damaged in the store "
            "since): re-judging would score other episodes or replies. Run the benchmark again "
            "instead"
        )


def pinned_tasks_mismatch(result: BenchResult) -> str | None:
    """What keeps the tasks in `result.traces` from being those its suite poses (None: nothing).

    Each env is made as the suite says and reset with every task's stored seed (and task index),
    the way the run reset it, and the task it poses (id, prompt, gold fingerprint) is compared
    with the stored one; no reply is stepped, so no verifier runs. Costs one reset per task.
    """
    suite = result.suite
    suite.check_envs()
    for env in suite.envs:
        firsts: dict[int, EpisodeRecord] = {}
        for record in result.traces.get(env.label, []):
            firsts.setdefault(record.episode, record)
        stored = [firsts[episode] for episode in sorted(firsts)]
        try:
            report = run_episodes(
                env.id,
                [Start(record.episode, 0, record.seed) for record in stored],
                lambda _: _no_replies,
                env_kwargs=env.kwargs,
                batch_size=1,
                reset_options=(lambda episode: {"task_index": episode})
                if env.index_tasks
                else None,
            )
        except Exception as exc:  # the env's own failure: name it
            raise LeaderboardError(
                f"{env.label}: cannot pose the suite's tasks: {type(exc).__name__}: {exc}"
            ) from exc
        for posed, kept in zip(report.episodes, stored):
            if _task(posed) != _task(kept):
                return (
                    f"{env.label} episode {kept.episode} (seed {kept.seed}) holds task "
                    f"{kept.task_id!r}, but the suite poses {posed.task_id!r} there"
                    + (" (another prompt or gold answer)" if posed.task_id == kept.task_id else "")
                )
    return None


def _no_replies(active: list[int], records: list[EpisodeRecord]) -> list[Completion | None]:
    return [None] * len(records)


def _task(record: EpisodeRecord) -> tuple[Any, ...]:
    return record.task_id, record.task_hash, prompt_messages(record.messages)


def _check_judged(result: BenchResult, runs: Sequence[EnvRun]) -> None:
    """Refuse a re-judging in which verifiers failed on episodes that were judged before: the
    new result would silently score fewer episodes (or none) and replace the old one."""
    before = {
        (label, r.episode, r.sample)
        for label, rs in result.traces.items()
        for r in rs
        if not r.infra_error
    }
    failed = [
        f"{run.label} episode {r.episode} sample {r.sample}"
        for run in runs
        for r in run.report.episodes
        if r.infra_error and (run.label, r.episode, r.sample) in before
    ]
    if failed:
        raise ReverifyError(
            f"result {result.id}: the verifiers failed (infrastructure errors) on {len(failed)} "
            f"episode(s) judged in the original run, e.g. {failed[0]}: fix what they depend on "
            "(sandbox, Docker, database) and re-judge again; the result is left as it was"
        )


# --- planning -------------------------------------------------------------------------------------


def _choose_mode(parallel: str, kind: AgentKind | None, env_host: EnvHost | None = None) -> str:
    if parallel not in PARALLEL_MODES:
        raise ValueError(f"parallel must be one of {PARALLEL_MODES}, got {parallel!r}")
    if parallel != "auto":
        if parallel == "processes" and env_host is not None:
            raise ValueError(
                "with Ray env workers the envs already run in other processes: use "
                "parallel='threads' or 'serial' (or 'auto')"
            )
        return parallel
    if kind is None:  # a Policy object: its thread safety is unknown
        return "serial"
    if kind.parallelism == "processes" and env_host is not None:
        return "threads"  # the envs' work is on the workers; threads keep them all busy
    return kind.parallelism


def _cut(episodes: int) -> list[tuple[int, int]]:
    return [
        (first, min(SHARD_EPISODES, episodes - first))
        for first in range(0, episodes, SHARD_EPISODES)
    ]


def _episode_total(result: BenchResult) -> int:
    return sum(len(records) for records in result.traces.values())


def _describe_agent(
    spec: str | None, policy: Any, sampling: SamplingParams, batch_size: int
) -> dict[str, Any]:
    describe = getattr(policy, "describe", None)
    details = describe() if callable(describe) else {}
    sampling_data = asdict(sampling)
    sampling_data["stop"] = list(sampling.stop)
    return {
        "spec": spec,
        "policy": f"{type(policy).__module__}.{type(policy).__qualname__}",
        "details": details,
        "sampling": sampling_data,
        "batch_size": batch_size,
    }


# --- execution ------------------------------------------------------------------------------------


def _execute(
    shards: Sequence[Shard],
    mode: str,
    workers: int | None,
    progress: bool,
    imports: Sequence[str],
    label: str,
) -> tuple[list[ShardOutcome], int]:
    total = sum(_shard_jobs(shard) for shard in shards)
    bar = _progress_bar(total, label) if progress else None
    tick = bar.update if bar is not None else None
    count = _worker_count(mode, workers, len(shards))
    try:
        if mode == "serial" or count == 1:
            return [_run_shard(shard, tick) for shard in shards], 1
        if mode == "threads":
            pool = ThreadPoolExecutor(count, thread_name_prefix="rlvr-bench")
            return _collect(pool, [pool.submit(_run_shard, s, tick) for s in shards]), count
        return _run_in_processes(shards, count, bar, imports), count
    finally:
        if bar is not None:
            bar.close()


def _shard_jobs(shard: Shard) -> int:
    return shard.count * shard.samples if shard.records is None else len(shard.records)


def _worker_count(mode: str, workers: int | None, shards: int) -> int:
    if workers is not None:
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        return min(workers, shards)
    if mode == "processes":
        return max(1, min(os.cpu_count() or 1, shards))
    if mode == "threads":
        return max(1, min(8, shards))
    return 1


def _collect(pool: Executor, futures: list[Future]) -> list[ShardOutcome]:
    """The shards' outcomes in order; shuts `pool` down. On Ctrl-C, shards still running are
    not waited for: an API request can hang for minutes, and the user asked to stop now."""
    try:
        outcomes = [future.result() for future in futures]
    except BaseException as exc:
        for future in futures:
            future.cancel()
        pool.shutdown(wait=not isinstance(exc, KeyboardInterrupt), cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return outcomes


def _run_in_processes(
    shards: Sequence[Shard], count: int, bar: Any, imports: Sequence[str]
) -> list[ShardOutcome]:
    # fork keeps envs registered at run time in this process (register_task_env); where there is
    # no fork, workers start fresh and the suite's `imports` must register them.
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    ticks = context.SimpleQueue()
    drain = threading.Thread(target=_drain, args=(ticks, bar), daemon=True)
    with ProcessPoolExecutor(
        count, mp_context=context, initializer=_init_worker, initargs=(ticks, tuple(imports))
    ) as pool:
        drain.start()
        try:
            return _collect(pool, [pool.submit(_run_shard_in_worker, shard) for shard in shards])
        finally:
            ticks.put(None)
            drain.join(timeout=5)


def _drain(ticks: Any, bar: Any) -> None:
    while (item := ticks.get()) is not None:
        if bar is not None:
            bar.update(item)


_WORKER_TICKS: Any = None


def _init_worker(ticks: Any, imports: tuple[str, ...]) -> None:
    global _WORKER_TICKS
    _WORKER_TICKS = ticks
    import importlib

    import rlvr  # noqa: F401  (registers the built-in envs)

    for module in imports:
        importlib.import_module(module)


def _run_shard_in_worker(shard: Shard) -> ShardOutcome:
    return _run_shard(shard, _WORKER_TICKS.put if _WORKER_TICKS is not None else None)


def _run_shard(shard: Shard, tick: Callable[[int], Any] | None) -> ShardOutcome:
    started = time.perf_counter()
    try:
        if shard.records is not None:
            records, info = _replay(shard, tick)
        else:
            records, info = _evaluate_shard(shard, tick)
    except LeaderboardError:
        raise
    except Exception as exc:  # name the env: a bare traceback from a worker hides it
        raise LeaderboardError(
            f"{shard.env.label}: tasks {shard.first}..{shard.first + shard.count - 1} failed: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    return ShardOutcome(shard.env.label, records, info, time.perf_counter() - started)


def _evaluate_shard(
    shard: Shard, tick: Callable[[int], Any] | None
) -> tuple[list[EpisodeRecord], dict[str, Any]]:
    env = shard.env
    policy = shard.policy if shard.policy is not None else make_policy(shard.agent_spec or "")
    first = shard.first
    report = evaluate(
        env.id,
        policy,
        episodes=shard.count,
        seed=env.seed + first,
        samples_per_task=shard.samples,
        batch_size=shard.batch_size,
        sampling=shard.sampling,
        env_kwargs=env.kwargs,
        on_episode=(lambda _: tick(1)) if tick is not None else None,
        env_probe=probe_env,
        reset_options=(lambda i: {"task_index": first + i}) if env.index_tasks else None,
        env_host=shard.env_host,
    )
    return [replace(r, episode=r.episode + first) for r in report.episodes], report.env_info


REPLAY_BATCH = 1
"""Envs a re-judging shard plays at once: the replies are stored, so a batch would save no
generation, only cost envs."""


def _replay(
    shard: Shard, tick: Callable[[int], Any] | None
) -> tuple[list[EpisodeRecord], dict[str, Any]]:
    entry, stored = shard.env, shard.records or []
    actor = ReplayActor(entry.label, stored)
    report = run_episodes(
        entry.id,
        [Start(record.episode, record.sample, record.seed) for record in stored],
        lambda _: actor,
        env_kwargs=entry.kwargs,
        batch_size=REPLAY_BATCH,
        reset_options=(lambda episode: {"task_index": episode}) if entry.index_tasks else None,
        on_episode=(lambda _: tick(1)) if tick is not None else None,
        env_probe=probe_env,
        env_host=shard.env_host,
    )
    # Generation cost belongs to the original run: the replay generated nothing.
    replayed = [
        replace(record, completion_tokens=old.completion_tokens, prompt_tokens=old.prompt_tokens)
        for record, old in zip(report.episodes, stored)
    ]
    return replayed, report.env_info


class ReplayActor:
    """The actor of a re-judging: it gives each episode its stored replies again, in order, and
    None once they are used up (the env wanted more than the agent gave: the episode stops,
    truncated). An episode whose env now poses another task is refused (`ReverifyError`): its
    stored replies answer another question."""

    def __init__(self, label: str, stored: Sequence[EpisodeRecord]) -> None:
        self.label = label
        self.stored = {(record.episode, record.sample): record for record in stored}
        self.replies = {key: replies(record.messages) for key, record in self.stored.items()}

    def __call__(self, active: list[int], records: list[EpisodeRecord]) -> list[Completion | None]:
        return [self._reply(record) for record in records]

    def _reply(self, record: EpisodeRecord) -> Completion | None:
        key = (record.episode, record.sample)
        if record.turns == 0:
            self._check_task(record, self.stored[key])
        replies = self.replies[key]
        return Completion(replies[record.turns]) if record.turns < len(replies) else None

    def _check_task(self, record: EpisodeRecord, stored: EpisodeRecord) -> None:
        same_prompt = prompt_messages(record.messages) == prompt_messages(stored.messages)
        if record.task_id != stored.task_id or not same_prompt:
            raise ReverifyError(
                f"{self.label} episode {stored.episode} (seed {stored.seed}) now poses task "
                f"{record.task_id!r}, not the stored {stored.task_id!r}: the env's tasks changed, "
                "so the stored replies answer other questions. Run the benchmark again instead"
            )


def _merge(suite: Suite, outcomes: Sequence[ShardOutcome]) -> list[EnvRun]:
    runs = []
    for env in suite.envs:
        mine = [outcome for outcome in outcomes if outcome.label == env.label]
        records = sorted(
            (record for outcome in mine for record in outcome.records),
            key=lambda r: (r.episode, r.sample),
        )
        report = EvalReport(env.id, records, mine[0].env_info if mine else {})
        seconds = math.fsum(outcome.seconds for outcome in mine)
        runs.append(EnvRun(env.label, report, seconds))
    return runs


def _progress_bar(total: int, label: str) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=label, unit="ep", dynamic_ncols=True)
