"""Where a whole training run's wall time went: start-up, steps, in-training STS14 evaluations, checkpoints, the
final model, and what the command did after training (issue 28's per-phase breakdown).

    python benchmarks/run_phases.py --tracking-uri sqlite:///RUN_DIR/mlflow.db --run-name NAME --log RUN_DIR/log.txt \
        --start EPOCH_S --end EPOCH_S [--label TEXT] [--out FILE]

It reads what every run already records, so it can break down a run of any commit: the MLflow run (its start and
end, and the metrics' timestamps), the worker's log lines ``sts14 done in X s`` and the command's own start and end
(``--start``/``--end``, seconds since the epoch, as the caller's wall clock took them around the process).

- **steps**: the loop logs ``sentences_per_s`` for every window of ``log_every`` steps, so a window lasted
  ``sentences / rate``. A window that holds a checkpoint also holds its evaluation and its write (the next window
  opens before the checkpoint); its time beyond the median window of the same size is the checkpoint's.
- **evaluations**: the sum of the logged STS14 evaluation times (the initial one, before the first step, counts in
  start-up).
- **checkpoints**: the checkpoint windows' excess minus their evaluations (the write, Ray's report, MLflow's flush).
- **start-up**: from the command's start to the first window's start (Ray, the worker group, corpus and vectors,
  the initial evaluation).
- **final model**: from the last window's end to the final checkpoint (replica check, post-processing fit, the
  model's save and upload, the final evaluation), whose folder Ray names by the time it was reported.
- **after training**: from there to the command's end (the checkpoint's upload, the study's evaluation of every
  view on the tasks, the report, Ray's shut-down).
MLflow stores metric timestamps in milliseconds at the time they were flushed, so the windows' own durations, not
their timestamps, carry the step time.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from pathlib import Path

from skipview.platform.tracking import store

EVALUATION = re.compile(r"sts14 done in ([0-9.]+) s")
CHECKPOINT_CREATED = re.compile(r"Checkpoint successfully created at: .*checkpoint_(\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d\.\d+)")


def phases(tracking_uri: str, run_name: str, log_text: str, start: float, end: float) -> dict:
    mlflow_client = store.client(tracking_uri)
    found = mlflow_client.search_runs(search_all_experiments(mlflow_client),
                                      filter_string=f"attributes.run_name = '{run_name}'")
    if not found:
        raise SystemExit(f"{tracking_uri}: no run named {run_name}")
    run = found[0]
    run_id, run_start_ms, run_end_ms = run.info.run_id, run.info.start_time, run.info.end_time
    windows = sorted((m.step, m.value, m.timestamp)
                     for m in mlflow_client.get_metric_history(run_id, "sentences_per_s"))
    # a study's runs record their settings as train.*, a `skipview train` run's as they are
    batch_size = int(run.data.params.get("train.batch_size", run.data.params.get("batch_size")))
    workers = run.data.tags.get("skipview.worker_nodes")
    # the final checkpoint is evaluated too; it belongs to the final model
    checkpoint_steps = {m.step for m in mlflow_client.get_metric_history(run_id, "sts14") if m.step > 0}
    checkpoint_steps.discard(max(checkpoint_steps, default=None))
    world_size = len(workers.split()) if workers else 1
    # the workers' lines only (the study's own evaluation after training logs the same words); one evaluation is a
    # line per view, and there is one before the first step, one per checkpoint and one with the final checkpoint
    evaluations = [float(x) for line in log_text.splitlines() if "RayTrainWorker" in line
                   for x in EVALUATION.findall(line)]
    per_evaluation = len(evaluations) // (len(checkpoint_steps) + 2)
    previous, durations = 0, []
    for step, rate, _ in windows:
        size = step - previous
        durations.append((step, size, size * batch_size * world_size / rate))
        previous = step
    # a checkpoint at step s is written after window (.., s] closes and before window (s, ..] starts
    holds_checkpoint = [False] + [any(d[0] == c for c in checkpoint_steps) for d in durations[:-1]]
    normal = {}
    for (step, size, seconds), special in zip(durations, holds_checkpoint):
        if not special:
            normal.setdefault(size, []).append(seconds / size)
    per_step = {size: statistics.median(values) for size, values in normal.items()}
    steps_s = checkpoint_excess = 0.0
    for (step, size, seconds), special in zip(durations, holds_checkpoint):
        typical = per_step.get(size, per_step[max(per_step)]) * size
        steps_s += min(seconds, typical) if special else seconds
        checkpoint_excess += max(seconds - typical, 0.0) if special else 0.0
    in_training_evaluations = sum(evaluations[per_evaluation:per_evaluation * (1 + len(checkpoint_steps))])
    # the run's MLflow record ends when the study has added its evaluations to it; training ended with the final
    # checkpoint, which Ray names by the time it was reported
    created = CHECKPOINT_CREATED.findall(log_text)
    run_end = time.mktime(time.strptime(created[-1][:19], "%Y-%m-%d_%H-%M-%S")) + float("0." + created[-1][20:]) \
        if created else run_end_ms / 1000
    training_span = sum(seconds for _, _, seconds in durations)
    last_window_end = windows[-1][2] / 1000                 # flushed when the replica check tags the run
    first_window_start = last_window_end - training_span
    total = end - start
    out = {
        "wall_s": round(total, 1),
        "phases_s": {
            "start_up": round(first_window_start - start, 1),
            "steps": round(steps_s, 1),
            "in_training_evaluations": round(in_training_evaluations, 1),
            "checkpoints": round(checkpoint_excess - in_training_evaluations, 1),
            "final_model": round(run_end - last_window_end, 1),
            "after_training": round(end - run_end, 1),
        },
        "steps": durations[-1][0],
        "checkpoints": len(checkpoint_steps),
        "evaluation_lines_per_checkpoint": per_evaluation,
        "sentences_per_s_of_steps": round(durations[-1][0] * batch_size * world_size / steps_s, 1),
        "mlflow_run": run_id,
        "run_start_after_command_start_s": round(run_start_ms / 1000 - start, 1),
    }
    out["phases_s"]["unaccounted"] = round(total - sum(out["phases_s"].values()), 1)
    return out


def search_all_experiments(mlflow_client) -> list[str]:
    return [e.experiment_id for e in mlflow_client.search_experiments()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tracking-uri", required=True,
                        help="the run's MLflow store (sqlite:///PATH/mlflow.db, or a tracking server)")
    parser.add_argument("--run-name", required=True, help="the MLflow run's name")
    parser.add_argument("--log", type=Path, required=True, help="the command's output (the workers' log lines)")
    parser.add_argument("--start", type=float, required=True, help="the command's start, seconds since the epoch")
    parser.add_argument("--end", type=float, required=True, help="the command's end, seconds since the epoch")
    parser.add_argument("--label", default="", help="what this run was (commit, settings)")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args()
    result = {"label": args.label, **phases(args.tracking_uri, args.run_name, args.log.read_text(errors="replace"),
                                             args.start, args.end)}
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
