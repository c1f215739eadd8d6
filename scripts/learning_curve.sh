#!/usr/bin/env bash
# The learning curve of issue 48 (studies/learning_curve.yaml), run or continued, smallest size first: for each size,
# its cut and fastText vectors (reports/dvc.yaml's curve_cut and curve_wordvecs, and what they need), then every
# (row, seed) of that size without a run record (`skipview study run --sizes`, one thread a model, one model at a
# time), then the curve's report (reports/learning_curve/curve.md) and the README's results from every record landed
# so far. The sizes the study borrows (`borrow`: all 1.18M) are read from other studies' records, never trained.
# Rerun it to continue: a finished (row, size, seed) is its record under reports/learning_curve/runs/ and is not
# trained again; an interrupted model resumes from its last checkpoint. `dvc repro
# reports/dvc.yaml:curve_report` reproduces the same from scratch, but makes every
# size's vectors before any training. On another machine the cuts come out byte-identical but fastText's vectors
# anew (it is not bit-reproducible): each run's margin is over the uSIF on its own vectors, and the report names a
# run whose vectors have none.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH" OMP_NUM_THREADS=1

# the sizes the study trains itself (not those it borrows from other studies)
sizes=$(python -c "import yaml; s = yaml.safe_load(open('studies/learning_curve.yaml'))
print(*[size for size in s['sizes'] if size not in s.get('borrow', {})])")
for size in $sizes; do
  # another `dvc` command of the shared checkout may hold DVC's lock for a while: wait for it
  for attempt in $(seq 30); do
    dvc repro "reports/dvc.yaml:curve_wordvecs@$size" && break
    [ "$attempt" -lt 30 ] || exit 1
    sleep 60
  done
  skipview study run learning_curve --sizes "$size"
  python -m skipview.platform.studies.learning_curve learning_curve
  skipview study index          # the README's results end with the curve (checked by tests/platform/studies/test_study.py)
done
