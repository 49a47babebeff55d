#!/usr/bin/env bash
# Creates .venv with rlvr-gym (editable) and every extra the tests need. Safe to run twice.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# the filter: setuptools' note on editable installs, noise here (see .ci/demo.sh)
PYTHONWARNINGS="ignore:Editable installation" \
  .venv/bin/python -m pip install -q -e '.[all,dev,ray]' -c .ci/constraints.txt
