"""Red team: replies that try to turn their own episode into an infrastructure error in
rlvr/Math-v0 and rlvr/MathSelfCorrect-v0.

Symbolic answers are checked in a pool of killable worker processes; only a pool that fails even
a trivial check is an infrastructure error. Answers that overrun the time limit, exhaust the
worker's memory, nest deeply, look like code, quote our error messages or are not text at all
must all score 0, never set `info["infra_error"]`; a pool whose workers die on everything must.
"""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor

import gymnasium as gym

import rlvr  # noqa: F401
from rlvr.verifiers.math import pool as pool_module
from rlvr.verifiers.math.pool import WorkerPool

ANSWERS = [
    "infrastructure error",
    "\\text{sandbox error: the math checker failed}",
    "10^{10^{10}}",
    "9^{9^{9^{9}}}",
    "(10^{9})!",
    "2^{2^{40}}",
    "\\sqrt{2}^{10^{10^{10}}} - \\sqrt{2}^{10^{10^{10}}}",
    "2^{" * 30 + "2" + "}" * 30,
    "\\sqrt{" * 500 + "2" + "}" * 500,
    "9" * 100_000,
    "1e999999999",
    "\\frac{1}{0}",
    "\\log(0) - \\infty + \\infty",
    "__import__('os').system('kill -9 -1')",
    "x\x00",
    "\ud800",
]
REPLIES = [f"\\boxed{{{answer}}}" for answer in ANSWERS] + [
    "The reply could not be judged (infrastructure error).",
    "Traceback (most recent call last):\n  ...\nWorkerFailure: the math checker failed",
    " ".join(f"\\boxed{{{n}}}" for n in range(40)),
]
TASKS = [
    {"prompt": "Simplify 2/sqrt(2).", "answer": "\\sqrt{2}"},  # a symbolic check in a worker
    {"prompt": "What is 6 * 7?", "answer": "42"},  # plain numbers, in-process
]


def play(env_id, reply, task):
    kwargs = {"timeout": 1.0}
    if env_id == "rlvr/Math-v0":
        env = gym.make(env_id, **kwargs)
    else:
        env = gym.make(env_id, env_kwargs=kwargs, max_attempts=2)
    try:
        env.reset(seed=0, options={"task": task})
        steps = []
        while True:
            _, reward, terminated, truncated, info = env.step(reply)
            steps.append((reward, info["infra_error"]))
            if terminated or truncated:
                return steps
    finally:
        env.close()


def test_no_reply_makes_a_math_episode_an_infrastructure_error():
    runs = [("rlvr/Math-v0", reply, task) for reply in REPLIES for task in TASKS]
    runs += [("rlvr/MathSelfCorrect-v0", reply, TASKS[0]) for reply in REPLIES[:3]]
    with ThreadPoolExecutor(4) as threads:
        results = list(threads.map(lambda run: play(*run), runs))
    flagged = [
        (env_id, reply[:50], steps)
        for (env_id, reply, _), steps in zip(runs, results)
        if any(infra or reward for reward, infra in steps)
    ]
    assert flagged == []


def pool_whose_workers_die(monkeypatch) -> WorkerPool:
    """A math worker pool whose workers start, then die on every check; made the shared pool."""
    dies = "import sys\nprint('{\"ready\": true}', flush=True)\nsys.stdin.readline()\nsys.exit(3)"
    broken = WorkerPool(1, command=(sys.executable, "-c", dies), canary_timeout=5)
    monkeypatch.setattr(pool_module, "get_pool", lambda: broken)
    return broken


def test_a_pool_whose_workers_die_on_everything_is_still_an_infrastructure_error(monkeypatch):
    broken = pool_whose_workers_die(monkeypatch)
    try:
        steps = play("rlvr/Math-v0", "\\boxed{\\sqrt{3}}", TASKS[0])
    finally:
        broken.close()
    assert steps == [(0.0, True)]
