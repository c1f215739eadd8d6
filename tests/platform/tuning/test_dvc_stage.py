"""The ablation stage (reports/dvc.yaml) run by real DVC in a temporary git repository on toy data: it trains
and reports with the summary as DVC metrics; a second repro does nothing; a change to the report code reruns the
stage, which finds the finished runs in MLflow and trains nothing again."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.slow


def _run(args: list[str], cwd: Path, env: dict) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout[-5000:]}\n{done.stderr[-5000:]}"
    return done.stdout + done.stderr


def test_dvc_repro_of_the_ablation_stage(tiny_data, toy_senteval, tmp_path):
    repo = tmp_path / "repo"
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, capture_output=True,
                            text=True, check=True).stdout.split()
    for name in listed:
        if (REPO / name).is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, repo / name)
    corpus, wordvecs = tiny_data
    shutil.copytree(corpus, repo / "data" / "toy" / "prepared")
    shutil.copytree(wordvecs, repo / "data" / "toy" / "wordvecs")
    shutil.copytree(toy_senteval, repo / "data" / "senteval" / "downstream")
    matrix = yaml.safe_load((REPO / "platform" / "tuning" / "ablation.yaml").read_text())
    tiny = {"cells": [c for c in matrix["cells"] if c["name"] in ("gen-invertible", "disc-f")],
            "columns": matrix["columns"], "claims": [matrix["claims"][2]]}        # gen ensemble vs gen f
    (repo / "tiny_matrix.yaml").write_text(yaml.safe_dump(tiny, sort_keys=False))
    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["ablation"].update(corpus="toy", matrix="tiny_matrix.yaml", seeds=1, tasks="sts14", protocol="fast",
                              hidden_size=8, batch_size=16, max_steps=4, checkpoint_every=4)
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "skipview").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m skipview.platform.cli "$@"\n')
    (bin_dir / "skipview").chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", DVC_NO_ANALYTICS="1",
               RAY_ADDRESS="local",                 # a private Ray, never one left running on a shared machine
               PYTHONPATH=os.pathsep.join(os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(
                   os.pathsep) if p))
    env.pop("MLFLOW_TRACKING_URI", None)
    git = ["git", "-c", "user.name=test", "-c", "user.email=test@example.org"]
    _run(["git", "init", "-q"], repo, env)
    dvc = [sys.executable, "-m", "dvc"]
    _run(git + ["add", "-A"], repo, env)
    _run(git + ["commit", "-qm", "toy"], repo, env)

    stage = ["repro", "--single-item", "reports/dvc.yaml:ablation"]
    first = _run(dvc + stage, repo, env)
    assert "Running stage 'reports/dvc.yaml:ablation'" in first
    # the data stages' metrics were never produced here, so DVC appends a warning after the JSON
    metrics, _ = json.JSONDecoder().raw_decode(_run(dvc + ["metrics", "show", "--json"], repo, env))
    summary = next(iter(metrics.values()))["data"]["reports/ablation_summary.json"]["data"]
    assert summary["cells"]["gen-invertible"]["seeds"] == 1
    assert summary["cells"]["disc-f"]["f"]["sts_avg"]["n"] == 1
    assert (repo / "reports" / "ablation.md").read_text().startswith("# Ablation")
    assert (repo / "mlflow.db").is_file()

    assert "Running stage" not in _run(dvc + stage, repo, env)            # nothing changed: nothing runs
    with (repo / "platform" / "tuning" / "report.py").open("a") as code:
        code.write("\n# a change to the report code\n")
    third = _run(dvc + stage, repo, env)
    assert "Running stage 'reports/dvc.yaml:ablation'" in third
    assert third.count("already trained and evaluated") == 2               # rebuilt from MLflow, nothing retrained
