"""STS aggregations against hand-computed values, and the STS14 objective end to end on real data."""

from __future__ import annotations

import numpy as np
import pytest

from skipview.platform.evaluation import run_tasks, sts14
from skipview.platform.evaluation.baselines import AverageEncoder, WordVectors
from skipview.platform.evaluation.encoding import cosine
from skipview.platform.evaluation.sts import correlation_metrics


def test_aggregates_match_hand_computed_values():
    # subset a: pred == gold, r = 1.  subset b: pred = [1,2,3,4] vs gold [1,3,2,4]: r = 0.8, rho = 0.8.
    subsets = {"a": (np.array([1.0, 2.0]), np.array([1.0, 2.0])),
               "b": (np.array([1.0, 2.0, 3.0, 4.0]), np.array([1.0, 3.0, 2.0, 4.0]))}
    m = correlation_metrics("t", subsets)
    assert m["t.a.pearson"] == pytest.approx(100.0)
    assert m["t.b.pearson"] == pytest.approx(80.0)
    assert m["t.b.spearman"] == pytest.approx(80.0)
    assert m["t.pearson.mean"] == pytest.approx(90.0)
    assert m["t.pearson.wmean"] == pytest.approx((2 * 100 + 4 * 80) / 6)
    # pooled: pred [1,2,1,2,3,4], gold [1,2,1,3,2,4]; Pearson by hand
    p, g = np.array([1, 2, 1, 2, 3, 4.0]), np.array([1, 2, 1, 3, 2, 4.0])
    pc, gc = p - p.mean(), g - g.mean()
    assert m["t.pearson.all"] == pytest.approx(100 * (pc @ gc) / np.sqrt((pc @ pc) * (gc @ gc)))
    assert m["t.a.n"] == 2 and m["t.b.n"] == 4


def test_constant_prediction_is_an_error_not_nan():
    with pytest.raises(ValueError, match="t/a"):
        correlation_metrics("t", {"a": (np.ones(3), np.array([1.0, 2.0, 3.0]))})


def test_cosine_of_zero_vector_is_zero():
    u = np.array([[1.0, 0.0], [0.0, 0.0]])
    v = np.array([[1.0, 1.0], [1.0, 0.0]])
    np.testing.assert_allclose(cosine(u, v), [1 / np.sqrt(2), 0.0])


def test_baseline_tokenises_every_dialect_alike(tiny_wordvecs):
    enc = AverageEncoder(WordVectors.load(tiny_wordvecs))
    moses, ptb, raw = enc.encode(["the cat don 't", "the cat do n't", "The cat don't"])
    np.testing.assert_allclose(moses, ptb)
    np.testing.assert_allclose(moses, raw)
    np.testing.assert_allclose(moses, np.mean([[1, 1, 0], [1, 0, 0], [0, 0, 1], [0, 0, -1]], axis=0))


def test_wr_removes_the_top_component(tiny_wordvecs):
    sentences = ["the cat sat", "the dog ran", "the cat ran", "a dog"]
    words = WordVectors.load(tiny_wordvecs)
    avg = AverageEncoder(words).encode(sentences)
    wr = AverageEncoder(words, "wr", component_fit="task").encode(sentences)
    u = np.linalg.svd(avg.astype(np.float64))[2][0]
    np.testing.assert_allclose(wr, avg - np.outer(avg @ u, u), atol=1e-6)
    np.testing.assert_allclose(wr @ u, 0.0, atol=1e-6)


