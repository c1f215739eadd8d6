"""The steps since the last read of the training values (``Window``), and that read (``close_window``): where the
loop finds a non-finite step and where rank 0 records every step.

Nothing in a step waits for the device: the loss and gradient norm of every step stay on it until the loop closes
the window (every ``log_every`` steps, and before a checkpoint), when one all-reduce brings the window's values to
every rank. Every rank sees the same values, so every rank stops at the same step when one is not finite.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import torch
import torch.distributed as dist

from skipview.models.objective import ObjectiveOutput
from skipview.platform.errors import Diverged
from skipview.platform.tracking.tracker import Tracker

log = logging.getLogger(__name__)

DIVERGED_TAG = "skipview.diverged_at_step"


class Window:
    """The steps since the last read: their loss and gradient norm, left on the device (reading them each step
    would make the host wait for the device every step), their sentence and token counts, and its start time."""

    def __init__(self, last_step: int):
        self.first_step = last_step + 1
        self.values: list[torch.Tensor] = []
        self.sentences = self.tokens = 0
        self.start = time.perf_counter()

    def add(self, loss: torch.Tensor, grad_norm: torch.Tensor, batch) -> None:
        self.values.append(torch.stack([loss.detach().float(), grad_norm.detach().float()]))
        self.sentences += batch.num_sentences
        self.tokens += batch.num_tokens

    def read(self, world_size: int) -> tuple[np.ndarray, float, float]:
        """(steps, 2) loss and gradient norm of each step averaged over ranks, and the sentences and tokens of
        all ranks: one all-reduce and one copy to the host for the whole window. Every rank must call it."""
        per_step = torch.stack(self.values).double()
        counts = torch.tensor([self.sentences, self.tokens], dtype=torch.float64, device=per_step.device)
        values = torch.cat([per_step.flatten(), counts])
        if world_size > 1:
            dist.all_reduce(values)
        values = values.cpu()
        return (values[:-2] / world_size).view(-1, 2).numpy(), float(values[-2]), float(values[-1])


def close_window(window: Window, tracker: Tracker, out: ObjectiveOutput, lr: float, world_size: int, *,
                 overflow_is_skipped: bool) -> float:
    """Read the window and record it; the last step's loss. A non-finite step stops the run by raising
    ``Diverged`` (every rank reads the same values, so every rank stops here). With fp16 an infinite gradient is an
    overflow the grad scaler skipped, not a divergence (``overflow_is_skipped``)."""
    per_step, sentences, tokens = window.read(world_size)
    finite = np.isfinite(per_step[:, 0]) & (overflow_is_skipped | np.isfinite(per_step[:, 1]))
    good = len(per_step) if finite.all() else int(np.argmin(finite))
    for offset in range(good):
        tracker.metrics({"loss": per_step[offset, 0], "grad_norm": per_step[offset, 1]}, window.first_step + offset)
    if good < len(per_step):
        stop_diverged(tracker, window.first_step + good, *per_step[good])
    if tracker.client is not None:
        elapsed = max(time.perf_counter() - window.start, 1e-9)
        # the objective's own metrics are rank 0's, of the window's last step; the rest are over all ranks. Its
        # "loss" (rank 0's) is not logged: every step's loss over all ranks is, above, and a second value at the
        # window's last step would make the loss curve step back and forth there
        values = {k: float(v.detach()) for k, v in out.metrics.items() if k not in ("loss", "grad_norm")}
        values.update({"lr": lr, "sentences_per_s": sentences / elapsed, "tokens_per_s": tokens / elapsed})
        tracker.metrics(values, window.first_step + len(per_step) - 1)
    return float(per_step[-1, 0])


def stop_diverged(tracker: Tracker, step: int, loss: float, grad_norm: float) -> None:
    """Every rank stops (the window's values that decide it are shared) by raising ``Diverged``: the run fails for Ray
    (``divergence.FailWithoutRestart`` keeps Ray from restarting it) and the last good checkpoint stays the latest."""
    message = f"training diverged at step {step}: loss={loss}, gradient norm={grad_norm}"
    log.error("%s; stopping, the last good checkpoint is kept", message)
    tracker.tag(DIVERGED_TAG, str(step))
    tracker.tag("skipview.failure", message)
    tracker.finish("FAILED")
    raise Diverged(message)
