#!/usr/bin/env bash
# The device tool's two commands (issue 40; the calls, their carry lists and the time plan:
# reports/benchmarks/gpu_platform.md), back to back on one warm machine:
#
#   scripts/gpu_run.sh install      # call 1, carry .gpu_bundle/packages: the packages into .gpu_work/, a preflight
#   scripts/gpu_run.sh run          # call 2, carry .gpu_bundle/data: `skipview train` (the profile), then
#                                   # `skipview ablation` (multi-view f against f alone at h 1024), results in $OUT
#
# Options: scripts/gpu_run.py install --help, scripts/gpu_run.py run --help.
set -euo pipefail
export PYTHONUNBUFFERED=1
exec python3 "$(dirname "$0")/gpu_run.py" "$@"
