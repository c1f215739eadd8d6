"""Benchmark the evaluation suite: wall time of STS14 and of the full suite on 2048-d vectors, excluding
encoding. Writes JSON.

    python benchmarks/evaluate.py --senteval-dir ../shared/data/senteval/downstream \
        --out benchmarks/results/evaluate.json

Vectors are a fixed random projection of each sentence's bag of words (2048-d, so classifiers have signal to fit
and converge as on real features); every sentence is encoded once up front and the timed runs read that cache,
so the times are the suite's own (data loading, similarity, classifier fitting). Tasks whose files are absent
from --senteval-dir (STS15/16, MPQA, TREC, MRPC are not in ../shared/data) are replaced by synthetic stand-ins of
their documented sizes built from MR/SUBJ sentences, marked as such in the JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch

from skipview.platform.evaluation.datasets import load_task
from skipview.platform.evaluation.suite import PROTOCOLS, TASKS, run_tasks

# Documented sizes (SentEval / the task papers) used for stand-ins of absent tasks.
STANDIN_STS = {"STS15-en-test": {"answers-forums": 375, "answers-students": 750, "belief": 375, "headlines": 750,
                                 "images": 750},
               "STS16-en-test": {"answer-answer": 254, "headlines": 249, "plagiarism": 230, "postediting": 244,
                                 "question-question": 209}}


def build_standins(real: Path, folder: Path) -> list[str]:
    """A SentEval tree: real task folders linked, absent tasks synthesised from MR/SUBJ sentences."""
    for child in real.iterdir():
        (folder / child.name).symlink_to(child.resolve())
    pool = [s for s in load_task("mr", real).splits["all"].text + load_task("subj", real).splits["all"].text if s]
    rng = np.random.default_rng(0)
    pick = lambda n: [pool[i] for i in rng.integers(0, len(pool), n)]  # noqa: E731
    made = []
    if not (real / "STS" / "STS15-en-test").exists():
        sts = folder / "STS"
        sts.unlink()
        sts.mkdir()
        for child in (real / "STS").iterdir():
            (sts / child.name).symlink_to(child.resolve())
        for sub, subsets in STANDIN_STS.items():
            (sts / sub).mkdir()
            for name, n in subsets.items():
                (sts / sub / f"STS.input.{name}.txt").write_text("".join(f"{a}\t{b}\n" for a, b in zip(pick(n), pick(n))))
                (sts / sub / f"STS.gs.{name}.txt").write_text("".join(f"{s:.2f}\n" for s in rng.uniform(0, 5, n)))
        made += ["sts15", "sts16"]
    if not (real / "MPQA").exists():
        (folder / "MPQA").mkdir()
        (folder / "MPQA" / "mpqa.pos").write_text("\n".join(pick(3316)) + "\n")
        (folder / "MPQA" / "mpqa.neg").write_text("\n".join(pick(7290)) + "\n")
        made.append("mpqa")
    if not (real / "TREC").exists():
        (folder / "TREC").mkdir()
        labels = ["ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM"]
        for name, n in (("train_5500.label", 5452), ("TREC_10.label", 500)):
            (folder / "TREC" / name).write_text(
                "".join(f"{labels[rng.integers(6)]}:x {s}\n" for s in pick(n)), encoding="latin-1", errors="replace")
        made.append("trec")
    if not (real / "MRPC").exists():
        (folder / "MRPC").mkdir()
        for name, n in (("msr_paraphrase_train.txt", 4076), ("msr_paraphrase_test.txt", 1725)):
            rows = "".join(f"{rng.integers(2)}\t1\t2\t{a}\t{b}\n" for a, b in zip(pick(n), pick(n)))
            (folder / "MRPC" / name).write_text("Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n" + rows)
        made.append("mrpc")
    return made


class CachedEncoder:
    """Looks vectors up in a precomputed table, so timing excludes encoding."""

    def __init__(self, table: dict[str, np.ndarray]):
        self.table = table

    def encode(self, sentences, mode="unsupervised"):
        return np.stack([self.table[s] for s in sentences]) if sentences else np.zeros((0, 2048), np.float32)


def random_projection_table(sentences: list[str], dim: int, seed: int = 0) -> dict[str, np.ndarray]:
    vocab: dict[str, int] = {}
    rows, cols = [], []
    for i, s in enumerate(sentences):
        for w in s.lower().split():
            rows.append(i)
            cols.append(vocab.setdefault(w, len(vocab)))
    counts = sp.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)), shape=(len(sentences), len(vocab)))
    projection = np.random.default_rng(seed).standard_normal((len(vocab), dim), dtype=np.float32)
    vectors = np.asarray(counts @ projection)
    return {s: vectors[i] for i, s in enumerate(sentences)}


def all_sentences(root: Path, tasks: list[str]) -> list[str]:
    out = []
    for task in tasks:
        for split in load_task(task, root).splits.values():
            out += split.a + split.b if hasattr(split, "a") else split.text
    return list(dict.fromkeys(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--senteval-dir", type=Path, default=os.environ.get("SKIPVIEW_SENTEVAL_DIR"), required=False)
    parser.add_argument("--dim", type=int, default=2048)
    parser.add_argument("--protocol", default="full", choices=list(PROTOCOLS))
    parser.add_argument("--tasks", default=None, help="comma-separated subset for the suite timing (default: all)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if args.senteval_dir is None:
        raise SystemExit("give --senteval-dir or set SKIPVIEW_SENTEVAL_DIR")
    tasks = args.tasks.split(",") if args.tasks else list(TASKS)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        synthetic = build_standins(args.senteval_dir.resolve(), root)
        start = time.perf_counter()
        encoder = CachedEncoder(random_projection_table(all_sentences(root, sorted(set(tasks) | {"sts14"})), args.dim))
        encode_seconds = time.perf_counter() - start

        start, cpu_start = time.perf_counter(), time.process_time()
        run_tasks(encoder, ["sts14"], root, args.protocol)
        sts14_seconds, sts14_cpu = time.perf_counter() - start, time.process_time() - cpu_start

        per_task, per_task_cpu, metrics = {}, {}, {}
        suite_start, suite_cpu_start = time.perf_counter(), time.process_time()
        for task in tasks:
            start, cpu_start = time.perf_counter(), time.process_time()
            metrics.update(run_tasks(encoder, [task], root, args.protocol))
            per_task[task] = round(time.perf_counter() - start, 2)
            per_task_cpu[task] = round(time.process_time() - cpu_start, 2)
            print(f"{task}: {per_task[task]} s wall, {per_task_cpu[task]} s cpu", flush=True)
        suite_seconds, suite_cpu = time.perf_counter() - suite_start, time.process_time() - suite_cpu_start
    result = {
        "dim": args.dim, "protocol": args.protocol, "device": "cuda" if torch.cuda.is_available() else "cpu",
        "sts14_seconds": round(sts14_seconds, 2), "suite_seconds": round(suite_seconds, 2),
        "per_task_seconds": per_task, "synthetic_standin_tasks": synthetic,
        # CPU seconds of this process (all its threads): on a shared machine wall time mostly measures waiting
        "sts14_cpu_seconds": round(sts14_cpu, 2), "suite_cpu_seconds": round(suite_cpu, 2),
        "per_task_cpu_seconds": per_task_cpu,
        "targets": {"sts14_seconds": 15, "suite_seconds": 600},
        "encoding_seconds_excluded": round(encode_seconds, 2),
        "machine": {"cpus": os.cpu_count(), "torch_threads": torch.get_num_threads(), "python": platform.python_version(),
                    "torch": torch.__version__, "load_average_at_end": os.getloadavg()},
        "headline_metrics": {k: round(v, 2) for k, v in metrics.items() if k.count(".") == 1 or k.endswith(".mean")},
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        partial = args.out.with_name(f".{args.out.name}.partial")
        partial.write_text(text + "\n")
        os.replace(partial, args.out)


if __name__ == "__main__":
    main()
