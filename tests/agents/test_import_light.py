"""The agents package must stay importable without paying for torch."""

from __future__ import annotations

import subprocess
import sys


def test_importing_agents_and_the_cli_does_not_import_torch():
    code = (
        "import sys, rlvr, rlvr.agents, rlvr.agents.registry, rlvr.agents.learners, rlvr.cli\n"
        "rlvr.cli.build_parser()\n"
        "heavy = [m for m in ('torch', 'transformers', 'peft') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "assert rlvr.agents.OpenAIChatPolicy.__name__ == 'OpenAIChatPolicy'\n"
        "assert 'torch' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
