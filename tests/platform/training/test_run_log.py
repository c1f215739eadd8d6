"""What `skipview train` prints: its own lines and its progress; Ray's and the workers' logs go to a file that the
first line and a failure's error line name. A run that diverged before its first checkpoint printed 81 lines, 74 of
them Ray's forwarded worker logs with three tracebacks, some after skipview's own error line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def train(tiny_data, tmp_path: Path, name: str, *settings: str, ray_join_env: dict | None = None
          ) -> tuple[subprocess.CompletedProcess, Path]:
    """The command with a local Ray of its own, or joined to the test process's with ``ray_join_env``."""
    corpus, wordvecs = tiny_data
    env = {**os.environ, "PYTHONPATH": str(HERE), "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path}/mlflow.db"}
    env.pop("RAY_ADDRESS", None)
    env.update(ray_join_env or {})
    command = [sys.executable, "-m", "skipview.platform.cli", "train", "--objective", "tiny_objective:build",
               "--corpus", str(corpus), "--wordvecs", str(wordvecs), "--storage", str(tmp_path / "runs"),
               "--name", name, "--set", "batch_size=8", *settings]
    done = subprocess.run(command, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=600)
    return done, tmp_path / "runs" / f"{name}.log"


@pytest.mark.slow
def test_a_run_that_diverges_prints_two_lines_the_cause_last_and_its_log_holds_rays(tiny_data, tmp_path):
    done, log = train(tiny_data, tmp_path, "div", "--set", "objective_settings.nan_at_call=2")
    lines = done.stdout.splitlines()
    assert done.returncode == 1
    assert len(lines) == 2, done.stdout
    assert lines[0].startswith("run div: 1 worker(s)") and lines[0].endswith(f"Ray's and the workers' log: {log}")
    assert lines[-1].startswith("error: run div: training diverged at step 2: loss=nan"), lines[-1]
    assert f"Ray's and the workers' log: {log}" in lines[-1]
    kept = log.read_text()
    assert "(RayTrainWorker pid=" in kept and "(TrainController pid=" in kept and "Traceback" in kept
    assert "Started a local Ray instance" in kept


@pytest.mark.slow
def test_a_run_prints_its_progress_and_nothing_of_rays(tiny_data, ray_join_env, tmp_path):
    # it joins the test process's Ray (a local Ray of its own costs about 13 CPU s): that a local Ray's start prints
    # nothing is the diverging run's claim, which counts every line
    done, log = train(tiny_data, tmp_path, "ok", "--set", "max_steps=60", "--set", "checkpoint_every=30",
                      ray_join_env=ray_join_env)
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stdout
    progress = [line for line in lines if line.startswith("run ok: step ")]
    assert progress and progress[-1].startswith("run ok: step 60/60 (100%), loss "), done.stdout
    assert len(lines) == 1 + len(progress) + 1 and lines[-1].startswith("done: MLflow run"), done.stdout
    assert "Checkpoint successfully created" in log.read_text()


def test_an_error_before_ray_wrote_anything_is_in_the_log_the_error_line_names(tmp_path):
    """A run of four started together once failed with an empty log: whatever ends the command is written there."""
    from skipview.platform.errors import one_line
    from skipview.platform.training import run_log

    path = tmp_path / "runs" / "early.log"
    with pytest.raises(ValueError) as raised:
        with run_log.capture(path):
            raise ValueError("the tracking store is locked")
    assert one_line(raised.value).endswith(f"Ray's and the workers' log: {path}")
    assert "ValueError: the tracking store is locked" in path.read_text()
