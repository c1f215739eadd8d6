"""Nearest neighbours by cosine: corpus sentences for query sentences (skip-thought paper Table 2) and words for
query words (Table 3, over any word matrix: fastText vectors, or an encoder's table after vocabulary expansion)."""

from __future__ import annotations

import numpy as np

from skipview.models.corpus import PreparedCorpus
from skipview.models.vocab import SPECIALS, UNK
from skipview.platform.evaluation.encoding import Encoder


def sample_corpus_sentences(corpus: PreparedCorpus, size: int, seed: int = 0, min_tokens: int = 3) -> list[str]:
    """``size`` distinct sentences of at least ``min_tokens`` tokens drawn uniformly from the corpus, as text.

    Tokens are joined with spaces: the canonical tokenizer is idempotent, so encoders re-tokenise them into the
    same tokens. Out-of-vocabulary tokens are shown as ``<unk>``."""
    rng = np.random.default_rng(seed)
    lengths = corpus.lengths()
    candidates = np.flatnonzero(lengths >= min_tokens)
    chosen = np.sort(rng.choice(candidates, size=min(size, len(candidates)), replace=False))
    words = corpus.vocab.words
    return list(dict.fromkeys(" ".join(words[t] for t in corpus.sentence(int(i))) for i in chosen))


def _unit(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


def nearest(queries: np.ndarray, candidates: np.ndarray, k: int, exclude_self: np.ndarray | None = None
            ) -> tuple[np.ndarray, np.ndarray]:
    """Indices (q, k) and cosines (q, k) of the k most similar candidate rows; ``exclude_self[i]`` (a candidate
    index, or -1) is never returned for query i."""
    sims = _unit(np.asarray(queries, np.float32)) @ _unit(np.asarray(candidates, np.float32)).T
    if exclude_self is not None:
        rows = np.flatnonzero(exclude_self >= 0)
        sims[rows, exclude_self[rows]] = -np.inf
    k = min(k, sims.shape[1])
    top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(sims, top, axis=1), axis=1)
    top = np.take_along_axis(top, order, axis=1)
    return top, np.take_along_axis(sims, top, axis=1)


def sentence_neighbours(encoder: Encoder, queries: list[str], sentences: list[str], k: int = 1
                        ) -> list[list[tuple[str, float]]]:
    """For each query, its k nearest ``sentences`` by cosine of unsupervised vectors (an identical sentence is
    skipped, as the paper shows a different sentence)."""
    vectors = encoder.encode(queries + sentences, mode="unsupervised")
    position = {s: i for i, s in enumerate(sentences)}
    # a query that appears verbatim in the sample is excluded from its own neighbours
    exclude = np.asarray([position.get(" ".join(q.split()), -1) for q in queries])
    idx, sims = nearest(vectors[: len(queries)], vectors[len(queries):], k, exclude)
    return [[(sentences[j], float(s)) for j, s in zip(row, srow)] for row, srow in zip(idx, sims)]


def word_neighbours(words: list[str], matrix: np.ndarray, queries: list[str], k: int = 5
                    ) -> dict[str, list[tuple[str, float]]]:
    """For each query word in ``words``, its k nearest other words (rows of ``matrix``) by cosine; specials and
    words without a vector (zero rows) are never neighbours."""
    index = {w: i for i, w in enumerate(words)}
    missing = [q for q in queries if q not in index]
    if missing:
        raise KeyError(f"not in the word table: {', '.join(missing)}")
    usable = np.linalg.norm(matrix, axis=1) > 0
    usable[[index[s] for s in SPECIALS if s in index]] = False
    if UNK in index:
        usable[index[UNK]] = False
    candidates = np.flatnonzero(usable)
    position = {int(c): i for i, c in enumerate(candidates)}
    exclude = np.asarray([position.get(index[q], -1) for q in queries])
    idx, sims = nearest(matrix[[index[q] for q in queries]], matrix[candidates], k, exclude)
    return {q: [(words[candidates[j]], float(s)) for j, s in zip(row, srow)]
            for q, row, srow in zip(queries, idx, sims)}
