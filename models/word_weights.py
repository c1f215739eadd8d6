"""Word weights from corpus frequencies, shared by the training-free baselines and the models that learn with them.

* SIF (Arora et al. 2017): ``a / (a + p(w))``;
* uSIF (Ethayarajh 2018, eq. 7-8): ``a / (a/2 + p(w))`` with ``a = (1 - alpha) / (alpha Z)``, ``Z = |V| / 2`` and
  ``alpha`` the share of the vocabulary likely to appear in a sentence of ``n`` words, so no ``a`` is tuned.

``p(w)`` is a word's share of the corpus counts (``vocab.tsv``'s second column); the specials have count 0.
"""

from __future__ import annotations

import numpy as np

SIF_A = 1e-3  # Arora et al. (2017): a in [1e-4, 1e-3] works best; 1e-3 is their default
USIF_N = 11   # Ethayarajh (2018): the expected sentence length; 11 for the STS benchmarks


def probabilities(counts: np.ndarray, name: str) -> np.ndarray:
    counts = np.asarray(counts, dtype=np.float64)
    if counts.sum() <= 0:
        raise ValueError(f"{name} needs corpus counts: the vocabulary's counts are all zero")
    return counts / counts.sum()


def sif_weights(counts: np.ndarray, a: float = SIF_A) -> np.ndarray:
    """a / (a + p(w)) per vocabulary id."""
    return (a / (a + probabilities(counts, "SIF"))).astype(np.float32)


def usif_weights(counts: np.ndarray, n: float = USIF_N) -> np.ndarray:
    """a / (a/2 + p(w)) per vocabulary id, ``a`` from the vocabulary alone. |V| counts the words with a corpus count
    (the specials have none)."""
    p = probabilities(counts, "uSIF")
    size = int((np.asarray(counts) > 0).sum())
    threshold = 1 - (1 - 1 / size) ** n
    alpha = float((p > threshold).sum()) / size
    if not 0 < alpha < 1:       # a would be infinite (no word above the threshold) or 0 (every word)
        raise ValueError(f"uSIF: {'no' if alpha == 0 else 'every'} word has p(w) > {threshold:.2e} (n = {n}, "
                         f"|V| = {size}); give a {'smaller' if alpha == 0 else 'larger'} n")
    a = (1 - alpha) / (alpha * size / 2)
    return (a / (a / 2 + p)).astype(np.float32)
