"""Vocabulary expansion (Kiros et al. 2015, section 2.2).

An encoder trained with learned embeddings knows only its training vocabulary (skip-thought: 20,000 words).
Word vectors trained separately (here: the fastText vectors of the prepared corpus, aligned to its vocabulary,
plus fastText's subword lookup for anything else) cover far more words. The paper fits an un-regularised
least-squares linear map ``v' = W v`` from the word-vector space to the encoder's embedding space on the words
both share, then gives every word the encoder has not seen the embedding ``W v``. No intercept: the paper's
map is linear.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from skipview.models.vocab import SPECIALS, UNK_ID


def fit_linear_map(source: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """``argmin_W ||source @ W - target||²`` without regularisation: [n, d_source], [n, d_target] -> [d_source,
    d_target]. Solved in float64 with ``torch.linalg.lstsq`` (a QR/SVD-based solver, stable where the normal
    equations would square the condition number)."""
    if source.ndim != 2 or target.ndim != 2 or source.shape[0] != target.shape[0]:
        raise ValueError(f"need paired rows: source {tuple(source.shape)}, target {tuple(target.shape)}")
    if source.shape[0] < source.shape[1]:
        raise ValueError(f"{source.shape[0]} shared words cannot determine a map from {source.shape[1]} "
                         "dimensions (the least-squares problem is under-determined)")
    return torch.linalg.lstsq(source.double().cpu(), target.double().cpu()).solution.to(target.dtype)


@dataclass
class VocabularyExpansion:
    """The fitted map and the embedding table it gives the whole word-vector vocabulary."""

    map: torch.Tensor             # [word-vector dim, embedding dim]
    embeddings: torch.Tensor      # [len(word vectors), embedding dim]
    num_shared: int               # words the map was fitted on

    @classmethod
    def fit(cls, trained_embeddings: torch.Tensor, word_vectors: torch.Tensor) -> "VocabularyExpansion":
        """``trained_embeddings`` [V_train, E]: the encoder's table, rows = ids of the first V_train words of the
        vocabulary ``word_vectors`` [V, d] is aligned to (V >= V_train; an all-zero row means "no vector").

        Trained words keep their learned embedding; every other word with a vector gets ``W v``; a word with
        no vector at all keeps ``<unk>``'s embedding, which is what the encoder saw for it in training."""
        num_trained = trained_embeddings.shape[0]
        if word_vectors.shape[0] < num_trained:
            raise ValueError(f"word vectors cover {word_vectors.shape[0]} words, fewer than the {num_trained} the "
                             "encoder was trained on: they must be aligned to the same (larger) vocabulary")
        trained_embeddings = trained_embeddings.detach().cpu()
        word_vectors = word_vectors.detach().cpu().to(trained_embeddings.dtype)
        has_vector = word_vectors.abs().sum(dim=1) > 0
        shared = has_vector[:num_trained].clone()
        shared[: len(SPECIALS)] = False
        map_ = fit_linear_map(word_vectors[:num_trained][shared], trained_embeddings[shared])
        embeddings = word_vectors @ map_
        embeddings[~has_vector] = trained_embeddings[UNK_ID]
        embeddings[:num_trained] = trained_embeddings
        return cls(map=map_, embeddings=embeddings, num_shared=int(shared.sum()))

    def map_vectors(self, vectors: torch.Tensor) -> torch.Tensor:
        """Embeddings for words outside the table (e.g. fastText subword vectors of unseen words)."""
        return vectors.to(self.map.dtype) @ self.map
