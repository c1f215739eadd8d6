"""A fresh checkout of this repository in a temporary git repository, for the tests that run the real `dvc repro`
of the project's own dvc.yaml files (data, train/evaluate, ablation) on small data."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
DVC = [sys.executable, "-m", "dvc"]


def run(args: list[str], cwd: Path, env: dict) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout[-5000:]}\n{done.stderr[-5000:]}"
    return done.stdout + done.stderr


def stages_run(output: str) -> set[str]:
    return set(re.findall(r"Running stage '([^']+)'", output))


def fresh_checkout(tmp_path: Path, edit_params: Callable[[dict], None],
                   add_files: Callable[[Path], None] | None = None,
                   ray_join_env: dict[str, str] | None = None) -> tuple[Path, dict]:
    """The project's files as committed plus uncommitted work, ``params.yaml`` edited in place by ``edit_params``,
    ``add_files(repo)`` for data placed inside the checkout, all committed. Returns the repository and the
    environment to run DVC in: ``skipview`` on PATH whether or not the package is pip-installed, the checkout's own
    ./mlflow.db, and Ray: the test process's (its ``ray_join_env`` fixture) for a test that does not examine how a
    stage's Ray starts or stops, else each stage's own local Ray (13 CPU s each)."""
    repo = tmp_path / "repo"
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, capture_output=True,
                            text=True, check=True).stdout.split()
    for name in listed:
        if (REPO / name).is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, repo / name)
    if add_files is not None:
        add_files(repo)
    params = yaml.safe_load((repo / "params.yaml").read_text())
    edit_params(params)
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "skipview").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m skipview.platform.cli "$@"\n')
    (bin_dir / "skipview").chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", DVC_NO_ANALYTICS="1")
    env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p)
    env.pop("MLFLOW_TRACKING_URI", None)
    env.pop("RAY_ADDRESS", None)            # without one skipview starts a Ray of its own, never joins a running one
    env.update(ray_join_env or {})          # every skipview stage joins it (paths reach Ray's workers resolved)
    git = ["git", "-c", "user.name=test", "-c", "user.email=test@example.org"]
    run(git + ["init", "-q"], repo, env)
    run(git + ["add", "-A"], repo, env)
    run(git + ["commit", "-qm", "fresh checkout"], repo, env)
    return repo, env
