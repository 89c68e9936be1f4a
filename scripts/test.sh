#!/usr/bin/env bash
# Set up and run the whole test suite (and the linter).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh "test,local"
.venv/bin/ruff check mesa_dilemmas tests benchmarks scripts
.venv/bin/python -m pytest -q "$@"
