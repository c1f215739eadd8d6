"""Where does SIF keep its lead over the trained (f, g) model on the skipgram vectors? (issue 12)

For each model directory given: the paper's pooling (mean over time) per view and for the ensemble, under the three
component fits; and the views pooled with SIF's word weights a / (a + p(w)) instead of the plain mean, a test-time
variant that is NOT in the multi-view paper (its Table 2 pools with the plain mean), to ask how much of SIF's lead
is its weighting. Baselines (SIF, WR) beside, same fits. Per STS subset Pearson is in the JSON.

    python reports/sif_claim/probes/where_sif_leads/probe.py MODEL_DIR... --out reports/sif_claim/probes/where_sif_leads/probe.json
"""
import argparse
import json

import numpy as np
import torch

from skipview.models.batching import Sentences
from skipview.models.corpus import PreparedCorpus
from skipview.models.encoder import SentenceEncoder, top_component
from skipview.models.pca import remove_component
from skipview.platform.evaluation.baselines import AverageEncoder, WordVectors
from skipview.platform.evaluation.encoding import ModelEncoder
from skipview.platform.evaluation.neighbours import sample_corpus_sentences
from skipview.platform.evaluation.suite import run_tasks

TASKS = ["sts12", "sts13", "sts14", "sickr_unsup"]
SENTEVAL = "data/senteval/downstream"


class WeightedPooling:
    """The model's f and g, each pooled as sum_t w(token_t) h_t / length (w = 1: the paper's mean), top component
    fitted on the sentences of each call (the suite makes one call per STS subset), L2-normalised, then averaged."""

    component_fit = "subset"

    def __init__(self, model: SentenceEncoder, weights: dict[str, torch.Tensor]):
        self.model, self.weights = model, weights

    @torch.no_grad()
    def encode(self, sentences, mode="unsupervised"):
        ids = self.model.token_ids(sentences)
        order = np.argsort([len(t) for t in ids], kind="stable")
        pooled = {view: [] for view in self.weights}
        for start in range(0, len(order), 256):
            batch = Sentences.from_arrays([ids[i] for i in order[start:start + 256]])
            x = self.model.word_vectors[batch.ids]
            mask = batch.mask().float()
            for view, weights in self.weights.items():
                if view == "f":
                    values, _ = self.model.views["f"]._run(x, batch, need_states=True)   # (B, L, 2h) states
                else:
                    values = self.model.views["g"].linear(x)                             # W x_t
                w = weights[batch.ids] * mask
                pooled[view].append((values * w[..., None]).sum(1) / mask.sum(1, keepdim=True))
        inverse = torch.from_numpy(np.argsort(order))
        vectors = []
        for view in self.weights:
            z = torch.cat(pooled[view])[inverse]
            vectors.append(torch.nn.functional.normalize(remove_component(z, top_component(z)), dim=-1))
        return torch.stack(vectors).mean(0).numpy()


def scores(encoder) -> dict[str, float]:
    metrics = run_tasks(encoder, TASKS, SENTEVAL)
    out = {task: metrics[f"{task}.pearson.mean"] for task in TASKS}
    out["mean"] = float(np.mean([out[t] for t in TASKS]))
    out["subsets"] = {k: v for k, v in metrics.items() if k.endswith(".pearson")}   # e.g. sts12.surprise.OnWN.pearson
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="+")
    parser.add_argument("--wordvecs", default="data/gutenberg_novels/wordvecs")
    parser.add_argument("--corpus", default="data/gutenberg_novels/prepared", help="for the baselines' corpus fit")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    words = WordVectors.load(args.wordvecs)
    corpus = PreparedCorpus(args.corpus)
    sample = sample_corpus_sentences(corpus, 5000)     # the size the trained models' stored components were fitted on
    rows = {}
    for baseline in ("sif", "wr"):
        for fit in ("subset", "task", "corpus"):
            encoder = AverageEncoder(words, baseline, component_fit=fit)
            if fit == "corpus":
                encoder.fit_component(sample)
            rows[f"{baseline}/{fit}"] = scores(encoder)
            print(f"{baseline}/{fit}", round(rows[f'{baseline}/{fit}']['mean'], 1), flush=True)
    for path in args.models:
        model = SentenceEncoder.load(path)
        counts = model.vocab.counts.astype(np.float64)
        sif = torch.from_numpy((1e-3 / (1e-3 + counts / counts.sum())).astype(np.float32))
        ones = torch.ones_like(sif)
        encoders = {f"{view}/{fit}": ModelEncoder(model, view, fit)
                    for view in ("ensemble", "f", "g") for fit in ("subset", "task", "corpus")}
        encoders |= {"g, SIF-weighted/subset": WeightedPooling(model, {"g": sif}),
                     "f, SIF-weighted/subset": WeightedPooling(model, {"f": sif}),
                     "ensemble, g SIF-weighted/subset": WeightedPooling(model, {"f": ones, "g": sif}),
                     "ensemble, both SIF-weighted/subset": WeightedPooling(model, {"f": sif, "g": sif})}
        rows[path] = {name: scores(encoder) for name, encoder in encoders.items()}
        print(path, {name: round(r["mean"], 1) for name, r in rows[path].items()}, flush=True)
    with open(args.out, "w") as f:
        json.dump({"tasks": TASKS, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
