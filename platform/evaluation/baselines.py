"""Training-free baselines built from a ``skipview data wordvecs`` directory, the competition a trained encoder
has to beat on the same word vectors:

* ``avg``: the fastText average (multi-view paper Table 3);
* ``wr``: the average with the top principal component removed (paper Table 3's fastText+WR);
* ``sif``: Arora et al. (2017)'s smooth inverse frequency: each word weighted by ``a / (a + p(w))`` with ``p(w)``
  its relative frequency in the corpus the vocabulary counts come from (``vocab.tsv``), then the top component
  removed. ``a = 1e-3`` is their recommended value.
* ``usif``: Ethayarajh (2018)'s unsupervised SIF, which needs no tuned ``a``: unit-length word vectors weighted by
  ``a / (a/2 + p(w))`` with ``a = (1 - alpha) / (alpha Z)``, ``Z = |V| / 2`` and ``alpha`` the fraction of the
  vocabulary with ``p(w) > 1 - (1 - 1/|V|)^n`` (``n`` the expected sentence length, 11 for STS), then *piecewise*
  common component removal: the first ``m = 5`` singular vectors, each projection removed scaled by that
  component's share of the squared singular values (``lambda_i = s_i^2 / sum_j s_j^2``).

Where the components are fitted is an explicit choice (``component_fit``, see ``encoding.COMPONENT_FITS``):
on a corpus sample (``fit_component``), or on the sentences of each ``encode`` call, which the suite makes per
task or per STS subset.

Directory contract: ``vectors.npy`` (float32, len(vocab) x dim, zeros for words without a vector),
``vocab.tsv`` (specials first, with corpus counts), ``meta.json`` (with the tokenizer settings the vocabulary was
built with). Sentences are tokenised with that same canonical tokenizer, so evaluation text meets the corpus
vocabulary.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import torch

from skipview.models import word_weights
from skipview.models.arrays import load_npy
from skipview.models.pca import remove_components, shared_components
from skipview.models.text import Tokenizer
from skipview.models.vocab import Vocab
from skipview.models.word_weights import SIF_A, USIF_N
from skipview.platform.evaluation.encoding import ComponentFit, Mode

Weighting = Literal["uniform", "sif", "usif"]
# How uSIF's word vectors are normalised before weighting: "word" = each vector to unit length (the paper's
# section 4); "dimension" = each dimension over the sentence's words, which is what the authors' released code does
# (``np.linalg.norm(v_t, axis=0)``). Measured on the pipeline's skipgram vectors of the novels (reports/baselines.md):
# "word" is the default because it is the paper's method and scored higher there.
Normalise = Literal["word", "dimension"]


@dataclass(frozen=True)
class Recipe:
    """One training-free encoder: the word weighting, how many common components are removed, and whether each
    removed projection is scaled by its component's share of the squared singular values (uSIF) or whole (WR,
    SIF)."""
    weighting: Weighting
    components: int
    weighted_removal: bool = False


BASELINES: dict[str, Recipe] = {"avg": Recipe("uniform", 0), "wr": Recipe("uniform", 1), "sif": Recipe("sif", 1),
                                "usif": Recipe("usif", 5, weighted_removal=True)}


class WordVectors:
    """A vocabulary (with corpus counts), its vector matrix and the tokenizer that produced the vocabulary."""

    def __init__(self, vocab: Vocab, vectors: np.ndarray, tokenizer: Tokenizer):
        if vectors.ndim != 2 or len(vectors) != len(vocab):
            raise ValueError(f"vectors of shape {vectors.shape} do not match a vocabulary of {len(vocab)} words")
        self.vocab, self.vectors, self.tokenizer = vocab, vectors, tokenizer
        norms = np.linalg.norm(vectors, axis=1)
        self.known = norms > 0  # rows of zeros are words without a vector
        self.unit = np.divide(vectors, norms[:, None], out=np.zeros_like(vectors), where=self.known[:, None])

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
        vectors = load_npy(path / "vectors.npy", mmap="r", remake="`skipview data wordvecs`")
        return cls(Vocab.load(path / "vocab.tsv"), np.asarray(vectors, dtype=np.float32),
                   Tokenizer.from_dict(meta["tokenizer"]))

    def sif_weights(self, a: float = SIF_A) -> np.ndarray:
        """a / (a + p(w)) per vocabulary id, p from the vocabulary's corpus counts."""
        return word_weights.sif_weights(self.vocab.counts, a)

    def usif_weights(self, n: float = USIF_N) -> np.ndarray:
        """uSIF's a / (a/2 + p(w)) per vocabulary id (``models.word_weights``)."""
        return word_weights.usif_weights(self.vocab.counts, n)

    def average(self, sentences: list[str], weights: np.ndarray | None = None,
                normalise: Normalise | None = None) -> np.ndarray:
        """Mean of the (weighted) vectors of the words that have one; a sentence with none is the zero vector.
        ``normalise``: the vectors to unit length ("word") or each dimension over the sentence's words
        ("dimension") before weighting; None averages them as they are."""
        table = self.unit if normalise == "word" else self.vectors
        out = np.zeros((len(sentences), self.vectors.shape[1]), dtype=np.float32)
        for i, sentence in enumerate(sentences):
            ids = [j for j in self.vocab.encode(self.tokenizer(sentence)) if self.known[j]]
            if ids:
                rows = table[ids]
                if normalise == "dimension":
                    norms = np.linalg.norm(rows, axis=0)
                    rows = np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)
                out[i] = (rows if weights is None else rows * weights[ids, None]).mean(axis=0)
        return out