def test_sif_weights_words_by_a_over_a_plus_frequency_then_removes_the_component(tiny_wordvecs):
    words = WordVectors.load(tiny_wordvecs)
    sentences = ["the cat sat", "the dog ran", "the cat ran", "a dog"]
    # counts: specials 0, every word 10 (tiny_wordvecs); make 'the' frequent so its weight drops
    words.vocab.counts[words.vocab.index["the"]] = 1000
    p = words.vocab.counts / words.vocab.counts.sum()
    a = 0.01
    weighted = np.array([np.mean([a / (a + p[words.vocab.index[w]]) * words.vectors[words.vocab.index[w]]
                                  for w in s.split() if w in words.vocab.index], axis=0) for s in sentences])
    u = np.linalg.svd(weighted)[2][0]
    sif = AverageEncoder(words, "sif", component_fit="task", a=a).encode(sentences)
    np.testing.assert_allclose(sif, weighted - np.outer(weighted @ u, u), atol=1e-6)
    assert words.sif_weights(a)[words.vocab.index["the"]] < 0.1 < words.sif_weights(a)[words.vocab.index["cat"]]


def _usif_words() -> WordVectors:
    from skipview.models.text import Tokenizer
    from skipview.models.vocab import SPECIALS, Vocab

    # |V| = 4 words with counts 6, 2, 1, 1 (p = .6, .2, .1, .1); specials have no count and no vector
    vocab = Vocab(list(SPECIALS) + ["the", "cat", "dog", "sat"], [0] * len(SPECIALS) + [6, 2, 1, 1])
    vectors = np.zeros((len(vocab), 3), dtype=np.float32)
    vectors[len(SPECIALS):] = [[2, 0, 0], [0, 3, 0], [0, 0, 1], [0, 4, 3]]
    return WordVectors(vocab, vectors, Tokenizer())


def test_usif_weights_match_the_paper_by_hand():
    # n = 2: threshold 1 - (3/4)^2 = 0.4375, so alpha = 1/4 (only 'the'); Z = |V| / 2 = 2;
    # a = (1 - 1/4) / (1/4 * 2) = 1.5; weight = a / (a/2 + p) = 1.5 / (0.75 + p)
    weights = _usif_words().usif_weights(n=2)[-4:]
    np.testing.assert_allclose(weights, [1.5 / 1.35, 1.5 / 0.95, 1.5 / 0.85, 1.5 / 0.85], rtol=1e-6)
    with pytest.raises(ValueError, match="no word .* smaller n"):
        _usif_words().usif_weights(n=4)            # threshold 0.68, above every p(w): alpha = 0
    with pytest.raises(ValueError, match="every word .* larger n"):
        _usif_words().usif_weights(n=0.1)          # threshold 0.03, below every p(w): alpha = 1, a = 0


def test_usif_averages_unit_vectors_then_removes_components_by_their_share():
    words = _usif_words()
    w = dict(zip(["the", "cat", "dog", "sat"], [1.5 / 1.35, 1.5 / 0.95, 1.5 / 0.85, 1.5 / 0.85]))
    unit = {"the": [1, 0, 0], "cat": [0, 1, 0], "dog": [0, 0, 1], "sat": [0, 0.8, 0.6]}
    sentences = ["the cat", "the dog sat", "cat sat", "dog"]
    averaged = np.array([np.mean([w[t] * np.array(unit[t]) for t in s.split()], axis=0) for s in sentences])
    _, s, vt = np.linalg.svd(averaged)              # m = 5 > rank 3: every component, each scaled by its share
    share = s ** 2 / (s ** 2).sum()
    expected = averaged - sum(share[i] * np.outer(averaged @ vt[i], vt[i]) for i in range(3))
    encoder = AverageEncoder(words, "usif", component_fit="task", n=2)
    np.testing.assert_allclose(encoder.encode(sentences), expected, atol=1e-5)
    # the released code's variant normalises each dimension over the sentence's words instead of each vector
    raw = {"the": [2, 0, 0], "cat": [0, 3, 0], "dog": [0, 0, 1], "sat": [0, 4, 3]}
    rows = np.array([raw[t] for t in ("the", "dog", "sat")], dtype=float)
    rows = rows / np.linalg.norm(rows, axis=0)
    by_dimension = AverageEncoder(words, "usif", component_fit="task", n=2, normalise="dimension")
    np.testing.assert_allclose(by_dimension._average(["the dog sat"])[0],
                               np.mean(rows * np.array([w["the"], w["dog"], w["sat"]])[:, None], axis=0), atol=1e-6)


