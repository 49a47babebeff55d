"""Import weight: the agents package without torch; the lower layers and worker processes without
Gymnasium or the envs; and `import rlvr` still registering every env."""

from __future__ import annotations

import subprocess

import pytest

from rlvr.builtin_envs import rlvr_env_ids
from rlvr.verifiers.math.pool import WORKER_COMMAND
from tests.conftest import run_python


def test_importing_agents_and_the_cli_does_not_import_torch():
    run_python(
        "import sys, rlvr, rlvr.agents, rlvr.agents.kinds, rlvr.agents.learners, rlvr.cli\n"
        "rlvr.cli.build_parser()\n"
        "heavy = [m for m in ('torch', 'transformers', 'peft', 'ray') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "assert rlvr.agents.OpenAIChatPolicy.__name__ == 'OpenAIChatPolicy'\n"
        "assert 'torch' not in sys.modules\n"
    )


@pytest.mark.parametrize(
    "modules",
    [
        "rlvr",
        "rlvr.sandboxes",
        "rlvr.verifiers",
        "rlvr.verifiers.math",
        "rlvr.verifiers.sql",
        "rlvr.verifiers.code",
        "rlvr.sandboxes, rlvr.sandboxes.local, rlvr.sandboxes.containers, rlvr.verifiers.math.pool",
        "rlvr.core.policy, rlvr.core.jsonfiles, rlvr.config, rlvr.workers",  # the ground, --ray
    ],
)
def test_the_lower_layers_import_without_gymnasium_or_the_envs(modules):
    run_python(
        f"import sys, {modules}\n"
        "heavy = ('gymnasium', 'rlvr.envs', 'numpy', 'torch', 'ray')\n"
        "heavy = [m for m in heavy if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )


def test_the_math_worker_process_starts_without_gymnasium_or_the_envs():
    command = [WORKER_COMMAND[0], "-X", "importtime", *WORKER_COMMAND[1:]]
    result = subprocess.run(command, input=b"", capture_output=True, timeout=120)
    assert b'"ready": true' in result.stdout, result.stderr[-2000:]
    imported = {line.rsplit(b"|", 1)[-1].strip() for line in result.stderr.splitlines()}
    assert b"rlvr.verifiers.math.equivalence" in imported  # the worker's real work
    assert b"gymnasium" not in imported and b"rlvr.envs" not in imported


@pytest.mark.parametrize(
    "code",
    [
        "import rlvr, gymnasium as gym",  # registered when gymnasium loads
        "import gymnasium as gym, rlvr",  # gymnasium already loaded: registered at once
        "import gymnasium as gym, rlvr.sandboxes",  # through a lower layer
        "import rlvr.sandboxes, gymnasium as gym",
        "import gymnasium as gym; gym.make('rlvr:rlvr/Math-v0')",  # gymnasium imports rlvr
        "import gymnasium as gym, rlvr; gym.register_envs(rlvr)",
    ],
)
def test_import_rlvr_still_registers_every_env(code):
    run_python(
        f"{code}\n"
        f"missing = [i for i in {rlvr_env_ids()!r} if i not in gym.registry]\n"
        "assert not missing, missing\n"
        "env = gym.make('rlvr/Math-v0')\n"
        "assert env.reset(seed=0)[0]\n"
    )


def test_gymnasium_keeps_its_own_loader_and_the_hook_goes_away():
    run_python(
        "import sys, inspect, rlvr, gymnasium\n"
        "from rlvr import _import_hook\n"
        "assert type(gymnasium.__loader__).__name__ == 'SourceFileLoader', gymnasium.__loader__\n"
        "assert gymnasium.__spec__.loader is gymnasium.__loader__\n"
        "assert 'def make' in inspect.getsource(gymnasium.envs.registration)\n"
        "assert _import_hook._FINDER not in sys.meta_path\n"
    )


def test_subpackages_are_attributes_of_a_bare_import_rlvr():
    run_python(
        "import sys, rlvr\n"
        "assert 'rlvr.envs' not in sys.modules\n"
        "assert rlvr.envs.check_env.__name__ == 'check_env'\n"
        "assert rlvr.sandboxes.get_executor.__name__ == 'get_executor'\n"
        "try:\n"
        "    rlvr.no_such_thing\n"
        "except AttributeError as exc:\n"
        "    assert 'no_such_thing' in str(exc)\n"
        "else:\n"
        "    raise AssertionError('no AttributeError')\n"
    )


def test_ray_is_imported_only_where_envs_run_on_it():
    """The Ray extra is optional: the packages, the rollout loop, the learners' modules and the
    command line import without it; `rlvr.distributed` is the module that needs it."""
    run_python(
        "import sys, rlvr, rlvr.envs, rlvr.agents, rlvr.rollout, rlvr.cli\n"
        "import rlvr.agents.rollouts, rlvr.agents.async_rollouts, rlvr.agents.cli\n"
        "rlvr.cli.build_parser().parse_args(['eval', 'rlvr/Math-v0', '--ray'])\n"
        "assert 'ray' not in sys.modules, 'ray imported'\n"
    )


def test_the_envs_the_integrations_and_the_cli_import_no_server_or_client_stack():
    # `rlvr serve` (openenv-core: FastAPI, uvicorn, Gradio, FastMCP), its client (websockets) and
    # the verifiers adapter load only when used.
    run_python(
        "import sys, gymnasium, rlvr, rlvr.envs, rlvr.integrations, rlvr.cli\n"
        "rlvr.cli.build_parser()\n"
        "assert 'remote/OpenEnv-v0' in gymnasium.registry\n"
        "heavy = ('openenv', 'fastapi', 'uvicorn', 'websockets', 'verifiers.v1', 'torch')\n"
        "heavy = [m for m in heavy if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
