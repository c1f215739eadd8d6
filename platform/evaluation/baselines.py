"""Training-free baselines built from a ``skipview data wordvecs`` directory: fastText average ("avg") and
average with the top principal component removed ("WR"), the multi-view paper's Table 3 comparison.

Directory contract: ``vectors.npy`` (float32, len(vocab) x dim, zeros for words without a vector),
``vocab.tsv`` (specials first), ``meta.json`` (with the tokenizer settings the vocabulary was built with).
Sentences are tokenised with that same canonical tokenizer, so evaluation text meets the corpus vocabulary.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

import numpy as np

from skipview.models.text import Tokenizer
from skipview.models.vocab import Vocab
from skipview.platform.evaluation.encoding import Mode


class WordVectors:
    """A vocabulary, its vector matrix and the tokenizer that produced the vocabulary."""

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

    def average(self, sentences: list[str]) -> np.ndarray:
        """Mean vector of the words that have one; a sentence with none is the zero vector."""
        out = np.zeros((len(sentences), self.vectors.shape[1]), dtype=np.float32)
        for i, sentence in enumerate(sentences):
            ids = [j for j in self.vocab.encode(self.tokenizer(sentence)) if self.known[j]]
            if ids:
                out[i] = self.vectors[ids].mean(axis=0)
        return out


def top_component(vectors: np.ndarray) -> np.ndarray:
    """First right singular vector of the (uncentred) matrix, as in Arora et al. (2017)'s common-component
    removal (TruncatedSVD without centring)."""
    _, _, vt = np.linalg.svd(np.asarray(vectors, dtype=np.float64), full_matrices=False)
    return vt[0].astype(np.float32)


def remove_component(vectors: np.ndarray, u: np.ndarray) -> np.ndarray:
    return vectors - np.outer(vectors @ u, u)


class AverageEncoder:
    """fastText average; with ``remove_top_pc`` the WR variant.

    The component is fitted once with ``fit_component`` on a sample of sentences (e.g. the training corpus),
    or, when none was fitted (``pc_source="task"``), on the sentences of each ``encode`` call: the suite passes
    a whole task per call, which is what the modified SentEval of the multi-view paper did.
    The mode does not change the representation (both are the average).
    """

    def __init__(self, words: WordVectors, remove_top_pc: bool = False):
        self.words, self.remove_top_pc = words, remove_top_pc
        self.component: np.ndarray | None = None

    @property
    def name(self) -> str:
        return "fasttext-wr" if self.remove_top_pc else "fasttext-avg"

    @property
    def pc_source(self) -> Literal["fitted", "task", "none"]:
        return "none" if not self.remove_top_pc else ("task" if self.component is None else "fitted")

    def fit_component(self, sentences: list[str]) -> "AverageEncoder":
        self.component = top_component(self.words.average(sentences))
        return self

    def encode(self, sentences: list[str], mode: Mode = "unsupervised") -> np.ndarray:
        if mode not in ("unsupervised", "supervised"):
            raise ValueError(f"mode must be 'unsupervised' or 'supervised', got {mode!r}")
        vectors = self.words.average(sentences)
        if not self.remove_top_pc:
            return vectors
        u = self.component if self.component is not None else top_component(vectors)
        return remove_component(vectors, u)
