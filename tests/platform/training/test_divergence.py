"""The Diverged or StorageFull behind Ray's wrappers is found, so such a run fails at once and reads as one."""

import pytest
from ray.train import ControllerError, WorkerGroupError

from skipview.platform.errors import Diverged, StorageFull
from skipview.platform.training.divergence import FailWithoutRestart, not_retried


def test_the_divergence_is_found_inside_rays_errors():
    nan = Diverged("training diverged at step 6: loss=nan")
    assert not_retried(ControllerError(nan)) is nan
    assert not_retried(WorkerGroupError("workers failed", {1: nan})) is nan
    assert not_retried(WorkerGroupError("workers failed", {0: RuntimeError("oom")})) is None


def test_the_callback_turns_a_worker_divergence_or_full_storage_into_a_controller_failure():
    callback = FailWithoutRestart()
    callback.after_exception(None, {0: RuntimeError("a worker died")})       # retried by Ray as before
    with pytest.raises(Diverged, match="step 6"):
        callback.after_exception(None, {1: Diverged("training diverged at step 6")})
    with pytest.raises(StorageFull, match="/runs/x"):
        callback.after_exception(None, {0: StorageFull("/runs/x: no space left")})
