#!/usr/bin/env bash
# The test command from README.md: set up services and the venv, then run the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/setup-system.sh
bash .ci/setup-venv.sh
.venv/bin/rlvr sandbox build-image --if-missing  # the Docker sandbox image (about 1 s, offline)
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/python .ci/typecheck.py  # mypy over the public packages ([tool.mypy] in pyproject.toml)
.venv/bin/python .ci/lint_imports.py  # the layers ([tool.importlinter] in pyproject.toml)
# verl's tests need verl, which cannot share this venv: they run in .ci/test-verl.sh below.
RLVR_VERL_TESTS=elsewhere .venv/bin/python -m pytest "$@"
bash .ci/test-newest-transformers.sh  # the agents tests again, on the newest transformers
bash .ci/test-verl.sh  # the verl reward tests, in a venv with verl's transformers
