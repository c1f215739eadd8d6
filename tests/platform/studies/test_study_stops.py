"""`skipview study run` told to stop (SIGTERM) while one of its models trains: the model writes a checkpoint at its
next step, the command ends within the grace with one line naming what it kept (the finished runs' records, the
stopped run's checkpoint) and leaves nothing running; the same command resumes that model from its checkpoint and
finishes the study."""

from __future__ import annotations

import os
import signal
import subprocess
import textwrap
from pathlib import Path

import pytest
from stopping_commands import SKIPVIEW, assert_stopped, start, stop, trained_a_step, wait_for

GRACE_S = 60
REPO = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_a_study_stopped_mid_training_keeps_its_checkpoint_and_the_same_command_finishes_it(
        tiny_data, toy_senteval, ray_join_env, tmp_path):
    corpus, wordvecs = tiny_data
    data = tmp_path / "data"                 # the study's layout: data/<corpus>/{prepared,wordvecs}, data/senteval
    (data / "toy").mkdir(parents=True)
    (data / "toy" / "prepared").symlink_to(corpus)
    (data / "toy" / "wordvecs").symlink_to(wordvecs)
    (data / "senteval").mkdir()
    (data / "senteval" / "downstream").symlink_to(toy_senteval)
    (tmp_path / "studies").symlink_to(REPO / "studies")      # the catalogue of rows the study names
    study = tmp_path / "stopped_study.yaml"
    # 600 steps: the stop lands near step 24 (at the first progress line), and the resume trains the rest
    study.write_text(textwrap.dedent("""
        question: Does a study stopped mid-training resume where it stopped?
        corpus: toy
        settings: {objective_settings.hidden_size: 8, batch_size: 16, max_steps: 600, checkpoint_every: 600,
                   postprocessing_sentences: 50}
        cells: [disc-f]
        seeds: 1
        tasks: [sts14]
        protocol: fast
        cpus_per_worker: 1
    """))
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path}/mlflow.db"}
    env.pop("RAY_ADDRESS", None)
    process = start(["study", "run", str(study)], tmp_path, env)
    log = tmp_path / "runs" / "stopped_study.log"
    wait_for(lambda: trained_a_step(process), "the model trained a step", process, timeout=600)
    result = stop(process, signal.SIGTERM, GRACE_S * 3)
    assert_stopped(result, signal.SIGTERM, GRACE_S, kept="run stopped_study-disc-f-seed0 stopped at step ")
    assert "each finished run's record in reports/stopped_study/runs" in result.last_line
    step = int(result.last_line.split(" stopped at step ")[1].split()[0])

    # the stop was examined on the command's own Ray; the resume joins this test process's Ray instead of starting one
    again = subprocess.run([*SKIPVIEW, "study", "run", str(study)], cwd=tmp_path,
                           env={**env, **ray_join_env}, capture_output=True, text=True, timeout=1200)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert f"rank 0 resumed at step {step} " in log.read_text()
    assert (tmp_path / "reports" / "stopped_study" / "runs" / "disc-f-seed0.json").is_file()
