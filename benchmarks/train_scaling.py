"""Training throughput (sentences/s, tokens/s over all ranks) of Ray Train worker layouts, on one Ray node or on a
cluster of several simulated on this machine.

    python benchmarks/train_scaling.py --corpus data/gutenberg_novels/prepared \
        --wordvecs data/gutenberg_novels/wordvecs --objective disc --workers 1 2
    python benchmarks/train_scaling.py ... --workers 1x1 1x2 2x1      # WORKERSxTHREADS: each worker's torch threads
    python benchmarks/train_scaling.py --config reports/tune_sif_claim/best_config.yaml \
        --corpus data/novels_news/prepared --wordvecs data/novels_news/wordvecs --set precision=bf16 \
        --global-batch-size 512 --workers 1x2 2x1 2x1@2 --repeats 2    # the trained profile; @2: two Ray nodes

On a machine with fewer cores than a cluster node, 2 workers of 1 thread can be set beside 1 worker of 2 threads
(the same cores, no communication) to separate what DDP costs from what sharing the cores costs. ``WxT@K`` runs
the layout on K Ray nodes started on this machine (``ray.cluster_utils.Cluster``, the test suite's simulated
cluster), each with an equal share of the CPUs, so Ray Train places the workers on different nodes and their
gradients cross between raylets as they would between machines (here over loopback: what is measured is what the
second node costs in Ray and gloo, not a network).

Each configuration is a real `skipview train` run (CPU, gloo) of --steps steps; throughput over all ranks comes
from the values the trainer logs to MLflow (each over the ``log_every`` steps before it, 10 by default), skipping
those logged in the first --warmup steps: their median, and the aggregate (windows / sum(1 / rate), total
sentences over total time). ``--global-batch-size`` divides one batch among the workers (the same sentences per
optimiser step in every layout); ``--batch-size`` is per worker. Layouts alternate over ``--repeats`` rounds so a
drift in the machine's load falls on all of them. Writes benchmarks/results/train_scaling.json (``--output``);
each run records the load average before and after it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import tempfile
import time
from pathlib import Path

LAYOUT = re.compile(r"^(\d+)(?:x(\d+))?(?:@(\d+))?$")


def parse_layout(text: str) -> tuple[int, int, int]:
    """``W``, ``WxT`` or ``WxT@K``: workers, torch threads (CPUs) per worker, Ray nodes."""
    match = LAYOUT.match(text)
    if not match:
        raise SystemExit(f"--workers {text}: expected WORKERS[xTHREADS][@NODES], e.g. 2x1@2")
    workers, threads, nodes = (int(g) if g else 1 for g in match.groups())
    return workers, threads, nodes


def start_ray(cpus: int, nodes: int):
    """A local Ray of ``cpus`` CPUs: one node, or ``nodes`` nodes of equal shares (the handle to shut it down)."""
    import ray

    if nodes == 1:
        ray.init(address="local", num_cpus=cpus, include_dashboard=False, log_to_driver=False)
        return None
    from ray.cluster_utils import Cluster

    if cpus % nodes:
        raise SystemExit(f"{cpus} CPUs do not divide among {nodes} nodes")
    cluster = Cluster()
    for _ in range(nodes):
        cluster.add_node(num_cpus=cpus // nodes)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False)
    return cluster


def measure(settings, layout: tuple[int, int, int], scratch: str, warmup: int, label: str) -> dict:
    import ray

    from skipview.platform.tracking import store
    from skipview.platform.training import driver
    from skipview.platform.training.config import RunSettings

    workers, threads, nodes = layout
    uri = f"sqlite:///{scratch}/mlflow.db"
    cluster = start_ray(workers * threads, nodes)
    try:
        run = RunSettings(name=label, storage=f"{scratch}/runs", workers=workers, cpus_per_worker=threads,
                          tracking_uri=uri, experiment="train-scaling")
        load_before = os.getloadavg()[0]
        start = time.perf_counter()
        outcome = driver.train(settings, run)
        wall = time.perf_counter() - start
    finally:
        ray.shutdown()
        if cluster is not None:
            cluster.shutdown()
    client = store.client(uri)
    rates = {key: [m.value for m in client.get_metric_history(outcome.mlflow_run_id, key) if m.step > warmup]
             for key in ("sentences_per_s", "tokens_per_s")}
    return {"workers": workers, "threads_per_worker": threads, "nodes": nodes,
            "batch_size_per_worker": settings.batch_size, "wall_s": round(wall, 1),
            "load_avg_before": load_before, "load_avg_after": os.getloadavg()[0],
            **{f"median_{k}": round(statistics.median(v), 1) for k, v in rates.items()},
            **{f"aggregate_{k}": round(len(v) / sum(1 / x for x in v), 1) for k, v in rates.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--wordvecs", required=True)
    parser.add_argument("--config", help="base training settings (YAML, as for `skipview train --config`)")
    parser.add_argument("--set", dest="overrides", nargs="*", default=[], metavar="KEY=VALUE",
                        help="override a setting (dotted keys), as `skipview train --set`")
    parser.add_argument("--objective", help="default: the config's, else disc")
    parser.add_argument("--hidden-size", type=int, help="default: the config's, else 64")
    parser.add_argument("--batch-size", type=int, default=64, help="per worker")
    parser.add_argument("--global-batch-size", type=int,
                        help="one batch divided among the workers (instead of --batch-size)")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--workers", nargs="+", default=["1", "2"],
                        help="layouts WORKERS[xTHREADS][@NODES]: threads = CPUs per worker (default 1), nodes = Ray "
                             "nodes simulated on this machine (default 1)")
    parser.add_argument("--repeats", type=int, default=1, help="rounds over the layouts, alternated")
    parser.add_argument("--output", default="benchmarks/results/train_scaling.json")
    args = parser.parse_args()

    from skipview.platform.training.config import load_settings

    layouts = [parse_layout(item) for item in args.workers]
    base = {"objective": args.objective or (None if args.config else "disc"),
            "corpus": args.corpus, "wordvecs": args.wordvecs,       # load_settings makes them absolute
            "max_steps": args.steps, "checkpoint_every": args.steps, "postprocessing_sentences": 1000}
    hidden = args.hidden_size or (None if args.config else 64)
    # throughput only: no epoch bound and no STS14 evaluation, whatever the config says (None as YAML's null: the
    # base's None values mean "not given")
    overrides = ["epochs=null", "senteval_dir=null", *([f"objective_settings.hidden_size={hidden}"] if hidden else []),
                 *args.overrides]
    results = []
    with tempfile.TemporaryDirectory() as scratch:
        for round_ in range(args.repeats):
            for workers, threads, nodes in layouts:
                batch = args.global_batch_size // workers if args.global_batch_size else args.batch_size
                settings = load_settings(args.config, {**base, "batch_size": batch}, overrides)
                label = f"bench-{workers}x{threads}-{nodes}nodes-r{round_}"
                results.append({"round": round_, **measure(settings, (workers, threads, nodes), scratch,
                                                           args.warmup, label)})
                print(json.dumps(results[-1]), flush=True)
    from skipview.platform.tracking.lineage import data_fingerprint, portable_path

    # the corpus by its place in the repository and its DVC hash, not by this machine's absolute path
    record = {"settings": {k: v for k, v in settings.model_dump().items() if k not in ("corpus", "wordvecs",
                                                                                          "batch_size")},
              "global_batch_size": args.global_batch_size, "steps": args.steps, "warmup": args.warmup,
              "corpus": portable_path(args.corpus), "corpus_hash": data_fingerprint(args.corpus),
              "cpu_count": os.cpu_count(), "results": results}
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
