"""How far can a trained multi-view encoder be moved past uSIF at test time, and by which lever? (issue 25)

For each trained model given (NAME=DIR), every row with its components fitted per STS subset, beside SIF and uSIF
on the same word vectors:

* ``paper``: the multi-view paper's post-processing (top component removed, L2-normalised; ensemble = mean);
* ``piecewise``: uSIF's post-processing on the trained views instead: the first m components removed, each scaled
  by its share of the squared singular values (``--components``, the paper's m = 5);
* ``g uSIF-pooled``: g's pooling weighted as uSIF weights its average (unit word vectors times a / (a/2 + p(w))).
  g is linear, mean_t(W w_t x_t) = W (weighted mean), so this is g reading a reweighted word-vector matrix;
* ``g SIF-pooled``: the same with SIF's a / (a + p(w)) on the raw vectors;
* ``f and g uSIF-pooled``: f's unsupervised pooling (the mean of its bi-GRU states, paper Table 2) weighted by the
  same uSIF weights, mean_t(w_t H_t), beside the uSIF-pooled g;
* ``g uSIF-pooled, piecewise / ensemble, g weighted on STS-B dev``: the ensemble (1 - w) f + w g with w chosen
  among ``VIEW_WEIGHTS`` by STS-B's dev split (cosine, Pearson), a split no reported column reads.

The pooling rows are NOT the paper's model (its views pool with the plain mean): each is its own row. Models named
``PREFIX-seedN`` are also summarised over their seeds (mean +- std, and the worst seed's gap to uSIF).
Writes OUT.json (every task's score) and OUT.md (the tables, with the gap to uSIF). A study declares it as an
analysis (``kind: usif_levers``, studies/table6_trained.yaml); `skipview study analyse STUDY --dry-run` prints the
command it runs.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import torch

from skipview.models.encoder import SentenceEncoder
from skipview.models.views import embed, masked_mean
from skipview.platform.evaluation import sts
from skipview.platform.evaluation.baselines import AverageEncoder, WordVectors
from skipview.platform.evaluation.datasets import load_task
from skipview.platform.evaluation.encoding import CombinedEncoder, ModelEncoder
from skipview.platform.evaluation.suite import run_tasks
from skipview.platform.files import write_text_aside

TASKS = ["sts12", "sts13", "sts14", "sickr_unsup", "stsb_unsup"]
MEAN_OF = ["sts12", "sts13", "sts14", "sickr_unsup"]        # the multi-view paper's unsupervised summary at hand
FIT = "subset"
VIEW_WEIGHTS = (0.3, 0.4, 0.5, 0.6, 0.7)                    # g's share of the ensemble; the paper's is 0.5


class StatesWeightedF(torch.nn.Module):
    """A trained bi-GRU f whose unsupervised pooling is mean_t(w(x_t) H_t) instead of mean_t(H_t); supervised
    pooling unchanged."""

    def __init__(self, f, token_weights: np.ndarray):
        super().__init__()
        self.f = f
        self.register_buffer("token_weights", torch.as_tensor(token_weights, dtype=torch.float32)[:, None])

    def output_dim(self, mode):
        return self.f.output_dim(mode)

    def encode(self, sentences, mode, word_vectors):
        if mode != "unsupervised":
            return self.f.encode(sentences, mode, word_vectors)
        states, _ = self.f.states_and_last(embed(sentences, word_vectors), sentences, need_states=True)
        weights = embed(sentences, self.token_weights)              # (B, L, 1)
        return masked_mean(states * weights, sentences.mask(), sentences.lengths)


class Remembered:
    """An encoder whose outputs are kept per input, so an ensemble's weight can be scanned without re-encoding."""

    def __init__(self, encoder):
        self.encoder, self.component_fit, self.seen = encoder, encoder.component_fit, {}

    def encode(self, sentences, mode="unsupervised"):
        key = (tuple(sentences), mode)
        if key not in self.seen:
            self.seen[key] = self.encoder.encode(sentences, mode=mode)
        return self.seen[key]


