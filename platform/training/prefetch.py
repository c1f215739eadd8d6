"""Batches prepared in a background thread while the training thread runs the step on the previous one.

Reading a batch from the memory-mapped corpus (gathering token ids, building the padded tensors) is host work
that would otherwise sit between two steps. NumPy and PyTorch release the GIL in that work, so a thread
overlaps it with the step. On a GPU the batch is also copied into page-locked (pinned) memory in the thread,
so the copy to the device can be asynchronous (``non_blocking=True`` is only asynchronous from pinned memory).
"""

from __future__ import annotations

import dataclasses
import queue
import threading
from collections.abc import Iterable, Iterator
from typing import Any

import torch

DEPTH = 2          # batches ready ahead of the step: one being consumed, one waiting


def pinned(batch: Any) -> Any:
    """The batch (a dataclass of tensors, possibly nested) with its tensors in page-locked memory."""
    if isinstance(batch, torch.Tensor):
        return batch.pin_memory()
    if dataclasses.is_dataclass(batch):
        return dataclasses.replace(batch, **{f.name: pinned(getattr(batch, f.name)) for f in dataclasses.fields(batch)
                                             if f.init})
    return batch


@dataclasses.dataclass
class _Failed:
    error: BaseException


_END = object()


def prefetch(batches: Iterable, device: torch.device, *, pin: bool | None = None, depth: int = DEPTH) -> Iterator:
    """Yield ``batches`` moved to ``device``, each read (and pinned, on a GPU) ahead in a background thread.

    An error in the reader is raised in the consumer at the batch where it happened. Leaving the loop early
    (``break``, an exception) stops the thread before the generator is closed."""
    pin = device.type == "cuda" if pin is None else pin
    ready: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def offer(item) -> bool:
        """Put ``item`` in the queue unless the consumer has gone; True if it was put."""
        while not stop.is_set():
            try:
                ready.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def read() -> None:
        try:
            for batch in batches:
                if not offer(pinned(batch) if pin else batch):
                    return
            offer(_END)
        except BaseException as error:      # handed to the consumer, which raises it
            offer(_Failed(error))

    reader = threading.Thread(target=read, name="batch-prefetch", daemon=True)
    reader.start()
    try:
        while (item := ready.get()) is not _END:
            if isinstance(item, _Failed):
                raise item.error
            yield item.to(device, non_blocking=True)
    finally:
        stop.set()
        reader.join()
