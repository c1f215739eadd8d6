"""How far can a trained multi-view encoder be moved past uSIF at test time, and by which lever? (issue 25)

For each trained model given (NAME=DIR), every row with its components fitted per STS subset, beside SIF and uSIF
on the same word vectors:

* ``paper``: the multi-view paper's post-processing (top component removed, L2-normalised; ensemble = mean);
* ``piecewise``: uSIF's post-processing on the trained views instead: the first m components removed, each scaled
  by its share of the squared singular values (``--components``, the paper's m = 5);
* ``g uSIF-pooled``: g's pooling weighted as uSIF weights its average (unit word vectors times a / (a/2 + p(w))).
  g is linear, mean_t(W w_t x_t) = W (weighted mean), so this is g reading a reweighted word-vector matrix;
* ``g SIF-pooled``: the same with SIF's a / (a + p(w)) on the raw vectors.

The pooling rows are NOT the paper's model (its g pools with the plain mean): each is its own row, f is unchanged.
Writes OUT.json (every task's score) and OUT.md (the table, with the gap to uSIF).

    python scripts/usif_levers.py --wordvecs data/novels_news/wordvecs --senteval-dir data/senteval/downstream \
        --model fg-seed0=runs/table6_trained/models/disc-fg-seed0 \
        --model f+g-seed0=runs/table6_trained/models/disc-f-seed0+runs/table6_trained/models/disc-g-seed0 \
        --out reports/table6_trained/usif_levers
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np
import torch

from skipview.models.encoder import SentenceEncoder
from skipview.platform.evaluation.baselines import AverageEncoder, WordVectors
from skipview.platform.evaluation.encoding import CombinedEncoder, ModelEncoder
from skipview.platform.evaluation.suite import run_tasks

TASKS = ["sts12", "sts13", "sts14", "sickr_unsup", "stsb_unsup"]
MEAN_OF = ["sts12", "sts13", "sts14", "sickr_unsup"]        # the multi-view paper's unsupervised summary at hand
FIT = "subset"


def g_reading(model: SentenceEncoder, vectors: np.ndarray) -> SentenceEncoder:
    """The model's g view over another word-vector matrix (same vocabulary)."""
    return SentenceEncoder({"g": model.views["g"]}, model.vocab, model.tokenizer, vectors, max_len=model.max_len)


def load(spec: str) -> SentenceEncoder:
    """A model directory, or ``F_DIR+G_DIR``: the f view of one model with the g view of another (Table 6's
    ensemble of two single-view models), over the word vectors both were trained on."""
    if "+" not in spec:
        return SentenceEncoder.load(spec)
    f_dir, g_dir = spec.split("+")
    f_model, g_model = SentenceEncoder.load(f_dir), SentenceEncoder.load(g_dir)
    if f_model.vocab.words != g_model.vocab.words:
        raise ValueError(f"{f_dir} and {g_dir} were trained on different vocabularies")
    return SentenceEncoder({"f": f_model.views["f"], "g": g_model.views["g"]}, f_model.vocab, f_model.tokenizer,
                           f_model.word_vectors, max_len=f_model.max_len)


def rows_for(model: SentenceEncoder, components: int) -> dict[str, object]:
    words = WordVectors(model.vocab, model.word_vectors.numpy(), model.tokenizer)
    usif_g = g_reading(model, words.unit * words.usif_weights()[:, None])
    sif_g = g_reading(model, words.vectors * words.sif_weights()[:, None])
    rows: dict[str, object] = {}
    for label, m in (("paper", 1), ("piecewise", components)):
        for view in ("ensemble", "f", "g"):
            rows[f"{label} / {view}"] = ModelEncoder(model, view, FIT, components=m)
    for label, g in (("g uSIF-pooled", usif_g), ("g SIF-pooled", sif_g)):
        for post, m in (("paper", 1), ("piecewise", components)):
            rows[f"{label}, {post} / g"] = ModelEncoder(g, "g", FIT, components=m)
            rows[f"{label}, {post} / ensemble"] = CombinedEncoder([ModelEncoder(model, "f", FIT, components=m),
                                                                   ModelEncoder(g, "g", FIT, components=m)])
    return rows


def score(encoder, senteval_dir: Path) -> dict[str, float]:
    metrics = run_tasks(encoder, TASKS, str(senteval_dir))
    scores = {task: metrics[f"{task}.pearson.mean"] for task in TASKS}
    scores["mean"] = statistics.fmean(scores[t] for t in MEAN_OF)
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wordvecs", type=Path, required=True, help="the vectors the models were trained on")
    parser.add_argument("--senteval-dir", type=Path, required=True)
    parser.add_argument("--model", action="append", required=True,
                        help="NAME=DIR of a trained model, or NAME=F_DIR+G_DIR: f of one model, g of another "
                             "(repeatable)")
    parser.add_argument("--components", type=int, default=5, help="m of the piecewise rows (uSIF: 5)")
    parser.add_argument("--out", type=Path, required=True, help="output path without extension")
    args = parser.parse_args()
    torch.set_num_threads(1)            # beside trainings on a shared machine

    words = WordVectors.load(args.wordvecs)
    results: dict[str, dict[str, dict[str, float]]] = {
        "baselines": {name: score(AverageEncoder(words, name, component_fit=FIT), args.senteval_dir)
                      for name in ("sif", "usif")}}
    for item in args.model:
        name, _, directory = item.partition("=")
        model = load(directory)
        results[name] = {}
        for row, encoder in rows_for(model, args.components).items():
            start = time.perf_counter()
            results[name][row] = score(encoder, args.senteval_dir)
            seconds = time.perf_counter() - start
            print(f"{name} {row:36s} {results[name][row]['mean']:.2f} ({seconds:.0f} s)", flush=True)

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps({"fit": FIT, "wordvecs": str(args.wordvecs),
                                                         "components": args.components, "results": results},
                                                        indent=1) + "\n")
    usif = results["baselines"]["usif"]["mean"]
    header = ["| row | mean | − uSIF | " + " | ".join(TASKS) + " |", "|---" * (3 + len(TASKS)) + "|"]

    def line(row: str, scores: dict[str, float]) -> str:
        return (f"| {row} | {scores['mean']:.2f} | {scores['mean'] - usif:+.2f} | "
                + " | ".join(f"{scores[t]:.1f}" for t in TASKS) + " |")

    lines = []
    for name, rows in results.items():
        lines += [f"### {name}", "", *header, *(line(row, scores) for row, scores in rows.items()), ""]
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
