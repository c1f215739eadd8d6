"""Top principal component: estimated by power iteration inside a training step, fitted exactly for test time.

Both follow Arora et al. (2017) and the multi-view paper (appendix 2): the component is the top eigenvector of
the *uncentred* second-moment matrix ``C = Z^T Z`` of a set of representations (rows of Z), and it is removed by
``z <- z - (z . u) u``.
"""

from __future__ import annotations

import numpy as np
import torch


def power_iteration(z: torch.Tensor, iterations: int = 5) -> torch.Tensor:
    """Estimate the top principal direction u (unit, length D) of the rows of z (N, D) with ``iterations`` steps.

    Paper appendix 2: u <- C u / ||C u|| with C = Z^T Z (D x D). When N < D it works on the N x N Gram matrix
    G = Z Z^T instead (v <- G v / ||G v||, then u = Z^T v / ||Z^T v||), which gives the same direction from a
    cheaper product. Both start from the batch mean direction (v = 1 / sqrt(N) in the Gram form is exactly
    u = mean(z)): deterministic, and for uncentred representations it is already close to the top component.
    """
    n, d = z.shape
    eps = torch.finfo(z.dtype).tiny
    if n < d:
        gram = z @ z.T
        v = torch.full((n,), n ** -0.5, dtype=z.dtype, device=z.device)
        for _ in range(iterations):
            v = gram @ v
            v = v / v.norm().clamp_min(eps)
        u = z.T @ v
    else:
        cov = z.T @ z
        u = z.mean(0)
        for _ in range(iterations):
            u = u / u.norm().clamp_min(eps)
            u = cov @ u
    return u / u.norm().clamp_min(eps)


def remove_component(z: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Project every row of z off the unit direction u."""
    return z - (z @ u)[:, None] * u[None, :]


def shared_components(z: torch.Tensor, m: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The first ``m`` right singular vectors (rows) of the uncentred z, and each one's share of their squared
    singular values: Ethayarajh (2018)'s piecewise common component removal scales each projection by that share
    (``lambda_i = s_i^2 / sum_j s_j^2``), where Arora et al. (2017) remove one component whole."""
    _, s, vt = torch.linalg.svd(z.to(torch.float64), full_matrices=False)
    squared = s[:m] ** 2
    total = squared.sum()
    shares = squared / total if total > 0 else torch.zeros_like(squared)
    return vt[:m].to(z.dtype), shares.to(z.dtype)


def remove_components(z: torch.Tensor, components: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """z - sum_i scale_i (z . u_i) u_i for the component rows u_i."""
    return z - ((z @ components.T) * scales) @ components


class SecondMoment:
    """Streaming accumulator of Z^T Z (float64) so a component can be fitted on any number of sentences in O(D^2)."""

    def __init__(self) -> None:
        self.matrix: torch.Tensor | None = None
        self.count = 0

    def add(self, z: torch.Tensor) -> None:
        z = z.detach().to(torch.float64).cpu()
        self.matrix = z.T @ z if self.matrix is None else self.matrix + z.T @ z
        self.count += z.shape[0]

    def top_component(self) -> torch.Tensor:
        """Exact top eigenvector (float32, unit). ARPACK (scipy ``eigsh``) finds one eigenpair of a D x D matrix
        in a fraction of the time a full ``eigh`` takes at D = 8192 (supervised f features)."""
        if self.matrix is None or self.count == 0:
            raise ValueError("cannot fit a principal component on zero sentences")
        matrix = self.matrix.numpy()
        if matrix.shape[0] <= 2:
            vector = np.linalg.eigh(matrix)[1][:, -1]
        else:
            # imported here: every Ray Train worker and controller imports this module through the training loop,
            # and only the process that fits the component needs SciPy's sparse linear algebra (0.2-0.5 CPU s)
            from scipy.sparse.linalg import eigsh

            vector = eigsh(matrix, k=1, which="LA", v0=np.ones(matrix.shape[0]))[1][:, 0]
        return torch.from_numpy(vector / np.linalg.norm(vector)).to(torch.float32)
