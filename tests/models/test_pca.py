"""Top principal component: power iteration (training) and the streamed exact fit (test) against SVD."""

import pytest
import torch

from skipview.models.pca import SecondMoment, power_iteration, remove_component


def spiked(n, d, seed=0, strength=6.0):
    """Rows with one dominant direction (as real sentence vectors have: a large common component)."""
    generator = torch.Generator().manual_seed(seed)
    direction = torch.nn.functional.normalize(torch.randn(d, generator=generator, dtype=torch.float64), dim=0)
    scale = strength * torch.randn(n, 1, generator=generator, dtype=torch.float64).abs()
    return torch.randn(n, d, generator=generator, dtype=torch.float64) + scale * direction


def top_right_singular_vector(z):
    return torch.linalg.svd(z, full_matrices=False).Vh[0]


@pytest.mark.parametrize("n, d", [(16, 40), (60, 12)])       # Gram path (N < D) and covariance path
def test_power_iteration_finds_the_svd_top_component(n, d):
    spike = spiked(n, d)
    assert abs(float(power_iteration(spike, 5) @ top_right_singular_vector(spike))) > 0.999   # T = 5 (paper)
    noise = torch.randn(n, d, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    converged = power_iteration(noise, 3000)                    # no spike: only converges with many steps
    assert converged.norm().item() == pytest.approx(1.0)
    assert abs(float(converged @ top_right_singular_vector(noise))) > 1 - 1e-6


def test_gram_and_covariance_paths_agree():
    z = spiked(30, 20)                                          # N >= D: covariance path
    wide = torch.cat([z, torch.zeros(30, 20, dtype=z.dtype)], dim=1)   # N < D: Gram path, same spectrum
    from_gram = power_iteration(wide, 50)
    assert torch.allclose(from_gram[20:], torch.zeros(20, dtype=z.dtype))
    assert abs(float(from_gram[:20] @ power_iteration(z, 50))) > 1 - 1e-9


def test_remove_component_projects_rows_off_the_direction():
    z = spiked(10, 6)
    u = top_right_singular_vector(z)
    removed = remove_component(z, u)
    assert torch.allclose(removed @ u, torch.zeros(10, dtype=z.dtype), atol=1e-12)
    assert torch.allclose(z - removed, (z @ u)[:, None] * u[None, :])


def test_streamed_second_moment_gives_the_exact_top_component():
    z = spiked(500, 20).float()
    moment = SecondMoment()
    for chunk in z.split(64):
        moment.add(chunk)
    assert moment.count == 500
    assert abs(float(moment.top_component() @ top_right_singular_vector(z.double()).float())) > 1 - 1e-5
    with pytest.raises(ValueError, match="zero sentences"):
        SecondMoment().top_component()
