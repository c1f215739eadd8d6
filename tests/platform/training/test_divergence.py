"""The Diverged behind Ray's wrappers is found, so a divergence fails at once and reads as one."""

import pytest
from ray.train import ControllerError, WorkerGroupError

from skipview.platform.training.divergence import FailOnDivergence, diverged
from skipview.platform.errors import Diverged


def test_the_divergence_is_found_inside_rays_errors():
    nan = Diverged("non-finite training at step 6: loss=nan")
    assert diverged(ControllerError(nan)) is nan
    assert diverged(WorkerGroupError("workers failed", {1: nan})) is nan
    assert diverged(WorkerGroupError("workers failed", {0: RuntimeError("oom")})) is None


def test_the_callback_turns_a_worker_divergence_into_a_controller_failure():
    callback = FailOnDivergence()
    callback.after_exception(None, {0: RuntimeError("a worker died")})       # retried by Ray as before
    with pytest.raises(Diverged, match="step 6"):
        callback.after_exception(None, {1: Diverged("non-finite training at step 6")})