def test_component_fit_corpus_uses_the_fitted_component_and_refuses_without_one(tiny_wordvecs):
    words = WordVectors.load(tiny_wordvecs)
    encoder = AverageEncoder(words, "wr", component_fit="corpus")
    with pytest.raises(ValueError, match="fit_component"):
        encoder.encode(["the cat"])
    encoder.fit_component(["do n't", "do"])        # the component of these sentences is the 3rd axis
    np.testing.assert_allclose(encoder.encode(["the cat", "do"]), [[1.0, 0.5, 0.0], [0.0, 0.0, 0.0]], atol=1e-6)


class _Recording:
    """Fits 'a component' per call by centring on the call's mean: a result depends on what a call holds."""

    def __init__(self, component_fit):
        self.component_fit, self.calls = component_fit, []

    def encode(self, sentences, mode="unsupervised"):
        self.calls.append(len(sentences))
        x = np.array([[1.0, len(s.split()), s.count("a")] for s in sentences])
        return x - x.mean(axis=0)


@pytest.mark.parametrize("component_fit, calls", [("task", 1), ("subset", 6), ("corpus", 1)])
def test_sts_is_encoded_per_subset_only_for_encoders_that_fit_per_subset(real_senteval, component_fit, calls):
    encoder = _Recording(component_fit)
    m = run_tasks(encoder, ["sts14"], real_senteval)
    assert len(encoder.calls) == calls
    if component_fit == "subset":    # each call holds one subset's distinct sentences, not the whole task
        assert max(encoder.calls) < 1600 and m["sts14.pearson.mean"] != run_tasks(_Recording("task"), ["sts14"],
                                                                                   real_senteval)["sts14.pearson.mean"]


def test_the_released_evaluations_fits_see_each_subsets_sentences_with_their_repeats(real_senteval):
    """uSIF's released evaluation fits on a subset's A and B sentences stacked, Arora et al.'s on each side alone,
    both with repeats; ``subset`` on the subset's distinct sentences. STS13's OnWN repeats sentences (1,122 read,
    854 distinct), so the three calls differ there and the scores with them."""
    from skipview.platform.evaluation.datasets import load_task

    splits = load_task("sts13", real_senteval).splits
    seen = {}
    for fit in ("subset", "subset-stacked", "subset-sides"):
        encoder = _Recording(fit)
        seen[fit] = run_tasks(encoder, ["sts13"], real_senteval)["sts13.OnWN.pearson"], encoder.calls
    assert seen["subset"][1] == [len(set(s.a + s.b)) for s in splits.values()]
    assert seen["subset-stacked"][1] == [2 * len(s.a) for s in splits.values()]
    assert seen["subset-sides"][1] == [n for s in splits.values() for n in (len(s.a), len(s.b))]
    assert len(set(splits["OnWN"].a + splits["OnWN"].b)) < 2 * len(splits["OnWN"].a)
    assert len({round(score, 6) for score, _ in seen.values()}) == 3


def test_sts14_objective_on_real_data(real_senteval):
    class ByLength:
        """Sentence length as a 2-d vector: weakly informative, deterministic."""

        def encode(self, sentences, mode="unsupervised"):
            return np.array([[1.0, len(s.split())] for s in sentences])

    value = sts14(ByLength(), real_senteval)
    m = run_tasks(ByLength(), ["sts14"], real_senteval)
    subsets = ["deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news"]
    assert [m[f"sts14.{s}.n"] for s in subsets] == [450, 300, 750, 750, 750, 750]
    assert value == pytest.approx(np.mean([m[f"sts14.{s}.pearson"] for s in subsets]))
