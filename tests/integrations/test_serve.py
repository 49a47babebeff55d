"""`rlvr serve` on loopback, talked to by OpenEnv's own client and by `RemoteEnv`.

Every test runs a real server process (`tests.integrations.served`); the threats of
docs/serving.md#threat-model are each tried against it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import gymnasium as gym
import pytest

import rlvr  # noqa: F401  (registers the envs)
from rlvr.envs import check_env
from rlvr.envs.errors import EnvConfigError, ResetNeeded
from rlvr.rollout.episodes import evaluate
from tests.conftest import require_extra
from tests.integrations.served import Server, pid_alive, served, signal

pytestmark = pytest.mark.slow

MATH_ARGS = ("--oracle", "--max-sessions", "70")


@pytest.fixture(scope="module")
def math_server():
    with served("rlvr/Math-v0", *MATH_ARGS) as server:
        yield server


def openenv_client(url: str):
    """OpenEnv's own synchronous client (openenv-core)."""
    require_extra("openenv", "serve")
    from openenv.core.generic_client import GenericEnvClient

    return GenericEnvClient(base_url=url).sync()


def remote(url: str, **kwargs):
    return gym.make("remote/OpenEnv-v0", url=url, **kwargs)


def raw_socket(url: str, **kwargs):
    from websockets.sync.client import connect

    return connect(url.replace("http", "ws", 1) + "/ws", **kwargs)


def exchange(socket, message) -> dict:
    socket.send(message if isinstance(message, str) else json.dumps(message))
    return json.loads(socket.recv(timeout=60))


# --- OpenEnv's own client -------------------------------------------------------------------------


def test_openenv_client_plays_a_single_turn_env(math_server):
    with openenv_client(math_server.url) as client:
        first = client.reset(seed=7)
        assert not first.done and first.reward is None
        observation = first.observation
        assert observation["messages"][-1]["content"] == observation["text"]
        assert isinstance(observation["task_fingerprint"], str)
        oracle = client.state()["oracle_reply"]
        result = client.step({"text": oracle})
        assert result.done and result.reward == 1.0
        assert result.observation["verdict"]["status"] == "correct"
        assert result.observation["infra_error"] is False
        assert result.observation["info"]["rewards"] == {"correctness": 1.0}
    in_process = gym.make("rlvr/Math-v0")
    text, info = in_process.reset(seed=7)
    assert (text, info) == (
        observation["text"],
        {**observation["info"], "messages": observation["messages"]},
    )


def test_openenv_client_plays_a_multi_turn_tool_env():
    with served("rlvr/ToolMath-v0", "--oracle") as server, openenv_client(server.url) as client:
        client.reset(seed=3)
        steps = []
        while True:
            result = client.step({"text": client.state()["oracle_reply"]})
            steps.append(result)
            if result.done:
                break
        assert len(steps) >= 2  # a calculator call, then the answer
        assert any(m["role"] == "tool" for m in steps[0].observation["messages"])
        assert not steps[0].done and steps[0].observation["text"]
        assert sum(step.reward for step in steps) == 1.0
        assert steps[-1].observation["verdict"]["status"] == "correct"


def test_openenv_client_plays_a_multi_agent_game():
    moves = [
        "<move>1</move>",
        "<move>4</move>",
        "<move>2</move>",
        "<move>5</move>",
        "<move>3</move>",
    ]
    with served("rlvr/TicTacToe-v0") as server, openenv_client(server.url) as client:
        observation = client.reset(seed=0).observation
        assert observation["agent"] == "player_0" and observation["agents"] == [
            "player_0",
            "player_1",
        ]
        with pytest.raises(RuntimeError, match="ActionError: it is player_0's turn"):
            client.step({"text": moves[0], "agent": "player_1"})
        for k, move in enumerate(moves):
            mover = observation["agent"]
            assert mover == f"player_{k % 2}"
            result = client.step({"text": move, "agent": mover})
            observation = result.observation
        assert result.done and observation["agent"] is None and observation["agents"] == []
        assert result.reward == 1.0  # player_0's winning move
        seats = observation["seats"]
        assert (seats["player_0"]["return"], seats["player_1"]["return"]) == (1.0, -1.0)
        assert not any(seat["infra_error"] for seat in seats.values())
        with pytest.raises(RuntimeError, match="ResetNeeded"):
            client.step({"text": moves[0]})
    from rlvr.envs.multiagent import make

    game = make("rlvr/TicTacToe-v0")  # the same moves in-process: the same returns
    game.reset(seed=0)
    returns = dict.fromkeys(game.possible_agents, 0.0)
    for move in moves:
        game.step(move)
        for agent, reward in game.rewards.items():
            returns[agent] += reward
    assert returns == {agent: seat["return"] for agent, seat in seats.items()}


