"""The loop's decisions that a CPU run of the engine tests does not reach: the fp16 grad scaler's overflow (a GPU
run's infinite gradient norm) is no divergence, a non-finite loss still is, and the autocast dtype a GPU run
picks. They run here through the loop's own code (``window.Window``, ``window.close_window``,
``loop.autocast_dtype``) on CPU."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from skipview.models.batching import PairBatch, Sentences
from skipview.models.objective import ObjectiveOutput
from skipview.platform.errors import Diverged
from skipview.platform.tracking import store
from skipview.platform.tracking.tracker import Tracker
from skipview.platform.training.loop import autocast_dtype
from skipview.platform.training.window import DIVERGED_TAG, Window, close_window

BATCH = PairBatch(Sentences.from_arrays([np.array([4, 5, 6]), np.array([7])]), Sentences.from_arrays([np.array([8])]))


@pytest.fixture
def tracker(tmp_path) -> Tracker:
    config = {"tracking_uri": f"sqlite:///{tmp_path}/mlflow.db", "experiment": "loop", "run_key": "runs/a",
              "run_name": "a", "params": {}, "tags": {}, "driver": store.driver_tags()}
    return Tracker(config, rank=0, run_id=None)


def window_of(losses: list[float], grad_norms: list[float], last_step: int = 0) -> Window:
    window = Window(last_step)
    for loss, grad_norm in zip(losses, grad_norms):
        window.add(torch.tensor(loss), torch.tensor(grad_norm), BATCH)
    return window


def close(window: Window, tracker: Tracker, *, overflow_is_skipped: bool) -> float:
    out = ObjectiveOutput(torch.tensor(0.0), {"temperature": torch.tensor(0.5)})
    result = close_window(window, tracker, out, lr=1e-3, world_size=1, overflow_is_skipped=overflow_is_skipped)
    tracker.flush()
    return result


def history(tracker: Tracker, key: str) -> list[tuple[int, float]]:
    return sorted((m.step, m.value) for m in tracker.client.get_metric_history(tracker.run_id, key))


def test_a_window_records_every_step_and_its_throughput(tracker):
    assert close(window_of([3.0, 2.0, 1.0], [1.0, 1.0, 1.0], last_step=10), tracker,
                 overflow_is_skipped=False) == 1.0
    assert history(tracker, "loss") == [(11, 3.0), (12, 2.0), (13, 1.0)]
    assert [step for step, _ in history(tracker, "sentences_per_s")] == [13]
    assert history(tracker, "temperature") == [(13, 0.5)]
    assert history(tracker, "tokens_per_s")[0][1] > 0


def test_an_overflow_the_grad_scaler_skipped_is_no_divergence(tracker):
    assert close(window_of([3.0, 2.0, 1.0], [1.0, math.inf, 1.0]), tracker, overflow_is_skipped=True) == 1.0
    assert DIVERGED_TAG not in tracker.client.get_run(tracker.run_id).data.tags


@pytest.mark.parametrize("overflow_is_skipped,losses,grad_norms", [
    (False, [3.0, 2.0, 1.0, 1.0], [1.0, 1.0, math.inf, 1.0]),      # fp32 / bf16: an infinite norm is divergence
    (True, [3.0, 2.0, math.nan, 1.0], [1.0, 1.0, 1.0, 1.0]),       # fp16: a NaN loss still is
])
def test_the_first_non_finite_step_stops_the_run(tracker, overflow_is_skipped, losses, grad_norms):
    with pytest.raises(Diverged, match="step 7"):
        close(window_of(losses, grad_norms, last_step=4), tracker, overflow_is_skipped=overflow_is_skipped)
    run = tracker.client.get_run(tracker.run_id)
    assert run.data.tags[DIVERGED_TAG] == "7" and run.info.status == "FAILED"
    assert history(tracker, "loss") == [(5, 3.0), (6, 2.0)]
    assert store.last_logged_step(tracker.client, tracker.run_id, "loss") == 6


@pytest.mark.parametrize("precision,expected", [("bf16", torch.bfloat16), ("fp16", torch.float16), ("fp32", None)])
def test_a_gpu_run_autocasts_to_the_precision_asked_for(precision, expected):
    assert autocast_dtype(precision, torch.device("cuda")) is expected


def test_a_cpu_run_autocasts_to_bf16_only_when_asked_and_refuses_fp16():
    assert autocast_dtype("auto", torch.device("cpu")) is None
    assert autocast_dtype("fp32", torch.device("cpu")) is None
    assert autocast_dtype("bf16", torch.device("cpu")) is torch.bfloat16
    with pytest.raises(ValueError, match="fp16 needs GPUs"):
        autocast_dtype("fp16", torch.device("cpu"))
