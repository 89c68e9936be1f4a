#!/usr/bin/env bash
# Set up and run the whole test suite (and the linters): Debian's chromium and npm for the
# dashboard's browser tests, the project with its test, dashboard and local-model extras.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/system_packages.sh chromium npm
bash scripts/bootstrap.sh "test,dashboard,local,ray,pettingzoo,docs"
.venv/bin/python -m pip install --quiet -e examples/stag_hunt   # the example game from its own package
.venv/bin/python -m mesa_dilemmas.viz.dashboard.assets   # Solara's front-end files, from the npm registry
.venv/bin/ruff check mesa_dilemmas tests benchmarks scripts examples
.venv/bin/ruff format --check mesa_dilemmas tests benchmarks scripts examples
.venv/bin/lint-imports                                    # the layering contract (pyproject.toml)
if [ $# -gt 0 ]; then   # tests named on the command line: as asked, one at a time
  .venv/bin/python -m pytest -q "$@"
  exit
fi
# Two passes. Everything but the browser tests on two workers (pytest-xdist), each test file whole
# on one worker so its module fixtures are built once (three workers were measured no faster:
# 20:39 against 20:08), the longest files first (tests/conftest.py; xdist's own reordering by
# test count would start the documentation build last); then the browser tests (marked in tests/conftest.py) alone, one at a
# time: they wait for the dashboard's own Play clock, which a second worker's load can starve.
# TEST_WORKERS=0 runs the first pass in order too.
.venv/bin/python -m pytest -q -n "${TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder -m "not browser" --durations=25
.venv/bin/python -m pytest -q -m browser
