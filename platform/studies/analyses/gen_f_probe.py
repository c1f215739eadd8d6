"""What has the generative model's f learned, against what its objective could reward? (issue 24: "find out why f
stops")

Gen predicts every word of the next sentence from x = U z_f(s) by negative sampling (models/generative.py). This
probe scores that loss, on the same held batches and the same negatives, for x from:

* the trained f at a checkpoint (``--checkpoint``, a ``state.pt`` folder of the gen run);
* the sentence's own word average a(s), scaled by the best scalar (no training at all: what WR starts from);
* the *next* sentence's word average a(s'), scaled the same way: an oracle that knows which words come next, only
  their average, i.e. how much a bag-of-words objective can reward a model that predicts the next sentence's average
  vector perfectly;
* one constant vector for every sentence (the batch mean of a(s), scaled): what predicting word frequency alone earns;
* x = 0, i.e. no prediction: (1 + K) ln 2.

If the trained f sits near the own-average row, f has learnt about as much as the word average already carries and
the objective's remaining reward (up to the oracle) is not reachable from s; if it sits near the constant row, f has
learnt frequency. It also reports the mean cosine of x_f with a(s).

    python -m skipview.platform.studies.analyses.gen_f_probe --corpus data/novels_news/prepared \
        --wordvecs data/novels_news/wordvecs --checkpoint runs/table6_trained-gen-invertible-seed0/checkpoint_... \
        --out reports/table6_trained/gen_f_probe.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from skipview.models.batching import iterate_batches
from skipview.models.corpus import PreparedCorpus
from skipview.models.registry import build_objective
from skipview.models.views import embed, masked_mean
from skipview.platform.files import write_text_aside
from skipview.platform.training import checkpoint as ckpt
from skipview.platform.training.objectives import load_word_vectors

SCALES = [0.5, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--wordvecs", type=Path, required=True)
    parser.add_argument("--checkpoint", type=Path, required=True)
    parser.add_argument("--hidden-size", type=int, default=256)
    parser.add_argument("--negatives", type=int, default=2)
    parser.add_argument("--stride", type=int, default=400,
                        help="score every STRIDE-th batch of 256 pairs of an epoch (seed 99): batches are drawn from "
                             "blocks of 16,384 consecutive sentences and sorted by length, so one batch's loss says "
                             "more about its region and lengths than about the model; a spread of them does not")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)

    corpus = PreparedCorpus(args.corpus)
    objective = build_objective("gen", {"hidden_size": args.hidden_size, "negatives": args.negatives},
                                vocab=corpus.vocab, word_vectors=load_word_vectors(args.wordvecs, corpus.vocab))
    state, _ = ckpt.load(args.checkpoint, rank=0, map_location=torch.device("cpu"))
    objective.load_state_dict(state["model"])
    objective.eval()
    vectors = objective.word_vectors

    def loss(x: torch.Tensor, batch, seed: int) -> float:
        torch.manual_seed(seed)                         # the same negatives for every candidate x
        return float(objective.negative_sampling_loss(x, batch.next))

    totals: dict[str, float] = {}
    cosine, count = 0.0, 0
    with torch.no_grad():
        batches = iterate_batches(corpus, objective.example_kind, 256, seed=99, epoch=0)
        held = [batch for index, batch in enumerate(batches) if index % args.stride == 0]
        for index, batch in enumerate(held):
            s, nxt = batch.sentences, batch.next
            own = masked_mean(embed(s, vectors), s.mask(), s.lengths)
            following = masked_mean(embed(nxt, vectors), nxt.mask(), nxt.lengths)
            x_f = objective.f.represent(embed(s, vectors), s) @ objective.decoder.T
            candidates = {"trained f": [x_f], "no prediction (x = 0)": [torch.zeros_like(x_f)]}
            for name, base in (("own word average", own), ("next sentence's word average (oracle)", following),
                               ("constant (batch mean)", own.mean(0, keepdim=True).expand_as(own))):
                candidates[name] = [base * scale for scale in SCALES]
            for name, options in candidates.items():
                for k, x in enumerate(options):
                    key = f"{name}|{k}"
                    totals[key] = totals.get(key, 0.0) + loss(x, batch, seed=index)
            cosine += float(torch.nn.functional.cosine_similarity(x_f, own).sum())
            count += len(own)
    rows = {}
    for name in ("trained f", "no prediction (x = 0)", "own word average", "next sentence's word average (oracle)",
                 "constant (batch mean)"):
        scored = {k: v / len(held) for k, v in totals.items() if k.startswith(name + "|")}
        best = min(scored, key=scored.get)
        scaled = name not in ("trained f", "no prediction (x = 0)")
        rows[name] = {"loss": scored[best], "scale": SCALES[int(best.split("|")[1])] if scaled else None}
        print(f"{name:40s} loss {rows[name]['loss']:.4f}  scale {rows[name]['scale']}")
    record = {"checkpoint": str(args.checkpoint), "step": state["progress"]["step"], "batches": len(held),
              "rows": rows, "cosine_x_f_own_average": cosine / count}
    print(f"step {record['step']}; mean cosine(x_f, own word average) {record['cosine_x_f_own_average']:.3f}")
    write_text_aside(args.out, json.dumps(record, indent=1) + "\n")          # whole or not at all (a stop)


if __name__ == "__main__":
    main()
