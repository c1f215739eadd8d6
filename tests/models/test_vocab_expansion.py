"""Vocabulary expansion (skip-thought section 2.2): least squares recovers a planted map and fills the table."""

import pytest
import torch

from skipview.models.vocab import UNK_ID
from skipview.models.vocab_expansion import VocabularyExpansion, fit_linear_map


def _planted(num_words=400, num_trained=150, d_vectors=12, d_embedding=7, noise=0.0, seed=0):
    generator = torch.Generator().manual_seed(seed)
    word_vectors = torch.randn(num_words, d_vectors, generator=generator)
    word_vectors[:4] = 0                      # specials have no vector
    word_vectors[[200, 333]] = 0              # two untrained words without a vector
    planted = torch.randn(d_vectors, d_embedding, generator=generator)
    trained = word_vectors[:num_trained] @ planted
    trained += noise * torch.randn(trained.shape, generator=generator)
    trained[:4] = torch.randn(4, d_embedding, generator=generator)   # learned special embeddings
    return word_vectors, planted, trained


def test_least_squares_recovers_a_planted_linear_map_exactly_without_noise():
    word_vectors, planted, trained = _planted()
    fitted = fit_linear_map(word_vectors[4:150], trained[4:150])
    torch.testing.assert_close(fitted, planted, atol=1e-4, rtol=1e-4)


def test_least_squares_matches_the_normal_equations_under_noise():
    """Brute-force reference: W = (XᵀX)⁻¹ XᵀY in float64; with noise the fit is close to, not equal to, the plant."""
    word_vectors, planted, trained = _planted(noise=0.05)
    X, Y = word_vectors[4:150].double(), trained[4:150].double()
    reference = torch.linalg.solve(X.T @ X, X.T @ Y)
    fitted = fit_linear_map(word_vectors[4:150], trained[4:150])
    torch.testing.assert_close(fitted.double(), reference, atol=1e-5, rtol=1e-5)
    assert 0 < (fitted - planted).abs().max() < 0.05


def test_expansion_keeps_trained_words_maps_unseen_words_and_leaves_vectorless_words_unk():
    word_vectors, planted, trained = _planted()
    expansion = VocabularyExpansion.fit(trained, word_vectors)
    assert expansion.num_shared == 150 - 4
    assert expansion.embeddings.shape == (400, 7)
    torch.testing.assert_close(expansion.embeddings[:150], trained)                       # learned rows kept
    unseen = [i for i in range(150, 400) if i not in (200, 333)]
    torch.testing.assert_close(expansion.embeddings[unseen], word_vectors[unseen] @ planted, atol=1e-4, rtol=1e-4)
    for no_vector in (200, 333):
        torch.testing.assert_close(expansion.embeddings[no_vector], trained[UNK_ID])
    fresh = torch.randn(3, 12)
    torch.testing.assert_close(expansion.map_vectors(fresh), fresh @ planted, atol=1e-4, rtol=1e-4)


def test_too_few_shared_words_is_a_clear_error():
    word_vectors, _, trained = _planted(num_trained=10)
    with pytest.raises(ValueError, match="under-determined"):
        VocabularyExpansion.fit(trained, word_vectors)
