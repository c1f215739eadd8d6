"""L2-regularised logistic regression solved for many problems at once.

SentEval's protocols fit hundreds of small logistic regressions (10 outer x 10 inner folds x 6 regularisation
values for MR/CR/SUBJ/MPQA). One by one with scikit-learn that takes tens of minutes on 2048-d features. Here
every problem (a training-row mask and a C) shares the feature matrix, so all logits are ONE matrix product
``X @ [W_1 ... W_P]`` and the P problems are solved together by L-BFGS on the sum of their objectives. The
objectives are independent (block-separable), so the joint minimum is each problem's own minimum; each term
is divided by ``C_p * n_p`` so all problems have the same scale and one line search suits them all.

Objective of problem p, identical to scikit-learn's ``LogisticRegression(C=C_p)`` (lbfgs; multinomial for
more than two classes, one logit for two; intercept not penalised), divided by ``C_p * n_p``:
``mean_{i in train_p} CE(x_i W_p + b_p, y_i) + ||W_p||^2 / (2 C_p n_p)``.
Two things make it fast enough for a tuning loop: a preconditioning change of variables (``Preconditioner``)
and warm starts (``init``).
PyTorch is used because it gives batched GEMMs, autograd and L-BFGS on CPU, and the same code runs on a GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

# SentEval's regularisation grid for scikit-learn's LogisticRegression (tools/validation.py): C = 2^-2 .. 2^3.
C_GRID = tuple(2.0 ** t for t in range(-2, 4))


@dataclass
class LogisticModels:
    """P fitted models: weights (P, d, k) and intercepts (P, k); k = 1 for two classes (one logit)."""

    weight: torch.Tensor
    bias: torch.Tensor

    def scores(self, x: torch.Tensor) -> torch.Tensor:
        """Logits of every model on every row: (P, n, classes); the binary case gets a zero logit for class 0."""
        p, d, k = self.weight.shape
        z = (x @ self.weight.permute(1, 0, 2).reshape(d, p * k)).reshape(len(x), p, k).transpose(0, 1)
        z = z + self.bias[:, None, :]
        return torch.cat([torch.zeros_like(z), z], dim=2) if k == 1 else z

    def predict(self, x: torch.Tensor) -> torch.Tensor:
        return self.scores(x).argmax(dim=2)


@dataclass
class Preconditioner:
    """An exact change of variables ``W = a0 * v + V ((a - a0) * (V^T v))`` that makes each problem's Hessian
    close to the identity, so L-BFGS needs tens of iterations instead of hundreds.

    ``V`` (d, r) holds the top-r eigenvectors of the feature covariance (eigenvalues ``s``), the other d - r
    directions share their mean eigenvalue ``s0``; ``a = (s/4 + 2 lambda_p)^(-1/2)`` (1/4 is the logistic
    curvature at the start; 2 lambda_p the penalty's). A full eigendecomposition of a 4096-d covariance costs
    more than the fit, a randomized rank-r one (``torch.svd_lowrank``) captures the directions that make the
    problem ill-conditioned.
    """

    mean: torch.Tensor       # (d,) the intercept absorbs the centring exactly (it is not penalised)
    basis: torch.Tensor      # (d, r)
    top: torch.Tensor        # (r,) eigenvalues
    rest: torch.Tensor       # () mean of the remaining eigenvalues

    @classmethod
    def fit(cls, x: torch.Tensor, rank: int = 64) -> "Preconditioner":
        n, d = x.shape
        mean = x.mean(dim=0)
        centred = x - mean
        rank = min(rank, d - 1, n - 1)
        generator_state = torch.random.get_rng_state()
        torch.manual_seed(0)  # svd_lowrank is randomized: the same data always gives the same fit
        _, singular, basis = torch.svd_lowrank(centred, q=rank, niter=2)
        torch.random.set_rng_state(generator_state)
        top = singular.pow(2) / n
        rest = ((centred.pow(2).sum() / n - top.sum()) / max(d - rank, 1)).clamp(min=0)
        return cls(mean, basis, top, rest)

    def scales(self, penalty: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(P, r) and (P, 1) scale factors for the top and the remaining directions."""
        top = (self.top[None, :] / 4 + 2 * penalty[:, None]).rsqrt()
        rest = (self.rest / 4 + 2 * penalty[:, None]).rsqrt()
        return top, rest

    def weight(self, v: torch.Tensor, penalty: torch.Tensor, inverse: bool = False) -> torch.Tensor:
        """W from v (P, d, k); ``inverse`` maps W back to v."""
        top, rest = self.scales(penalty)
        if inverse:
            top, rest = 1 / top, 1 / rest
        projected = torch.einsum("dr,pdk->prk", self.basis, v)
        return rest[:, :, None] * v + torch.einsum("dr,prk->pdk", self.basis, (top - rest)[:, :, None] * projected)


def fit_logistic(x: torch.Tensor, y: torch.Tensor, train_masks: torch.Tensor, cs: torch.Tensor, n_classes: int,
                 preconditioner: Preconditioner | None = None, init: LogisticModels | None = None,
                 max_iter: int = 100, tolerance: float = 1e-4) -> LogisticModels:
    """Fit P = len(cs) logistic regressions; problem p trains on the rows where ``train_masks[p]`` is True.

    ``x`` (n, d) float, ``y`` (n,) class ids in [0, n_classes), ``train_masks`` (P, n) bool, ``cs`` (P,).
    ``init`` warm-starts from other models (e.g. the outer-fold solution for the inner folds of nested CV);
    pass one ``preconditioner`` (``Preconditioner.fit(x)``) to every call on the same features to fit it once.
    Stops when the largest gradient entry (preconditioned coordinates) is below ``tolerance`` or after
    ``max_iter`` L-BFGS iterations, scikit-learn's defaults, which SentEval used.
    """
    if n_classes < 2:
        raise ValueError(f"logistic regression needs at least 2 classes, got {n_classes}")
    n, d = x.shape
    p = len(cs)
    k = 1 if n_classes == 2 else n_classes
    weights = train_masks.to(x.dtype)
    n_train = weights.sum(dim=1)
    if (n_train == 0).any():
        raise ValueError("a problem has no training rows")
    row_weight = weights / n_train[:, None]                     # (P, n): mean over each problem's rows
    penalty = 1.0 / (2.0 * cs.to(x.dtype) * n_train)            # (P,)
    pre = preconditioner or Preconditioner.fit(x)
    centred = x - pre.mean

    if init is None:
        v = torch.zeros(p, d, k, dtype=x.dtype, device=x.device)
        bias = torch.zeros(p, k, dtype=x.dtype, device=x.device)
    else:
        v = pre.weight(init.weight, penalty, inverse=True)
        bias = init.bias + torch.einsum("j,pjk->pk", pre.mean, init.weight)
    v.requires_grad_(True)
    bias.requires_grad_(True)
    optimiser = torch.optim.LBFGS([v, bias], lr=1.0, max_iter=max_iter, history_size=10,
                                  tolerance_grad=tolerance, tolerance_change=1e-12, line_search_fn="strong_wolfe")
    y_onehot = F.one_hot(y, n_classes).to(x.dtype)              # (n, classes)
    y_float = y.to(x.dtype)

    def negative_log_likelihood(weight: torch.Tensor) -> torch.Tensor:  # (P, n)
        if k == 1:  # binary: -log sigmoid(+-z) without materialising the zero logit (a third of the time)
            z = (centred @ weight[:, :, 0].T).T + bias
            return F.softplus(z) - y_float * z
        log_probs = torch.log_softmax(LogisticModels(weight, bias).scores(centred), dim=2)  # (P, n, classes)
        return -(log_probs * y_onehot).sum(dim=2)

    def closure() -> torch.Tensor:
        optimiser.zero_grad()
        weight = pre.weight(v, penalty)
        nll = negative_log_likelihood(weight)
        loss = (row_weight * nll).sum() + (penalty * weight.pow(2).sum(dim=(1, 2))).sum()
        loss.backward()
        return loss

    optimiser.step(closure)
    with torch.no_grad():
        weight = pre.weight(v, penalty)
        return LogisticModels(weight, bias - torch.einsum("j,pjk->pk", pre.mean, weight))


def accuracy(models: LogisticModels, x: torch.Tensor, y: torch.Tensor, eval_masks: torch.Tensor) -> np.ndarray:
    """Accuracy of model p on the rows of ``eval_masks[p]`` (P,)."""
    correct = (models.predict(x) == y[None, :]) & eval_masks
    return (correct.sum(dim=1).double() / eval_masks.sum(dim=1).double()).cpu().numpy()
