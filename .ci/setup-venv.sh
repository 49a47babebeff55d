#!/usr/bin/env bash
# Creates .venv with rlvr-gym (editable) and every extra the tests need (verl too: the
# integration tests run verl's own reward managers). Safe to run twice.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[all,dev,verl]' -c .ci/constraints.txt
