#!/usr/bin/env bash
# The main job from README.md: set up .venv and run `rlvr demo` (tiny model, GRPO on CPU,
# leaderboard). As root it also installs what is missing of python3-venv (Debian's python3 has
# no venv without it) and bubblewrap for the local code sandbox; without bubblewrap the demo
# still runs and skips the sandbox step, saying why. Extra arguments go to `rlvr demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -eq 0 ]; then
  missing=()
  python3 -c 'import ensurepip' >/dev/null 2>&1 || missing+=(python3-venv)
  command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
  if [ "${#missing[@]}" -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      "${missing[@]}" >/dev/null
  fi
fi
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# setuptools notes every editable install of a non-src layout ("folders named like the package
# may take precedence"); here the folder rlvr/ is the package itself, so the note is only noise.
PYTHONWARNINGS="ignore:Editable installation" \
  .venv/bin/python -m pip install -q -e '.[agents]' -c .ci/constraints.txt
exec .venv/bin/rlvr demo "$@"
