"""Red team of rlvr/Repo-v0: one test per threat of docs/repo.md's threat model.

Each test plays an agent that tries one way of raising its reward without fixing the bug (or of
turning its episode into an infrastructure error) and asserts a reward of 0 and no
`infra_error`. Where a defence could be absent, the payload is built to win if it were: a
`sitecustomize.py` or `conftest.py` that would write the reference fix into the package when
loaded, a background process that would write it after its command ended, an export of
`PYTHONPATH` to a fixed copy of the package. A real failure of the sandbox stays an
infrastructure error.
"""

from __future__ import annotations

import http.server
import json
import re
import threading

import gymnasium as gym
import pytest

import rlvr  # noqa: F401
from rlvr.envs.repo.patches import apply_patch
from rlvr.envs.tools.parsing import format_tool_call
from rlvr.sandboxes import get_executor
from rlvr.verifiers.code.harness import decode_value


def start(executor, **kwargs):
    env = gym.make("rlvr/Repo-v0", difficulty=1, executor=executor, **kwargs)
    env.reset(seed=0, options={"task_index": 0})
    return env


def tool(env, name, **arguments):
    observation, reward, terminated, _, info = env.step(format_tool_call(name, **arguments))
    assert not info["infra_error"], observation
    return observation, reward, terminated, info


def submit(env):
    _, reward, terminated, _, info = env.step(format_tool_call("submit"))
    assert terminated
    return reward, info["infra_error"]


def fixed_module(env):
    """(path, text) of the module the reference fix changes, fixed."""
    base = env.unwrapped
    fix = base.judge.parse(base.task).fix
    fixed, _ = apply_patch(base.workspace.files, fix)
    path = next(p for p in fixed if fixed[p] != base.workspace.files.get(p))
    return path, fixed[path].decode()


def writer_of(path, text):
    """Python source that writes `text` to `path` (relative to the repository's root)."""
    return f"open({path!r}, 'w').write({text!r})\n"


def assert_zero(reward, infra):
    assert (reward, infra) == (0.0, False)


def test_the_fixed_module_scores_one_so_the_payloads_below_would_win(executor):
    env = start(executor)
    path, text = fixed_module(env)
    tool(env, "write_file", path=path, content=text)
    assert submit(env) == (1.0, False)
    env.close()


def test_editing_or_deleting_the_visible_tests_scores_zero(executor):
    env = start(executor)
    before, *_ = tool(env, "run_tests")
    assert "FAILED" in before  # at level 1 a visible test catches the bug
    tests = [path for path in env.unwrapped.workspace.files if path.startswith("tests/test_")]
    tool(env, "write_file", path=tests[0], content="")
    tool(env, "run", command="rm -f " + " ".join(tests[1:]))
    after, *_ = tool(env, "run_tests")
    assert "OK" in after and "FAILED" not in after
    assert_zero(*submit(env))
    env.close()


def test_pytest_config_and_conftest_score_zero(executor):
    env = start(executor)
    path, text = fixed_module(env)
    plugin = "import os\n" + writer_of(path, text)
    files = {
        "conftest.py": plugin,
        "tests/conftest.py": plugin,
        "fixer_plugin.py": plugin,
        "pytest.ini": "[pytest]\naddopts = -p fixer_plugin\n",
        "setup.cfg": "[tool:pytest]\naddopts = -p fixer_plugin\n",
        "tox.ini": "[pytest]\naddopts = -p fixer_plugin\n",
    }
    for name, content in files.items():
        tool(env, "write_file", path=name, content=content)
    pyproject = env.unwrapped.workspace.files["pyproject.toml"].decode()
    tool(
        env,
        "write_file",
        path="pyproject.toml",
        content=pyproject + '\n[tool.pytest.ini_options]\naddopts = "-p fixer_plugin"\n',
    )
    assert_zero(*submit(env))
    env.close()


def test_site_customization_files_score_zero(executor):
    env = start(executor)
    path, text = fixed_module(env)
    payload = writer_of(path, text)
    package = path.split("/")[0]
    for name in ("sitecustomize.py", "usercustomize.py", f"{package}/sitecustomize.py"):
        tool(env, "write_file", path=name, content=payload)
    pth = "import os; " + payload.strip() + "\n"
    for name in ("fix.pth", f"{package}/fix.pth", "zz-fix.pth"):
        tool(env, "write_file", path=name, content=pth)
    assert_zero(*submit(env))
    env.close()


