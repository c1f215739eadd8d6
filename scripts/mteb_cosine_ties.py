"""Where MTEB's cosine Spearman and skipview's differ with components fitted on the corpus (reports/mteb/README.md): both
correlate the same vectors, but compute the cosine differently in float32. skipview's suite divides the dot product
by the norms (``encoding.cosine``); MTEB takes ``1 - paired_cosine_distances`` (scikit-learn: the rows normalised,
then half the squared distance), which is exactly 1 for two equal vectors. A pair of identical sentences therefore
ties at 1 in MTEB but lands at 1 plus or minus a rounding error in skipview, and Spearman ranks the ties apart.

For each STS subset this prints, as JSON: its pairs and how many are two identical sentences, skipview's Spearman,
and the Spearman of scikit-learn's cosine on skipview's own vectors (MTEB's formula, MTEB's figure):

    python scripts/mteb_cosine_ties.py --model data/models/disc-gutenberg_novels \
        --senteval-dir data/senteval/downstream > reports/mteb/cosine_ties_disc.json
    python scripts/mteb_cosine_ties.py --baseline usif --wordvecs data/gutenberg_novels/wordvecs \
        --pc-corpus data/gutenberg_novels/prepared --senteval-dir data/senteval/downstream > ..._usif.json
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from scipy.stats import spearmanr
from sklearn.metrics.pairwise import paired_cosine_distances

from skipview.platform.evaluation.cli import build_encoder
from skipview.platform.evaluation.datasets import load_task
from skipview.platform.evaluation.encoding import cosine, encode_many


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, help="a trained model directory (its stored components)")
    parser.add_argument("--baseline", help="or a baseline (avg, wr, sif, usif) on --wordvecs, fitted on --pc-corpus")
    parser.add_argument("--wordvecs", type=Path)
    parser.add_argument("--pc-corpus", type=Path)
    parser.add_argument("--senteval-dir", type=Path, required=True)
    parser.add_argument("--tasks", default="sts12,sts13,sts14")
    args = parser.parse_args()
    encoder = build_encoder(args.model, args.baseline, args.wordvecs, args.pc_corpus, device="cpu",
                            component_fit="corpus")
    rows = []
    for task in args.tasks.split(","):
        splits = load_task(task, args.senteval_dir).splits
        # the whole task in one call, each distinct sentence once: the suite's vectors, bit for bit
        vectors = encode_many(encoder, [side for pairs in splits.values() for side in (pairs.a, pairs.b)],
                              "unsupervised")
        for i, (subset, pairs) in enumerate(splits.items()):
            u, v = vectors[2 * i], vectors[2 * i + 1]
            rows.append({
                "task": task, "subset": subset, "pairs": len(pairs.a),
                "identical_sentences": sum(a == b for a, b in zip(pairs.a, pairs.b)),
                "skipview": 100 * spearmanr(cosine(u, v), pairs.y)[0],
                "sklearn_cosine": 100 * spearmanr(1 - paired_cosine_distances(u, v), pairs.y)[0]})
    json.dump({"command": shlex.join(["python", *sys.argv]), "subsets": rows}, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
