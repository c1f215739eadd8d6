"""`skipview train` told to stop as a cluster does (SIGTERM) or as Ctrl-C does (SIGINT to the process group).

Mid-run, a two-worker DDP run writes a checkpoint at its next step (every rank at the same step), marks its MLflow
run KILLED with the step it stopped at, ends within one step and one checkpoint (and Ray's shutdown), leaves no
process of it, and the command its last line prints resumes it to exactly the parameters of a run never stopped.
During start-up it ends as quickly and leaves nothing either."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file
from stopping_commands import SIGNALS, SKIPVIEW, assert_stopped, catches_signals, start, stop, wait_for

from skipview.platform.tracking import store

HERE = Path(__file__).resolve().parent
STEPS = 60
# Ray's shutdown and the workers' checkpoint on a loaded 2-core machine; the step itself is 0.1 s here
GRACE_S = 60


def command(corpus: Path, wordvecs: Path, calls_file: Path, *more: str) -> list[str]:
    return ["train", "--objective", "tiny_objective:build", "--corpus", str(corpus), "--wordvecs", str(wordvecs),
            "--workers", "2", "--cpus-per-worker", "0.5", "--experiment", "stop-test", "--output", "model",
            "--set", f"max_steps={STEPS}", "--set", f"checkpoint_every={STEPS}", "--set", "batch_size=8",
            "--set", "postprocessing_sentences=50", "--set", "seed=5", "--set", "objective_settings.step_s=0.1",
            "--set", f"objective_settings.calls_file={calls_file}", *more]


def environment(tmp_path: Path, ray_join_env: dict | None = None) -> dict:
    """The command's environment: a local Ray of its own, or with ``ray_join_env`` the test process's Ray joined (for
    the runs whose own Ray the test does not examine: a local Ray costs about 13 CPU s)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
           "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path}/mlflow.db"}
    env.pop("RAY_ADDRESS", None)
    return {**env, **(ray_join_env or {})}


def calls(path: Path) -> int:
    try:
        return int(path.read_text() or 0)
    except (OSError, ValueError):
        return 0


@pytest.fixture(scope="module")
def uninterrupted(tiny_data, ray_join_env, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("uninterrupted")
    finished = subprocess.run([*SKIPVIEW, *command(*tiny_data, tmp / "calls")], cwd=tmp,
                              env=environment(tmp, ray_join_env), capture_output=True, text=True, timeout=900)
    assert finished.returncode == 0, finished.stdout[-3000:] + finished.stderr[-3000:]
    return load_file(tmp / "model" / "model.safetensors")


@pytest.mark.slow
def test_a_run_stopped_mid_way_checkpoints_at_its_next_step_and_resumes_to_the_same_parameters(
        tiny_data, uninterrupted, ray_join_env, tmp_path):
    env, calls_file = environment(tmp_path), tmp_path / "calls"
    process = start(command(*tiny_data, calls_file), tmp_path, env)
    wait_for(lambda: calls(calls_file) >= 15, "15 steps were trained", process, timeout=600)
    result = stop(process, signal.SIGTERM, GRACE_S * 3)
    assert_stopped(result, signal.SIGTERM, GRACE_S, kept="with a checkpoint")
    stopped_at = int(result.last_line.split(" stopped at step ")[1].split()[0])
    assert 15 <= stopped_at < STEPS, result.last_line
    client = store.client(env["MLFLOW_TRACKING_URI"])
    [run] = client.search_runs([client.get_experiment_by_name("stop-test").experiment_id])
    assert run.info.status == "KILLED" and f"at step {stopped_at}" in run.data.tags["skipview.stopped"]

    resume = shlex.split(result.last_line.split("to resume, run ")[1])
    assert resume[0] == "skipview" and "--name" in resume, "a new run's name must be in the command that resumes it"
    # the stop is what left the command's own Ray to examine; the resume may join the test process's
    resumed = subprocess.run([*SKIPVIEW, *resume[1:]], cwd=tmp_path, env=environment(tmp_path, ray_join_env),
                             capture_output=True, text=True, timeout=900)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    log = next((tmp_path / "runs").glob("*.log")).read_text()
    assert f"rank 0 resumed at step {stopped_at}" in log, "the resume did not start from the stop's checkpoint"
    ours = load_file(tmp_path / "model" / "model.safetensors")
    assert ours.keys() == uninterrupted.keys()
    for key in ours:
        np.testing.assert_array_equal(ours[key], uninterrupted[key], err_msg=key)
    [run] = client.search_runs([client.get_experiment_by_name("stop-test").experiment_id])
    assert run.info.status == "FINISHED"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["sigint", "sigterm"])
def test_a_run_stopped_during_start_up_ends_within_the_grace_and_leaves_nothing_running(tiny_data, tmp_path, name):
    env = environment(tmp_path)
    process = start(command(*tiny_data, tmp_path / "calls"), tmp_path, env)
    wait_for(lambda: catches_signals(process), "it took signals", process, timeout=120)
    result = stop(process, SIGNALS[name], GRACE_S * 3)
    assert_stopped(result, SIGNALS[name], GRACE_S)
    client = store.client(env["MLFLOW_TRACKING_URI"])
    experiment = client.get_experiment_by_name("stop-test")
    runs = client.search_runs([experiment.experiment_id]) if experiment else []
    assert all(run.info.status != "RUNNING" for run in runs), "a stopped run is left RUNNING in MLflow"
