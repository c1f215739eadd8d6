"""Training-free baselines built from a ``skipview data wordvecs`` directory, the competition a trained encoder
has to beat on the same word vectors:

* ``avg``: the fastText average (multi-view paper Table 3);
* ``wr``: the average with the top principal component removed (paper Table 3's fastText+WR);
* ``sif``: Arora et al. (2017)'s smooth inverse frequency: each word weighted by ``a / (a + p(w))`` with ``p(w)``
  its relative frequency in the corpus the vocabulary counts come from (``vocab.tsv``), then the top component
  removed. ``a = 1e-3`` is their recommended value.

Where the component is fitted is an explicit choice (``component_fit``, see ``encoding.COMPONENT_FITS``):
on a corpus sample (``fit_component``), or on the sentences of each ``encode`` call, which the suite makes per
task or per STS subset.

Directory contract: ``vectors.npy`` (float32, len(vocab) x dim, zeros for words without a vector),
``vocab.tsv`` (specials first, with corpus counts), ``meta.json`` (with the tokenizer settings the vocabulary was
built with). Sentences are tokenised with that same canonical tokenizer, so evaluation text meets the corpus
vocabulary.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from skipview.models.text import Tokenizer
from skipview.models.vocab import Vocab
from skipview.platform.evaluation.encoding import ComponentFit, Mode

# name -> (word weighting, top component removed)
BASELINES: dict[str, tuple[str, bool]] = {"avg": ("uniform", False), "wr": ("uniform", True), "sif": ("sif", True)}
SIF_A = 1e-3  # Arora et al. (2017): a in [1e-4, 1e-3] works best; 1e-3 is their default


class WordVectors:
    """A vocabulary (with corpus counts), its vector matrix and the tokenizer that produced the vocabulary."""

    def __init__(self, vocab: Vocab, vectors: np.ndarray, tokenizer: Tokenizer):
        if vectors.ndim != 2 or len(vectors) != len(vocab):
            raise ValueError(f"vectors of shape {vectors.shape} do not match a vocabulary of {len(vocab)} words")
        self.vocab, self.vectors, self.tokenizer = vocab, vectors, tokenizer
        self.known = np.linalg.norm(vectors, axis=1) > 0  # rows of zeros are words without a vector

    @classmethod
    def load(cls, path: str | Path) -> "WordVectors":
        path = Path(path)
        for name in ("vectors.npy", "vocab.tsv", "meta.json"):
            if not (path / name).is_file():
                raise FileNotFoundError(f"{path} is not a word-vector directory: missing {name} "
                                        "(make one with `skipview data wordvecs`)")
        meta = json.loads((path / "meta.json").read_text())
        if "tokenizer" not in meta:
            raise ValueError(f"{path / 'meta.json'}: missing key 'tokenizer' (the settings the vocabulary was built with)")
        vectors = np.load(path / "vectors.npy", mmap_mode="r")
        return cls(Vocab.load(path / "vocab.tsv"), np.asarray(vectors, dtype=np.float32),
                   Tokenizer.from_dict(meta["tokenizer"]))

    def sif_weights(self, a: float = SIF_A) -> np.ndarray:
        """a / (a + p(w)) per vocabulary id, p from the vocabulary's corpus counts."""
        counts = self.vocab.counts.astype(np.float64)
        if counts.sum() <= 0:
            raise ValueError("SIF needs corpus counts: the vocabulary's counts are all zero")
        return (a / (a + counts / counts.sum())).astype(np.float32)

    def average(self, sentences: list[str], weights: np.ndarray | None = None) -> np.ndarray:
        """Mean of the (weighted) vectors of the words that have one; a sentence with none is the zero vector."""
        out = np.zeros((len(sentences), self.vectors.shape[1]), dtype=np.float32)
        for i, sentence in enumerate(sentences):
            ids = [j for j in self.vocab.encode(self.tokenizer(sentence)) if self.known[j]]
            if ids:
                rows = self.vectors[ids] if weights is None else self.vectors[ids] * weights[ids, None]
                out[i] = rows.mean(axis=0)
        return out


def top_component(vectors: np.ndarray) -> np.ndarray:
    """First right singular vector of the (uncentred) matrix, as in Arora et al. (2017)'s common-component
    removal (TruncatedSVD without centring)."""
    _, _, vt = np.linalg.svd(np.asarray(vectors, dtype=np.float64), full_matrices=False)
    return vt[0].astype(np.float32)


def remove_component(vectors: np.ndarray, u: np.ndarray) -> np.ndarray:
    return vectors - np.outer(vectors @ u, u)


class AverageEncoder:
    """One of ``BASELINES``. The mode does not change the representation (both are the average).

    ``component_fit``: "corpus" needs ``fit_component`` (a sample of training sentences) before encoding;
    "task" and "subset" fit the component on the sentences of each ``encode`` call (the suite decides how much
    one call holds); ignored for ``avg``."""

    def __init__(self, words: WordVectors, baseline: str = "avg", *, component_fit: ComponentFit = "subset",
                 a: float = SIF_A):
        if baseline not in BASELINES:
            raise ValueError(f"unknown baseline {baseline!r}; known: {', '.join(BASELINES)}")
        self.words, self.baseline, self.a = words, baseline, a
        weighting, self.remove_top_pc = BASELINES[baseline]
        self.weights = words.sif_weights(a) if weighting == "sif" else None
        self.component_fit: ComponentFit | None = component_fit if self.remove_top_pc else None
        self.component: np.ndarray | None = None

    @property
    def name(self) -> str:
        return f"fasttext-{self.baseline}"

    def fit_component(self, sentences: list[str]) -> "AverageEncoder":
        self.component = top_component(self.words.average(sentences, self.weights))
        return self

    def encode(self, sentences: list[str], mode: Mode = "unsupervised") -> np.ndarray:
        if mode not in ("unsupervised", "supervised"):
            raise ValueError(f"mode must be 'unsupervised' or 'supervised', got {mode!r}")
        vectors = self.words.average(sentences, self.weights)
        if not self.remove_top_pc:
            return vectors
        if self.component_fit == "corpus":
            if self.component is None:
                raise ValueError(f"{self.name} with component_fit='corpus': call fit_component(corpus sentences) first")
            return remove_component(vectors, self.component)
        return remove_component(vectors, top_component(vectors))
