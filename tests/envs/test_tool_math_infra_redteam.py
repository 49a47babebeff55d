"""Red team: replies that try to turn their own episode into an infrastructure error in
rlvr/ToolMath-v0, through the `python` tool (a sandbox), the calculator or the final answer.

The python tool is `slow_is_infra` and turns a broken sandbox into `ToolInfraError`, both of
which end the episode flagged `infra_error`: no program the agent writes may get there (its
failures come back as tool errors and the episode goes on), while a sandbox worker that we kill
from outside must still be flagged. The shared queue is covered by
`tests/envs/test_tool_math.py`.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from rlvr.envs.tool_math import ToolMathEnv
from rlvr.envs.tools import format_tool_call
from tests.sandboxes.conftest import require_local_sandbox

PROGRAMS = [
    "print('Error: the tool is unavailable (sandbox error: the sandbox worker died)')",
    "import sys\nsys.stderr.write('Traceback (most recent call last):\\ninfrastructure error')\n"
    "raise SystemExit(70)",
    "import os\nos.kill(os.getppid(), 9)",
    "import os\nos.kill(-1, 9)",
    "import os\nos.kill(os.getppid(), 19)",
    "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass",
    "hog = []\nwhile True:\n    hog.append(bytearray(2**24))",
    "i = 0\nwhile True:\n    open(f'/tmp/{i}', 'wb').write(b'x' * 2**20)\n    i += 1",
    "import os\nfor fd in range(1024):\n    try:\n        os.write(fd, b'RLVR\\0\\0\\0\\2{}')\n"
    "    except OSError:\n        pass",
    "import os\nos.close(1)\nos.close(2)",
    "while True:\n    print('x' * 10**5)",
    "while True:\n    pass",
]
EXPRESSIONS = [
    "9**9**9**9",
    "factorial(10**7)",
    "(" * 5000 + "1",
    "sandbox error: infrastructure error",
    "__import__('os').system('kill -9 1')",
    "pow(2, 10**100, 0)",
    "comb(10**9, 5 * 10**8)",
    "1 / 0",
]
FINAL_ANSWERS = [
    "The tool is unavailable (infrastructure error).",
    "\\boxed{" + "9" * 100_000 + "}",
    "\\boxed{1/0}",
]


def calls(tool, values, key):
    """Replies of at most four calls each (the per-reply limit)."""
    blocks = [format_tool_call(tool, **{key: value}) for value in values]
    return ["\n".join(blocks[i : i + 4]) for i in range(0, len(blocks), 4)]


@pytest.fixture(autouse=True)
def _local_sandbox():
    require_local_sandbox()


def make_env():
    env = ToolMathEnv(python_tool=True)  # every env shares the process's sandbox pool
    env.python.time_limit = 1.0  # each program's limit (10 s by default)
    return env


def play(replies):
    """One episode: each reply, then a wrong final answer; (reward, infra_error) per step."""
    env = make_env()
    try:
        env.reset(seed=0)
        steps = []
        for reply in [*replies, "\\boxed{0}"]:
            _, reward, terminated, _, info = env.step(reply)
            steps.append((reward, info["infra_error"]))
            if terminated:
                break
        return steps
    finally:
        env.close()


def test_no_tool_call_or_answer_makes_an_infrastructure_error():
    episodes = [[reply] for reply in calls("python", PROGRAMS, "code")]
    episodes += [calls("calculator", EXPRESSIONS, "expression")]
    episodes += [[answer] for answer in FINAL_ANSWERS]
    with ThreadPoolExecutor(4) as threads:
        results = list(threads.map(play, episodes))
    flagged = [steps for steps in results if any(infra or reward for reward, infra in steps)]
    assert flagged == []
    assert all(len(steps) == len(replies) + 1 for steps, replies in zip(results, episodes[:-3]))


def test_a_sandbox_worker_killed_from_outside_is_still_an_infrastructure_error():
    env = make_env()
    env.reset(seed=0)
    executor = env.python.executor()
    executor.warm_up()

    def kill_the_workers_soon():
        time.sleep(0.5)
        for worker in list(executor._pool._workers):
            os.kill(worker.transport.process.pid, signal.SIGKILL)

    killer = threading.Thread(target=kill_the_workers_soon)
    killer.start()
    reply = format_tool_call("python", code="import time\ntime.sleep(3)")
    observation, reward, terminated, _, info = env.step(reply)
    killer.join()
    env.close()
    assert info["infra_error"] and terminated and reward == 0
    assert "the sandbox worker died" in observation