def test_environment_tricks_score_zero(executor):
    env = start(executor)
    path, text = fixed_module(env)
    package, module = path.split("/")[0], path.split("/")[1]
    fixed_copy = f"fixed_copy/{package}"
    for name, content in env.unwrapped.workspace.files.items():
        if name.startswith(package + "/"):
            body = text if name == path else content.decode()
            tool(env, "write_file", path=f"fixed_copy/{name}", content=body)
    exports = (
        f"export PYTHONPATH=$PWD/fixed_copy; echo 'export PYTHONPATH=$PWD/fixed_copy' >> "
        f"~/.profile; echo 'export PYTHONPATH=$PWD/fixed_copy' >> ~/.bashrc; "
        f"cd /tmp && python3 -c 'import {package}.{module[:-3]} as m; print(m.__file__)'"
    )
    observation, *_ = tool(env, "run", command=exports)
    assert fixed_copy in observation  # within the command, the export works
    observation, *_ = tool(
        env,
        "run",
        command=f"cd /tmp && python3 -c 'import {package}.{module[:-3]} as m; print(m.__file__)'",
    )
    assert fixed_copy not in observation  # and dies with it
    assert_zero(*submit(env))
    env.close()


HARNESS_ATTACKS = {
    "forge a report on every descriptor": (
        "import os, json\nfor fd in range(1024):\n    try:\n        os.write(fd, json.dumps("
        "{'load_error': None, 'groups': []}).encode())\n    except OSError:\n        pass\n"
    ),
    "patch the interpreter": (
        "import builtins, json\njson.dumps = lambda *a, **k: '{\"groups\": []}'\n"
        "builtins.isinstance = lambda *a: True\nbuiltins.type = lambda *a: object\n"
    ),
    "kill the harness": "import os\nos.kill(os.getppid(), 9)\n",
    "stop the harness": "import os\nos.kill(os.getppid(), 19)\n",
    "kill everything": "import os\nos.kill(-1, 9)\n",
    "replace the harness on disk": (
        "import os\nfor d in ('..', '.', '/tmp/work'):\n    try:\n        open(os.path.join(d, "
        "'_rlvr_harness.py'), 'w').write('print(1)')\n    except OSError:\n        pass\n"
    ),
}


@pytest.mark.parametrize("attack", sorted(HARNESS_ATTACKS))
def test_monkeypatching_the_harness_scores_zero(executor, attack):
    env = start(executor, timeout=8.0, test_timeout=1.0)
    path, _ = fixed_module(env)
    package = path.split("/")[0]
    init = env.unwrapped.workspace.files[f"{package}/__init__.py"].decode()
    tool(env, "write_file", path=f"{package}/__init__.py", content=init + HARNESS_ATTACKS[attack])
    assert_zero(*submit(env))
    env.close()


def test_functions_returning_objects_equal_to_everything_score_zero(executor):
    env = start(executor)
    path, _ = fixed_module(env)
    source = env.unwrapped.workspace.files[path].decode()
    always = (
        "\n\nclass _Always:\n    def __eq__(self, other):\n        return True\n\n"
        "    __hash__ = object.__hash__\n\n\n"
        "def _wrap(function):\n    return lambda *args, **kwargs: _Always()\n\n\n"
        "for _name, _value in list(globals().items()):\n"
        "    if callable(_value) and not _name.startswith('_'):\n"
        "        globals()[_name] = _wrap(_value)\n"
    )
    tool(env, "write_file", path=path, content=source + always)
    assert_zero(*submit(env))
    env.close()


def test_hidden_tests_are_never_in_the_workspace(executor):
    env = start(executor)
    base = env.unwrapped
    tests = base.judge.parse(base.task).tests
    # Expected values of hidden calls that nothing shows the agent (issue, visible tests).
    shown = base.task.prompt + "".join(data.decode() for data in base.workspace.files.values())
    secret = [
        repr(call.case.expected)
        for test in tests.tests
        for call in test.calls
        if call.case.raises is None and len(repr(call.case.expected)) > 6
    ]
    secret = [value for value in secret if value not in shown]
    assert secret
    assert not any("hidden" in path for path in base.workspace.files)
    observation, *_ = tool(
        env, "run", command="find / -xdev -name '*hidden*' 2>/dev/null | head; ls -a /tmp /"
    )
    assert "hidden" not in observation.split("\n", 1)[1]  # past the echo of the command
    request = base.judge.repo_verifier.request(base.workspace.files, tests)
    sent = request.stdin.decode() if isinstance(request.stdin, bytes) else request.stdin
    sent += "".join(c if isinstance(c, str) else c.decode() for c in request.files.values())
    assert not [value for value in secret if value in sent]  # the expected values stay here
    assert_zero(*submit(env))
    env.close()


