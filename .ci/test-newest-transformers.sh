#!/usr/bin/env bash
# The agents tests once more, against the newest transformers and peft, in a venv of their own
# (.venv-newest): the main run uses the versions pinned in .ci/constraints.txt, this one shows
# whether the next release still works. torch stays pinned, in the same pip command (an unpinned
# torch pulls CUDA builds). FutureWarnings are reported here, not errors (RLVR_FUTURE_WARNINGS,
# see tests/agents/conftest.py): a deprecation in a release nobody has tested yet is a notice to
# act on; in the pinned run they fail. Arguments replace the default test path.
set -euo pipefail
cd "$(dirname "$0")/.."
torch_pin=$(grep -E '^torch==' .ci/constraints.txt)
bash .ci/share-torch.sh .venv-newest  # its torch: hard links to .venv's, not a copy
.venv-newest/bin/python -m pip install -q --upgrade pip
.venv-newest/bin/python -m pip install -q --upgrade -e '.[agents,dev,ray]' transformers peft "$torch_pin"
.venv-newest/bin/python -c 'import torch, transformers, peft
print(f"== agents tests on transformers {transformers.__version__}, peft {peft.__version__}, "
      f"torch {torch.__version__}")'
RLVR_FUTURE_WARNINGS=default .venv-newest/bin/python -m pytest "${@:-tests/agents}"
# under CI the venv goes once its tests pass: it was made for this check only, and a CI
# machine's disk ran out with all three venvs on it
if [ "${CI:-}" = true ]; then rm -rf .venv-newest; fi
