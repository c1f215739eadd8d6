"""Discriminative objective: maths against brute-force loops, every Table 6 variant, and honest learning."""

import math

import numpy as np
import pytest
import torch

from skipview.models import registry
from skipview.models.batching import Sentences, WindowBatch, sample_sentence_ids
from skipview.models.discriminative import (agreement_diagnostics, agreement_matrix, contrastive_loss,
                                            positive_mask)


def cosine(a, b):
    return float(a @ b / (a.norm() * b.norm()))


@pytest.mark.parametrize("self_pairs", [True, False], ids=["eq3-as-printed", "design-md"])
def test_agreement_matrix_and_loss_match_a_double_loop(self_pairs):
    torch.manual_seed(0)
    n, d, tau, window = 7, 5, 0.7, 2
    zf, zg = torch.randn(n, d, dtype=torch.float64), torch.randn(n, d, dtype=torch.float64)
    doc_ids = torch.tensor([0, 0, 0, 1, 1, 1, 1])
    unit = [torch.nn.functional.normalize(z, dim=1) for z in (zf, zg)]
    agreement = agreement_matrix(unit)
    positives = positive_mask(doc_ids, window, self_pairs)
    loss, _ = contrastive_loss(agreement, positives, torch.tensor(tau, dtype=torch.float64), self_pairs)

    expected_a = [[cosine(zf[i], zg[j]) + cosine(zg[i], zf[j]) for j in range(n)] for i in range(n)]
    np.testing.assert_allclose(agreement.numpy(), expected_a, rtol=1e-12)
    terms = []
    for i in range(n):
        # eq. 3 as printed: n = i and j = i included; the strict reading: both left out
        denominator = sum(math.exp(expected_a[i][m] / tau) for m in range(n) if self_pairs or m != i)
        for j in range(n):
            if (self_pairs or j != i) and abs(i - j) <= window and doc_ids[i] == doc_ids[j]:
                terms.append(-math.log(math.exp(expected_a[i][j] / tau) / denominator))
    assert loss.item() == pytest.approx(sum(terms) / len(terms), rel=1e-12)


def test_single_view_agreement_is_twice_the_cosine():
    z = torch.nn.functional.normalize(torch.randn(4, 3, dtype=torch.float64), dim=1)
    expected = [[2 * cosine(z[i], z[j]) for j in range(4)] for i in range(4)]
    np.testing.assert_allclose(agreement_matrix([z]).numpy(), expected, rtol=1e-12)


def test_agreement_diagnostics_are_the_mean_cosines_they_name():
    torch.manual_seed(1)
    zf, zg = (torch.nn.functional.normalize(torch.randn(6, 4, dtype=torch.float64), dim=1) for _ in range(2))
    doc_ids = torch.tensor([0, 0, 0, 0, 1, 1])
    neighbours = positive_mask(doc_ids, 1, self_pairs=False)
    pairs = {kind: [cosine(zf[i], zg[j]) for i in range(6) for j in range(6)
                    if i != j and bool(neighbours[i, j]) == (kind == "neighbours")]
             for kind in ("neighbours", "others")}
    got = agreement_diagnostics([zf, zg], neighbours)
    assert got["cosine_views"].item() == pytest.approx(np.mean([cosine(zf[i], zg[i]) for i in range(6)]), rel=1e-12)
    assert got["cosine_neighbours"].item() == pytest.approx(np.mean(pairs["neighbours"]), rel=1e-12)
    assert got["cosine_others"].item() == pytest.approx(np.mean(pairs["others"]), rel=1e-12)
    one_view = agreement_diagnostics([zf], torch.zeros(6, 6, dtype=torch.bool))   # no neighbour in the batch
    assert "cosine_views" not in one_view and one_view["cosine_neighbours"].item() == 0.0


def test_positive_mask_respects_window_documents_and_batch_edges():
    doc_ids = torch.tensor([5, 5, 6, 6, 6, 6, 6, 7])
    mask = positive_mask(doc_ids, window=3)
    for i in range(8):
        for j in range(8):
            expected = abs(i - j) <= 3 and doc_ids[i] == doc_ids[j]
            assert bool(mask[i, j]) == expected, (i, j)
    assert mask[7].tolist() == [False] * 7 + [True]  # a one-sentence document at the batch edge: only itself
    assert mask[0].tolist() == [True, True] + [False] * 6
    without_self = positive_mask(doc_ids, window=3, self_pairs=False)
    assert torch.equal(without_self, mask & ~torch.eye(8, dtype=torch.bool))
    assert not without_self[7].any()                  # the strict reading: a lone sentence has no positive at all


