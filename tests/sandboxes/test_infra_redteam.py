"""Red team: programs that try to turn their own run into a sandbox (infrastructure) error.

A sandbox error makes trainers drop the sample, so a policy that could cause one would farm
dropped samples instead of zeros. Whatever a program does (forge protocol frames on every
descriptor it can reach, print our error messages, kill or stop its supervisor, kill or stop
everything it can see, fork-bomb, exhaust memory, tmpfs, descriptors or IPC, leave processes and
files behind), its result must carry a program status, never `SandboxStatus.ERROR`, and the
worker must serve the next run. The whole set runs at once on each backend's 2-worker pool.
"""

from __future__ import annotations

import json

from rlvr.sandboxes import ExecRequest, Limits, ProgramStatus
from rlvr.sandboxes.types import MiB

FAKE_DONE = json.dumps({"op": "done", "exit": 0, "clean": True, "blobs": []})
FAKE_FRAME = f"b'RLVR' + len({FAKE_DONE!r}).to_bytes(4, 'big') + {FAKE_DONE!r}.encode()"

HOSTILE = {
    "kill its supervisor": "import os\nos.kill(os.getppid(), 9)",
    "kill everything it can": "import os\nos.kill(-1, 9)",
    "kill pid 1": "import os\nos.kill(1, 9)\nprint('alive')",
    "stop its supervisor": "import os, time\nos.kill(os.getppid(), 19)\ntime.sleep(5)",
    "stop everything it can": "import os\nos.kill(-1, 19)",
    "fork bomb": (
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
    ),
    "memory hog": "hog = []\nwhile True:\n    hog.append(bytearray(16 * 2**20))",
    "fill the tmpfs mounts, then memory": (
        "i = 0\nfor d in ('/dev/shm', '/tmp'):\n    try:\n        while True:\n"
        "            open(f'{d}/f{i}', 'wb').write(b'x' * 2**20)\n            i += 1\n"
        "    except OSError:\n        pass\nhog = []\nwhile True:\n    hog.append(bytearray(2**20))"
    ),
    "forge protocol frames on every descriptor": (
        f"import os\nframe = {FAKE_FRAME}\nfor fd in range(1024):\n    try:\n"
        "        os.write(fd, frame)\n    except OSError:\n        pass\n"
        "print('sandbox error: infrastructure error: the sandbox worker died')"
    ),
    "write to its parents' descriptors": (
        f"import os\nframe = {FAKE_FRAME}\nfor pid in (os.getppid(), 1):\n"
        "    for fd in range(4):\n        try:\n"
        "            with open(f'/proc/{pid}/fd/{fd}', 'wb') as out:\n"
        "                out.write(frame)\n        except OSError:\n            pass"
    ),
    "close its standard streams": "import os\nfor fd in (0, 1, 2):\n    os.close(fd)",
    "flood the output": "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)",
    "exhaust System V IPC": (
        "import ctypes\nlibc = ctypes.CDLL(None)\nfor _ in range(4096):\n"
        "    libc.shmget(0, 4096, 0o1600)\n    libc.semget(0, 8, 0o1600)\n"
        "    libc.msgget(0, 0o1600)"
    ),
    "leave a daemon behind": (
        "import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
        "        time.sleep(100)\n    os._exit(0)\nprint('parent done')"
    ),
    "start a thousand spinning threads": (
        "import threading\nfor _ in range(1000):\n    try:\n"
        "        threading.Thread(target=lambda: sum(range(10**9)), daemon=True).start()\n"
        "    except RuntimeError:\n        break"
    ),
    "leave many files": (
        "import time\nstop, i = time.time() + 0.4, 0\nwhile time.time() < stop:\n"
        "    open(f'/tmp/{i}', 'w').close()\n    i += 1"
    ),
    "leave a deep tree, unreadable": (
        "import os, time\nos.chdir('/tmp')\nstop = time.time() + 0.4\n"
        "while time.time() < stop:\n    os.mkdir('d')\n    os.chdir('d')\n"
        "os.chmod('/tmp/d', 0)\nos.chmod('/tmp', 0)"
    ),
    "exhaust descriptors": (
        "import os\nfds = []\ntry:\n    while True:\n        fds.append(os.open('/dev/null', 0))\n"
        "except OSError:\n    print(len(fds))"
    ),
}
LIMITS = Limits(wall_time=0.5, memory=128 * MiB)


def test_no_program_can_make_its_run_a_sandbox_error(executor):
    jobs = {
        name: executor.submit(ExecRequest(code=code, limits=LIMITS))
        for name, code in HOSTILE.items()
    }
    results = {name: job.result() for name, job in jobs.items()}
    assert {name: r.describe() for name, r in results.items() if r.infra_error} == {}
    assert results["forge protocol frames on every descriptor"].status is ProgramStatus.FINISHED
    assert "sandbox error" in results["forge protocol frames on every descriptor"].stdout_text
    assert results["kill its supervisor"].status is ProgramStatus.FAILED
    assert results["stop its supervisor"].status is ProgramStatus.TIMEOUT
    assert results["memory hog"].status is ProgramStatus.OOM
    # and nothing stays broken: both workers serve plain runs afterwards
    after = [executor.submit(ExecRequest(code="print('ok')")) for _ in range(4)]
    assert [job.result().stdout_text for job in after] == ["ok\n"] * 4
