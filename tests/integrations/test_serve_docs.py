"""The serving recipes of docs/integrations.md, run as written against a real `rlvr serve`.

tests/test_docs.py runs every python block of the page, but the blocks that talk to a server at
http://127.0.0.1:8000 only define things there (or are skipped): here they run in order, in one
interpreter, against a server on a free port, and what they define is exercised.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.integrations.served import Server, served
from tests.test_docs import blocks

pytestmark = pytest.mark.slow

URL = "http://127.0.0.1:8000"


def served_blocks() -> list[str]:
    found = [
        block.source
        for block in blocks("docs/integrations.md")
        if block.language == "python" and URL in block.source
    ]
    assert len(found) >= 2, "the TRL class and the remote check_env recipes"
    return found


DRIVER = """
import gymnasium as gym
# the class TRL makes per rollout: a multi-turn episode through its `submit` tool
solver = gym.make("rlvr/MathSelfCorrect-v0")
solver.reset(seed=3)
oracle = solver.unwrapped.oracle_reply()
rollout = ServedMath()
opening = rollout.reset(seed=3)
first = rollout.submit("\\\\boxed{-123456789}")      # wrong: the verdict, and another try
second = rollout.submit(oracle)
after = rollout.submit(oracle)
print(json.dumps([opening, first, second, after, rollout.get_reward(), rollout.done]))
"""


def test_the_serving_recipes_run_against_a_real_server(tmp_path):
    with served("rlvr/MathSelfCorrect-v0", "--oracle") as server:
        code = "import json\n" + "\n\n".join(
            source.replace(URL, server.url) for source in served_blocks()
        )
        result = subprocess.run(
            [sys.executable, "-c", code + DRIVER],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=tmp_path,
        )
    assert result.returncode == 0, result.stderr[-4000:]
    opening, first, second, after, reward, done = json.loads(result.stdout.splitlines()[-1])
    assert opening and first and second
    assert after == "The episode is over." and done is True
    assert reward == 1.0


KILLED = """
import os, signal
rollout = ServedMath()
rollout.reset(seed=1)
os.kill(SERVER_PID, signal.SIGKILL)
print(json.dumps([rollout.submit("\\\\boxed{1}"), rollout.get_reward()]))
"""


def test_the_trl_recipe_drops_a_rollout_whose_server_died(tmp_path):
    server = Server("rlvr/MathSelfCorrect-v0")
    try:
        code = "import json\n" + served_blocks()[0].replace(URL, server.url)
        driver = KILLED.replace("SERVER_PID", str(server.process.pid))
        result = subprocess.run(
            [sys.executable, "-c", code + driver],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=tmp_path,
        )
    finally:
        server.stop()
    assert result.returncode == 0, result.stderr[-4000:]
    message, reward = json.loads(result.stdout.splitlines()[-1])
    assert message == "The environment is unavailable." and reward is None  # never a 0
