#!/usr/bin/env bash
# The one command to give the device tool (issue 40; plan, command and carry list: reports/benchmarks/gpu_platform.md):
#
#   scripts/gpu_run.sh                      # bundle in .gpu_bundle (scripts/gpu_bundle.py build), results in $OUT
#
# Unpacks the bundle, runs `skipview train` (the profile) and `skipview ablation` (multi-view f against f alone at
# h 1024) on the GPU, each phase under a time guard, and writes summary.json, results.tar.gz and the logs to $OUT.
# Options: scripts/gpu_run.py --help.
set -euo pipefail
export PYTHONUNBUFFERED=1
exec python3 "$(dirname "$0")/gpu_run.py" "$@"
