"""Benchmark `skipview data prepare`: wall time, MB/s, peak RSS, corpus statistics, determinism. Writes JSON.

    python benchmarks/prepare.py ../shared/data/corpora/gutenberg_novels --fraction 0.1 \
        --out benchmarks/results/prepare-gutenberg-10pct.json

Each run is a fresh `skipview data prepare` process; peak RSS is the largest resident set of that process or any
of its worker processes (os.wait4). With --runs 2 the sha256 of every output file must agree.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def subset(corpus: Path, fraction: float, folder: Path) -> Path:
    """The first `fraction` of the corpus files (sorted), as symlinks."""
    files = sorted(p for p in corpus.rglob("*") if p.is_file() and p.name.endswith((".txt", ".txt.gz", ".jsonl",
                                                                                      ".jsonl.gz")))
    for path in files[: max(1, round(len(files) * fraction))]:
        link = folder / path.relative_to(corpus)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(path.resolve())
    return folder


def run_once(corpus: Path, out: Path, extra: list[str]) -> dict:
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "skipview.platform.cli", "data", "prepare", str(corpus),
                                str(out), "--no-progress", *extra])
    # wait4 gives this run's own rusage: ru_maxrss is the largest resident set of the process or its workers
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"skipview data prepare failed with exit status {os.waitstatus_to_exitcode(status)}")
    return {"wall_s": round(wall, 2), "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
            "sha256": {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(out.iterdir())}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--fraction", type=float, default=1.0, help="use the first fraction of the files")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/prepare.json"))
    parser.add_argument("prepare_args", nargs="*", help="extra options for `skipview data prepare` (after --)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as scratch:
        corpus = args.corpus if args.fraction >= 1 else subset(args.corpus, args.fraction, Path(scratch) / "subset")
        runs = [run_once(corpus, Path(scratch) / f"run{i}", args.prepare_args) for i in range(args.runs)]
        meta = json.loads((Path(scratch) / "run0" / "meta.json").read_text())
    text_mb = meta["input"]["text_bytes"] / 1e6
    result = {
        "corpus": str(args.corpus), "fraction": args.fraction, "files": meta["input"]["files"],
        "documents": meta["documents"], "sentences": meta["sentences"], "tokens": meta["tokens"],
        "vocab_size": meta["vocab_size"], "mean_sentence_length": meta["mean_sentence_length"],
        "text_mb": round(text_mb, 2), "skipped": meta["input"]["skipped"],
        "runs": [{k: v for k, v in r.items() if k != "sha256"} for r in runs],
        "mb_per_s": round(text_mb / min(r["wall_s"] for r in runs), 2),
        "sentences_per_s": round(meta["sentences"] / min(r["wall_s"] for r in runs)),
        "identical_outputs": all(r["sha256"] == runs[0]["sha256"] for r in runs),
        "sha256": runs[0]["sha256"],
        "machine": {"cpus": len(os.sched_getaffinity(0)), "python": platform.python_version()},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