@pytest.mark.parametrize("views", ["fg", "f"])
def test_without_self_pairs_the_loss_and_gradients_stay_finite(topic_corpus, views):
    # the diagonal is -inf before the softmax: a single view's a_ii = 2 must not leak in, nor NaN out
    corpus = topic_corpus.train
    objective = registry.build_objective("disc", {"views": views, "hidden_size": 4, "self_pairs": False},
                                         vocab=corpus.vocab, word_vectors=topic_corpus.word_vectors)
    batch = WindowBatch(Sentences.from_arrays([corpus.sentence(i) for i in range(9)]),
                        torch.tensor([0, 0, 0, 0, 1, 1, 1, 1, 2]))
    output = objective(batch)
    output.loss.backward()
    assert torch.isfinite(output.loss) and output.loss > 0
    assert output.metrics["positive_pairs"] == 2 * (3 + 2 + 1) * 2      # |i-j| in 1..3 inside each 4-sentence doc
    assert all(torch.isfinite(p.grad).all() for p in objective.parameters())


@pytest.mark.parametrize("views, names", [("fg", ["f", "g"]), ("ff", ["f1", "f2"]), ("gg", ["g1", "g2"]),
                                          ("f", ["f"]), ("g", ["g"])])
def test_every_table6_variant_is_configuration(topic_corpus, views, names):
    corpus = topic_corpus.train
    objective = registry.build_objective("disc", {"views": views, "hidden_size": 4}, vocab=corpus.vocab,
                                         word_vectors=topic_corpus.word_vectors)
    assert list(objective.encoders) == names
    batch = WindowBatch(Sentences.from_arrays([corpus.sentence(i) for i in range(10)]),
                        torch.zeros(10, dtype=torch.long))
    output = objective(batch)
    output.loss.backward()
    assert torch.isfinite(output.loss)
    assert all(p.grad is not None for p in objective.parameters())    # every view and the temperature learn
    assert objective.sentence_encoder(corpus.tokenizer, corpus.vocab).view_names == names


def test_temperature_is_log_parametrised_and_starts_at_one(topic_corpus):
    corpus = topic_corpus.train
    objective = registry.build_objective("disc", {"hidden_size": 4}, vocab=corpus.vocab,
                                         word_vectors=topic_corpus.word_vectors)
    assert objective.log_temperature.item() == 0.0 and objective.log_temperature.requires_grad
    fixed = registry.build_objective("disc", {"hidden_size": 4, "learn_temperature": False,
                                              "initial_temperature": 0.5},
                                     vocab=corpus.vocab, word_vectors=topic_corpus.word_vectors)
    assert not any(p is fixed.log_temperature for p in fixed.parameters())
    assert fixed.log_temperature.exp().item() == pytest.approx(0.5)


def topic_retrieval(encoder, topic_corpus) -> float:
    """Share of held-out sentences whose nearest other held-out sentence (cosine) is about the same topic."""
    vectors = encoder.encode(topic_corpus.held_out_sentences)
    similarity = vectors @ vectors.T
    np.fill_diagonal(similarity, -np.inf)
    return float((topic_corpus.held_out_topics[similarity.argmax(1)] == topic_corpus.held_out_topics).mean())


def test_discriminative_training_lifts_held_out_retrieval_well_above_chance(topic_corpus, train):
    """Planted structure: neighbouring sentences share a topic, visible only through 2 of ~9 words each
    (untrained: ~0.4, chance ~0.13). 500 CPU steps of the full method (f, g) must make held-out nearest
    neighbours share their topic."""
    corpus = topic_corpus.train
    torch.manual_seed(0)
    objective = registry.build_objective("disc", {"hidden_size": 16}, vocab=corpus.vocab,
                                         word_vectors=topic_corpus.word_vectors)

    def measured() -> float:
        encoder = objective.sentence_encoder(corpus.tokenizer, corpus.vocab)
        encoder.fit_postprocessing(sample_sentence_ids(corpus, 1000))
        return topic_retrieval(encoder, topic_corpus)

    chance = float(np.sum(np.bincount(topic_corpus.held_out_topics) ** 2) / len(topic_corpus.held_out_topics) ** 2)
    before = measured()
    output = train(objective, corpus, steps=500, batch_size=64, lr=1e-2)
    after = measured()
    print(f"chance {chance:.3f} before {before:.3f} after {after:.3f} final loss {output.loss.item():.3f}")
    assert after > 0.9 and after > before + 0.3 and after > chance + 0.6
    assert objective.log_temperature.exp().item() < 1.0      # the paper: tau decreases through training
