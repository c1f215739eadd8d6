"""Failures a restart cannot fix fail for Ray at once: a diverged run, a full checkpoint storage, a run none of whose
registered checkpoints can be loaded.

When the loss or gradient norm stops being finite, every rank raises ``Diverged`` (``window.stop_diverged``); when a
checkpoint does not fit on its storage, the rank raises ``StorageFull``; when every checkpoint is corrupt, the
restore raises ``CorruptCheckpoint`` (measured before: 3 attempts, 55 s, no error line). Ray restarts the worker group after any
worker error, up to ``max_failures`` times; a restart from the last good checkpoint replays the same steps into the
same NaN, or into the same full disk, costing compute for nothing (and forever with ``max_failures=-1``). An
exception raised by a controller callback is a ``ControllerError``, which Ray's failure policy does not retry, so
this callback turns those into that: Ray records a failed run and ``trainer.fit()`` raises, so the shell sees a
non-zero exit and a Tune trial an error, not a finished run with a tag.
"""

from __future__ import annotations

from collections.abc import Callable

from ray.train import UserCallback

from skipview.platform.errors import CorruptCheckpoint, Diverged, StorageFull

# a restart would meet the same divergence, the same full disk, the same unreadable checkpoints
NOT_RETRIED = (Diverged, StorageFull, CorruptCheckpoint)


def cause(error: BaseException | None, wanted: Callable[[BaseException], bool]) -> BaseException | None:
    """The first error behind ``error`` (itself included) that is ``wanted``: a worker's own, or one that ``fit()``
    raises wrapped in Ray's ``ControllerError`` (``controller_failure``) or ``WorkerGroupError``
    (``worker_failures``)."""
    pending, seen = [error], set()
    while pending:
        error = pending.pop()
        if error is None or id(error) in seen:
            continue
        if wanted(error):
            return error
        seen.add(id(error))
        pending += [getattr(error, "controller_failure", None), getattr(error, "cause", None), error.__cause__,
                    error.__context__, *(getattr(error, "worker_failures", None) or {}).values()]
    return None


def not_retried(error: BaseException | None) -> Diverged | StorageFull | CorruptCheckpoint | None:
    return cause(error, lambda e: isinstance(e, NOT_RETRIED))


class FailWithoutRestart(UserCallback):
    def after_exception(self, run_context, worker_exceptions: dict[int, Exception]) -> None:
        for error in worker_exceptions.values():
            found = not_retried(error)
            if found is not None:
                raise type(found)(str(found))
