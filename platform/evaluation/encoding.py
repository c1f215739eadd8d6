"""The encoder interface the suite consumes, where each encoder's principal component is fitted, and encoding
with de-duplication.

Any object with ``encode(sentences: list[str], mode="unsupervised" | "supervised") -> np.ndarray`` is an encoder:
a trained model (``ModelEncoder`` around ``SentenceEncoder.load``) or a word-vector baseline.

Where the top principal component is fitted (the post-processing of Arora et al. 2017 and of the multi-view paper)
moves STS scores by several points, so it is an explicit choice, the same for every encoder of a comparison
(``component_fit``, recorded in each metrics file):

* ``corpus``: once, on a sample of training-corpus sentences (a trained model's stored components);
* ``task``: on all sentences of a task (the multi-view paper's modified SentEval);
* ``subset``: on each STS subset separately (one input file), each distinct sentence once; tasks that are not STS
  subsets are fitted per task. The two papers' released STS evaluations also fit per subset, but each differently,
  and the difference moves STS13 by 1.5-1.9 points for SIF and uSIF (the OnWN file repeats many sentences):
* ``subset-stacked``: uSIF's released evaluation (Ethayarajh's ``usif.py``, ``test_STS``): the subset's A and B
  sentences stacked, repeats included;
* ``subset-sides``: Arora et al.'s released evaluation (``sim_algo.weighted_average_sim_rmpc``): the subset's A
  sentences and its B sentences each fitted on their own, repeats included.
"""

from __future__ import annotations

from typing import Literal, Protocol

import numpy as np

Mode = Literal["unsupervised", "supervised"]
ComponentFit = Literal["corpus", "task", "subset", "subset-stacked", "subset-sides"]
COMPONENT_FITS: tuple[ComponentFit, ...] = ("corpus", "task", "subset", "subset-stacked", "subset-sides")
# the fits that compare a model with the training-free rows (a baseline has no stored component)
COMPARABLE_FITS: tuple[ComponentFit, ...] = ("task", "subset", "subset-stacked", "subset-sides")


class Encoder(Protocol):
    def encode(self, sentences: list[str], mode: Mode = "unsupervised") -> np.ndarray: ...


def fits_per_subset(encoder: Encoder) -> bool:
    """Whether the suite must encode each STS subset in its own call (the encoder fits its component per call)."""
    return str(getattr(encoder, "component_fit", None)).startswith("subset")


class ModelEncoder:
    """A trained ``SentenceEncoder`` as the suite sees it: one view (or the ensemble), with its principal
    components from the model (``corpus``: fitted on training sentences when it was saved) or fitted on the
    sentences of each call (``task``, ``subset``)."""

    def __init__(self, model, view: str = "ensemble", component_fit: ComponentFit = "subset", components: int = 1):
        if component_fit not in COMPONENT_FITS:
            raise ValueError(f"component_fit must be one of {COMPONENT_FITS}, got {component_fit!r}")
        if components != 1 and component_fit == "corpus":
            raise ValueError("several components (uSIF's piecewise removal) are fitted per task or subset, not from "
                             "the model's stored one")
        self.model, self.view, self.component_fit, self.components = model, view, component_fit, components

    def encode(self, sentences: list[str], mode: Mode = "unsupervised") -> np.ndarray:
        postprocessing = "stored" if self.component_fit == "corpus" else "input"
        return self.model.encode(sentences, mode=mode, view=self.view, postprocessing=postprocessing,
                                 components=self.components)


class SentenceTransformerEncoder:
    """A sentence-transformers model folder (``skipview export sentence-transformers``'s, or any local one) as the
    suite sees it: the model's own vectors in both modes, with its own post-processing (``component_fit`` "corpus":
    nothing is fitted here). ``trust_remote_code``: an exported skipview model's module is skipview's own class,
    which sentence-transformers imports only when told to; the folder is the user's own choice of model."""

    component_fit: ComponentFit = "corpus"

    def __init__(self, folder, device: str = "cpu"):
        from sentence_transformers import SentenceTransformer       # the optional extra skipview[st]

        self.model = SentenceTransformer(str(folder), device=device, trust_remote_code=True)

    def encode(self, sentences: list[str], mode: Mode = "unsupervised") -> np.ndarray:
        return self.model.encode(list(sentences), convert_to_numpy=True)


class CombinedEncoder:
    """Views of separately trained models as one encoder, ensembled as ``SentenceEncoder`` ensembles its own views:
    the average of the post-processed vectors (unsupervised), their concatenation (supervised). The parts share
    one ``component_fit``, so the suite calls the whole ensemble per subset when they fit per subset.
    ``weights``: a weighted average instead of the mean (unsupervised; e.g. a view's share chosen on a dev split).
    ``concatenate``: their concatenation on unsupervised tasks too (combine-skip: two models trained apart share no
    coordinates, and the cosine of two concatenations of unit vectors is the mean of the parts' cosines, where an
    average would add the cross terms of one part's vector with the other's)."""

    def __init__(self, parts: list[Encoder], weights: list[float] | None = None, concatenate: bool = False):
        if weights is not None and len(weights) != len(parts):
            raise ValueError(f"{len(weights)} weights for {len(parts)} ensemble parts")
        if weights is not None and concatenate:
            raise ValueError("weights average the parts; a concatenation has none")
        self.parts, self.weights, self.concatenate = parts, weights, concatenate
        self.component_fit = parts[0].component_fit

    def encode(self, sentences: list[str], mode: Mode = "unsupervised") -> np.ndarray:
        vectors = [part.encode(sentences, mode=mode) for part in self.parts]
        if mode != "unsupervised" or self.concatenate:
            return np.concatenate(vectors, axis=1)
        return np.average(vectors, axis=0, weights=self.weights)


def encode_many(encoder: Encoder, groups: list[list[str]], mode: Mode, distinct: bool = True) -> list[np.ndarray]:
    """Encode several lists of sentences in ONE call (each distinct sentence once, unless ``distinct`` is false) and
    split the result back.

    One call per task matters beyond speed: an encoder that fits its component on what it is given
    (``component_fit="task"``) then sees the whole task, as the modified SentEval did.
    """
    if not distinct:
        vectors = _checked(encoder.encode([s for group in groups for s in group], mode=mode),
                           sum(len(group) for group in groups))
        return np.split(vectors, np.cumsum([len(group) for group in groups])[:-1])
    unique = list(dict.fromkeys(s for group in groups for s in group))
    vectors = _checked(encoder.encode(unique, mode=mode), len(unique))
    row = {s: i for i, s in enumerate(unique)}
    return [vectors[[row[s] for s in group]] if group else vectors[:0] for group in groups]


def _checked(vectors, count: int) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim != 2 or len(vectors) != count:
        raise ValueError(f"encoder returned an array of shape {vectors.shape} for {count} sentences; "
                         "expected (number of sentences, dim)")
    if not np.isfinite(vectors).all():
        raise ValueError("encoder returned NaN or infinite values")
    return vectors


def cosine(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Row-wise cosine; a pair with a zero vector (a sentence with no known word) scores 0, not NaN."""
    norms = np.linalg.norm(u, axis=1) * np.linalg.norm(v, axis=1)
    dots = np.einsum("ij,ij->i", u, v)
    return np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)
