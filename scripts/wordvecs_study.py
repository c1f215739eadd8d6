"""How fastText's settings move the training-free encoders: each setting trains vectors for a prepared corpus
(`skipview data wordvecs`, timed), then avg, WR and SIF are evaluated on the STS tasks (component fitted per STS
subset) and a few classification tasks. Writes OUT.md and OUT.json; the vectors go to WORK/<name> (large: the
fastText .bin is ~0.6 GB at dim 300) and are deleted unless --keep.

    python scripts/wordvecs_study.py --corpus data/gutenberg_novels/prepared --senteval-dir data/senteval/downstream \
        --work /tmp/wordvecs_study --out reports/wordvecs_study
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np

from skipview.platform.evaluation.baselines import AverageEncoder, WordVectors
from skipview.platform.evaluation.suite import run_tasks

# name -> `skipview data wordvecs` options; the first is the pipeline default at the time of the study
SETTINGS = {
    "cbow-d300-e2-mc1": ["--method", "cbow", "--dim", "300", "--epochs", "2", "--min-count", "1"],
    "cbow-d300-e5-mc1": ["--method", "cbow", "--dim", "300", "--epochs", "5", "--min-count", "1"],
    "cbow-d300-e10-mc1": ["--method", "cbow", "--dim", "300", "--epochs", "10", "--min-count", "1"],
    "skipgram-d300-e2-mc1": ["--method", "skipgram", "--dim", "300", "--epochs", "2", "--min-count", "1"],
    "cbow-d300-e2-mc5": ["--method", "cbow", "--dim", "300", "--epochs", "2", "--min-count", "5", "--subword-oov"],
    "cbow-d100-e5-mc1": ["--method", "cbow", "--dim", "100", "--epochs", "5", "--min-count", "1"],
}
COMMON = ["--buckets", "200000", "--minn", "3", "--maxn", "6", "--window", "5", "--lr", "0.05", "--threads", "2",
          "--no-progress"]
STS = ["sts12", "sts13", "sts14", "sickr_unsup"]
CLASSIFICATION = ["mr", "cr", "sst2"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--senteval-dir", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", default="", help="comma-separated setting names (default: all)")
    parser.add_argument("--reuse", type=Path, help="existing vectors for the first setting (skip its training)")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()

    names = [n for n in SETTINGS if not args.only or n in args.only.split(",")]
    results = json.loads(args.out.with_suffix(".json").read_text())["rows"] if args.out.with_suffix(".json").exists() else []
    done = {r["setting"] for r in results}
    for name in names:
        if name in done:
            continue
        folder = args.work / name
        if args.reuse and name == next(iter(SETTINGS)):
            folder, wall, cpu = args.reuse, None, None
        else:
            shutil.rmtree(folder, ignore_errors=True)
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run(["skipview", "data", "wordvecs", str(args.corpus), str(folder), *SETTINGS[name], *COMMON],
                           check=True)
            wall = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        with open("/proc/loadavg") as f:
            load = f.read().split()[:3]
        words = WordVectors.load(folder)
        row = {"setting": name, "options": SETTINGS[name], "wall_s": wall, "cpu_s": cpu, "load_average": load,
               "scores": {}}
        for baseline in ("avg", "wr", "sif"):
            encoder = AverageEncoder(words, baseline, component_fit="subset")
            metrics = run_tasks(encoder, STS + CLASSIFICATION, args.senteval_dir, "fast")
            scores = {t: metrics[f"{t}.pearson.mean"] for t in STS} | {t: metrics[f"{t}.acc"] for t in CLASSIFICATION}
            scores["sts_mean"] = float(np.mean([scores[t] for t in STS]))
            scores["cls_mean"] = float(np.mean([scores[t] for t in CLASSIFICATION]))
            row["scores"][baseline] = scores
            print(f"{name} {baseline}: STS mean {scores['sts_mean']:.1f}, classification {scores['cls_mean']:.1f}",
                  flush=True)
        results.append(row)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".json").write_text(json.dumps({"rows": results}, indent=1) + "\n")
        if not args.keep and folder != args.reuse:
            shutil.rmtree(folder, ignore_errors=True)

    lines = ["| fastText setting | wall (s) | CPU (s) | load | avg STS | WR STS | SIF STS | avg CLS | WR CLS | SIF CLS |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        s = r["scores"]
        wall = "" if r["wall_s"] is None else f"{r['wall_s']:.0f}"
        cpu = "" if r["cpu_s"] is None else f"{r['cpu_s']:.0f}"
        lines.append(f"| {r['setting']} | {wall} | {cpu} | {' '.join(r['load_average'])} | "
                     + " | ".join(f"{s[b]['sts_mean']:.1f}" for b in ("avg", "wr", "sif")) + " | "
                     + " | ".join(f"{s[b]['cls_mean']:.1f}" for b in ("avg", "wr", "sif")) + " |")
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
