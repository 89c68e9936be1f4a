#!/usr/bin/env bash
# Set up and run the whole test suite (and the linter): Debian's chromium and npm for the
# dashboard's browser tests, the project with its test, dashboard and local-model extras.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/system_packages.sh chromium npm
bash scripts/bootstrap.sh "test,dashboard,local"
.venv/bin/python -m mesa_dilemmas.viz.dashboard.assets   # Solara's front-end files, from the npm registry
.venv/bin/ruff check mesa_dilemmas tests benchmarks scripts
.venv/bin/python -m pytest -q "$@"
