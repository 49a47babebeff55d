"""Envs on Ray env workers (`rlvr.distributed`): the same records as in-process, the oracle on
remote envs, a worker killed mid-episode (re-run elsewhere, on a new worker when none is left),
replies that kill workers (the run stops, never an excused infra_error), and Ctrl-C leaving no
Ray process behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
import pytest

from rlvr.agents.policy import Completion
from rlvr.agents.scripted import FixedPolicy, OraclePolicy, RandomPolicy
from rlvr.rollout.episodes import evaluate, play_episodes
from rlvr.rollout.records import Start
from rlvr.rollout.reports import EvalReport
from tests.agents import support

pytestmark = pytest.mark.slow


@pytest.fixture
def workers(ray_cluster):
    from rlvr.distributed import EnvWorkers

    support.register()
    pool = EnvWorkers(2)
    yield pool
    pool.close()


def both_ways(env_id, policy_factory, workers, **settings) -> tuple[EvalReport, EvalReport]:
    here = evaluate(env_id, policy_factory(), **settings)
    there = evaluate(env_id, policy_factory(), env_host=workers.host, **settings)
    return here, there


@pytest.mark.parametrize(
    ("env_id", "policy"),
    [
        ("rlvr/Math-v0", lambda: RandomPolicy(3)),
        ("rlvr/Math-v0", OraclePolicy),  # EnvAware: reads each remote env's reference reply
        ("test/Retry-v0", lambda: FixedPolicy("The answer is \\boxed{3}.")),  # two turns each
        ("rlvr/Repo-v0", OraclePolicy),  # tools in a sandbox, a workspace per remote env
    ],
    ids=["random", "oracle", "multi-turn", "repo"],
)
def test_ray_evaluation_gives_the_in_process_records(workers, env_id, policy):
    here, there = both_ways(env_id, policy, workers, episodes=7, seed=11, batch_size=3)
    assert there.episodes == here.episodes
    assert [r.seed for r in there.episodes] == list(range(11, 18))
    if env_id == "test/Retry-v0":
        assert all(r.turns == 2 for r in there.episodes)
    if isinstance(policy(), OraclePolicy):
        assert there.success_rate == 1.0


def test_ray_evaluation_on_a_registered_at_runtime_env(workers):
    """An env registered in the driver only (register_task_env) is made on the workers too."""
    here, there = both_ways(
        support.HALF_BROKEN, OraclePolicy, workers, episodes=6, seed=0, batch_size=6
    )
    assert there.episodes == here.episodes
    assert there.infra_errors == here.infra_errors > 0  # its verifier fails on odd answers


class KillingActor:
    """Replies with a wrong answer; before the second round it kills env worker `victim` (the
    episodes on it have started and their env state is lost)."""

    def __init__(self, kill=None) -> None:
        self.kill = kill
        self.round = 0

    def __call__(self, active, records):
        self.round += 1
        if self.round == 2 and self.kill is not None:
            self.kill()
        return [Completion(f"The answer is \\boxed{{{r.turns}}}.") for r in records]


def kill_worker(ray, worker) -> None:
    """`ray.kill` it and wait until it is dead (the kill is asynchronous: a call sent right
    after it could still be served)."""
    from ray.exceptions import RayActorError

    ray.kill(worker.actor)
    with pytest.raises(RayActorError):
        for _ in range(100):
            ray.get(worker.actor.ready.remote())
            time.sleep(0.1)


def test_a_worker_killed_mid_episode_has_its_episodes_rerun_elsewhere(ray_cluster):
    from rlvr.distributed import EnvWorkers

    support.register()
    starts = [Start(i, 0, 100 + i) for i in range(6)]
    envs = [gym.make("test/Retry-v0") for _ in starts]
    expected = play_episodes(envs, starts, KillingActor())
    with EnvWorkers(2) as pool:
        batch = pool.batch([("test/Retry-v0", None)] * len(starts))
        on_victim = sum(place.worker is pool.workers[0] for place in batch.places)
        kill = lambda: kill_worker(ray_cluster, pool.workers[0])  # noqa: E731
        with pytest.warns(RuntimeWarning, match="env-worker-0 died"):
            records = play_episodes(batch, starts, KillingActor(kill))
        assert records == expected  # the same turns, rewards and verdicts: nothing scored 0
        assert all(r.turns == 2 and not r.infra_error for r in records)
        assert pool.reruns == on_victim == 3
        assert pool.metrics()["ray/env_workers"] == 1.0
        # the run goes on with the worker left
        report = evaluate("test/Retry-v0", RandomPolicy(0), episodes=4, env_host=pool.host)
        assert len(report.episodes) == 4


def test_a_lone_worker_killed_from_outside_is_replaced_and_its_episodes_rerun(ray_cluster):
    """No reply is at fault (the worker is killed from outside) and none survives: a new worker
    re-runs the episodes, which get their real scores, and the run goes on with it."""
    from rlvr.distributed import EnvWorkers

    support.register()
    starts = [Start(i, 0, i) for i in range(3)]
    envs = [gym.make("test/Retry-v0") for _ in starts]
    expected = play_episodes(envs, starts, KillingActor())
    with EnvWorkers(1) as pool:
        batch = pool.batch([("test/Retry-v0", None)] * len(starts))
        kill = lambda: kill_worker(ray_cluster, pool.workers[0])  # noqa: E731
        with pytest.warns(RuntimeWarning, match="re-run on a new env worker"):
            records = play_episodes(batch, starts, KillingActor(kill))
        assert records == expected and not any(r.infra_error for r in records)
        assert (pool.reruns, pool.lost_episodes, pool.replaced) == (3, 0, 1)
        assert [w.name for w in pool.alive] == ["env-worker-1"]
        report = evaluate("test/Retry-v0", RandomPolicy(0), episodes=2, env_host=pool.host)
        assert len(report.episodes) == 2 and report.infra_errors == 0


def replying(script: dict[int, list[str]]):
    """An actor giving episode e the replies `script[e]`, one per turn ("no idea" past them)."""

    def act(active, records):
        return [Completion(reply_of(script.get(r.episode, []), r.turns)) for r in records]

    return act


def reply_of(replies: list[str], turn: int) -> str:
    return replies[turn] if turn < len(replies) else "no idea"


def test_replies_that_kill_a_worker_again_on_rerun_stop_the_run(ray_cluster):
    """A worker death the same replies cause again is the env's crash on them, not bad luck of
    the infrastructure: the run stops (as in-process) instead of excusing the episode."""
    from rlvr.distributed import EnvWorkers, EnvWorkersError

    support.register()
    starts = [Start(0, 0, 0), Start(1, 0, 1)]
    with EnvWorkers(2) as pool:
        batch = pool.batch([("test/Crash-v0", None)] * len(starts))
        killed = pytest.raises(EnvWorkersError, match="episode 0 .*killed two env workers")
        with pytest.warns(RuntimeWarning, match="died"), killed:
            play_episodes(batch, starts, replying({0: ["CRASH"]}))
        assert pool.lost_episodes == 0


@pytest.mark.parametrize(
    ("workers", "crashing"),
    [(1, [0]), (2, [0, 1]), (1, [0, 1])],
    ids=["1-worker-1-reply", "2-workers-2-replies", "1-worker-2-replies"],
)
def test_replies_that_kill_every_worker_stop_the_run(ray_cluster, workers, crashing):
    """No worker survives the step, so the episodes are re-run on a new one, and the replies
    kill it too: the run stops, naming the env and the episode; no episode is excused as an
    infrastructure error."""
    from rlvr.distributed import EnvWorkers, EnvWorkersError

    support.register()
    starts = [Start(i, 0, i) for i in range(4)]
    with EnvWorkers(workers) as pool:
        batch = pool.batch([("test/Crash-v0", None)] * len(starts))
        first = min(crashing)
        stopped = pytest.raises(
            EnvWorkersError, match=f"test/Crash-v0, episode {first} .*killed two env workers"
        )
        with pytest.warns(RuntimeWarning, match="died") as warned, stopped:
            play_episodes(batch, starts, replying({e: ["CRASH"] for e in crashing}))
        assert any("re-run on a new env worker" in str(w.message) for w in warned)
        assert pool.lost_episodes == 0 and pool.replaced == 1


def test_a_reply_killing_the_last_worker_a_step_later_stops_the_run(ray_cluster, tmp_path):
    """Step 1: a reply kills its worker once (a crash that does not come back: re-run on the
    other worker and graded). Step 2: another reply kills the worker left; re-run on a new
    worker, it kills that one too, and the run stops."""
    from rlvr.distributed import EnvWorkers, EnvWorkersError

    support.register()
    starts = [Start(0, 0, 0), Start(1, 0, 1)]
    kwargs = {"crash_marker": str(tmp_path / "crashed")}
    with EnvWorkers(2) as pool:
        batch = pool.batch([("test/Crash-v0", kwargs)] * len(starts))
        act = replying({0: ["CRASH ONCE"], 1: ["no idea", "CRASH"]})
        stopped = pytest.raises(EnvWorkersError, match="episode 1 .*last reply 'CRASH'")
        with pytest.warns(RuntimeWarning, match="died"), stopped:
            play_episodes(batch, starts, act)
        assert (pool.reruns, pool.lost_episodes, pool.replaced) == (2, 0, 1)


def test_a_reply_that_kills_its_lone_worker_once_is_graded_on_a_new_one(ray_cluster, tmp_path):
    """A crash that does not come back on the re-run (the infrastructure's, or a flaky env's):
    the episodes are re-run on a new worker and scored as in-process, the crashing reply
    included (0, not excused)."""
    from rlvr.distributed import EnvWorkers

    support.register()
    starts = [Start(i, 0, i) for i in range(3)]
    act = replying({1: ["CRASH ONCE"]})
    marker = tmp_path / "crashed"
    marker.touch()  # in-process the reply is simply graded
    envs = [gym.make("test/Crash-v0", crash_marker=str(marker)) for _ in starts]
    expected = play_episodes(envs, starts, act)
    marker.unlink()
    with EnvWorkers(1) as pool:
        batch = pool.batch([("test/Crash-v0", {"crash_marker": str(marker)})] * len(starts))
        with pytest.warns(RuntimeWarning, match="a new env worker"):
            records = play_episodes(batch, starts, act)
        assert marker.exists()  # the reply did kill the first worker
        assert records == expected and not any(r.infra_error for r in records)
        assert records[1].rewards[0] == 0.0
        assert (pool.reruns, pool.lost_episodes, pool.replaced) == (3, 0, 1)


def test_no_room_for_a_new_worker_stops_the_run(ray_cluster):
    """The last worker dies and no new one can start (here: the cluster has no room for it):
    the episodes are not excused as infrastructure errors (a reply may have killed the worker),
    the run stops."""
    from rlvr.distributed import EnvWorker, EnvWorkers, EnvWorkersError

    support.register()
    starts = [Start(i, 0, i) for i in range(2)]
    with EnvWorkers(1) as pool:
        pool._remote = ray_cluster.remote(EnvWorker).options(num_cpus=64)  # never placed
        pool._start_timeout = 2
        batch = pool.batch([("test/Retry-v0", None)] * len(starts))
        kill = lambda: kill_worker(ray_cluster, pool.workers[0])  # noqa: E731
        stopped = pytest.raises(EnvWorkersError, match="a new one did not start in 2 s")
        with pytest.warns(RuntimeWarning, match="died"), stopped:
            play_episodes(batch, starts, KillingActor(kill))
        assert pool.lost_episodes == 0 and pool.replaced == 0


def _session_processes(session: int) -> list[tuple[int, str]]:
    """(pid, command) of the processes in `session` (the Ray processes a driver starts join the
    driver's session)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if int(fields[3]) == session and fields[0] != "Z":
            found.append((int(entry.name), command[:120]))
    return found


def test_ctrl_c_leaves_no_ray_process_behind(ray_cluster):
    """Without the cleanup (a driver that `os._exit`s), Ray's node agents keep running."""
    command = [
        sys.executable, "-m", "rlvr.cli", "eval", "rlvr/Math-v0", "--agent", "random",
        "--episodes", "100000", "--ray", "--env-workers", "1", "--no-progress",
    ]  # fmt: skip
    driver = subprocess.Popen(
        command, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:  # until its env worker runs
            others = [c for p, c in _session_processes(driver.pid) if p != driver.pid]
            if any("EnvWorker" in command for command in others):
                break
            assert driver.poll() is None, driver.stdout.read().decode()[-2000:]
            time.sleep(0.5)
        else:
            pytest.fail(f"no env worker started: {others}")
        assert any("raylet" in command for command in others), others
        time.sleep(1)  # episodes running
        driver.send_signal(signal.SIGINT)
        output = driver.communicate(timeout=60)[0].decode()
        assert driver.returncode == 130, output[-2000:]
        deadline = time.monotonic() + 30
        while (left := _session_processes(driver.pid)) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not left, left
    finally:
        if driver.poll() is None:
            driver.kill()
        for pid, _ in _session_processes(driver.pid):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("agent", ["oracle", "random:2"])
def test_bench_on_ray_scores_and_rejudges_as_in_process(workers, agent):
    from rlvr.leaderboards.runner import reverify, run_suite
    from rlvr.leaderboards.suites import load_suite

    suite = load_suite("demo").with_episodes(4)
    here = run_suite(suite, agent, parallel="serial")
    there = run_suite(suite, agent, env_host=workers.host)
    assert there.run["parallel"] == "threads"  # scripted agents: shards in threads, envs on Ray
    assert there.traces == here.traces
    assert [env.score for env in there.envs] == [env.score for env in here.envs]
    again = reverify(there, env_host=workers.host)
    assert again.traces == here.traces
    with pytest.raises(ValueError, match="parallel='threads' or 'serial'"):
        run_suite(suite, agent, parallel="processes", env_host=workers.host)


def test_bench_and_eval_command_lines_take_ray(ray_cluster, tmp_path, capsys):
    from rlvr.cli import main

    db = str(tmp_path / "board.sqlite")
    bench = ["bench", "--suite", "demo", "--agent", "oracle", "--episodes", "3", "--db", db]
    assert main([*bench, "--no-progress", "--ray", "--env-workers", "1"]) == 0
    assert "stored in" in capsys.readouterr().out
    assert main(["bench", "reverify", "1", "--db", db, "--no-progress", "--ray"]) == 0
    assert "re-judged as #2" in capsys.readouterr().out
    evaluated = ["eval", "rlvr/Math-v0", "--episodes", "3", "--no-progress", "--ray"]
    assert main(evaluated) == 0
    assert "success rate   1.0000" in capsys.readouterr().out
    assert main([*bench, "--ray", "--parallel", "processes"]) == 1
    assert "parallel='threads' or 'serial'" in capsys.readouterr().err
