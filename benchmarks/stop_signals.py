"""How long skipview's long commands take to stop on SIGTERM or Ctrl-C, on real data, and what they leave: seconds from
the signal to the exit, the exit status, the last line, the processes of the command alive 3 s later, and for a
training run the step it stopped at against the last periodic checkpoint (what a stop lost before it checkpointed).

    python benchmarks/stop_signals.py --out reports/benchmarks/stop_signals.json [--cases prepare-mid,...]

The data are the pipeline's (`dvc repro`): the novels as fetched, and the learning curve's 0.1M-sentence cut with its
vectors. Each case runs in a fresh scratch folder. Timings depend on the machine's load (recorded with them).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

from emit import emit
from skipview.platform.tracking.lineage import cpu

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY / "tests"))
from stopping_commands import blocked_writing_child, start, stop, wait_for  # noqa: E402  (the tests' own mechanism)

NOVELS = REPOSITORY / "data" / "gutenberg_novels" / "raw"
CUT = REPOSITORY / "data" / "novels_news_curve"
PROFILE = REPOSITORY / "reports" / "tune_sif_claim" / "best_config.yaml"


def prepare(out: Path) -> list[str]:
    return ["data", "prepare", str(NOVELS), str(out / "prepared"), "--workers", "2", "--no-progress"]


def wordvecs(out: Path) -> list[str]:
    return ["data", "wordvecs", str(CUT / "prepared" / "100k"), str(out / "wordvecs"), "--method", "skipgram",
            "--no-progress"]


def evaluate(out: Path) -> list[str]:
    return ["evaluate", "--baseline", "usif", "--wordvecs", str(CUT / "wordvecs" / "100k"), "--senteval-dir",
            str(REPOSITORY / "data" / "senteval" / "downstream"), "--output", str(out / "usif.json")]


def train(out: Path) -> list[str]:
    return ["train", "--objective", "disc", "--config", str(PROFILE), "--corpus", str(CUT / "prepared" / "100k"),
            "--wordvecs", str(CUT / "wordvecs" / "100k"), "--workers", "2", "--cpus-per-worker", "1",
            "--senteval-dir", str(REPOSITORY / "data" / "senteval" / "downstream"),
            "--set", "max_steps=3000", "--set", "checkpoint_every=500", "--set", "epochs=null",
            "--storage", str(out / "runs"), "--name", "stopped"]


def training(scratch: Path) -> bool:
    """The run's workers have passed their start-up (its log says so)."""
    log = scratch / "runs" / "stopped.log"
    return log.exists() and "rank 0: start-up phases" in log.read_text()


# name: (command, signal, seconds after the start (a training run: after its workers' start-up), pause the parent
# until a pool worker blocks on its result pipe)
CASES = {
    "prepare-mid": (prepare, signal.SIGTERM, 20, False),
    "prepare-ctrl-c": (prepare, signal.SIGINT, 20, False),
    "prepare-worker-writing": (prepare, signal.SIGTERM, 20, True),
    "wordvecs-mid": (wordvecs, signal.SIGTERM, 20, False),
    "wordvecs-ctrl-c": (wordvecs, signal.SIGINT, 20, False),
    "evaluate-mid": (evaluate, signal.SIGTERM, 15, False),
    "train-mid": (train, signal.SIGTERM, 60, False),
}


def run_case(name: str, scratch: Path) -> dict:
    command, signum, after, block = CASES[name]
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{scratch}/mlflow.db"}
    process = start(command(scratch), scratch, env)
    if command is train:
        wait_for(lambda: training(scratch), "the run trained", process, timeout=900)
    time.sleep(after)
    if block:
        process.send_signal(signal.SIGSTOP)
        wait_for(lambda: blocked_writing_child(process), "a worker blocked on its result pipe", process, timeout=60)
    result = stop(process, signum, timeout=600)
    record = {"command": "skipview " + " ".join(command(Path("OUT"))), "signal": signal.Signals(signum).name,
              "sent_after_s": after, "exit_status": result.status, "stop_s": round(result.seconds, 1),
              "left_after_3_s": result.left, "last_line": result.last_line,
              "output_left": sorted(p.name for p in scratch.iterdir() if p.name not in ("mlflow.db", "runs"))}
    if command is train and result.status == 128 + signum:
        snapshot = json.loads((scratch / "runs" / "stopped" / "checkpoint_manager_snapshot.json").read_text())
        stopped_at = snapshot["latest_checkpoint_result"]["metrics"]["step"]
        record.update(stopped_at_step=stopped_at, periodic_checkpoint_before=stopped_at // 500 * 500,
                      steps_a_stop_without_its_checkpoint_loses=stopped_at - stopped_at // 500 * 500)
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated, of: " + ", ".join(CASES))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    model, native_bf16 = cpu()
    # a case run again replaces its earlier result in --out; the others are kept
    results = json.loads(args.out.read_text())["cases"] if args.out and args.out.exists() else {}
    for name in args.cases.split(","):
        with tempfile.TemporaryDirectory(prefix=f"stop-{name}-") as scratch:
            load = os.getloadavg()[0]
            try:
                results[name] = {**run_case(name, Path(scratch)), "load_average_at_start": round(load, 1)}
            except AssertionError as failure:   # e.g. a local Ray that could not start on an overloaded machine
                print(f"{name}: not measured: {str(failure)[-500:]}", file=sys.stderr)
                continue
        print(f"{name}: {results[name]['stop_s']} s, exit {results[name]['exit_status']}", file=sys.stderr)
    emit({"machine": {"cpu": model, "cores": os.cpu_count(), "native_bf16": native_bf16},
          "cases": results}, args.out)


if __name__ == "__main__":
    main()
