"""Red team: replies that try to turn their own episode into an infrastructure error in
rlvr/Code-v0 and rlvr/CodeSelfCorrect-v0.

`info["infra_error"]` makes trainers drop the sample, so a reply that could set it would farm
dropped samples instead of zeros. Each hostile submission below runs against a built-in task
(expected values compared on the host) and a HumanEval-style task (test code run by the trusted
runner inside the sandbox); every one must score 0 and never be an infrastructure error. A real
failure of our machinery (a dead Docker engine) must still be flagged.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import gymnasium as gym
import pytest

import rlvr  # noqa: F401
from rlvr.sandboxes import get_executor
from rlvr.verifiers.code import CodeTests
from tests.sandboxes.conftest import require_local_sandbox

WRONG = "def sum_of_squares(*args):\n    return 0\ndef add(*args):\n    return 0\n"
FORGED_REPORT = json.dumps(
    {"load_error": None, "tests_broken": "ImportError: no module", "results": [], "tests": []}
)
HOSTILE = {
    "quote our error messages": (
        "import sys\nprint('sandbox error: the sandbox worker died')\n"
        "sys.stderr.write('Traceback (most recent call last):\\nProtocolError: infrastructure "
        "error\\n')\n"
    ),
    "forge the harness report everywhere": (
        f"import os\nfor fd in range(1024):\n    try:\n"
        f"        os.write(fd, {FORGED_REPORT!r}.encode())\n    except OSError:\n        pass\n"
    ),
    "exit before the tests": "import os\nos._exit(0)\n",
    "close its output": "import os\nos.close(1)\nos.close(2)\n",
    "kill the harness": "import os\nos.kill(os.getppid(), 9)\n",
    "kill everything": "import os\nos.kill(-1, 9)\n",
    "stop the harness": "import os\nos.kill(os.getppid(), 19)\n",
    "fork bomb": (
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    ),
    "memory hog": "hog = []\nwhile True:\n    hog.append(bytearray(2**24))\n",
    "fill the disk": (
        "i = 0\nfor d in ('/tmp', '/dev/shm'):\n    try:\n        while True:\n"
        "            open(f'{d}/f{i}', 'wb').write(b'x' * 2**20)\n            i += 1\n"
        "    except OSError:\n        pass\n"
    ),
    "replace the harness on disk": (
        f"open('_rlvr_harness.py', 'w').write('print({FORGED_REPORT!r})')\n"
        "def sum_of_squares(*args):\n    raise SystemExit\ndef add(*args):\n    raise SystemExit\n"
    ),
    "shrink the harness's memory to what it uses": (  # then it cannot load a C extension
        "import os, resource\nwith open(f'/proc/{os.getppid()}/status') as status:\n"
        "    size = [int(line.split()[1]) << 10 for line in status if line.startswith('VmSize')]\n"
        "resource.prlimit(os.getppid(), resource.RLIMIT_AS, (size[0], size[0]))\n"
    ),
    "hang in the call": (
        "def sum_of_squares(*args):\n    while True:\n        pass\nadd = sum_of_squares\n"
    ),
}
# Replies the env must judge without running anything.
NOT_CODE = [
    "The reply could not be judged (infrastructure error). Error: the tool is unavailable",
    "```python\nprint('\ud800')\ndef sum_of_squares(x):\n    return 0\n```",
    "```python\n" + "(" * 10000 + "\n```",
]
CHECK_TASK = {
    "prompt": "Write add(a, b).",
    "answer": CodeTests(
        "add", check="import bz2\ndef check(candidate):\n    assert candidate(2, 3) == 5\n"
    ).to_answer(),
}


@pytest.fixture(scope="module")
def executor():
    require_local_sandbox()
    with get_executor("local", workers=2, shared=False) as executor:
        executor.warm_up()
        yield executor


def play(env_id, executor, reply, options):
    if env_id == "rlvr/Code-v0":
        env = gym.make(env_id, executor=executor, timeout=1.5, test_timeout=0.5)
    else:
        kwargs = {"executor": executor, "timeout": 1.5, "test_timeout": 0.5}
        env = gym.make(env_id, env_kwargs=kwargs, max_attempts=2)
    try:
        env.reset(seed=0, options=options)
        outcomes = []
        for _ in range(2):
            _, reward, terminated, _, info = env.step(reply)
            outcomes.append((reward, info["infra_error"], info["verdict"]["status"]))
            if terminated:
                break
        return outcomes
    finally:
        env.close()


def test_no_reply_makes_a_code_episode_an_infrastructure_error(executor):
    hostile = [f"```python\n{code}{WRONG}```" for code in HOSTILE.values()]
    replies = hostile + NOT_CODE
    runs = [
        ("rlvr/Code-v0", reply, options)
        for reply in replies
        for options in ({"task_index": 0}, {"task": CHECK_TASK})
    ]
    runs += [("rlvr/CodeSelfCorrect-v0", reply, {"task_index": 0}) for reply in replies[:4]]
    with ThreadPoolExecutor(4) as threads:
        outcomes = list(threads.map(lambda run: play(run[0], executor, *run[1:]), runs))
    farmed = [
        (env_id, reply[:60], outcome)
        for (env_id, reply, _), outcome in zip(runs, outcomes)
        if any(reward != 0 or infra for reward, infra, _ in outcome)
    ]
    assert farmed == []
    ran = [outcome[0][2] for (_, reply, _), outcome in zip(runs, outcomes) if reply in hostile]
    assert ran == ["incorrect"] * len(ran)  # judged, not refused unread


def test_a_dead_sandbox_engine_is_still_an_infrastructure_error():
    with get_executor("docker", workers=1, shared=False, base_url="unix:///nonexistent.sock") as ex:
        env = gym.make("rlvr/Code-v0", executor=ex)
        env.reset(seed=0, options={"task_index": 0})
        _, reward, terminated, _, info = env.step(env.unwrapped.oracle_reply())
        env.close()
    assert info["infra_error"] and terminated and reward == 0
