"""`dvc repro` of the repository's own dvc.yaml from raw corpus to evaluation metrics, on three real Gutenberg
books and the real SentEval data, with tiny train params (real DVC, Ray, MLflow; a temporary git repository)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
SHARED = (REPO / ".." / "shared" / "data").resolve()
BOOKS = ("pg11.txt.gz", "pg986.txt.gz", "pg2754.txt.gz")
OBJECTIVES = ("disc", "gen")

pytestmark = pytest.mark.slow


def run(args: list[str], cwd: Path, env: dict) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done.stdout + done.stderr


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, dict]:
    books = SHARED / "corpora" / "gutenberg_novels" / "books"
    if not all((books / b).is_file() for b in BOOKS) or not (SHARED / "senteval").is_dir():
        pytest.skip(f"real data not found under {SHARED}")
    data_root = tmp_path / "data"
    (data_root / "corpora" / "gutenberg_novels" / "books").mkdir(parents=True)
    sums = []
    for book in BOOKS:
        shutil.copy2(books / book, data_root / "corpora" / "gutenberg_novels" / "books" / book)
        sums.append(subprocess.run(["sha256sum", f"books/{book}"], cwd=data_root / "corpora" / "gutenberg_novels",
                                   capture_output=True, text=True, check=True).stdout)
    (data_root / "corpora" / "gutenberg_novels" / "SHA256SUMS").write_text("".join(sums))
    (data_root / "senteval").symlink_to(SHARED / "senteval")

    repo = tmp_path / "repo"
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, capture_output=True,
                            text=True, check=True).stdout.split()
    for name in listed:
        if (REPO / name).is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, repo / name)
    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["data_root"] = str(data_root)
    gutenberg = params["corpora"]["gutenberg_novels"]
    gutenberg["wordvecs"] = {**gutenberg["wordvecs"], "dim": 16, "epochs": 1, "buckets": 1000, "threads": 1}
    params["train"].update(objectives=list(OBJECTIVES), corpora=["gutenberg_novels"], hidden_size=8, workers=2)
    params["train"]["settings"].update(batch_size=16, max_steps=6, checkpoint_every=3, postprocessing_sentences=200)
    params["evaluate"] = {"tasks": "sts14,sickr_unsup", "protocol": "fast"}
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "skipview").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m skipview.platform.cli "$@"\n')
    (bin_dir / "skipview").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "DVC_NO_ANALYTICS": "1"}
    env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p)
    env.pop("MLFLOW_TRACKING_URI", None)
    env.pop("RAY_ADDRESS", None)
    git = ["git", "-c", "user.name=test", "-c", "user.email=test@example.org"]
    run(git + ["init", "-q"], repo, env)
    run(git + ["add", "-A"], repo, env)
    run(git + ["commit", "-qm", "fresh checkout"], repo, env)
    return repo, env


def test_dvc_repro_from_raw_corpus_to_evaluation_metrics(repo):
    repo, env = repo
    dvc = [sys.executable, "-m", "dvc"]
    targets = [f"evaluate@{o}-gutenberg_novels" for o in OBJECTIVES]
    output = run(dvc + ["repro", *targets], repo, env)
    ran = set(re.findall(r"Running stage '([^']+)'", output))
    assert {"fetch@gutenberg_novels", "prepare@gutenberg_novels", "wordvecs@gutenberg_novels", "fetch_senteval",
            *[f"train@{o}-gutenberg_novels" for o in OBJECTIVES], *targets} == ran
    for objective in OBJECTIVES:
        trained = json.loads((repo / "metrics" / "train" / f"{objective}-gutenberg_novels.json").read_text())
        assert trained["metrics"]["step"] == 6
        evaluated = json.loads((repo / "metrics" / "eval" / f"{objective}-gutenberg_novels.json").read_text())
        assert -100 <= evaluated["metrics"]["sts14.pearson.mean"] <= 100
    # lineage: the MLflow run names the DVC hash of the prepared corpus it was trained on
    lock = yaml.safe_load((repo / "dvc.lock").read_text())["stages"]
    prepared_md5 = next(o["md5"] for o in lock["prepare@gutenberg_novels"]["outs"])
    from skipview.platform.tracking import store

    client = store.client(f"sqlite:///{repo}/mlflow.db")
    tags = client.get_run(trained["mlflow_run_id"]).data.tags
    assert tags["corpus.hash"] == f"dvc:{prepared_md5}"
    assert "up to date" in run(dvc + ["status", *targets], repo, env)