# --- RemoteEnv: a served env as a Gymnasium env ---------------------------------------------------


def test_a_served_repository_episode_is_solved_by_its_oracle():
    # Repo-v0 runs its shell in the host's sandbox: served from a host (never from an image),
    # its tools, workspace and grading work over the protocol as in process.
    with served("rlvr/Repo-v0", "--oracle") as server, openenv_client(server.url) as client:
        client.reset(seed=1)
        for _ in range(10):
            result = client.step({"text": client.state()["oracle_reply"]})
            if result.done:
                break
        assert result.done and result.reward == 1.0
        assert result.observation["verdict"]["status"] == "correct"


def test_remote_env_passes_check_env(math_server):
    env = remote(math_server.url)
    try:
        check_env(env)
    finally:
        env.close()


@pytest.mark.parametrize("agent", ["oracle", "random:3"])
def test_remote_records_equal_in_process_records(math_server, agent):
    from rlvr.agents.kinds import make_policy

    kwargs = {"episodes": 6, "seed": 11, "batch_size": 3}
    here = evaluate("rlvr/Math-v0", make_policy(agent), **kwargs)
    there = evaluate(
        "remote/OpenEnv-v0", make_policy(agent), env_kwargs={"url": math_server.url}, **kwargs
    )
    assert [r.to_dict() for r in there.episodes] == [r.to_dict() for r in here.episodes]
    assert all(r.task_hash for r in there.episodes)


def test_remote_multi_turn_records_equal_in_process_records():
    from rlvr.agents.kinds import make_policy

    with served("rlvr/ToolMath-v0", "--oracle") as server:
        kwargs = {"episodes": 4, "seed": 2, "batch_size": 2}
        here = evaluate("rlvr/ToolMath-v0", make_policy("oracle"), **kwargs)
        there = evaluate(
            "remote/OpenEnv-v0", make_policy("oracle"), env_kwargs={"url": server.url}, **kwargs
        )
    assert [r.to_dict() for r in there.episodes] == [r.to_dict() for r in here.episodes]
    assert min(r.turns for r in there.episodes) >= 2


def test_remote_env_raises_the_envs_own_errors(math_server):
    env = remote(math_server.url)
    try:
        with pytest.raises(EnvConfigError, match="unknown reset options"):
            env.reset(options={"bogus": 1})
        env.reset(seed=0)
        with pytest.raises(TypeError):
            env.step(42)
        env.step("\\boxed{1}")
        with pytest.raises(ResetNeeded, match="the episode has ended"):
            env.step("again")
    finally:
        env.close()


def test_remote_env_without_the_oracle_says_how_to_get_it():
    with served("rlvr/Math-v0") as server:
        env = remote(server.url)
        try:
            env.reset(seed=0)
            with pytest.raises(NotImplementedError, match="--oracle"):
                env.unwrapped.oracle_reply()
        finally:
            env.close()


def test_remote_env_refuses_a_bad_url_clearly():
    from rlvr.integrations.openenv import RemoteEnvError

    with pytest.raises(EnvConfigError, match="http://HOST:PORT"):
        remote("127.0.0.1:8000")
    with pytest.raises(RemoteEnvError, match="rlvr serve"):
        remote("http://127.0.0.1:9")  # nothing listens on the discard port


def test_rlvr_eval_runs_against_a_served_env(math_server):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "rlvr.cli",
            "eval",
            "remote/OpenEnv-v0",
            "--kwargs",
            json.dumps({"url": math_server.url}),
            "--agent",
            "oracle",
            "--episodes",
            "4",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "success_rate" in result.stdout or "1.0" in result.stdout, result.stdout


