"""``skipview submit`` against a real local Ray head started with token authentication.

The head runs without skipview on its PYTHONPATH, so the job can only import skipview through the shipped
py_modules directory. A client with the token gets its job run; a client without it is refused.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from ray_head import PYTHON_BIN, ray_head

from skipview.platform.cluster.package import stage_package
from skipview.platform.cluster.submit import entrypoint

REPO = Path(__file__).resolve().parents[3]


def base_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "PYTHONPATH"))}
    env.update(HOME=str(home), PATH=PYTHON_BIN + os.pathsep + env.get("PATH", ""), RAY_AUTH_MODE="token",
               RAY_USAGE_STATS_ENABLED="0")
    return env


@pytest.fixture(scope="module")
def auth_head(tmp_path_factory):
    home = tmp_path_factory.mktemp("head-home")
    token = secrets.token_hex(16)
    with ray_head({**base_env(home), "RAY_AUTH_TOKEN": token}) as head:
        yield head.dashboard, token, home


def run_submit(address: str, env: dict[str, str], *command: str) -> subprocess.CompletedProcess:
    env = {**env, "PYTHONPATH": str(REPO / ".dev")}
    return subprocess.run([sys.executable, "-m", "skipview.platform.cli", "submit", "--address", address, "--",
                           *command], env=env, capture_output=True, text=True, timeout=300, cwd=REPO)


@pytest.mark.slow
def test_job_with_token_runs_this_checkouts_code(auth_head):
    address, token, home = auth_head
    done = run_submit(address, {**base_env(home), "RAY_AUTH_TOKEN": token}, "train", "--help")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCEEDED" in done.stdout
    assert "Train an objective on a prepared corpus" in done.stdout   # the job imported skipview


@pytest.mark.slow
def test_client_without_token_is_refused(auth_head, tmp_path):
    address, _, _ = auth_head
    done = run_submit(address, base_env(tmp_path), "train", "--help")
    assert done.returncode == 1
    assert "submitted job" not in done.stdout
    assert f"error: {address} refused this client:" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
def test_wrong_token_is_refused(auth_head, tmp_path):
    address, _, _ = auth_head
    done = run_submit(address, {**base_env(tmp_path), "RAY_AUTH_TOKEN": "not-the-token"}, "train", "--help")
    assert done.returncode == 1 and "submitted job" not in done.stdout
    assert "Invalid authentication token" in done.stderr and "Traceback" not in done.stderr


def client_env(home: Path) -> dict[str, str]:
    """A user's shell: no RAY_AUTH_MODE, which only the cluster's side sets."""
    env = base_env(home)
    del env["RAY_AUTH_MODE"]
    return env


@pytest.mark.slow
def test_the_token_in_the_users_ray_folder_is_sent_without_ray_auth_mode(auth_head, tmp_path):
    address, token, _ = auth_head
    (tmp_path / ".ray").mkdir(mode=0o700)
    (tmp_path / ".ray" / "auth_token").write_text(token)
    done = run_submit(address, client_env(tmp_path), "train", "--help")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCEEDED" in done.stdout


@pytest.mark.slow
def test_a_wrong_token_without_ray_auth_mode_is_reported_invalid_not_missing(auth_head, tmp_path):
    address, _, _ = auth_head
    done = run_submit(address, {**client_env(tmp_path), "RAY_AUTH_TOKEN": "not-the-token"}, "train", "--help")
    assert done.returncode == 1 and "submitted job" not in done.stdout
    error = done.stderr.strip().splitlines()
    assert len(error) == 1 and "Invalid authentication token" in error[0] and "Missing" not in error[0], error


def test_staged_package_and_entrypoint(tmp_path):
    root = stage_package(tmp_path)
    assert (root / "models" / "objective.py").is_file() and (root / "platform" / "cli.py").is_file()
    assert not (root / "platform" / "__init__.py").exists()          # would shadow the stdlib's platform
    assert not list(root.rglob("__pycache__"))
    assert entrypoint(["skipview", "train", "--set", "a=b c"]) == \
        "python -m skipview.platform.cli train --set 'a=b c'"
    with pytest.raises(ValueError, match="nothing to submit"):
        entrypoint([])
