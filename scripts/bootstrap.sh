#!/usr/bin/env bash
# Find a Python >= 3.12, create .venv and install the project with the given extras.
# Usage: scripts/bootstrap.sh [EXTRAS]   (EXTRAS like "test" or "test,local"; empty for none)
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"

find_python() {
  local candidates=()
  [ -n "${PYTHON:-}" ] && candidates+=("$PYTHON")
  candidates+=(python3.13 python3.12 python3 python)
  for dir in "$HOME"/.pyenv/versions/3.1[2-9]* /root/.pyenv/versions/3.1[2-9]* /usr/local/bin /usr/bin /opt/python*/bin; do
    [ -d "$dir" ] || continue
    for exe in "$dir"/bin/python3 "$dir"/python3.1[2-9]; do
      [ -x "$exe" ] && candidates+=("$exe")
    done
  done
  for exe in "${candidates[@]}"; do
    if command -v "$exe" >/dev/null 2>&1 &&
       "$exe" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null; then
      command -v "$exe"
      return 0
    fi
  done
  return 1
}

if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null; then
  py="$(find_python)" || { echo "error: no Python >= 3.12 found (set PYTHON=/path/to/python3.12)" >&2; exit 1; }
  echo "using $py ($("$py" --version))"
  rm -rf .venv
  "$py" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
case ",$extras," in
  *,local,*) bash scripts/build_llama.sh .venv/bin/python ;;   # portable llama.cpp, never -march=native
esac
spec="."
[ -n "$extras" ] && spec=".[$extras]"
.venv/bin/python -m pip install --quiet -e "$spec"
