"""STS14 of the weights a worker is training, on its training device: the learning curve ``loop.py`` logs at each
checkpoint (and at step 0, where the curve starts)."""

from __future__ import annotations

import torch

from skipview.platform.evaluation.suite import sts14_by_view
from skipview.platform.training.objectives import Built


def evaluate_sts14(built: Built, device: torch.device) -> dict[str, float]:
    """``sts14`` of the ensemble (what checkpoints and Tune rank by) and, for a model with several views,
    ``sts14/<view>`` per view, so a multi-view run's learning curve shows which view carries it. STS14 is
    unsupervised, so only that mode's component is fitted."""
    objective = built.objective
    was_training = objective.training
    objective.eval()
    try:
        return sts14_by_view(built.finished_encoder(device, modes=("unsupervised",)), built.settings.senteval_dir)
    finally:
        objective.train(was_training)
