"""The encoder interface the suite consumes, and encoding with de-duplication.

Any object with ``encode(sentences: list[str], mode="unsupervised" | "supervised") -> np.ndarray`` is an encoder:
a trained model directory loaded with ``SentenceEncoder.load`` or a word-vector baseline.
"""

from __future__ import annotations

from typing import Literal, Protocol

import numpy as np

Mode = Literal["unsupervised", "supervised"]


class Encoder(Protocol):
    def encode(self, sentences: list[str], mode: Mode = "unsupervised") -> np.ndarray: ...


def encode_many(encoder: Encoder, groups: list[list[str]], mode: Mode) -> list[np.ndarray]:
    """Encode several lists of sentences in ONE call (each distinct sentence once) and split the result back.

    One call per task matters beyond speed: an encoder that fits a post-processing component on what it is
    given (the WR baseline with ``pc_source="task"``) then sees the whole task, as the modified SentEval did.
    """
    unique = list(dict.fromkeys(s for group in groups for s in group))
    vectors = np.asarray(encoder.encode(unique, mode=mode), dtype=np.float32)
    if vectors.ndim != 2 or len(vectors) != len(unique):
        raise ValueError(f"encoder returned an array of shape {vectors.shape} for {len(unique)} sentences; "
                         "expected (number of sentences, dim)")
    if not np.isfinite(vectors).all():
        raise ValueError("encoder returned NaN or infinite values")
    row = {s: i for i, s in enumerate(unique)}
    return [vectors[[row[s] for s in group]] if group else vectors[:0] for group in groups]


def cosine(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Row-wise cosine; a pair with a zero vector (a sentence with no known word) scores 0, not NaN."""
    norms = np.linalg.norm(u, axis=1) * np.linalg.norm(v, axis=1)
    dots = np.einsum("ij,ij->i", u, v)
    return np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)
