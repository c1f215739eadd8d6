"""Image-sentence ranking: metrics against hand-worked ranks; training recovers a planted alignment."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from skipview.platform.evaluation.ranking import RankingSplit, ranking_metrics, train_ranking


def test_metrics_on_hand_worked_ranks():
    images = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    # captions: 0 and 1 belong to image 0, 2 to image 1. Caption 1 points at image 1 (wrong).
    captions = torch.tensor([[1.0, 0.1], [0.1, 1.0], [0.0, 1.0]])
    m = ranking_metrics(images, captions, np.array([0, 0, 1]))
    # annotation: image 0 ranks caption 0 first -> rank 1; image 1 ranks caption 2 first -> rank 1
    assert m["annotation.r@1"] == 100.0 and m["annotation.median_rank"] == 1.0
    # search: captions 0 and 2 find their image first; caption 1 ranks image 0 second
    assert m["search.r@1"] == pytest.approx(200 / 3) and m["search.r@5"] == 100.0
    assert m["search.median_rank"] == 1.0


def _synthetic(rng, n_images, latent, proj_img, proj_sen):
    z = rng.standard_normal((n_images, latent))
    owner = np.repeat(np.arange(n_images), 5)
    images = z @ proj_img + 0.1 * rng.standard_normal((n_images, proj_img.shape[1]))
    captions = z[owner] @ proj_sen + 0.3 * rng.standard_normal((len(owner), proj_sen.shape[1]))
    return RankingSplit(images, captions, owner)


def test_training_recovers_a_planted_alignment():
    rng = np.random.default_rng(0)
    proj_img, proj_sen = rng.standard_normal((8, 30)), rng.standard_normal((8, 20))
    train, dev, test = (_synthetic(rng, n, 8, proj_img, proj_sen) for n in (400, 100, 100))
    m = train_ranking(train, dev, test, dim=16, contrastive=20, epochs=15, lr=1e-2)
    # chance on 100 images / 500 captions: R@10 = 10% (search) and about 10% (annotation)
    assert m["test.search.r@10"] > 80 and m["test.annotation.r@10"] > 80
    assert m["test.search.median_rank"] <= 2