# --- sessions: many, too many, idle, killed -------------------------------------------------------


def test_64_concurrent_sessions_each_play_their_own_episode(math_server):
    results: dict[int, tuple] = {}
    failures: list[BaseException] = []
    start = threading.Barrier(64)

    def play(k: int) -> None:
        try:
            env = remote(math_server.url)
            try:
                start.wait(timeout=120)
                _, info = env.reset(seed=1000 + k)
                _, reward, terminated, _, step_info = env.step(env.unwrapped.oracle_reply())
                results[k] = (info["task_id"], reward, terminated, step_info["infra_error"])
            finally:
                env.close()
        except BaseException as exc:  # reported below
            failures.append(exc)

    threads = [threading.Thread(target=play, args=(k,)) for k in range(64)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not failures, failures[:3]
    assert len(results) == 64
    assert all(reward == 1.0 and done and not infra for _, reward, done, infra in results.values())
    in_process = gym.make("rlvr/Math-v0")
    expected = {k: in_process.reset(seed=1000 + k)[1]["task_id"] for k in range(64)}
    assert {k: result[0] for k, result in results.items()} == expected


def test_sessions_past_the_limit_are_refused_clearly_and_idle_ones_reaped():
    from rlvr.integrations.openenv import RemoteEnvError

    with served("rlvr/Math-v0", "--max-sessions", "2", "--idle-timeout", "1") as server:
        first, second, third = (remote(server.url) for _ in range(3))
        try:
            first.reset(seed=0)
            second.reset(seed=1)
            begun = time.monotonic()
            with pytest.raises(RemoteEnvError, match="full.*CAPACITY|capacity|maximum"):
                third.reset(seed=2)
            assert time.monotonic() - begun < 10  # refused, not left hanging
            time.sleep(8)  # the reaper wakes every 5 s and closes sessions idle past 1 s
            _, reward, terminated, truncated, info = first.step("\\boxed{1}")
            assert info["infra_error"] is True and reward == 0.0
            assert (terminated, truncated) == (False, True)
            third.reset(seed=2)  # the reaped sessions freed their places
            text, info = first.reset(seed=0)  # and a reaped client starts a new session
            assert text and info["turn"] == 0
        finally:
            for env in (first, second, third):
                env.close()


def test_a_server_killed_mid_episode_is_an_infra_error_never_a_zero():
    server = Server("rlvr/Math-v0")
    env = remote(server.url)
    try:
        env.reset(seed=0)
        server.stop(signal.SIGKILL)
        _, reward, terminated, truncated, info = env.step("\\boxed{1}")
        assert info["infra_error"] is True
        assert (reward, terminated, truncated) == (0.0, False, True)
        assert "verdict" not in info and info["messages"][-1]["content"] == "\\boxed{1}"
    finally:
        env.close()
        server.stop()


def test_a_killed_server_is_dropped_from_an_evaluation_not_scored():
    from rlvr.agents.kinds import make_policy
    from rlvr.rollout.reports import EvalReport

    server = Server("rlvr/Math-v0", "--oracle")
    policy = make_policy("oracle")
    calls = {"n": 0}
    generate = policy.generate

    def generate_then_kill(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:  # the second batch: its episodes are mid-way when the server dies
            replies = generate(*args, **kwargs)
            server.stop(signal.SIGKILL)
            return replies
        return generate(*args, **kwargs)

    policy.generate = generate_then_kill
    try:
        report: EvalReport = evaluate(
            "remote/OpenEnv-v0",
            policy,
            episodes=4,
            batch_size=2,
            env_kwargs={"url": server.url},
        )
    finally:
        server.stop()
    assert [r.infra_error for r in report.episodes] == [False, False, True, True]
    assert report.mean_reward == 1.0 and report.infra_errors == 2


def test_shutdown_closes_every_env_and_its_sandbox_workers():
    from tests.sandboxes.conftest import require_local_sandbox

    require_local_sandbox()
    server = Server("rlvr/Code-v0", "--oracle")
    envs = [remote(server.url) for _ in range(2)]
    try:
        for env in envs:
            env.reset(seed=0)
            env.step(env.unwrapped.oracle_reply())
        workers = server.children()
        assert workers, "Code-v0's sandbox pool should have started worker processes"
        assert server.stop(signal.SIGTERM, timeout=60) == 0  # not killed by the signal
        # the lifespan hook ran (sessions the closing sockets did not close yet are closed there)
        assert "rlvr serve: closing" in server.output()
        deadline = time.monotonic() + 20
        while any(pid_alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [pid for pid in workers if pid_alive(pid)]
    finally:
        for env in envs:
            env.close()
        server.stop(signal.SIGKILL)


# --- threats (docs/serving.md#threat-model) -------------------------------------------------------


def test_a_reply_cannot_forge_infra_error_or_a_reward(math_server):
    forgeries = [
        '{"infra_error": true, "reward": 1.0}',
        '"}, "infra_error": true, "reward": 1, "x": {"',
        "infra_error: True\nreward: 1.0\nverdict: correct",
    ]
    with raw_socket(math_server.url) as socket:
        for text in forgeries:
            exchange(socket, {"type": "reset", "data": {"seed": 0}})
            answer = exchange(socket, {"type": "step", "data": {"text": text}})
            data = answer["data"]
            assert answer["type"] == "observation"
            assert data["reward"] == 0.0 and data["observation"]["infra_error"] is False
            assert data["observation"]["info"]["infra_error"] is False
            assert data["observation"]["messages"][-1]["content"] == text  # only as text
        exchange(socket, {"type": "reset", "data": {"seed": 0}})
        answer = exchange(
            socket, {"type": "step", "data": {"text": "x", "metadata": {"infra_error": True}}}
        )
        assert answer["data"]["observation"]["infra_error"] is False  # action metadata: unread
        exchange(socket, {"type": "reset", "data": {"seed": 0}})
        answer = exchange(socket, {"type": "step", "data": {"text": "x", "infra_error": True}})
        assert answer["type"] == "error" and answer["data"]["code"] == "VALIDATION_ERROR"


def test_malformed_messages_get_errors_and_the_session_lives_on(math_server):
    with raw_socket(math_server.url) as socket:
        bad = [
            ("{not json", "INVALID_JSON"),
            (json.dumps({"type": "launch"}), "UNKNOWN_TYPE"),
            (json.dumps({"type": "step", "data": {"text": 42}}), "VALIDATION_ERROR"),
            (json.dumps({"type": "step", "data": {}}), "VALIDATION_ERROR"),
            (json.dumps({"type": "reset", "data": {"seed": -1}}), "EXECUTION_ERROR"),
            (json.dumps({"type": "reset", "data": {"options": [1]}}), "EXECUTION_ERROR"),
            (json.dumps({"type": "reset", "data": {"launch": 1}}), "EXECUTION_ERROR"),
        ]
        for message, code in bad:
            answer = exchange(socket, message)
            assert answer["type"] == "error" and answer["data"]["code"] == code, answer
        answer = exchange(socket, {"type": "reset", "data": {"seed": 0}})
        assert answer["type"] == "observation"


def test_an_oversized_message_closes_only_its_socket(math_server):
    from websockets.exceptions import ConnectionClosed

    with raw_socket(math_server.url) as socket:
        exchange(socket, {"type": "reset", "data": {"seed": 0}})
        with pytest.raises(ConnectionClosed) as closed:
            exchange(socket, {"type": "step", "data": {"text": "x" * (2 << 20)}})
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
    with urllib.request.urlopen(math_server.url + "/health", timeout=10) as answer:
        assert json.loads(answer.read())["status"] == "healthy"
    with raw_socket(math_server.url) as socket:
        assert exchange(socket, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"


@pytest.mark.parametrize(
    ("method", "path", "body", "status"),
    [
        ("POST", "/reset", b"{}", 405),  # stateless HTTP episodes are off
        ("POST", "/step", b'{"action": {"text": "x"}}', 405),
        ("GET", "/state", None, 405),
        ("POST", "/reset", b"{not json", 405),
    ],
)
def test_http_requests_get_clear_4xx_answers(math_server, method, path, body, status):
    request = urllib.request.Request(math_server.url + path, data=body, method=method)
    with pytest.raises(urllib.error.HTTPError) as answer:
        urllib.request.urlopen(request, timeout=30)
    assert answer.value.code == status
    assert "detail" in json.loads(answer.value.read())


@pytest.mark.parametrize("chunked", [False, True])
def test_an_oversized_http_body_gets_413_before_it_is_read_whole(math_server, chunked):
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", int(math_server.url.rsplit(":", 1)[1]))
    connection.putrequest("POST", "/mcp")
    if chunked:
        connection.putheader("Transfer-Encoding", "chunked")
    else:
        connection.putheader("Content-Length", str(64 << 20))  # declared: refused unread
    connection.endheaders()
    if chunked:  # 2 MiB sent in 64 KiB chunks, until the server answers and stops reading
        chunk = b"%x\r\n%s\r\n" % (1 << 16, b"x" * (1 << 16))
        try:
            for _ in range(32):
                connection.send(chunk)
        except OSError:
            pass
    answer = connection.getresponse()
    assert answer.status == 413
    assert "detail" in json.loads(answer.read())
    connection.close()


def test_serve_refuses_bad_arguments_in_one_line():
    for args, message in [
        (["rlvr/Math-v0", "--kwargs", '{"bogus": 1}'], "cannot make rlvr/Math-v0"),
        (["rlvr/Nope-v0"], "unknown env 'rlvr/Nope-v0'"),
        (["rlvr/Math-v0", "--max-sessions", "0"], "--max-sessions must be an int >= 1"),
        (["build-image", "--port", "1"], "--port is not an option of build-image"),
        (["rlvr/Math-v0", "--family", "math"], "--family is not an option of serving"),
    ]:
        result = subprocess.run(
            [sys.executable, "-m", "rlvr.cli", "serve", *args],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode in (1, 2), result.stderr
        assert message in result.stderr and "Traceback" not in result.stderr, result.stderr


# --- the rest of rlvr against a served env: Ray env workers, training, several workers ------------


def test_ray_env_workers_play_a_served_env_with_the_in_process_records(math_server, ray_cluster):
    from rlvr.agents.scripted import OraclePolicy
    from rlvr.distributed import EnvWorkers

    settings = {"episodes": 5, "seed": 21, "batch_size": 3}
    here = evaluate("rlvr/Math-v0", OraclePolicy(), **settings)
    pool = EnvWorkers(2)
    try:
        there = evaluate(
            "remote/OpenEnv-v0",
            OraclePolicy(),
            env_kwargs={"url": math_server.url},
            env_host=pool.host,
            **settings,
        )
    finally:
        pool.close()
    assert there.episodes == here.episodes and there.success_rate == 1.0


def test_training_runs_on_a_served_env(math_server, tmp_path):
    require_extra("torch", "agents")
    from rlvr.agents.metrics import read_metrics
    from rlvr.agents.rollouts import EnvSpec
    from rlvr.agents.train import train
    from tests.agents.support import tiny_model, train_config

    url = {"url": math_server.url}
    spec = EnvSpec("remote/OpenEnv-v0", kwargs=url, heldout_kwargs=url)
    train(train_config(tiny_model(tmp_path / "tiny"), tmp_path / "run", envs=[spec]))
    rows = [
        row for row in read_metrics(tmp_path / "run" / "metrics.jsonl") if "losses/policy" in row
    ]
    assert len(rows) == 2
    assert all(row["rollout/remote/OpenEnv-v0/infra_error_rate"] == 0.0 for row in rows)


def test_held_out_evaluation_needs_a_server_of_the_held_out_split(math_server):
    with pytest.raises(EnvConfigError, match=r"serves split=None, not 'test'.*--heldout-kwargs"):
        remote(math_server.url, split="test")


def test_several_worker_processes_each_hold_sessions():
    with served("rlvr/Math-v0", "--workers", "2", "--oracle") as server:
        envs = [remote(server.url) for _ in range(4)]
        try:
            for k, env in enumerate(envs):
                env.reset(seed=k)
            for env in envs:
                assert env.step(env.unwrapped.oracle_reply())[1] == 1.0
        finally:
            for env in envs:
                env.close()
        workers = server.children()
    assert len(workers) >= 2  # uvicorn's worker processes
