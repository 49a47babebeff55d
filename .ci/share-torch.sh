#!/usr/bin/env bash
# Usage: bash .ci/share-torch.sh VENV
# Gives the test venv VENV (made if missing) the torch of .venv as hard links instead of a second
# copy: the CPU build takes ~750 MB, and the extra test venvs (.ci/test-newest-transformers.sh,
# .ci/test-verl.sh) pin the same torch, so pip finds it installed and adds only what differs. A CI
# machine's disk ran out on the third copy. Links are safe here: pip replaces files, never
# rewrites them in place, so upgrading torch in one venv leaves the other's files as they were.
# Does nothing (pip then installs torch as usual) unless .venv holds the pinned torch for the
# same Python.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=$1
python3 -m venv "$venv"
torch_pin=$(grep -E '^torch==' .ci/constraints.txt)
site() { "$1/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'; }
[ -x .venv/bin/python ] || exit 0
from=$(site .venv)
to=$(site "$venv")
installed=$(.venv/bin/python -m pip list --format=freeze 2>/dev/null | grep -E '^torch==' || true)
# the pin is torch==X; a CPU build is installed as torch==X+cpu
case "$installed" in
"$torch_pin" | "$torch_pin"+*) ;;
*) exit 0 ;;
esac
version='import sys; print(sys.version_info[:2])'
[ "$(.venv/bin/python -c "$version")" = "$("$venv/bin/python" -c "$version")" ] || exit 0
linked=()
for path in "$from"/torch "$from"/torchgen "$from"/functorch "$from"/torch-*.dist-info; do
  if [ -e "$path" ] && [ ! -e "$to/$(basename "$path")" ]; then
    linked+=("$to/$(basename "$path")")
    if ! cp -al "$path" "$to/" 2>/dev/null; then
      # another file system: no hard links there, so pip installs torch as usual
      rm -rf "${linked[@]}"
      echo "== $venv is on another file system than .venv: pip installs its own torch"
      exit 0
    fi
  fi
done
echo "== $venv shares .venv's ${installed} (hard links)"
