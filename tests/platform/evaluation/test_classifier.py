"""The batched, preconditioned, warm-started logistic regression solves scikit-learn's problem: same optimum
(objective value), same coefficients and predictions, for every (training mask, C) in one batch."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.special import log_softmax
from sklearn.linear_model import LogisticRegression

from skipview.platform.evaluation.classifier import C_GRID, Preconditioner, accuracy, fit_logistic


def _problem(n_classes: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    n, d = 300, 40
    # correlated, off-centre features: the case the preconditioner and the intercept shift must handle
    x = rng.standard_normal((n, d)) @ (np.eye(d) + 0.3 * rng.standard_normal((d, d))) * 0.5 + 1.0
    score = x @ rng.standard_normal(d) + rng.standard_normal(n) * 4
    y = np.searchsorted(np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]), score)  # balanced classes
    masks = rng.random((len(C_GRID), n)) < 0.8
    return x, y, masks


def _objective(coef: np.ndarray, intercept: np.ndarray, x, y, c: float) -> float:
    """scikit-learn's objective, C * sum(log-loss) + ||W||^2 / 2, written out (binary: one logit vs zero)."""
    z = x @ coef + intercept
    if z.shape[1] == 1:
        z = np.c_[np.zeros(len(z)), z]
    return float(-c * log_softmax(z, axis=1)[np.arange(len(y)), y].sum() + 0.5 * (coef ** 2).sum())


@pytest.mark.parametrize("n_classes", [2, 4])
def test_same_optimum_as_scikit_learn_for_every_mask_and_c(n_classes):
    x, y, masks = _problem(n_classes)
    models = fit_logistic(torch.tensor(x), torch.tensor(y), torch.tensor(masks), torch.tensor(C_GRID), n_classes,
                          max_iter=500, tolerance=1e-8)
    for p, c in enumerate(C_GRID):
        xs, ys = x[masks[p]], y[masks[p]]
        ref = LogisticRegression(C=c, tol=1e-8, max_iter=10_000).fit(xs, ys)
        ours = _objective(models.weight[p].numpy(), models.bias[p].numpy(), xs, ys, c)
        theirs = _objective(ref.coef_.T, ref.intercept_, xs, ys, c)
        assert ours == pytest.approx(theirs, rel=1e-6)
        np.testing.assert_allclose(models.weight[p].numpy(), ref.coef_.T, atol=1e-2 * np.abs(ref.coef_).max())
        assert (models.predict(torch.tensor(x))[p].numpy() == ref.predict(x)).mean() >= 0.99


def test_default_tolerance_in_float32_gives_scikit_learn_accuracy():
    x, y, masks = _problem(2, seed=1)
    xt = torch.tensor(x, dtype=torch.float32)
    models = fit_logistic(xt, torch.tensor(y), torch.tensor(masks), torch.tensor(C_GRID, dtype=torch.float32), 2)
    ours = accuracy(models, xt, torch.tensor(y), torch.tensor(~masks))
    for p, c in enumerate(C_GRID):
        ref = LogisticRegression(C=c).fit(x[masks[p]], y[masks[p]])
        assert ours[p] == pytest.approx(ref.score(x[~masks[p]], y[~masks[p]]), abs=0.02)


def test_warm_start_reaches_the_same_optimum():
    x, y, masks = _problem(2, seed=2)
    xt, yt, cs = torch.tensor(x), torch.tensor(y), torch.tensor(C_GRID)
    pre = Preconditioner.fit(xt, rank=8)
    full = fit_logistic(xt, yt, torch.ones_like(torch.tensor(masks)), cs, 2, preconditioner=pre)
    cold = fit_logistic(xt, yt, torch.tensor(masks), cs, 2, preconditioner=pre, max_iter=500, tolerance=1e-8)
    warm = fit_logistic(xt, yt, torch.tensor(masks), cs, 2, preconditioner=pre, init=full, max_iter=500,
                        tolerance=1e-8)
    for p, c in enumerate(C_GRID):
        xs, ys = x[masks[p]], y[masks[p]]
        assert _objective(warm.weight[p].numpy(), warm.bias[p].numpy(), xs, ys, c) == pytest.approx(
            _objective(cold.weight[p].numpy(), cold.bias[p].numpy(), xs, ys, c), rel=1e-6)