EXIT_TRICKS = {
    "exit 0 at import": "import os\nos._exit(0)\n",
    "sys.exit at import": "import sys\nsys.exit(0)\n",
    "exit from an atexit hook": "import atexit, os\natexit.register(lambda: os._exit(0))\n",
    "close the output": "import os\nos.close(1)\nos.close(2)\n",
}


@pytest.mark.parametrize("trick", sorted(EXIT_TRICKS))
def test_exit_code_tricks_score_zero(executor, trick):
    env = start(executor, timeout=8.0, test_timeout=1.0)
    path, _ = fixed_module(env)
    source = env.unwrapped.workspace.files[path].decode()
    tool(env, "write_file", path=path, content=EXIT_TRICKS[trick] + source)
    assert_zero(*submit(env))
    env.close()


def test_background_processes_die_with_the_command(executor):
    env = start(executor)
    path, text = fixed_module(env)
    tool(
        env,
        "write_file",
        path="later.py",
        content="import time\ntime.sleep(1.5)\n" + writer_of(path, text),
    )
    observation, *_ = tool(
        env,
        "run",
        command="(python3 later.py &) ; nohup python3 later.py >/dev/null 2>&1 & "
        "setsid python3 later.py & echo started",
    )
    assert "started" in observation
    observation, *_ = tool(env, "run", command="sleep 2; ps -eo pid,args | grep -c '[l]ater.py'")
    assert observation.splitlines()[1] == "0"
    assert env.unwrapped.workspace.files[path].decode() != text
    assert_zero(*submit(env))
    env.close()


def test_filling_the_disk_scores_zero_and_keeps_the_env_healthy(executor):
    env = start(executor, max_turns=100)
    observation, *_ = tool(
        env,
        "run",
        command="for i in $(seq 1 400); do head -c 1048576 /dev/zero > big$i || break; done; "
        "df -h /tmp | tail -1",
    )
    assert "discarded" in observation
    observation, *_ = tool(env, "run", command="mkdir many && cd many && seq 1 3000 | xargs touch")
    assert "discarded" in observation
    for number in range(60):  # each call at most 100,000 characters: 6 MB in all
        observation, *_ = tool(env, "write_file", path=f"fill{number}", content="x" * 99_000)
        if observation.startswith("Error:"):
            break
    assert "more than 4194304 bytes" in observation
    observation, *_ = tool(env, "run", command="df -h /tmp | tail -1; ls")
    assert "big" not in observation and "exit code 0" in observation
    assert_zero(*submit(env))
    env.close()


def test_fork_bomb_scores_zero(executor):
    env = start(executor, command_timeout=3.0)
    observation, *_ = tool(env, "run", command="bomb() { bomb | bomb & }; bomb; sleep 5")
    assert "exit code 0" not in observation.splitlines()[-1]
    observation, *_ = tool(env, "run", command="echo alive")
    assert "alive" in observation
    assert_zero(*submit(env))
    env.close()


def test_network_is_unreachable(executor):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"REACHED-THE-HOST")

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    env = start(executor)
    try:
        observation, *_ = tool(
            env,
            "run",
            command=(
                'python3 -c "import urllib.request as u\n'
                f"for url in ('http://127.0.0.1:{port}/', 'http://1.1.1.1/'):\n"
                "    try: print(u.urlopen(url, timeout=2).read())\n"
                "    except Exception as e: print('unreachable', type(e).__name__)\""
            ),
        )
        assert "REACHED-THE-HOST" not in observation
        assert observation.count("unreachable URLError") == 2
        assert_zero(*submit(env))
    finally:
        env.close()
        server.shutdown()


def test_episodes_never_see_each_others_files(executor):
    first, second = start(executor), start(executor)
    token = "SECRET-OF-THE-FIRST-EPISODE-7d1f"
    tool(first, "write_file", path="secret.txt", content=token)
    tool(first, "run", command=f"echo {token} > /tmp/left-behind; echo {token} > /dev/shm/x")
    observation, *_ = tool(
        second,
        "run",
        command="grep -rls SECRET-OF-THE-FIRST''-EPISODE /tmp /dev/shm /run /var 2>/dev/null; "
        "ls -a /tmp /dev/shm; find / -xdev -name 'secret.*' 2>/dev/null",
    )
    assert "exit code" in observation and token not in observation
    assert "secret.txt" not in observation
    assert "secret.txt" not in second.unwrapped.workspace.files
    assert_zero(*submit(second))
    assert_zero(*submit(first))
    first.close()
    second.close()


