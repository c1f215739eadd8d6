"""The training loop of ``skipview train`` against its own step alone, run in turn so the machine's drift cancels
(issue 28's "loop at >= 0.95x its step alone").

    python benchmarks/loop_vs_step.py --config reports/tune_sif_claim/best_config.yaml \\
        --corpus data/novels_news/prepared --wordvecs data/novels_news/wordvecs \\
        --senteval-dir data/senteval/downstream --set precision=bf16 --steps 200 --warmup 10 --pairs 3

One pair is two whole processes, one after the other:
- **step alone**: ``train_step.py`` on the same batches (the run's plan, seed 0: batches ``warmup`` .. ``steps - 1``),
  read into memory before they are timed, forward + backward + Adam, the config's objective settings;
- **loop**: ``skipview train`` with the same config for ``steps`` steps, as a study runs it (a local Ray with its
  dashboard, one Ray Train worker, the STS14 evaluation before the first step when ``--senteval-dir`` is given, the
  prefetch thread, the metric windows, MLflow); its rate over steps ``warmup + 1`` .. ``steps`` comes from the
  ``sentences_per_s`` it logs to MLflow for every window of ``log_every`` steps.
The ratio loop / step is taken pair by pair: this shared machine's speed drifts by 20 % within an hour (the step
alone measured 2,034 sentences/s at 15:09 and 1,689 at 16:49 on the same idle machine), so a loop and a step
measured at different times cannot be compared.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from emit import emit
from skipview.platform.tracking import store

BENCHMARKS = Path(__file__).resolve().parent


def step_alone(args: argparse.Namespace, objective: str, objective_settings: dict) -> dict:
    settings = [f"{key}={json.dumps(value)}" for key, value in objective_settings.items()]
    command = [sys.executable, str(BENCHMARKS / "train_step.py"), "--single", objective, "small",
               "--steps", str(args.steps - args.warmup), "--warmup", str(args.warmup), "--amp", args.amp,
               "--batch-size", str(args.batch_size), "--corpus", args.corpus, "--wordvecs", args.wordvecs,
               "--set", *settings]
    environment = {**os.environ, "OMP_NUM_THREADS": str(args.threads)}
    done = subprocess.run(command, capture_output=True, text=True, env=environment, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def loop(args: argparse.Namespace, scratch: Path, index: int) -> dict:
    uri = f"sqlite:///{scratch}/mlflow.db"
    name = f"loop-{index}"
    command = [str(Path(sys.executable).with_name("skipview")), "train", "--objective", args.objective,
               "--config", args.config, "--corpus", args.corpus, "--wordvecs", args.wordvecs,
               "--workers", "1", "--cpus-per-worker", str(args.threads), "--storage", str(scratch / "runs"),
               "--name", name, "--experiment", "loop-vs-step",
               *(["--senteval-dir", args.senteval_dir] if args.senteval_dir else ["--set", "senteval_dir=null"]),
               "--set", f"max_steps={args.steps}", "--set", f"checkpoint_every={args.steps + 1}",
               "--set", f"batch_size={args.batch_size}", *[x for s in args.set for x in ("--set", s)]]
    started = time.time()
    with open(scratch / f"{name}.log", "w") as log:
        subprocess.run(command, env={**os.environ, "MLFLOW_TRACKING_URI": uri}, stdout=log,
                       stderr=subprocess.STDOUT, check=True)
    client = store.client(uri)
    run = client.search_runs([client.get_experiment_by_name("loop-vs-step").experiment_id],
                             filter_string=f"attributes.run_name = '{name}'")[0]
    windows = [m.value for m in client.get_metric_history(run.info.run_id, "sentences_per_s")
               if m.step > args.warmup]
    # every window has the same number of sentences, so the loop's rate is the harmonic mean of the windows'
    return {"sentences_per_second": len(windows) / sum(1 / rate for rate in windows), "windows": len(windows),
            "wall_s": round(time.time() - started, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--config", required=True, help="the run's settings (skipview train --config)")
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--wordvecs", required=True)
    parser.add_argument("--senteval-dir", default=None, help="SentEval data: the loop evaluates STS14 before step 1")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="settings on top of the config")
    parser.add_argument("--steps", type=int, default=200, help="steps of the loop (the step alone: the same batches)")
    parser.add_argument("--warmup", type=int, default=10, help="first steps left out of both rates")
    parser.add_argument("--threads", type=int, default=2, help="torch threads of both (the worker's CPUs)")
    parser.add_argument("--pairs", type=int, default=3, help="step, loop pairs, in turn")
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    args = parser.parse_args()
    args.config, args.corpus, args.wordvecs = (os.path.abspath(p) for p in (args.config, args.corpus, args.wordvecs))
    args.senteval_dir = args.senteval_dir and os.path.abspath(args.senteval_dir)
    config = yaml.safe_load(Path(args.config).read_text())
    overrides = dict(s.split("=", 1) for s in args.set)
    args.objective = config["objective"]
    args.batch_size = int(overrides.get("batch_size", config["batch_size"]))
    args.amp = {"bf16": "bf16", "fp16": "fp16"}.get(overrides.get("precision", config.get("precision")), "none")

    pairs = []
    with tempfile.TemporaryDirectory() as scratch:
        for index in range(args.pairs):
            step = step_alone(args, args.objective, config.get("objective_settings", {}))
            looped = loop(args, Path(scratch), index)
            pair = {"step_alone_sentences_per_s": round(step["sentences_per_second"], 1),
                    "loop_sentences_per_s": round(looped["sentences_per_second"], 1),
                    "loop_over_step": round(looped["sentences_per_second"] / step["sentences_per_second"], 3),
                    "loop_windows": looped["windows"], "loop_process_wall_s": looped["wall_s"],
                    "load_average_after": os.getloadavg()}
            pairs.append(pair)
            print(json.dumps(pair), file=sys.stderr, flush=True)
    ratios = [p["loop_over_step"] for p in pairs]
    document = {
        "benchmark": "loop_vs_step", "config": args.config, "set": args.set, "corpus": args.corpus,
        "senteval_dir": args.senteval_dir, "steps": args.steps, "warmup": args.warmup, "threads": args.threads,
        "batch_size": args.batch_size, "amp": args.amp, "machine": os.uname().nodename, "cpus": os.cpu_count(),
        "pairs": pairs, "loop_over_step": {"min": min(ratios), "median": statistics.median(ratios),
                                            "max": max(ratios)},
    }
    emit(document, args.out)


if __name__ == "__main__":
    main()
