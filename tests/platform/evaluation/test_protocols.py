"""Protocols: no test-fold leakage (random labels stay at chance), a planted signal is found, and the Tai et al.
soft-label encoding round-trips."""

from __future__ import annotations

import numpy as np
import pytest

from skipview.platform.evaluation.protocols import (Features, dev_selection, kfold_then_refit, nested_cv,
                                                    relatedness_regression, score_classes, soft_labels)


def test_random_labels_stay_at_chance_under_nested_cv():
    # Many noise features and few rows: a model that saw its test fold (when fitting or when choosing C)
    # would score far above 50%. Averaged over 3 draws, honest nested CV stays within noise of chance.
    rng = np.random.default_rng(0)
    accs = []
    for _ in range(3):
        x = rng.standard_normal((200, 100)).astype(np.float32)
        y = rng.integers(0, 2, 200)
        accs.append(nested_cv(Features.of(x, y, 2, "cpu"), kfold=5, seed=1111)["acc"])
    assert abs(np.mean(accs) - 50) < 6, accs


def test_planted_signal_is_found_by_every_classification_protocol():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((400, 20)).astype(np.float32)
    y = (x[:, 0] + 0.3 * rng.standard_normal(400) > 0).astype(int)
    assert nested_cv(Features.of(x, y, 2, "cpu"), kfold=5, seed=1111)["acc"] > 85
    train, dev, test = (Features.of(x[s], y[s], 2, "cpu") for s in (slice(0, 300), slice(300, 350), slice(350, 400)))
    metrics, predictions = kfold_then_refit(train, test, kfold=5, seed=1111)
    assert metrics["acc"] > 85 and predictions.shape == (50,)
    assert dev_selection(train, dev, test)["acc"] > 85


@pytest.mark.parametrize("scores", [np.array([1.0, 1.3, 2.5, 4.99, 5.0, 3.0]), np.array([0.0, 0.2, 4.6, 5.0])])
def test_soft_labels_round_trip(scores):
    classes = score_classes(scores)
    p = soft_labels(scores, classes)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    np.testing.assert_allclose(p @ classes, scores)      # expectation is the score
    assert (p > 0).sum(axis=1).max() <= 2                # mass on floor(y) and floor(y) + 1 only
    # SICK's 3.2 over classes 1..5: 0.8 on class 3, 0.2 on class 4
    np.testing.assert_allclose(soft_labels(np.array([3.2]), np.arange(1, 6)), [[0, 0, 0.8, 0.2, 0]])


def test_relatedness_regression_learns_a_linear_score():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((900, 10)).astype(np.float32)
    y = np.clip(3 + x[:, 0] + 0.5 * x[:, 1], 1, 5)
    m = relatedness_regression(x[:600], y[:600], x[600:750], y[600:750], x[750:], y[750:], "cpu", seed=0)
    assert m["pearson"] > 90 and m["mse"] < 0.2