def weighted(f, g, w: float) -> CombinedEncoder:
    """(1 - w) f + w g of the post-processed unsupervised vectors (w = 0.5 is the paper's ensemble)."""
    return CombinedEncoder([f, g], weights=[1 - w, w])


def with_views(model: SentenceEncoder, views: dict, vectors: np.ndarray | torch.Tensor) -> SentenceEncoder:
    """The given views over ``vectors`` (same vocabulary as ``model``)."""
    return SentenceEncoder(views, model.vocab, model.tokenizer, vectors, max_len=model.max_len)


def load(spec: str) -> SentenceEncoder:
    """A model directory, or ``F_DIR+G_DIR``: the f view of one model with the g view of another (Table 6's
    ensemble of two single-view models), over the word vectors both were trained on."""
    if "+" not in spec:
        return SentenceEncoder.load(spec)
    f_dir, g_dir = spec.split("+")
    f_model, g_model = SentenceEncoder.load(f_dir), SentenceEncoder.load(g_dir)
    if f_model.vocab.words != g_model.vocab.words:
        raise ValueError(f"{f_dir} and {g_dir} were trained on different vocabularies")
    return with_views(f_model, {"f": f_model.views["f"], "g": g_model.views["g"]}, f_model.word_vectors)


def rows_for(model: SentenceEncoder, components: int, stsb_dev) -> dict[str, object]:
    words = WordVectors(model.vocab, model.word_vectors.numpy(), model.tokenizer)
    usif_weights = words.usif_weights()
    usif_g = with_views(model, {"g": model.views["g"]}, words.unit * usif_weights[:, None])
    sif_g = with_views(model, {"g": model.views["g"]}, words.vectors * words.sif_weights()[:, None])
    usif_f = with_views(model, {"f": StatesWeightedF(model.views["f"], usif_weights)}, model.word_vectors)
    rows: dict[str, object] = {}
    for label, m in (("paper", 1), ("piecewise", components)):
        for view in ("ensemble", "f", "g"):
            rows[f"{label} / {view}"] = ModelEncoder(model, view, FIT, components=m)
    for label, g in (("g uSIF-pooled", usif_g), ("g SIF-pooled", sif_g)):
        for post, m in (("paper", 1), ("piecewise", components)):
            rows[f"{label}, {post} / g"] = ModelEncoder(g, "g", FIT, components=m)
            rows[f"{label}, {post} / ensemble"] = CombinedEncoder([ModelEncoder(model, "f", FIT, components=m),
                                                                   ModelEncoder(g, "g", FIT, components=m)])
    rows["f and g uSIF-pooled, piecewise / f"] = ModelEncoder(usif_f, "f", FIT, components=components)
    rows["f and g uSIF-pooled, piecewise / ensemble"] = CombinedEncoder(
        [ModelEncoder(usif_f, "f", FIT, components=components), ModelEncoder(usif_g, "g", FIT, components=components)])
    f = Remembered(ModelEncoder(model, "f", FIT, components=components))
    g = Remembered(ModelEncoder(usif_g, "g", FIT, components=components))
    dev = {w: sts.cosine_similarity_task("stsb_unsup", stsb_dev, weighted(f, g, w), splits=["dev"])
           ["stsb_unsup.pearson.mean"] for w in VIEW_WEIGHTS}
    best = max(dev, key=dev.get)
    print("g's weight on STS-B dev: " + ", ".join(f"{w}: {r:.2f}" for w, r in dev.items()) + f" -> {best}")
    rows[f"g uSIF-pooled, piecewise / ensemble, g weighted on STS-B dev (w = {best})"] = weighted(f, g, best)
    return rows


