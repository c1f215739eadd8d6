"""The local Ray that `skipview train` starts for itself belongs to that one run: while it trains, every socket its
processes listen on is on the loopback interface (Ray's, and the DDP group's store and gloo connections of its two
workers), and when the driver is killed (`kill -9`, not the process group) no Ray process of it is left behind."""

from __future__ import annotations

import ipaddress
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]


def ray_processes(driver: int, marker: str) -> list[psutil.Process]:
    """Every process the driver started: its descendants (Ray's agents among them keep a cleaned environment) and
    whatever carries ``marker`` in its environment (a worker Ray reparented)."""
    found = {child.pid: child for child in psutil.Process(driver).children(recursive=True)}
    for process in psutil.process_iter():
        try:
            if process.environ().get("SKIPVIEW_TEST_MARKER") == marker:
                found[process.pid] = process
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return list(found.values())


def alive(processes: list[psutil.Process]) -> list[str]:
    names = []
    for process in processes:
        try:
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                names.append(process.name())
        except psutil.NoSuchProcess:
            continue
    return sorted(names)


def listening(processes: list[psutil.Process]) -> dict[str, str]:
    """``address:port -> process name`` for every TCP socket the processes listen on."""
    sockets = {}
    for process in processes:
        try:
            for connection in process.net_connections(kind="tcp"):
                if connection.status == psutil.CONN_LISTEN:
                    sockets[f"{connection.laddr.ip}:{connection.laddr.port}"] = process.name()
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return sockets


def is_loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address.rsplit(":", 1)[0].strip("[]"))
    return ip.is_loopback or (ip.version == 6 and ip.ipv4_mapped is not None and ip.ipv4_mapped.is_loopback)


@pytest.mark.slow
def test_local_ray_listens_on_loopback_and_dies_with_its_driver(tiny_data, tmp_path):
    corpus, wordvecs = tiny_data
    marker = uuid.uuid4().hex
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / ".dev"), str(HERE)]),
           "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path}/mlflow.db", "SKIPVIEW_TEST_MARKER": marker}
    env.pop("RAY_ADDRESS", None)
    command = [sys.executable, "-m", "skipview.platform.cli", "train", "--objective", "tiny_objective:build",
               "--corpus", str(corpus), "--wordvecs", str(wordvecs), "--storage", str(tmp_path / "runs"),
               "--name", "local-ray", "--workers", "2", "--cpus-per-worker", "1",
               "--set", "max_steps=100000", "--set", "checkpoint_every=5", "--set", "batch_size=8"]
    driver = subprocess.Popen(command, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    try:
        snapshot = tmp_path / "runs" / "local-ray" / "checkpoint_manager_snapshot.json"
        deadline = time.time() + 300
        while not snapshot.is_file() or not snapshot.stat().st_size:   # training: every Ray process is up
            assert driver.poll() is None, "the run ended before its first checkpoint"
            assert time.time() < deadline, "no checkpoint within 300 s"
            time.sleep(0.5)
        processes = ray_processes(driver.pid, marker)
        names = {p.name() for p in processes}
        assert {"gcs_server", "raylet"} <= names, names
        sockets = listening(processes)
        assert sockets, "no listening socket found: the check would pass vacuously"
        assert any(name == "ray::RayTrainWorker" for name in sockets.values()), "no DDP store found listening"
        exposed = {address: name for address, name in sockets.items() if not is_loopback(address)}
        assert not exposed, f"listening beyond loopback: {json.dumps(exposed)}"

        driver.send_signal(signal.SIGKILL)                  # the driver alone, as `kill -9 PID` does
        driver.wait()
        deadline = time.time() + 20
        while (left := alive(processes)) and time.time() < deadline:
            time.sleep(0.5)
        assert not left, f"alive 20 s after the driver was killed: {left}"
    finally:
        for process in psutil.process_iter():
            try:
                if process.environ().get("SKIPVIEW_TEST_MARKER") == marker:
                    process.kill()
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
