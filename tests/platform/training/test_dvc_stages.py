"""`dvc repro` of the repository's own dvc.yaml from raw corpus to evaluation metrics, on three real Gutenberg
books and the real SentEval data, with tiny train params (real DVC, Ray, MLflow; a temporary git repository)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from dvc_checkout import DVC, REPO, fresh_checkout, run, stages_run

SHARED = (REPO / ".." / "shared" / "data").resolve()
BOOKS = ("pg11.txt.gz", "pg986.txt.gz", "pg2754.txt.gz")
OBJECTIVES = ("disc", "gen")

pytestmark = pytest.mark.slow


@pytest.fixture
def repo(tmp_path: Path, ray_join_env: dict[str, str]) -> tuple[Path, dict]:
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

    def tiny(params: dict) -> None:
        params["data_root"] = str(data_root)
        gutenberg = params["corpora"]["gutenberg_novels"]
        gutenberg["wordvecs"] = {**gutenberg["wordvecs"], "dim": 16, "epochs": 1, "buckets": 1000, "threads": 1}
        params["train"].update(objectives=list(OBJECTIVES), corpora=["gutenberg_novels"], hidden_size=8, workers=1)
        params["train"]["settings"].update(batch_size=16, max_steps=6, checkpoint_every=3,
                                           postprocessing_sentences=200)
        params["evaluate"] = {"tasks": "sts14,sickr_unsup", "protocol": "fast"}

    # the train stages join the test process's Ray, on one worker each: the claim is the pipeline's stages, lineage
    # and metrics, not how a command's own Ray starts and stops (test_local_ray.py) nor DDP across workers
    return fresh_checkout(tmp_path, tiny, ray_join_env=ray_join_env)


def test_dvc_repro_from_raw_corpus_to_evaluation_metrics(repo):
    repo, env = repo
    targets = [f"evaluate@{o}-gutenberg_novels" for o in OBJECTIVES]
    output = run(DVC + ["repro", *targets], repo, env)
    ran = stages_run(output)
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
    assert "up to date" in run(DVC + ["status", *targets], repo, env)
