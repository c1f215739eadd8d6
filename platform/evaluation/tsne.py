"""t-SNE of a task's sentence vectors coloured by label (skip-thought paper Figure 2): TREC (question type),
SUBJ, MR... by class; SICK pairs ([|u-v|, u*v] features) on a gradient of their relatedness score.

scikit-learn's TSNE (Barnes-Hut) and matplotlib: the well-kept implementations of both.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from sklearn.manifold import TSNE

from skipview.platform.evaluation.datasets import Pairs, TaskData
from skipview.platform.evaluation.encoding import Encoder, encode_many
from skipview.platform.files import write_aside


def task_points(data: TaskData, encoder: Encoder, split: str, limit: int, seed: int
                ) -> tuple[np.ndarray, np.ndarray]:
    """(vectors, labels) of at most ``limit`` examples of ``split``; pairs become ``[|u-v|, u*v]``."""
    part = data.splits[split]
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(len(part.y), size=min(limit, len(part.y)), replace=False))
    if isinstance(part, Pairs):
        u, v = encode_many(encoder, [[part.a[i] for i in rows], [part.b[i] for i in rows]], mode="unsupervised")
        return np.concatenate([np.abs(u - v), u * v], axis=1), part.y[rows]
    (x,) = encode_many(encoder, [[part.text[i] for i in rows]], mode="unsupervised")
    return x, part.y[rows]


def plot_tsne(vectors: np.ndarray, labels: np.ndarray, output: str | os.PathLike, title: str,
              class_names: tuple[str, ...] = (), seed: int = 0, perplexity: float = 30.0) -> Path:
    """Embed with t-SNE and write a PNG (written aside, then renamed). Class labels get a legend; continuous
    scores (no ``class_names``) a colour bar."""
    import matplotlib
    matplotlib.use("Agg")  # files only; no display on servers
    import matplotlib.pyplot as plt

    points = TSNE(n_components=2, perplexity=min(perplexity, (len(vectors) - 1) / 3), init="pca",
                  random_state=seed).fit_transform(np.asarray(vectors, dtype=np.float64))
    fig, ax = plt.subplots(figsize=(7, 6))
    if class_names:
        for c, name in enumerate(class_names):
            mask = labels == c
            ax.scatter(points[mask, 0], points[mask, 1], s=6, label=name)
        ax.legend(markerscale=3, fontsize=8)
    else:
        sc = ax.scatter(points[:, 0], points[:, 1], s=6, c=labels, cmap="viridis")
        fig.colorbar(sc, ax=ax, label="score")
    ax.set_title(title)
    ax.set_xticks([])
    ax.set_yticks([])
    output = Path(output)
    try:
        write_aside(output, lambda tmp: fig.savefig(tmp, dpi=120, bbox_inches="tight", format="png"))
    finally:
        plt.close(fig)
    return output
