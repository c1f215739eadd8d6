"""Four `skipview train` runs started together in a fresh folder, as a new user's first runs side by side: every one
finishes and is recorded in the one default store (./mlflow.db), each under its own default name.

One round only: four local Rays on 2 cores take minutes. The five rounds the race needs are run on skipview's
store-opening path alone, where the race is (tests/platform/tracking/test_shared_store.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from skipview.platform.tracking import store

RUNS = 4


@pytest.mark.slow
def test_runs_started_together_in_a_fresh_folder_all_finish_and_are_recorded(tiny_data, tmp_path):
    corpus, wordvecs = tiny_data
    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "RAY_ADDRESS")}
    command = [sys.executable, "-m", "skipview.platform.cli", "train", "--objective", "disc", "--corpus", str(corpus),
               "--wordvecs", str(wordvecs), "--cpus-per-worker", "0.5", "--set", "objective_settings.hidden_size=8",
               "--set", "batch_size=16", "--set", "max_steps=4", "--set", "checkpoint_every=2"]
    started = []
    processes = []
    for _ in range(RUNS):
        started.append(time.monotonic())
        processes.append(subprocess.Popen(command, env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True))
    assert started[-1] - started[0] < 1.0
    outputs = [p.communicate(timeout=900)[0] for p in processes]
    failed = [(p.returncode, out) for p, out in zip(processes, outputs) if p.returncode != 0]
    if failed:          # the whole console of each failed run, and the log it names (an assertion message is cut)
        logs = {log.name: log.read_text() for log in (tmp_path / "runs").glob("*.log")}
        pytest.fail(f"{len(failed)} of {RUNS} runs failed:\n" + "\n".join(f"exit {code}:\n{out}" for code, out in failed)
                    + "\nlogs:\n" + "\n".join(f"== {name}\n{text[-5000:]}" for name, text in logs.items()),
                    pytrace=False)
    client = store.client(f"sqlite:///{tmp_path}/mlflow.db")
    runs = client.search_runs([client.get_experiment_by_name("skipview").experiment_id])
    assert sorted(r.info.status for r in runs) == ["FINISHED"] * RUNS
    names = {r.info.run_name for r in runs}
    # each run: its folder of checkpoints and, beside it, its log of Ray's and the workers' lines (run_log)
    assert len(names) == RUNS and names == {p.name for p in (tmp_path / "runs").iterdir() if p.is_dir()}
    for name in names:
        assert list((tmp_path / "runs" / name).glob("checkpoint_*/state.pt")), name
        assert (tmp_path / "runs" / f"{name}.log").is_file(), name