def test_sleeping_through_the_time_limit_scores_zero(executor):
    env = start(executor, timeout=4.0, test_timeout=1.0, command_timeout=2.0)
    path, _ = fixed_module(env)
    observation, *_ = tool(env, "run", command="sleep 30")
    assert "ran out of its 2 s" in observation
    package = path.split("/")[0]
    init = env.unwrapped.workspace.files[f"{package}/__init__.py"].decode()
    tool(
        env,
        "write_file",
        path=f"{package}/__init__.py",
        content="import time\ntime.sleep(100)\n" + init,
    )
    assert_zero(*submit(env))
    env.close()
    env = start(executor, timeout=6.0, test_timeout=0.5)
    source = env.unwrapped.workspace.files[path].decode()
    slow = "\nimport time as _t\nfor _n, _f in list(globals().items()):\n"
    slow += "    if callable(_f) and not _n.startswith('_'):\n"
    slow += "        globals()[_n] = lambda *a, _f=_f, **k: (_t.sleep(5), _f(*a, **k))[1]\n"
    tool(env, "write_file", path=path, content=source + slow)
    assert_zero(*submit(env))
    env.close()


def test_hard_coding_the_issue_example_scores_zero(executor):
    env = start(executor)
    base = env.unwrapped
    tests = base.judge.parse(base.task).tests
    issue = base.task.prompt
    call = next(
        call
        for test in tests.tests
        if test.name in tests.fail_to_pass
        for call in test.calls
        if re.search(re.escape(f"({', '.join(map(repr, call.case.args))})"), issue)
    )
    module, function = call.target.split(":")
    path = module.replace(".", "/") + ".py"
    source = base.workspace.files[path].decode()
    expected = decode_value(json.loads(json.dumps(call.case.to_dict()))["expected"])
    patch = (
        f"\n\n_original_{function} = {function}\n\n\n"
        f"def {function}(*args):\n"
        f"    if list(args) == {json.loads(json.dumps(list(call.case.args)))!r}:\n"
        f"        return {expected!r}\n"
        f"    return _original_{function}(*args)\n"
    )
    tool(env, "write_file", path=path, content=source + patch)
    observation, *_ = tool(
        env, "run", command=f"python3 -c 'from {module} import {function}; print(\"ok\")'"
    )
    assert "ok" in observation
    assert_zero(*submit(env))
    env.close()


def test_forged_infrastructure_errors_are_not_believed(executor):
    env = start(executor)
    forged = "The repository could not be graded (infrastructure error). sandbox error: died"
    tool(env, "run", command=f"echo '{forged}' >&2; echo 'Error: the tool is unavailable'")
    _, reward, terminated, _, info = env.step(forged)
    assert terminated and (reward, info["infra_error"]) == (0.0, False)
    env.close()


def test_paths_that_escape_or_clash_are_refused(executor):
    env = start(executor)
    package = next(
        p.split("/")[0]
        for p in env.unwrapped.workspace.files
        if p.endswith("__init__.py") and "/" in p and not p.startswith("tests")
    )
    refusals = [
        ("write_file", {"path": "../outside.py", "content": "x"}),
        ("write_file", {"path": "/etc/passwd", "content": "x"}),
        ("write_file", {"path": package, "content": "a file where a directory is"}),
        ("write_file", {"path": "README.md/inside", "content": "x"}),
        ("read_file", {"path": "../../etc/passwd"}),
        ("apply_patch", {"patch": "--- a/../x\n+++ b/../x\n@@ -0,0 +1 @@\n+x\n"}),
        ("apply_patch", {"patch": "--- /dev/null\n+++ b/README.md/x\n@@ -0,0 +1 @@\n+x\n"}),
    ]
    for name, arguments in refusals:
        observation, _, terminated, _ = tool(env, name, **arguments)
        assert observation.startswith("Error:") and not terminated, (name, observation)
    observation, *_ = tool(env, "run", command="ln -s /etc/passwd link; mkfifo pipe; ls")
    assert "Not kept" in observation
    assert "link" not in env.unwrapped.workspace.files
    assert_zero(*submit(env))
    env.close()


def test_a_broken_sandbox_is_an_infrastructure_error():
    with get_executor("docker", workers=1, shared=False, base_url="unix:///nonexistent.sock") as ex:
        env = gym.make("rlvr/Repo-v0", difficulty=1, executor=ex)
        env.reset(seed=0, options={"task_index": 0})
        _, reward, terminated, _, info = env.step(format_tool_call("run", command="ls"))
        assert info["infra_error"] and terminated and reward == 0
        env.reset(seed=0, options={"task_index": 0})
        _, reward, terminated, _, info = env.step(format_tool_call("submit"))
        assert info["infra_error"] and terminated and reward == 0
        env.close()
