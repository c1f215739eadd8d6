"""The ablation stage (reports/dvc.yaml) run by real DVC in a temporary git repository on toy data: it trains
and reports with the summary as DVC metrics; a second repro does nothing; a change to the report code reruns the
stage, which finds the finished runs in MLflow and trains nothing again."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml
from dvc_checkout import DVC, REPO, fresh_checkout, run

pytestmark = pytest.mark.slow


def test_dvc_repro_of_the_ablation_stage(tiny_data, toy_senteval, tmp_path):
    corpus, wordvecs = tiny_data
    matrix = yaml.safe_load((REPO / "platform" / "tuning" / "ablation.yaml").read_text())
    tiny_matrix = {"cells": [c for c in matrix["cells"] if c["name"] in ("gen-invertible", "disc-f")],
                   "columns": matrix["columns"], "claims": [matrix["claims"][2]]}        # gen ensemble vs gen f

    def add_files(repo):
        shutil.copytree(corpus, repo / "data" / "toy" / "prepared")
        shutil.copytree(wordvecs, repo / "data" / "toy" / "wordvecs")
        shutil.copytree(toy_senteval, repo / "data" / "senteval" / "downstream")
        (repo / "tiny_matrix.yaml").write_text(yaml.safe_dump(tiny_matrix, sort_keys=False))

    def tiny(params: dict) -> None:
        params["ablation"].update(corpus="toy", matrix="tiny_matrix.yaml", seeds=1, tasks="sts14", protocol="fast",
                                  hidden_size=8, batch_size=16, max_steps=4, checkpoint_every=4)

    repo, env = fresh_checkout(tmp_path, tiny, add_files)

    stage = ["repro", "--single-item", "reports/dvc.yaml:ablation"]
    first = run(DVC + stage, repo, env)
    assert "Running stage 'reports/dvc.yaml:ablation'" in first
    # the full summary is an output, not a default metric (too wide for the table): it is shown by naming it; the
    # data stages' metrics were never produced here, so DVC may append a warning after the JSON
    shown = run(DVC + ["metrics", "show", "--json", "reports/ablation_smoke/ablation_summary.json"], repo, env)
    metrics, _ = json.JSONDecoder().raw_decode(shown)
    summary = next(iter(metrics.values()))["data"]["reports/ablation_smoke/ablation_summary.json"]["data"]
    assert summary["cells"]["gen-invertible"]["seeds"] == 1
    assert summary["cells"]["disc-f"]["f"]["sts_avg"]["n"] == 1
    assert (repo / "reports" / "ablation_smoke" / "ablation.md").read_text().startswith("# Ablation")
    assert (repo / "mlflow.db").is_file()

    assert "Running stage" not in run(DVC + stage, repo, env)            # nothing changed: nothing runs
    with (repo / "platform" / "tuning" / "report.py").open("a") as code:
        code.write("\n# a change to the report code\n")
    third = run(DVC + stage, repo, env)
    assert "Running stage 'reports/dvc.yaml:ablation'" in third
    assert third.count("already trained and evaluated") == 2               # rebuilt from MLflow, nothing retrained


def test_dvc_repro_of_a_study_file_whose_records_outlive_the_machine(tiny_data, toy_senteval, tmp_path):
    """`study@<name>` runs `skipview study run`: it trains, writes a record per run and the report; on another
    machine (no MLflow store, no runs/) the committed records stand for the runs and nothing is trained again."""
    corpus, wordvecs = tiny_data
    study = {"question": "Does a toy run?", "corpus": "toy", "seeds": 1, "tasks": ["sts14"], "protocol": "fast",
             "cells": ["disc-f", "fasttext-sif"], "headline": {"row": "disc-f/f", "baseline": "fasttext-sif/ensemble"},
             "settings": {"objective_settings.hidden_size": 8, "batch_size": 16, "max_steps": 4,
                          "checkpoint_every": 4, "postprocessing_sentences": 50}}

    def add_files(repo):
        shutil.copytree(corpus, repo / "data" / "toy" / "prepared")
        shutil.copytree(wordvecs, repo / "data" / "toy" / "wordvecs")
        shutil.copytree(toy_senteval, repo / "data" / "senteval" / "downstream")
        (repo / "studies" / "toy.yaml").write_text(yaml.safe_dump(study, sort_keys=False))

    repo, env = fresh_checkout(tmp_path, lambda params: params.update(studies={"toy": {"corpus": "toy"}}), add_files)
    stage = ["repro", "--single-item", "reports/dvc.yaml:study@toy"]
    first = run(DVC + stage, repo, env)
    assert "study toy: 2 runs done now, 0 already recorded" in first
    records = sorted(p.name for p in (repo / "reports" / "toy" / "runs").glob("*.json"))
    assert records == ["disc-f-seed0.json", "fasttext-sif-seed0.json"]
    summary = json.loads((repo / "reports" / "toy" / "ablation_summary.json").read_text())
    assert summary["cells"]["disc-f"]["f"]["sts14"]["n"] == 1

    (repo / "mlflow.db").unlink()                                    # another machine: no store, no checkpoints
    shutil.rmtree(repo / "runs")
    again = run(DVC + ["repro", "--force", "--single-item", "reports/dvc.yaml:study@toy"], repo, env)
    assert "study toy: 0 runs done now, 2 already recorded" in again
    assert json.loads((repo / "reports" / "toy" / "ablation_summary.json").read_text())["cells"] == summary["cells"]
