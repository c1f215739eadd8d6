"""Semantic similarity scored by the cosine of unsupervised vectors: STS12-16, and STS-B / SICK-R without
training.

Papers aggregate STS subsets differently, so every aggregate is named in its key:
``mean`` (unweighted mean of the per-subset correlations; the multi-view paper's STS14 objective),
``wmean`` (weighted by the number of pairs; SentEval's "all" wmean) and ``all`` (one correlation over the pooled
pairs of every subset). Correlations are reported x100.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import pearsonr, spearmanr

from skipview.platform.evaluation.datasets import TaskData
from skipview.platform.evaluation.encoding import Encoder, cosine, encode_many, fits_per_subset

CORRELATIONS = {"pearson": lambda x, y: pearsonr(x, y)[0], "spearman": lambda x, y: spearmanr(x, y)[0]}


def correlation_metrics(task: str, subsets: dict[str, tuple[np.ndarray, np.ndarray]]) -> dict[str, float]:
    """Per-subset Pearson/Spearman x100 and their ``mean``/``wmean``/``all`` aggregates.

    ``subsets`` maps a subset name to (predicted similarities, gold scores). Keys: ``{task}.{subset}.{corr}``,
    ``{task}.{subset}.n`` and ``{task}.{corr}.{mean|wmean|all}``.
    """
    metrics: dict[str, float] = {}
    sizes = np.asarray([len(gold) for _, gold in subsets.values()], dtype=np.float64)
    for name, fn in CORRELATIONS.items():
        per_subset = []
        for subset, (pred, gold) in subsets.items():
            if len(gold) < 2 or np.ptp(pred) == 0 or np.ptp(gold) == 0:
                raise ValueError(f"{task}/{subset}: correlation undefined (fewer than 2 pairs or a constant "
                                 "prediction/gold vector)")
            r = 100.0 * float(fn(pred, gold))
            metrics[f"{task}.{subset}.{name}"] = r
            per_subset.append(r)
        metrics[f"{task}.{name}.mean"] = float(np.mean(per_subset))
        metrics[f"{task}.{name}.wmean"] = float(np.average(per_subset, weights=sizes))
        pooled_pred = np.concatenate([p for p, _ in subsets.values()])
        pooled_gold = np.concatenate([g for _, g in subsets.values()])
        metrics[f"{task}.{name}.all"] = 100.0 * float(fn(pooled_pred, pooled_gold))
    for subset, (_, gold) in subsets.items():
        metrics[f"{task}.{subset}.n"] = float(len(gold))
    return metrics


def cosine_similarity_task(task: str, data: TaskData, encoder: Encoder, splits: list[str] | None = None
                           ) -> dict[str, float]:
    """Score each pair by the cosine of its unsupervised vectors; correlate with gold per split. All splits are
    encoded in one call, or one call per split for an encoder that fits its component per subset."""
    names = splits or list(data.splits)
    calls = [[s] for s in names] if fits_per_subset(encoder) else [names]
    fit = getattr(encoder, "component_fit", None)
    subsets = {}
    for call in calls:
        groups = [g for s in call for g in (data.splits[s].a, data.splits[s].b)]
        if fit == "subset-sides":        # one call per side of the subset, each fitting its own component
            vectors = [encode_many(encoder, [group], "unsupervised", distinct=False)[0] for group in groups]
        else:
            vectors = encode_many(encoder, groups, "unsupervised", distinct=fit != "subset-stacked")
        subsets.update({s: (cosine(vectors[2 * i], vectors[2 * i + 1]), data.splits[s].y)
                        for i, s in enumerate(call)})
    return correlation_metrics(task, subsets)
