"""Generative objective: negative-sampling loss against a loop, noise distribution, invertibility, learning."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from scipy.stats import chisquare
from torch.nn.utils.rnn import pack_padded_sequence

from skipview.models import registry
from skipview.models.batching import PairBatch, Sentences, iterate_batches
from skipview.models.generative import invertibility_update
from skipview.models.vocab import SPECIALS


def build(topic_corpus, **settings):
    corpus = topic_corpus.train
    return registry.build_objective("gen", {"hidden_size": 8, **settings}, vocab=corpus.vocab,
                                    word_vectors=topic_corpus.word_vectors)


@pytest.mark.parametrize("subsample", [0.0, 0.005])
def test_loss_matches_a_loop_over_target_words(topic_corpus, subsample):
    """The paper's average over target words, and with word2vec's subsampling of frequent targets as weights."""
    objective = build(topic_corpus, negatives=3, target_subsample=subsample)
    corpus = topic_corpus.train
    batch = PairBatch(Sentences.from_arrays([corpus.sentence(i) for i in (0, 1, 2)]),
                      Sentences.from_arrays([corpus.sentence(i) for i in (1, 2, 3)]))
    torch.manual_seed(7)
    loss = objective(batch).loss
    with torch.no_grad():
        s = batch.sentences
        x = objective.f.represent(objective.word_vectors[s.ids], s) @ objective.decoder.T
    torch.manual_seed(7)         # replay the same negative draws: K per real target word, row-major
    negatives = iter(objective.sample_negatives(int(batch.next.lengths.sum()) * 3).view(-1, 3))
    vectors, sigmoid = objective.word_vectors, lambda v: 1 / (1 + math.exp(-v))
    counts = {w: int(c) for w, c in enumerate(corpus.vocab.counts) if vectors[w].any()}
    total = sum(counts.values())
    terms, weights = [], []
    for i in range(batch.num_sentences):
        for j in range(int(batch.next.lengths[i])):
            word, drawn = int(batch.next.ids[i, j]), next(negatives)
            if not vectors[word].any():
                continue         # a word without a vector is left out of the average
            value = math.log(sigmoid(float(x[i] @ vectors[word])))
            value += sum(math.log(sigmoid(-float(x[i] @ vectors[int(k)]))) for k in drawn)
            weight = min(1.0, math.sqrt(subsample / (counts[word] / total))) if subsample else 1.0
            terms.append(-value * weight)
            weights.append(weight)
    if subsample:
        assert min(weights) < 0.5, "no target word was frequent enough for the subsampling to be tested"
    assert loss.item() == pytest.approx(sum(terms) / sum(weights), rel=1e-5)


def straightforward_loss(objective, batch: PairBatch, negatives: int) -> torch.Tensor:
    """Eq. 1 written plainly: ``nn.GRU`` over the packed embedded batch, x = U z, and each target word's positive
    and K negative scores as elementwise products over the padded (B, T, K) layout, with the objective's draws in
    its order (K per real target word, row-major)."""
    s, t = batch.sentences, batch.next
    vectors = objective.word_vectors
    packed = pack_padded_sequence(vectors[s.ids], s.lengths_cpu, batch_first=True, enforce_sorted=False)
    _, last = objective.f.gru(packed)
    x = torch.cat([last[0], last[1]], dim=-1) @ objective.decoder.T                 # (B, dim)
    mask = t.mask()
    drawn = torch.zeros(*t.ids.shape, negatives, dtype=torch.long)
    drawn[mask] = objective.sample_negatives(int(mask.sum()) * negatives).view(-1, negatives)
    positive = (vectors[t.ids] * x[:, None, :]).sum(-1)                              # (B, T)
    negative = (vectors[drawn] * x[:, None, None, :]).sum(-1)                         # (B, T, K)
    log_likelihood = F.logsigmoid(positive) + F.logsigmoid(-negative).sum(-1)
    weight = objective.target_weight[t.ids] * mask
    return -(log_likelihood * weight).sum() / weight.sum()


@pytest.mark.parametrize("amp", [None, torch.bfloat16])
def test_the_optimised_step_equals_the_straightforward_formulation_in_loss_and_gradients(topic_corpus, amp):
    """The training forward (f over each distinct word once and unrolled, target words flat, the word's own vector
    and its negatives in one gather and one batched product) against ``straightforward_loss``: the same loss and
    the same gradient of every parameter, in float32 to rounding. Under bf16 autocast (the GRU's products in bf16)
    against the float32 reference: the loss within 0.5 %, each gradient within 10 % in norm (the implementation
    before the distinct-word projection and the single gather was 4.3 % off at most on this batch, as is this one:
    bf16's rounding through the recurrence, not the formulation)."""
    negatives = 3
    objective = build(topic_corpus, negatives=negatives)
    batch = next(iterate_batches(topic_corpus.train, objective.example_kind, 24, max_len=30))
    assert len(batch.sentences.ids[batch.sentences.mask()].unique()) < batch.sentences.num_tokens
    results = []
    for forward, dtype in ((lambda: objective(batch).loss, amp),
                           (lambda: straightforward_loss(objective, batch, negatives), None)):
        objective.zero_grad()
        torch.manual_seed(11)
        with torch.autocast("cpu", dtype=dtype or torch.bfloat16, enabled=dtype is not None):
            loss = forward()
        loss.backward()
        results.append([loss.detach(), *(p.grad.clone() for p in objective.parameters())])
    for index, (optimised, reference) in enumerate(zip(*results)):
        if amp is None:
            torch.testing.assert_close(optimised, reference, rtol=1e-5, atol=1e-6)
        else:
            tolerance = 5e-3 if index == 0 else 0.1
            assert torch.linalg.vector_norm(optimised - reference) <= tolerance * torch.linalg.vector_norm(reference)


def test_negative_sampling_frequencies_follow_unigram_to_the_075(topic_corpus):
    objective = build(topic_corpus)
    counts = topic_corpus.train.vocab.counts.astype(np.float64)
    expected = counts ** 0.75
    expected[: len(SPECIALS)] = 0
    expected /= expected.sum()
    torch.manual_seed(3)
    draws = 200_000
    observed = np.bincount(objective.sample_negatives(draws).numpy(), minlength=len(counts))
    assert observed[: len(SPECIALS)].sum() == 0                 # specials are never negatives
    real = expected > 0
    statistic, p_value = chisquare(observed[real], expected[real] * draws)
    assert p_value > 1e-3, statistic
    # and the test has power: plain unigram frequencies are rejected
    unigram = counts[real] / counts[real].sum()
    assert chisquare(observed[real], unigram * draws).pvalue < 1e-6


def test_invertibility_update_drives_u_towards_row_orthonormal():
    torch.manual_seed(0)
    for shape in [(6, 10), (10, 6)]:           # wide (the paper's U: dim x 2h) and tall (footnote case)
        u = torch.randn(*shape, dtype=torch.float64) * 0.5
        small = min(shape)

        def error():
            gram = u @ u.T if shape[0] <= shape[1] else u.T @ u
            return torch.linalg.matrix_norm(gram - torch.eye(small, dtype=torch.float64)).item()
        start = error()
        history = []
        for _ in range(3000):
            invertibility_update(u, beta=0.01)
            history.append(error())
        assert start > 1.0 and history[-1] < 1e-6
        assert history[100] < start


def test_invertibility_runs_after_each_step_and_is_off_in_the_ablation(topic_corpus):
    on, off = build(topic_corpus), build(topic_corpus, invertible=False)
    before_on, before_off = on.invertibility_error().item(), off.decoder.detach().clone()
    for _ in range(50):
        on.after_optimizer_step()
        off.after_optimizer_step()
    assert on.invertibility_error().item() < before_on
    assert torch.equal(off.decoder.detach(), before_off)


def test_g_is_u_transposed(topic_corpus):
    objective = build(topic_corpus)
    encoder = objective.sentence_encoder(topic_corpus.train.tokenizer, topic_corpus.train.vocab)
    assert encoder.view_names == ["f", "g"]
    torch.testing.assert_close(encoder.views["g"].linear.weight, objective.decoder.detach().T)


@pytest.mark.parametrize("hidden_size", [4, 24])      # 2h below and above the word dimension (32 here)
def test_with_invertibility_g_is_the_word_average_up_to_rotation_when_2h_reaches_the_word_dimension(
        topic_corpus, hidden_size):
    """Eq. 2 drives U (dim x 2h) to U U^T = I when 2h >= dim: g = U^T is then an isometric embedding of the word
    average, so every cosine (and, since it commutes with the uncentred top-component removal, every STS score)
    of g equals the plain average's. The paper's 2h = 2048 > 300 is this case: there g cannot learn anything the
    average does not have. With 2h < dim, U^T U = I and g is a learned projection onto 2h directions."""
    objective = build(topic_corpus, hidden_size=hidden_size)
    for _ in range(3000):
        objective.after_optimizer_step()
    sentences = [np.array(topic_corpus.train.sentence(i), dtype=np.int64) for i in range(40)]
    g = objective.sentence_encoder(topic_corpus.train.tokenizer, topic_corpus.train.vocab)
    raw = g.raw_representations(sentences, "unsupervised", ["g"])["g"].double()
    average = torch.stack([objective.word_vectors[torch.from_numpy(s)].mean(0) for s in sentences]).double()
    cos = lambda x: torch.nn.functional.normalize(x, dim=1) @ torch.nn.functional.normalize(x, dim=1).T  # noqa: E731
    distance = (cos(raw) - cos(average)).abs().max().item()
    if 2 * hidden_size >= objective.word_vectors.shape[1]:
        assert distance < 1e-5
    else:
        assert distance > 1e-2, distance


def held_out_loss(loss_of_batch, corpus, repeats=5) -> float:
    torch.manual_seed(99)
    with torch.no_grad():
        values = [loss_of_batch(batch).item() for _ in range(repeats)
                  for batch in iterate_batches(corpus, "pair", 32, seed=1)]
    return float(np.mean(values))


def test_generative_training_beats_the_unigram_baseline_on_held_out_pairs(topic_corpus, train):
    """The unigram baseline predicts the next sentence's words without looking at the sentence: the best single
    vector x fitted with the same loss and the same number of steps. A model that read the sentence (and so its
    topic) must do clearly better on held-out documents."""
    corpus, held_out = topic_corpus.train, topic_corpus.held_out
    torch.manual_seed(0)
    objective = build(topic_corpus, hidden_size=16)
    initial = held_out_loss(lambda b: objective(b).loss, held_out)
    train(objective, corpus, steps=400, batch_size=32, lr=1e-2)
    trained = held_out_loss(lambda b: objective(b).loss, held_out)

    constant = torch.nn.Parameter(torch.zeros(topic_corpus.word_vectors.shape[1]))
    optimiser = torch.optim.Adam([constant], lr=1e-2)
    batches = (batch for epoch in range(100) for batch in iterate_batches(corpus, "pair", 32, epoch=epoch))
    for _, batch in zip(range(400), batches):
        loss = objective.negative_sampling_loss(constant.expand(batch.num_sentences, -1), batch.next)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    baseline = held_out_loss(lambda b: objective.negative_sampling_loss(
        constant.expand(b.num_sentences, -1), b.next), held_out)
    print(f"held-out loss: untrained {initial:.3f} unigram baseline {baseline:.3f} trained {trained:.3f}")
    assert trained < baseline - 0.1
    assert trained < initial
