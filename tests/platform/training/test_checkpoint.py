"""Checkpoint round trip: model, optimiser, schedule, progress, run id and RNG streams come back exactly."""

import random

import numpy as np
import torch

from skipview.platform.training import checkpoint as ckpt


def make():
    model = torch.nn.Linear(4, 3)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0 / (s + 1))
    return model, optimizer, scheduler


def train_steps(model, optimizer, scheduler, n):
    for _ in range(n):
        loss = model(torch.randn(5, 4)).pow(2).mean() + torch.rand(()) + float(np.random.rand()) * 0
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()


def test_restored_training_continues_bit_identically(tmp_path):
    torch.manual_seed(0)
    model, optimizer, scheduler = make()
    train_steps(model, optimizer, scheduler, 3)
    progress = ckpt.Progress(step=3, epoch=1, batch=2, best_sts14=41.5)
    ckpt.write(tmp_path, rank=0, progress=progress, model=model, optimizer=optimizer, scheduler=scheduler,
               scaler=None, mlflow_run_id="abc")
    expected_python, expected_numpy = random.random(), np.random.rand()
    train_steps(model, optimizer, scheduler, 2)
    expected = {k: v.clone() for k, v in model.state_dict().items()}

    torch.manual_seed(123)      # a fresh process with other weights and another RNG state
    random.seed(5)
    model2, optimizer2, scheduler2 = make()
    restored, run_id, had_rng = ckpt.read(tmp_path, rank=0, model=model2, optimizer=optimizer2,
                                          scheduler=scheduler2, scaler=None, map_location=torch.device("cpu"))
    assert (restored, run_id, had_rng) == (progress, "abc", True)
    assert (random.random(), np.random.rand()) == (expected_python, expected_numpy)
    train_steps(model2, optimizer2, scheduler2, 2)
    for key, value in model2.state_dict().items():
        assert torch.equal(value, expected[key]), key
    assert scheduler2.last_epoch == 5


def test_other_ranks_only_write_their_rng(tmp_path):
    model, optimizer, scheduler = make()
    ckpt.write(tmp_path, rank=1, progress=ckpt.Progress(), model=model, optimizer=optimizer, scheduler=scheduler,
               scaler=None, mlflow_run_id=None)
    assert sorted(p.name for p in tmp_path.iterdir()) == [ckpt.rng_file(1)]
