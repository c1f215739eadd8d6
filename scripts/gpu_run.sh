#!/usr/bin/env bash
# skipview's platform on a GPU machine without network access, from the offline bundle (issue 40; what each command
# is sent with and the time plan: reports/benchmarks/gpu_platform.md), two commands one after the other on one machine:
#
#   scripts/gpu_run.sh install      # first, with .gpu_bundle/packages: the packages into .gpu_work/, a preflight
#   scripts/gpu_run.sh run          # second, with .gpu_bundle/data: `skipview train` (the profile), then
#                                   # `skipview study run` (multi-view f against f alone at h 1024), results in $OUT
#
# Options: scripts/gpu_run.py install --help, scripts/gpu_run.py run --help.
set -euo pipefail
export PYTHONUNBUFFERED=1
exec python3 "$(dirname "$0")/gpu_run.py" "$@"
