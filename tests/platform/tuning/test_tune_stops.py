"""`skipview tune` told to stop (SIGTERM as a cluster sends it) while a trial trains: the trial writes a checkpoint at
its next step, the search saves its state and ends within the grace with its one line, nothing of it is left
running, and the command that line prints resumes the search: the stopped trial continues from that checkpoint and
every trial finishes."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import textwrap

import pytest
from stopping_commands import SKIPVIEW, assert_stopped, start, stop, trained_a_step, wait_for

from skipview.platform.tracking import store

STEPS = 600                 # the stop lands near step 24 (its first progress line): 25 times that margin
GRACE_S = 60


@pytest.mark.slow
def test_a_search_stopped_mid_trial_checkpoints_the_trial_and_resumes_to_every_trial_finished(
        tiny_data, toy_senteval, ray_join_env, tmp_path):
    corpus, wordvecs = tiny_data
    space = tmp_path / "disc.yaml"
    space.write_text(textwrap.dedent("""
        objective: disc
        space:
          objective:
            hidden_size: 8
          training:
            optimizer.lr: {distribution: loguniform, low: 1e-3, high: 1e-2}
    """))
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path}/mlflow.db"}
    env.pop("RAY_ADDRESS", None)
    args = ["tune", "--space", str(space), "--corpus", str(corpus), "--wordvecs", str(wordvecs), "--senteval-dir",
            str(toy_senteval), "--num-samples", "2", "--max-concurrent", "1", "--cpus-per-worker", "1",
            "--set", "batch_size=16", "--set", f"max_steps={STEPS}", "--set", f"checkpoint_every={STEPS}",
            "--set", "postprocessing_sentences=50", "--grace-period", str(STEPS)]
    process = start(args, tmp_path, env)

    wait_for(lambda: trained_a_step(process), "a trial trained a step", process, timeout=600)
    result = stop(process, signal.SIGTERM, GRACE_S * 3)
    assert_stopped(result, signal.SIGTERM, GRACE_S, kept="each running trial's checkpoint")
    snapshots = [json.loads(p.read_text()) for p in (tmp_path / "runs").glob("*/checkpoint_manager_snapshot.json")]
    stopped = [s["latest_checkpoint_result"]["metrics"] for s in snapshots
               if s["latest_checkpoint_result"] and s["latest_checkpoint_result"]["metrics"].get("stopped")]
    assert len(stopped) == 1 and 0 < stopped[0]["step"] < STEPS, snapshots

    resume = shlex.split(result.last_line.split("to resume, run ")[1])
    assert "--name" in resume
    # the stop was examined on the command's own Ray; the resume joins this test process's Ray instead of starting one
    resumed = subprocess.run([*SKIPVIEW, *resume[1:]], cwd=tmp_path, env={**env, **ray_join_env},
                             capture_output=True, text=True, timeout=1200)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert "done: 2 trials" in resumed.stdout
    assert f"resumed at step {stopped[0]['step']}" in next((tmp_path / "runs").glob("tune-*.log")).read_text()
    client = store.client(env["MLFLOW_TRACKING_URI"])
    runs = client.search_runs([client.get_experiment_by_name("tune").experiment_id])
    assert sorted(r.info.status for r in runs) == ["FINISHED"] * 3          # the search and its two trials
