"""Checkpoint round trip: model, optimiser, schedule, progress, run id and RNG streams come back exactly."""

import random
from pathlib import Path

import numpy as np
import pytest
import torch

from skipview.platform.errors import CorruptCheckpoint
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


def write_checkpoint(directory, step):
    model, optimizer, scheduler = make()
    ckpt.write(directory, rank=0, progress=ckpt.Progress(step=step), model=model, optimizer=optimizer,
               scheduler=scheduler, scaler=None, mlflow_run_id="run")
    return directory


def test_truncated_state_is_reported_as_corrupt_with_its_file(tmp_path):
    write_checkpoint(tmp_path, 4)
    data = (tmp_path / ckpt.STATE_FILE).read_bytes()
    (tmp_path / ckpt.STATE_FILE).write_bytes(data[: len(data) // 2])
    with pytest.raises(CorruptCheckpoint, match=str(tmp_path / ckpt.STATE_FILE)):
        ckpt.load(tmp_path, rank=0, map_location=torch.device("cpu"))


class Payload:
    """Unpickling this would run code; a weights-only load must refuse it before that happens."""

    def __init__(self, target):
        self.target = target

    def __reduce__(self):
        return (Path.write_text, (Path(self.target), "code ran"))


def test_a_state_file_that_would_run_code_is_refused(tmp_path):
    write_checkpoint(tmp_path, 4)
    target = tmp_path / "owned"
    torch.save({"progress": {}, "model": Payload(target)}, tmp_path / ckpt.STATE_FILE)
    with pytest.raises(CorruptCheckpoint, match="Weights only load failed|Unsupported"):
        ckpt.load(tmp_path, rank=0, map_location=torch.device("cpu"))
    assert not target.exists()


def test_restore_skips_a_corrupt_newest_checkpoint_and_says_which(tmp_path, caplog):
    from ray.train import Checkpoint

    older, newer = (write_checkpoint(tmp_path / name, step) for name, step in (("c4", 4), ("c8", 8)))
    (newer / ckpt.rng_file(0)).write_bytes(b"")             # another file than state.pt: every file is checked
    candidates = [Checkpoint.from_directory(newer), Checkpoint.from_directory(older)]
    chosen, state, rng, skipped = ckpt.restore(candidates, rank=0, map_location=torch.device("cpu"))
    assert chosen.path == str(older) and state["progress"]["step"] == 4 and rng is not None
    assert len(skipped) == 1 and skipped[0].startswith(f"{newer}: ") and ckpt.rng_file(0) in skipped[0]
    assert f"checkpoint {newer} cannot be loaded" in caplog.text

    (older / ckpt.STATE_FILE).unlink()
    with pytest.raises(CorruptCheckpoint, match="no registered checkpoint of this run can be loaded"):
        ckpt.restore(candidates, rank=0, map_location=torch.device("cpu"))
