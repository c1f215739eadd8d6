"""A study's stage (reports/dvc.yaml: study@<name>) run by real DVC in a temporary git repository on toy data: it
trains and reports; a second repro does nothing; `dvc plots show` draws its training curves; on another machine the
committed run records stand for the runs and nothing is trained again."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml
from dvc_checkout import DVC, REPO, fresh_checkout, run

pytestmark = pytest.mark.slow


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

    repo, env = fresh_checkout(tmp_path, lambda params: params.update(
        studies={"toy": {"corpus": "toy", "after": "platform/tuning/ablation.yaml"}}), add_files)
    stage = ["repro", "--single-item", "reports/dvc.yaml:study@toy"]
    first = run(DVC + stage, repo, env)
    assert "study toy: 2 runs done now, 0 already recorded" in first
    records = sorted(p.name for p in (repo / "reports" / "toy" / "runs").glob("*.json"))
    assert records == ["disc-f-seed0.json", "fasttext-sif-seed0.json"]
    summary = json.loads((repo / "reports" / "toy" / "ablation_summary.json").read_text())
    assert summary["cells"]["disc-f"]["f"]["sts14"]["n"] == 1
    assert "Running stage" not in run(DVC + stage, repo, env)            # nothing changed: nothing runs

    # the study's curves as DVC draws them: the stage's plots, STS14 per step and view through the study template
    shown = run(DVC + ["plots", "show", "--json", "reports/toy/sts14_curves.csv"], repo, env)
    plot = json.JSONDecoder().raw_decode(shown[shown.index("{"):])[0]["data"]["reports/toy/sts14_curves.csv"][0]
    assert plot["content"]["encoding"]["strokeDash"]["field"] == "view"
    rows = plot["content"]["data"]["values"]
    written = (repo / "reports" / "toy" / "sts14_curves.csv").read_text().splitlines()[1:]
    assert [",".join((r["step"], r["cell"], r["view"], r["sts14"])) for r in rows] == written
    assert {r["cell"] for r in rows} == {"disc-f"} and {int(r["step"]) for r in rows} == {0, 4}

    (repo / "mlflow.db").unlink()                                    # another machine: no store, no checkpoints
    shutil.rmtree(repo / "runs")
    again = run(DVC + ["repro", "--force", "--single-item", "reports/dvc.yaml:study@toy"], repo, env)
    assert "study toy: 0 runs done now, 2 already recorded" in again
    assert json.loads((repo / "reports" / "toy" / "ablation_summary.json").read_text())["cells"] == summary["cells"]
