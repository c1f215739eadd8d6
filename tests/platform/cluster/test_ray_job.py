"""A training submitted with plain `ray job submit --working-dir .`, as the README shows it, against a Ray head (started
here) and an MLflow server (conftest.py) on 127.0.0.1. Ray runs the job in its temporary copy of the working directory
(``session_*/runtime_resources/working_dir_files/_ray_pkg_*``): with the run's record in an MLflow server and its
checkpoints at an absolute path the run outlives Ray's temporary files; the defaults, a relative ``./mlflow.db`` and
``--storage runs``, would be written into that copy and vanish, so each is refused in one line that says what to
pass instead. The head has skipview installed (this virtualenv), which plain `ray job submit` needs."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest
from ray_head import PYTHON_BIN, Head, ray_head

from skipview.platform.tracking import store


@dataclass
class JobCluster:
    head: Head
    tracking: str           # the MLflow server's URL
    temp_dir: Path          # the head's temporary folder
    stop_head: Callable[[], None]
    env: dict[str, str]     # a user's shell: the virtualenv on PATH, no Ray or MLflow variables
    root: Path
    data: tuple[Path, Path]


@pytest.fixture(scope="module")
def job_cluster(tracking_server, tmp_path_factory):
    """A Ray head with its own temporary folder (deleted by the last test), and the test process's MLflow server
    (conftest.py; this file's runs go to its experiment ``ray-job``)."""
    from prepared_data import write_training_data

    root = tmp_path_factory.mktemp("ray-job")
    # a HOME of its own: a Ray token in the user's ~/.ray (a local run writes one) would turn on the head's token
    # authentication, which plain `ray job submit` does not answer without RAY_AUTH_MODE=token
    home = root / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "MLFLOW_"))}
    env.update(HOME=str(home), PATH=PYTHON_BIN + os.pathsep + env.get("PATH", ""), RAY_USAGE_STATS_ENABLED="0")
    temp_dir = Path(tempfile.mkdtemp(prefix="rj", dir="/tmp"))       # short: Ray's socket paths live under it
    data = write_training_data(root / "data")
    with ExitStack() as head_stack:
        try:
            head = head_stack.enter_context(ray_head(env, cpus=2, temp_dir=temp_dir))
            yield JobCluster(head, tracking_server, temp_dir, head_stack.close, env, root, data)
        finally:
            head_stack.close()
            shutil.rmtree(temp_dir, ignore_errors=True)


def submit(head, env: dict[str, str], workdir: Path, job_id: str, train: list[str],
           env_vars: dict[str, str]) -> str:
    """`ray job submit` as a user types it; returns the job's final status (its logs are on the client)."""
    from ray.job_submission import JobSubmissionClient

    workdir.mkdir(exist_ok=True)
    (workdir / "notes.txt").write_text("a project folder\n")
    command = [str(Path(PYTHON_BIN) / "ray"), "job", "submit", "--address", head.dashboard, "--submission-id", job_id,
               "--working-dir", ".", "--runtime-env-json", json.dumps({"env_vars": env_vars}), "--",
               "skipview", "train", *train]
    subprocess.run(command, env=env, cwd=workdir, capture_output=True, text=True, timeout=900)
    return str(JobSubmissionClient(head.dashboard).get_job_status(job_id).value)


def job_logs(head, job_id: str) -> str:
    from ray.job_submission import JobSubmissionClient

    return JobSubmissionClient(head.dashboard).get_job_logs(job_id)


def train_args(data: tuple[Path, Path], *extra: str) -> list[str]:
    corpus, wordvecs = data
    return ["--objective", "disc", "--corpus", str(corpus), "--wordvecs", str(wordvecs), "--experiment", "ray-job",
            "--set", "objective_settings.hidden_size=8", "--set", "batch_size=16", "--set", "max_steps=4",
            "--set", "checkpoint_every=2", *extra]


@pytest.mark.slow
def test_a_store_or_storage_in_the_jobs_temporary_copy_is_refused_in_one_line(job_cluster):
    head, tracking, env, root, data = (job_cluster.head, job_cluster.tracking, job_cluster.env, job_cluster.root,
                                       job_cluster.data)
    status = submit(head, env, root / "project", "default-store", train_args(data, "--storage", str(root / "runs")),
                    {})
    errors = [line for line in job_logs(head, "default-store").splitlines() if line.startswith("error:")]
    assert status == "FAILED" and len(errors) == 1, job_logs(head, "default-store")[-3000:]
    assert re.match(r"error: skipview train: Invalid value: the MLflow store resolves to /\S+/runtime_resources/"
                    r"working_dir_files/_ray_pkg_\w+/mlflow\.db, inside Ray's temporary files .* set "
                    r"MLFLOW_TRACKING_URI to an MLflow server", errors[0]), errors[0]

    status = submit(head, env, root / "project", "relative-storage", train_args(data),
                    {"MLFLOW_TRACKING_URI": tracking})
    errors = [line for line in job_logs(head, "relative-storage").splitlines() if line.startswith("error:")]
    assert status == "FAILED" and len(errors) == 1, job_logs(head, "relative-storage")[-3000:]
    # refused inside the run (its log already open), so the line is the run's error line, not an option's
    assert re.match(r"error: (skipview train: Invalid value: )?--storage runs resolves to /\S+/runtime_resources/"
                    r"working_dir_files/_ray_pkg_\w+/runs, inside Ray's temporary files .* pass --storage an absolute "
                    r"path every node reaches", errors[0]), errors[0]


@pytest.mark.slow
def test_a_job_with_a_server_and_absolute_storage_outlives_rays_temporary_files(job_cluster):
    """Runs last: it stops the head and deletes its temporary folder."""
    head, tracking, temp_dir, env, root, data = (job_cluster.head, job_cluster.tracking, job_cluster.temp_dir,
                                                 job_cluster.env, job_cluster.root, job_cluster.data)
    storage = root / "shared-runs"
    status = submit(head, env, root / "project", "durable", train_args(data, "--name", "durable", "--storage",
                                                                        str(storage)),
                    {"MLFLOW_TRACKING_URI": tracking})
    logs = job_logs(head, "durable")
    assert status == "SUCCEEDED", logs[-3000:]
    copies = {p.resolve() for p in temp_dir.glob("session_*/runtime_resources/working_dir_files/_ray_pkg_*")
              if p.is_dir()}
    assert copies and all((copy / "notes.txt").is_file() for copy in copies)   # the job ran in Ray's copy
    assert not [p for copy in copies for p in copy.rglob("*") if p.name in ("mlflow.db", "state.pt")]
    job_cluster.stop_head()
    shutil.rmtree(temp_dir)                          # Ray's temporary files are gone, the job's copy with them
    client = store.client(tracking)
    runs = client.search_runs([client.get_experiment_by_name("ray-job").experiment_id],
                              filter_string="attributes.run_name = 'durable'")
    assert [r.info.status for r in runs] == ["FINISHED"]
    assert [m.step for m in client.get_metric_history(runs[0].info.run_id, "loss")] == [1, 2, 3, 4]
    assert list((storage / "durable").glob("checkpoint_*/model/config.json"))
