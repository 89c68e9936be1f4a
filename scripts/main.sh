#!/usr/bin/env bash
# Set up and run the main job: the fishery's punishment-shock validation with its figure, then the
# live dashboard (every game, rule-based and embedded-LLM agents) on http://127.0.0.1:8765/.
# Pass --no-dashboard to stop after the run.
set -euo pipefail
cd "$(dirname "$0")/.."
dashboard=1
if [ "${1:-}" = "--no-dashboard" ]; then dashboard=0; shift; fi
bash scripts/system_packages.sh npm
bash scripts/bootstrap.sh "local"
.venv/bin/mesa-dilemmas run fishery/punishment_shock --figures "$@"
if [ "$dashboard" = 1 ]; then
  exec .venv/bin/mesa-dilemmas dashboard --port "${PORT:-8765}"
fi
