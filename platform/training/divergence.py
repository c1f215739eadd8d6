"""A diverged run fails for Ray at once: no restarts from the last checkpoint.

When the loss or gradient norm stops being finite, every rank raises ``Diverged`` (``loop.stop_diverged``), so Ray
records a failed run and ``trainer.fit()`` raises: the shell sees a non-zero exit and a Tune trial an error, not a
finished run with a tag. Ray restarts the worker group after any worker error, up to ``max_failures`` times; a
restart from the last good checkpoint replays the same steps into the same NaN, costing compute for nothing (and
forever with ``max_failures=-1``). An exception raised by a controller callback is a ``ControllerError``, which Ray's
failure policy does not retry, so this callback turns a divergence into that.
"""

from __future__ import annotations

from ray.train import UserCallback

from skipview.platform.errors import Diverged


def diverged(error: BaseException | None) -> Diverged | None:
    """The ``Diverged`` behind an error, if any: a worker's own, or the one ``fit()`` raises wrapped in Ray's
    ``ControllerError`` (``controller_failure``) or ``WorkerGroupError`` (``worker_failures``)."""
    pending, seen = [error], set()
    while pending:
        error = pending.pop()
        if error is None or id(error) in seen:
            continue
        if isinstance(error, Diverged):
            return error
        seen.add(id(error))
        pending += [getattr(error, "controller_failure", None), getattr(error, "cause", None), error.__cause__,
                    *(getattr(error, "worker_failures", None) or {}).values()]
    return None


class FailOnDivergence(UserCallback):
    def after_exception(self, run_context, worker_exceptions: dict[int, Exception]) -> None:
        for error in worker_exceptions.values():
            found = diverged(error)
            if found is not None:
                raise Diverged(str(found))
