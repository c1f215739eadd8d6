"""Batches read ahead in a thread: same batches in the same order, reader errors raised where they happened, and
no reader thread left behind when the training loop stops early."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from skipview.models.batching import PairBatch, Sentences
from skipview.platform.training.prefetch import prefetch

CPU = torch.device("cpu")


def pair(i: int) -> PairBatch:
    return PairBatch(Sentences.from_arrays([np.array([i, i + 1])]), Sentences.from_arrays([np.array([i])]))


def reader_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "batch-prefetch"]


def test_yields_every_batch_in_order():
    got = [b.sentences.ids[0, 0].item() for b in prefetch((pair(i) for i in range(7)), CPU)]
    assert got == list(range(7))
    assert reader_threads() == []


def test_a_reader_error_is_raised_after_the_batches_before_it():
    def failing():
        yield pair(0)
        yield pair(1)
        raise OSError("corpus went away")

    seen = []
    with pytest.raises(OSError, match="corpus went away"):
        for batch in prefetch(failing(), CPU):
            seen.append(batch.sentences.ids[0, 0].item())
    assert seen == [0, 1]
    assert reader_threads() == []


def test_leaving_early_stops_the_reader():
    read = []

    def endless():
        i = 0
        while True:
            read.append(i)
            yield pair(i)
            i += 1

    batches = prefetch(endless(), CPU, depth=2)
    for batch in batches:
        if batch.sentences.ids[0, 0].item() == 3:
            break
    batches.close()
    assert reader_threads() == []
    assert len(read) <= 4 + 2 + 1      # the consumed batches, the queue, the one in the reader's hands
