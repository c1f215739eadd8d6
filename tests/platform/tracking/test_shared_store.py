"""Processes sharing one MLflow store: opened together on a fresh folder, and a driver killed without closing its run.

The race of runs started together on a fresh folder is in opening the store: the first MLflow client of a process
creates and migrates a new SQLite database, and several doing so at once fail (``duplicate column name``, ``table
experiments already exists``). So the five rounds here start processes that go through exactly skipview's opening
path (``store.client``, then ``open_run`` as rank 0's tracker does) released together by a barrier, seconds per
round; one end-to-end round of four `skipview train` runs started together is in
tests/platform/training/test_together.py (a Ray-based round costs minutes on 2 cores, five of them too much for CI).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from skipview.platform.tracking import store

PROCESSES = 4
ROUNDS = 5

# Each process imports first (seconds), then for each round waits for its go file, so that the processes open the
# round's fresh store within milliseconds of each other; the imports are paid once for the five rounds
OPEN_AND_FINISH = """
import sys, time
from pathlib import Path

import mlflow.store.tracking.sqlalchemy_store
from skipview.platform.tracking import store
index, folders = sys.argv[1], [Path(f) for f in sys.argv[2:]]
for folder in folders:
    Path(f"{folder}/ready{index}").touch()
    while not (folder / "go").exists():
        time.sleep(0.005)
    client = store.client(f"sqlite:///{folder}/mlflow.db")
    run_id, _ = store.open_run(client, "together", f"runs/r{index}", f"r{index}", params={"i": index})
    store.log_metrics(client, run_id, {"loss": 1.0}, step=1)
    client.set_terminated(run_id, "FINISHED")
"""


def error_line(stderr: str) -> str:
    """The exception line of a failed process's traceback (SQLAlchemy appends a link after it)."""
    return next((line for line in reversed(stderr.splitlines()) if "Error" in line or "Exception" in line), stderr)


@pytest.mark.slow
def test_processes_opening_a_fresh_store_together_all_record_their_runs(tmp_path):
    folders = [tmp_path / f"round{r}" for r in range(ROUNDS)]
    for folder in folders:
        folder.mkdir()
    processes = [subprocess.Popen([sys.executable, "-c", OPEN_AND_FINISH, str(i), *map(str, folders)],
                                  stderr=subprocess.PIPE, text=True) for i in range(PROCESSES)]
    try:
        for folder in folders:
            deadline = time.time() + 300
            while len(list(folder.glob("ready*"))) < PROCESSES:
                assert time.time() < deadline and all(p.poll() is None for p in processes), \
                    [error_line(p.communicate()[1]) for p in processes if p.poll() not in (None, 0)]
                time.sleep(0.01)
            (folder / "go").touch()
        failed = [error_line(p.communicate(timeout=300)[1]) for p in processes if p.wait(timeout=300)]
        assert not failed, failed
    finally:
        for process in processes:
            process.kill()
    for folder in folders:
        client = store.client(f"sqlite:///{folder}/mlflow.db")
        runs = client.search_runs([client.get_experiment_by_name("together").experiment_id])
        assert sorted((r.info.run_name, r.info.status) for r in runs) == \
            [(f"r{i}", "FINISHED") for i in range(PROCESSES)], folder


OPEN_AND_WAIT = """
import sys, time
from skipview.platform.tracking import store
client = store.client(sys.argv[1])
run_id, _ = store.open_run(client, "orphans", sys.argv[2], sys.argv[2])
print(run_id, flush=True)
time.sleep(600)
"""


def test_a_run_whose_driver_was_killed_is_closed_by_the_next_process_that_opens_the_store(tmp_path, monkeypatch):
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    killed = subprocess.Popen([sys.executable, "-c", OPEN_AND_WAIT, uri, "killed"], stdout=subprocess.PIPE, text=True)
    alive = subprocess.Popen([sys.executable, "-c", OPEN_AND_WAIT, uri, "alive"], stdout=subprocess.PIPE, text=True)
    try:
        killed_id, alive_id = killed.stdout.readline().strip(), alive.stdout.readline().strip()
        os.kill(killed.pid, signal.SIGKILL)
        killed.wait()
        client = store.client(uri)        # the first opening in this process looks for orphans
        assert client.get_run(killed_id).info.status == "KILLED"
        assert client.get_run(killed_id).data.tags[store.ORPHAN_TAG].startswith(f"driver {killed.pid}@")
        assert client.get_run(alive_id).info.status == "RUNNING"
        # continuing it makes it RUNNING again, under its new driver (this process), which is alive
        again, resumed = store.open_run(client, "orphans", "killed", "killed")
        assert (again, resumed) == (killed_id, True)
        monkeypatch.setattr(store, "_ready", set())
        store.client(uri)
        run = client.get_run(killed_id)
        assert run.info.status == "RUNNING" and run.data.tags[store.DRIVER_PROCESS_TAG].startswith(f"{os.getpid()}@")
    finally:
        for process in (killed, alive):
            process.kill()
            process.wait()


def test_a_recycled_pid_is_not_its_driver():
    tags = store.driver_tags()
    pid, started = tags[store.DRIVER_PROCESS_TAG].split("@")
    assert store.driver_alive(f"{pid}@{started}")
    assert not store.driver_alive(f"{pid}@{float(started) - 3600:.2f}")      # same pid, an hour older: another one
    assert not store.driver_alive("999999999@0.00")
