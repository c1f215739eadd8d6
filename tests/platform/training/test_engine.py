"""The training engine on the real Ray Train (2 CPU workers, gloo) and a real MLflow SQLite store.

One reference run is compared with runs that lose a worker mid-run (an exception, then a SIGKILL of the worker
process): each must finish from its last checkpoint with exactly the reference's final parameters, and MLflow
must hold one run whose step metrics continue. A NaN on one rank must stop every rank with the step named, and
fail the run for Ray without restarts.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file

from skipview.models.encoder import SentenceEncoder
from skipview.platform.tracking import store
from skipview.platform.training import driver
from skipview.platform.training.config import RunSettings, TrainSettings
from skipview.platform.errors import Diverged
from skipview.platform.training.loop import CORRUPT_TAG

STEPS, CHECKPOINT_EVERY = 12, 4

pytestmark = pytest.mark.slow                  # every test here runs Ray Train


def settings_for(data, **objective) -> TrainSettings:
    corpus, wordvecs = data
    return TrainSettings(objective="tiny_objective:build", objective_settings={"dim": 8, **objective},
                         corpus=str(corpus), wordvecs=str(wordvecs), batch_size=16, max_steps=STEPS,
                         checkpoint_every=CHECKPOINT_EVERY, postprocessing_sentences=50, seed=3)


def run_for(tmp: Path, name: str, workers: int = 2) -> RunSettings:
    return RunSettings(name=name, storage=str(tmp / "runs"), workers=workers, tracking_uri=f"sqlite:///{tmp}/mlflow.db",
                       experiment="engine-test", output=str(tmp / f"{name}-model"))


def weights(model_dir: Path) -> dict[str, np.ndarray]:
    return load_file(model_dir / "model.safetensors")


def step_history(run: RunSettings, run_id: str, key: str = "loss") -> list[int]:
    history = store.client(run.tracking_uri).get_metric_history(run_id, key)
    return sorted(m.step for m in history)


@pytest.fixture(scope="module")
def reference(ray_session, tiny_data, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("reference")
    run = run_for(tmp, "reference")
    return run, driver.train(settings_for(tiny_data), run)


def test_two_worker_run_records_everything(reference):
    run, outcome = reference
    assert outcome.metrics["step"] == STEPS
    assert outcome.metrics["ddp_parameters_equal"] == 1.0
    client = store.client(run.tracking_uri)
    recorded = client.get_run(outcome.mlflow_run_id)
    assert recorded.info.status == "FINISHED"
    assert recorded.data.params["optimizer.lr"] == "0.001"          # nested settings are flattened
    assert recorded.data.tags["objective"] == "tiny_objective:build"
    assert recorded.data.tags["corpus.hash"].startswith("meta-sha256:")
    assert recorded.data.tags["ddp_parameters_equal"] == "True"
    digests = recorded.data.tags["ddp_parameters_digests"].split()      # one per rank
    assert len(digests) == 2 and digests[0] == digests[1]
    assert step_history(run, outcome.mlflow_run_id) == list(range(1, STEPS + 1))
    for key in ("sentences_per_s", "tokens_per_s", "lr", "temperature"):
        assert key in recorded.data.metrics
    encoder = SentenceEncoder.load(outcome.model_dir)
    vectors = encoder.encode(["w1 w2 w3", "w4 w5"])
    assert vectors.shape == (2, 8) and np.isfinite(vectors).all()
    assert "skipview.model_uri" in recorded.data.tags


@pytest.mark.parametrize("failure", ["exception", "sigkill"])
def test_worker_failure_resumes_to_identical_parameters(reference, tiny_data, tmp_path, failure):
    ref_run, ref = reference
    marker = tmp_path / "failed-once"
    # forward call 7 is step 7: after the checkpoint at step 4 (registered first), so steps 5-6 are redone after the
    # restart
    settings = settings_for(tiny_data, fail_at_call=7, fail_rank=1, failure=failure, marker=str(marker),
                            registered_before_failing=1)
    run = run_for(tmp_path, f"fault-{failure}")
    outcome = driver.train(settings, run)
    assert marker.exists(), "the failure was not injected"
    assert marker.read_text().isdigit(), marker.read_text()             # the failed worker's pid, not a timeout
    assert outcome.metrics["step"] == STEPS
    ours, theirs = weights(outcome.model_dir), weights(ref.model_dir)
    assert ours.keys() == theirs.keys()
    for key in ours:
        np.testing.assert_array_equal(ours[key], theirs[key], err_msg=key)
    client = store.client(run.tracking_uri)
    runs = client.search_runs([client.get_experiment_by_name(run.experiment).experiment_id],
                              filter_string=f"tags.`{store.RUN_KEY_TAG}` = '{driver.run_key(run)}'")
    assert len(runs) == 1, "the restarted workers opened a duplicate MLflow run"
    steps = step_history(run, outcome.mlflow_run_id)
    # steps 5-6 were trained twice (before the failure and after the restore from step 4), logged once
    assert steps == list(range(1, STEPS + 1))


def test_truncated_latest_checkpoint_falls_back_to_the_previous_one(reference, tiny_data, tmp_path):
    ref_run, ref = reference
    marker = tmp_path / "failed-once"
    run = run_for(tmp_path, "truncated")
    # forward call 10: the checkpoints of steps 4 and 8 are registered; the step-8 one is cut in half, then a worker
    # fails, so the restarted group finds a corrupt latest checkpoint and must resume from step 4
    settings = settings_for(tiny_data, fail_at_call=10, fail_rank=1, marker=str(marker), registered_before_failing=2,
                            truncate_latest_in=str(Path(run.storage) / run.name))
    outcome = driver.train(settings, run)
    assert marker.read_text().isdigit(), marker.read_text()
    truncated = (tmp_path / "failed-once.truncated").read_text()
    assert outcome.metrics["step"] == STEPS
    ours, theirs = weights(outcome.model_dir), weights(ref.model_dir)
    for key in theirs:
        np.testing.assert_array_equal(ours[key], theirs[key], err_msg=key)
    client = store.client(run.tracking_uri)
    skipped = client.get_run(outcome.mlflow_run_id).data.tags[CORRUPT_TAG]
    assert truncated in skipped and "state.pt" in skipped, skipped
    assert step_history(run, outcome.mlflow_run_id) == list(range(1, STEPS + 1))


def test_nan_on_one_rank_stops_the_run_and_keeps_the_last_good_checkpoint(ray_session, tiny_data, tmp_path):
    settings = settings_for(tiny_data, nan_at_call=6)
    run = run_for(tmp_path, "diverging")
    with pytest.raises(Diverged, match="step 6") as error:
        driver.train(settings, run)
    assert "checkpoint_" in str(error.value)
    client = store.client(run.tracking_uri)
    run_id = store.find_run(client, run.experiment, driver.run_key(run))
    assert client.get_run(run_id).info.status == "FAILED"
    assert max(step_history(run, run_id)) == 5


def test_nan_before_the_first_checkpoint_is_the_same_one_line_divergence(ray_session, tiny_data, tmp_path):
    settings = settings_for(tiny_data, nan_at_call=2)
    run = run_for(tmp_path, "diverging-early", workers=1)      # the message, not the ranks: one worker says it
    with pytest.raises(Diverged, match="step 2") as error:
        driver.train(settings, run)
    assert str(error.value).endswith("last good checkpoint: none (it failed before its first checkpoint)")


def test_a_resume_that_trains_no_step_ends_with_the_loss_its_run_last_logged(reference, tiny_data):
    """A run stopped past the step it should end at, ended by its own command with that ``max_steps``: it trains
    no step, and its final loss is the one logged at its checkpoint's step (it was NaN: no step's loss this time).
    The finished reference run is the one ended again (a run of its own cost two Ray Train runs): it rewrites the
    same final model and leaves the MLflow run FINISHED, which the tests after it read."""
    run, trained = reference
    ended = driver.train(TrainSettings(**{**settings_for(tiny_data).model_dump(), "max_steps": CHECKPOINT_EVERY}), run)
    assert ended.mlflow_run_id == trained.mlflow_run_id
    assert ended.metrics["step"] == STEPS
    [last] = [m for m in store.client(run.tracking_uri).get_metric_history(ended.mlflow_run_id, "loss")
              if m.step == STEPS]
    assert ended.metrics["loss"] == pytest.approx(last.value) == trained.metrics["loss"]


def test_a_run_whose_every_checkpoint_is_corrupt_fails_at_once_in_one_line(reference, tiny_data):
    """No restart (a restart would find the same files): one CorruptCheckpoint naming the run and each file.

    The finished reference run is the run continued here (a run of its own cost a whole Ray Train run): the other
    tests read its exported model and its MLflow run, neither of which cutting its checkpoints' state files touches,
    and the continuation fails before it reopens the MLflow run."""
    from skipview.platform.errors import CorruptCheckpoint
    from skipview.platform.training import checkpoint as ckpt

    run, outcome = reference
    states = sorted((Path(run.storage) / run.name).glob(f"checkpoint_*/{ckpt.STATE_FILE}"))
    assert len(states) == 2                                 # keep_checkpoints: the two latest
    for state in states:
        state.write_bytes(state.read_bytes()[:100])
    with pytest.raises(CorruptCheckpoint, match="run reference: no registered checkpoint of this run can be loaded"
                       ) as error:
        driver.train(TrainSettings(**{**settings_for(tiny_data).model_dump(), "max_steps": STEPS + CHECKPOINT_EVERY}),
                     run)
    assert all(str(state.parent) in str(error.value) for state in states)
    assert "\n" not in str(error.value)
    client = store.client(run.tracking_uri)
    run_id = store.find_run(client, run.experiment, driver.run_key(run))
    # the continuation failed restoring, before it reopened the finished MLflow run: nothing is left RUNNING
    assert run_id == outcome.mlflow_run_id and client.get_run(run_id).info.status == "FINISHED"
