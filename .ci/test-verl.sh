#!/usr/bin/env bash
# The verl reward tests in a venv of their own (.venv-verl): verl 0.9 pins transformers < 5.11,
# while the suite's venv pins 5.24 (.ci/constraints.txt), so the two cannot share one. torch stays
# pinned in the same pip command (an unpinned torch pulls CUDA builds), and verl is pinned to the
# version rlvr.integrations.verl is written and tested against. CI=true carries over: a missing
# verl fails these tests. Arguments replace the default test path.
set -euo pipefail
cd "$(dirname "$0")/.."
torch_pin=$(grep -E '^torch==' .ci/constraints.txt)
bash .ci/share-torch.sh .venv-verl  # its torch: hard links to .venv's, not a copy
.venv-verl/bin/python -m pip install -q --upgrade pip
.venv-verl/bin/python -m pip install -q -e '.[verl,dev]' verl==0.9.1 "$torch_pin"
.venv-verl/bin/python -c 'import torch, transformers, verl
print(f"== verl tests on verl {verl.__version__}, transformers {transformers.__version__}, "
      f"torch {torch.__version__}")'
.venv-verl/bin/python -m pytest "${@:-tests/integrations/test_verl_reward.py}"
# under CI the venv goes once its tests pass: it was made for this check only, and a CI
# machine's disk ran out with all three venvs on it
if [ "${CI:-}" = true ]; then rm -rf .venv-verl; fi
