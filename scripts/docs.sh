#!/usr/bin/env bash
# Build the documentation site (Sphinx + MyST-NB, furo theme) into docs/_build/html, strictly:
# any warning fails the build. The tutorial notebooks run top to bottom during the build (rule
# players and the bundled local model: no key, no network); DOCS_NB_EXECUTION=off skips that.
# Usage: bash scripts/docs.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh "docs,dashboard,local"
.venv/bin/python -m pip install --quiet -e examples/stag_hunt   # the tutorials seat its hunters
out="${1:-docs/_build/html}"
.venv/bin/python -m sphinx -b html -W --keep-going -q docs "$out"
echo "documentation: $out/index.html"
