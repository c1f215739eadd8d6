"""Training throughput (sentences/s, tokens/s over all ranks) with 1 and 2 Ray Train workers.

    python benchmarks/train_scaling.py --corpus data/gutenberg_novels/prepared \
        --wordvecs data/gutenberg_novels/wordvecs --objective disc --workers 1 2
    python benchmarks/train_scaling.py ... --workers 1x1 1x2 2x1      # WORKERSxTHREADS: each worker's torch threads

On a machine with fewer cores than a cluster node, 2 workers of 1 thread can be set beside 1 worker of 2 threads
(the same cores, no communication) to separate what DDP costs from what sharing the cores costs.

Each configuration is a real `skipview train` run (local Ray, CPU, gloo) of --steps steps; throughput is the
median of the values the trainer logs to MLflow (each over the ``log_every`` steps before it, 10 by default),
skipping those logged in the first --warmup steps. Writes
benchmarks/results/train_scaling.json. On a shared machine the numbers move with the load: the JSON records
the load average before and after each run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--wordvecs", required=True)
    parser.add_argument("--objective", default="disc")
    parser.add_argument("--hidden-size", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=64, help="per worker")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--workers", nargs="+", default=["1", "2"],
                        help="worker counts, each optionally xTHREADS (torch threads = CPUs per worker, default 1)")
    parser.add_argument("--output", default="benchmarks/results/train_scaling.json")
    args = parser.parse_args()

    import ray

    from skipview.platform.tracking import store
    from skipview.platform.training import driver
    from skipview.platform.training.config import RunSettings, TrainSettings

    results = []
    with tempfile.TemporaryDirectory() as scratch:
        uri = f"sqlite:///{scratch}/mlflow.db"
        configs = [tuple(int(n) for n in (item.split("x") + ["1"])[:2]) for item in args.workers]
        ray.init(address="local", num_cpus=max(w * t for w, t in configs), include_dashboard=False,
                 log_to_driver=False)
        for workers, threads in configs:
            settings = TrainSettings(objective=args.objective, objective_settings={"hidden_size": args.hidden_size},
                                     # absolute: Ray's workers do not run in this directory
                                     corpus=str(Path(args.corpus).resolve()),
                                     wordvecs=str(Path(args.wordvecs).resolve()), batch_size=args.batch_size,
                                     max_steps=args.steps, checkpoint_every=args.steps,
                                     postprocessing_sentences=1000)
            run = RunSettings(name=f"bench-{workers}x{threads}", storage=f"{scratch}/runs", workers=workers,
                              cpus_per_worker=threads, tracking_uri=uri, experiment="train-scaling")
            load_before = os.getloadavg()[0]
            start = time.perf_counter()
            outcome = driver.train(settings, run)
            wall = time.perf_counter() - start
            client = store.client(uri)
            per_step = {key: [m.value for m in client.get_metric_history(outcome.mlflow_run_id, key)
                              if m.step > args.warmup] for key in ("sentences_per_s", "tokens_per_s")}
            results.append({"workers": workers, "threads_per_worker": threads, "wall_s": wall, "load_avg_before": load_before,
                            "load_avg_after": os.getloadavg()[0],
                            **{f"median_{k}": statistics.median(v) for k, v in per_step.items()}})
            print(json.dumps(results[-1]))
        ray.shutdown()
    from skipview.platform.tracking.lineage import data_fingerprint, portable_path

    # the corpus by its place in the repository and its DVC hash, not by this machine's absolute path
    record = {"objective": args.objective, "hidden_size": args.hidden_size, "batch_size_per_worker": args.batch_size,
              "steps": args.steps, "corpus": portable_path(args.corpus), "corpus_hash": data_fingerprint(args.corpus),
              "cpu_count": os.cpu_count(), "results": results}
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
