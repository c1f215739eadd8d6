"""`skipview train` end to end: the whole driver (and the local Ray it started) is killed after a checkpoint; the next
process to open the store marks its MLflow run KILLED, and relaunching the same command resumes the run from that
checkpoint into the same MLflow run."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from skipview.platform.tracking import store

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
STEPS = 30


def registered_checkpoint(run_dir: Path) -> str | None:
    """The latest checkpoint Ray Train has registered in the run's snapshot (what a relaunch restores from);
    a checkpoint folder alone may still be uploading."""
    snapshot = run_dir / "checkpoint_manager_snapshot.json"
    try:
        latest = json.loads(snapshot.read_text()).get("latest_checkpoint_result")
    except (OSError, ValueError):
        return None
    return latest["checkpoint_dir_name"] if latest else None


@pytest.mark.slow
def test_killed_driver_resumes_when_relaunched(tiny_data, tmp_path):
    corpus, wordvecs = tiny_data
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / ".dev"), str(HERE)]), "MLFLOW_TRACKING_URI": uri}
    env.pop("RAY_ADDRESS", None)
    command = [sys.executable, "-m", "skipview.platform.cli", "train", "--objective", "tiny_objective:build",
               "--corpus", str(corpus), "--wordvecs", str(wordvecs), "--storage", str(tmp_path / "runs"),
               "--name", "relaunch", "--workers", "1", "--experiment", "relaunch-test",
               "--output", str(tmp_path / "model"), "--metrics", str(tmp_path / "metrics.json"),
               "--set", f"max_steps={STEPS}", "--set", "checkpoint_every=5", "--set", "batch_size=8",
               "--set", "postprocessing_sentences=50"]
    first = subprocess.Popen(command, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    deadline = time.time() + 300
    while registered_checkpoint(tmp_path / "runs" / "relaunch") is None:
        assert first.poll() is None, "the first launch ended before its first checkpoint"
        assert time.time() < deadline, "no checkpoint within 300 s"
        time.sleep(0.5)
    os.killpg(first.pid, signal.SIGKILL)          # the driver and the local Ray it started
    first.wait()
    killed_after = json.loads((tmp_path / "runs" / "relaunch" / "checkpoint_manager_snapshot.json").read_text())
    assert killed_after["latest_checkpoint_result"]["metrics"]["step"] < STEPS, "killed too late to test resuming"
    assert not (tmp_path / "metrics.json").exists()
    # the next process to open the store closes the run its dead driver left RUNNING
    client = store.client(uri)
    killed = client.search_runs([client.get_experiment_by_name("relaunch-test").experiment_id])
    assert [r.info.status for r in killed] == ["KILLED"] and store.ORPHAN_TAG in killed[0].data.tags

    second = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    record = json.loads((tmp_path / "metrics.json").read_text())
    assert record["metrics"]["step"] == STEPS
    assert (tmp_path / "model" / "config.json").is_file()
    experiment = client.get_experiment_by_name("relaunch-test")
    runs = client.search_runs([experiment.experiment_id])
    assert len(runs) == 1, "the relaunch opened a second MLflow run"
    assert runs[0].info.status == "FINISHED"
    steps = sorted(m.step for m in client.get_metric_history(record["mlflow_run_id"], "loss"))
    assert steps == list(range(1, STEPS + 1))          # each step once: the replayed ones are not logged again
    resumed = re.search(r"rank 0 resumed at step (\d+)", (tmp_path / "runs" / "relaunch.log").read_text())
    assert resumed, "the relaunch started again from step 1 instead of the checkpoint"
    # the snapshot read after the kill can lag a checkpoint Ray had already written: at least that one
    assert killed_after["latest_checkpoint_result"]["metrics"]["step"] <= int(resumed.group(1)) < STEPS
