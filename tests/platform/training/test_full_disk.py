"""`skipview train` on a storage that fills up (a real 240 kB tmpfs): one line naming the run's folder and the space
a checkpoint needs, nothing half-written registered, the MLflow run FAILED; once the file system has room, the same
command continues the same MLflow run from the last complete checkpoint.

The second launch also meets what Ray Train leaves when its own rewrite of the checkpoint record hits the full disk
(an empty checkpoint_manager_snapshot.json, reports/errors_before_after.md) and an upload the disk cut (a folder
with a truncated state.pt): both are repaired before Ray reads the folder (platform/training/run_folder.py)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from ray_head import driver_error
from small_filesystem import resize, small_filesystem

from skipview.platform.tracking import store
from skipview.platform.training import checkpoint as ckpt
from skipview.platform.training.run_folder import SNAPSHOT

HERE = Path(__file__).resolve().parent
STEPS, EVERY = 20, 5


@pytest.mark.slow
def test_a_full_storage_fails_in_one_line_and_resumes_once_there_is_room(tiny_data, ray_join_env, tmp_path):
    corpus, wordvecs = tiny_data
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    # both launches join the test process's Ray: what the full disk does to the run is the claim, not the command's
    # own Ray (a local Ray of its own costs about 13 CPU s a launch)
    env = {**os.environ, "MLFLOW_TRACKING_URI": uri, "COLUMNS": "120", **ray_join_env}
    with small_filesystem(tmp_path / "disk", "240k") as disk:     # two 70 kB checkpoints fit, not a third
        command = [sys.executable, "-m", "skipview.platform.cli", "train", "--objective", "disc",
                   "--corpus", str(corpus), "--wordvecs", str(wordvecs), "--storage", str(disk / "runs"),
                   "--name", "full", "--experiment", "full-disk", "--cpus-per-worker", "1",
                   "--set", "objective_settings.hidden_size=16", "--set", "batch_size=32",
                   "--set", f"max_steps={STEPS}", "--set", f"checkpoint_every={EVERY}"]
        run_dir = disk / "runs" / "full"
        first = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=900)
        assert first.returncode == 1, first.stdout[-2000:] + first.stderr[-3000:]
        log = disk / "runs" / "full.log"
        assert re.fullmatch(rf"error: {run_dir}: no space left on its file system \(.* free of .*\): a checkpoint "
                            r"needs \d.* kB; free space .* resumes from the last complete checkpoint; "
                            rf"Ray's and the workers' log: {log} .*", driver_error(first.stderr)), first.stderr[-3000:]
        assert "CheckpointManagerInitializationError" not in first.stderr
        # skipview's own lines only (the run, its progress, the error, last); Ray's and the workers' in the log
        printed = (first.stdout + first.stderr).splitlines()
        assert len(printed) <= 4 and all(line.startswith(("run full:", "error:")) for line in printed), printed
        assert printed[-1].startswith("error:") and "Traceback" in log.read_text()
        record = json.loads((run_dir / SNAPSHOT).read_text())
        assert record["latest_checkpoint_result"]["metrics"]["step"] == 2 * EVERY
        folders = sorted(p for p in run_dir.glob("checkpoint_*") if p.is_dir())
        assert [p.name for p in folders] == sorted(r["checkpoint_dir_name"] for r in record["checkpoint_results"])
        for folder in folders:                       # every registered checkpoint is whole
            ckpt.load(folder, rank=0, map_location=torch.device("cpu"))
        client = store.client(uri)
        runs = client.search_runs([client.get_experiment_by_name("full-disk").experiment_id])
        assert [r.info.status for r in runs] == ["FAILED"]

        # what Ray's in-place rewrite of its record and a cut upload leave on a full disk
        (run_dir / SNAPSHOT).write_bytes(b"")
        cut = run_dir / "checkpoint_2026-01-01_00-00-00.000000"
        cut.mkdir()
        (cut / ckpt.STATE_FILE).write_bytes((folders[-1] / ckpt.STATE_FILE).read_bytes()[:1000])
        resize(disk, "4m")
        second = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=900)
        assert second.returncode == 0, second.stdout[-2000:] + second.stderr[-3000:]
        assert re.search(rf"rank 0 resumed at step {2 * EVERY} ", log.read_text())
        assert not cut.exists()
    runs = client.search_runs([client.get_experiment_by_name("full-disk").experiment_id])
    assert [r.info.status for r in runs] == ["FINISHED"]          # the same run, continued
    steps = sorted(m.step for m in client.get_metric_history(runs[0].info.run_id, "loss"))
    assert steps == list(range(1, STEPS + 1))
