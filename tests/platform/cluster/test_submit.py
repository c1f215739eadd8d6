"""``skipview submit`` against a real local Ray head started with token authentication.

The head runs without skipview on its PYTHONPATH, so the job can only import skipview through the shipped
py_modules directory. A client with the token gets its job run; a client without it is refused.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from skipview.platform.cluster.package import stage_package
from skipview.platform.cluster.submit import entrypoint

REPO = Path(__file__).resolve().parents[3]
PYTHON_BIN = str(Path(sys.executable).parent)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def base_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "PYTHONPATH"))}
    env.update(HOME=str(home), PATH=PYTHON_BIN + os.pathsep + env.get("PATH", ""), RAY_AUTH_MODE="token",
               RAY_USAGE_STATS_ENABLED="0")
    return env


@pytest.fixture(scope="module")
def auth_head(tmp_path_factory):
    home = tmp_path_factory.mktemp("head-home")
    token = secrets.token_hex(16)
    dashboard = free_port()
    env = {**base_env(home), "RAY_AUTH_TOKEN": token}
    ports = {"--port": free_port(), "--dashboard-port": dashboard, "--ray-client-server-port": free_port(),
             "--dashboard-agent-listen-port": free_port(), "--metrics-export-port": free_port(),
             "--runtime-env-agent-port": free_port(), "--node-manager-port": free_port(),
             "--object-manager-port": free_port(), "--dashboard-agent-grpc-port": free_port()}
    command = [str(Path(PYTHON_BIN) / "ray"), "start", "--head", "--block", "--num-cpus=1",
               "--include-dashboard=true", "--dashboard-host=127.0.0.1", "--disable-usage-stats",
               *[f"{flag}={port}" for flag, port in ports.items()]]
    head = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                            start_new_session=True)
    address = f"http://127.0.0.1:{dashboard}"
    deadline = time.time() + 120
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", dashboard)) == 0:
                break
        if head.poll() is not None:
            pytest.fail(f"ray start exited with {head.returncode}")
        time.sleep(1)
    else:
        pytest.fail("the Ray head did not open its dashboard in 120 s")
    time.sleep(3)
    yield address, token, home
    os.killpg(head.pid, signal.SIGTERM)        # --block: the head stops its raylet/GCS on SIGTERM
    try:
        head.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(head.pid, signal.SIGKILL)


def run_submit(address: str, env: dict[str, str], *command: str) -> subprocess.CompletedProcess:
    env = {**env, "PYTHONPATH": str(REPO / ".dev")}
    return subprocess.run([sys.executable, "-m", "skipview.platform.cli", "submit", "--address", address, "--",
                           *command], env=env, capture_output=True, text=True, timeout=300, cwd=REPO)


def test_job_with_token_runs_this_checkouts_code(auth_head):
    address, token, home = auth_head
    done = run_submit(address, {**base_env(home), "RAY_AUTH_TOKEN": token}, "train", "--help")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCEEDED" in done.stdout
    assert "Train an objective on a prepared corpus" in done.stdout   # the job imported skipview


def test_client_without_token_is_refused(auth_head, tmp_path):
    address, _, _ = auth_head
    done = run_submit(address, base_env(tmp_path), "train", "--help")
    assert done.returncode == 1
    assert "submitted job" not in done.stdout
    assert f"error: {address} refused this client:" in done.stderr and "Traceback" not in done.stderr


def test_wrong_token_is_refused(auth_head, tmp_path):
    address, _, _ = auth_head
    done = run_submit(address, {**base_env(tmp_path), "RAY_AUTH_TOKEN": "not-the-token"}, "train", "--help")
    assert done.returncode == 1 and "submitted job" not in done.stdout
    assert "Invalid authentication token" in done.stderr and "Traceback" not in done.stderr


def test_staged_package_and_entrypoint(tmp_path):
    root = stage_package(tmp_path)
    assert (root / "models" / "objective.py").is_file() and (root / "platform" / "cli.py").is_file()
    assert not (root / "platform" / "__init__.py").exists()          # would shadow the stdlib's platform
    assert not list(root.rglob("__pycache__"))
    assert entrypoint(["skipview", "train", "--set", "a=b c"]) == \
        "python -m skipview.platform.cli train --set 'a=b c'"
    with pytest.raises(ValueError, match="nothing to submit"):
        entrypoint([])