def score(encoder, senteval_dir: Path) -> dict[str, float]:
    metrics = run_tasks(encoder, TASKS, str(senteval_dir))
    scores = {task: metrics[f"{task}.pearson.mean"] for task in TASKS}
    scores["mean"] = statistics.fmean(scores[t] for t in MEAN_OF)
    return scores


def over_seeds(results: dict[str, dict[str, dict[str, float]]], usif: float) -> dict[str, dict[str, dict]]:
    """For models named PREFIX-seedN: each row's mean over seeds, its std, and the worst seed's gap to uSIF. Rows
    whose label depends on the model (a chosen weight) are grouped under the label without it."""
    groups: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for name, rows in results.items():
        prefix = re.fullmatch(r"(.+)-seed\d+", name)
        if prefix is None or name == "baselines":
            continue
        for row, scores in rows.items():
            groups[prefix.group(1)][re.sub(r" \(w = [\d.]+\)", "", row)].append(scores["mean"])
    return {prefix: {row: {"seeds": len(means), "mean": statistics.fmean(means),
                           "std": statistics.stdev(means) if len(means) > 1 else 0.0,
                           "worst_gap": min(means) - usif}
                     for row, means in rows.items()}
            for prefix, rows in groups.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wordvecs", type=Path, required=True, help="the vectors the models were trained on")
    parser.add_argument("--senteval-dir", type=Path, required=True)
    parser.add_argument("--model", action="append", required=True,
                        help="NAME=DIR of a trained model, or NAME=F_DIR+G_DIR: f of one model, g of another "
                             "(repeatable; NAME=PREFIX-seedN models are also summarised over seeds)")
    parser.add_argument("--components", type=int, default=5, help="m of the piecewise rows (uSIF: 5)")
    parser.add_argument("--out", type=Path, required=True, help="output path without extension")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)            # beside trainings on a shared machine

    words = WordVectors.load(args.wordvecs)
    stsb = load_task("stsb_unsup", args.senteval_dir)
    results: dict[str, dict[str, dict[str, float]]] = {
        "baselines": {name: score(AverageEncoder(words, name, component_fit=FIT), args.senteval_dir)
                      for name in ("sif", "usif")}}
    for item in args.model:
        name, _, directory = item.partition("=")
        model = load(directory)
        results[name] = {}
        for row, encoder in rows_for(model, args.components, stsb).items():
            start = time.perf_counter()
            results[name][row] = score(encoder, args.senteval_dir)
            seconds = time.perf_counter() - start
            print(f"{name} {row:36s} {results[name][row]['mean']:.2f} ({seconds:.0f} s)", flush=True)

    usif = results["baselines"]["usif"]["mean"]
    summary = over_seeds(results, usif)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_text_aside(args.out.with_suffix(".json"), json.dumps(
        {"fit": FIT, "wordvecs": str(args.wordvecs), "components": args.components, "results": results,
         "over_seeds": summary}, indent=1) + "\n")
    lines = []
    for prefix, rows in summary.items():
        lines += [f"### {prefix}: over seeds (mean of STS12-14 and SICK-R; uSIF {usif:.2f})", "",
                  "| row | seeds | mean ± std | − uSIF | worst seed − uSIF |", "|---|---|---|---|---|",
                  *(f"| {row} | {s['seeds']} | {s['mean']:.2f} ± {s['std']:.2f} | {s['mean'] - usif:+.2f} | "
                    f"{s['worst_gap']:+.2f} |" for row, s in rows.items()), ""]
    header = ["| row | mean | − uSIF | " + " | ".join(TASKS) + " |", "|---" * (3 + len(TASKS)) + "|"]
    for name, rows in results.items():
        lines += [f"### {name}", "", *header,
                  *(f"| {row} | {scores['mean']:.2f} | {scores['mean'] - usif:+.2f} | "
                    + " | ".join(f"{scores[t]:.1f}" for t in TASKS) + " |" for row, scores in rows.items()), ""]
    write_text_aside(args.out.with_suffix(".md"), "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
