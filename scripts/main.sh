#!/usr/bin/env bash
# Set up and run the main job: the punishment-shock validation of the fishery, with its figure.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh "local"
.venv/bin/mesa-dilemmas run fishery/punishment_shock --figures "$@"