class AverageEncoder:
    """One of ``BASELINES``. The mode does not change the representation (both are the average).

    ``component_fit``: "corpus" needs ``fit_component`` (a sample of training sentences) before encoding;
    "task" and "subset" fit the components on the sentences of each ``encode`` call (the suite decides how much
    one call holds); ignored for ``avg``."""

    def __init__(self, words: WordVectors, baseline: str = "avg", *, component_fit: ComponentFit = "subset",
                 a: float = SIF_A, n: float = USIF_N, normalise: Normalise = "word"):
        if baseline not in BASELINES:
            raise ValueError(f"unknown baseline {baseline!r}; known: {', '.join(BASELINES)}")
        self.words, self.baseline, self.a, self.n = words, baseline, a, n
        self.recipe = BASELINES[baseline]
        weighting = self.recipe.weighting
        self.weights = (words.sif_weights(a) if weighting == "sif" else words.usif_weights(n) if weighting == "usif"
                        else None)
        self.normalise: Normalise | None = normalise if self.recipe.weighting == "usif" else None
        self.component_fit: ComponentFit | None = component_fit if self.recipe.components else None
        self.removal: tuple[torch.Tensor, torch.Tensor] | None = None

    @property
    def name(self) -> str:
        return f"fasttext-{self.baseline}"

    def _removal(self, vectors: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        components, shares = shared_components(torch.from_numpy(vectors), self.recipe.components)
        return components, shares if self.recipe.weighted_removal else torch.ones_like(shares)

    def _average(self, sentences: list[str]) -> np.ndarray:
        return self.words.average(sentences, self.weights, self.normalise)

    def fit_component(self, sentences: list[str]) -> "AverageEncoder":
        self.removal = self._removal(self._average(sentences))
        return self

    def encode(self, sentences: list[str], mode: Mode = "unsupervised") -> np.ndarray:
        if mode not in ("unsupervised", "supervised"):
            raise ValueError(f"mode must be 'unsupervised' or 'supervised', got {mode!r}")
        vectors = self._average(sentences)
        if not self.recipe.components:
            return vectors
        if self.component_fit == "corpus":
            if self.removal is None:
                raise ValueError(f"{self.name} with component_fit='corpus': call fit_component(corpus sentences) first")
            return remove_components(torch.from_numpy(vectors), *self.removal).numpy()
        return remove_components(torch.from_numpy(vectors), *self._removal(vectors)).numpy()
