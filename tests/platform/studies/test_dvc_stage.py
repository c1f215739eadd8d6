"""A new study, written as one file, run by real DVC in a temporary git repository on toy data: its own matrix row,
a reference row of the catalogue and a supervised analysis. The study's stage trains and reports; a second repro
does nothing; `dvc plots show` draws its training curves; the analysis's stage writes its table; on another machine
the committed run records stand for the runs and nothing is trained again. The only file written by hand is the
study's own: everything else the pipeline needs is generated (`skipview study index`)."""

from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest
import yaml
from dvc_checkout import DVC, fresh_checkout, run
from prepared_data import write_toy_mr

pytestmark = pytest.mark.slow

STUDY = {
    "question": "Does a toy run?", "corpus": "toy", "seeds": 1, "tasks": ["sts14"], "protocol": "fast",
    "cells": ["disc-f-tiny", "fasttext-sif"],
    "define": {"cells": [{"name": "disc-f-tiny", "objective": "disc", "settings": {"views": "f", "hidden_size": 8},
                          "tags": {"objective": "disc", "views": "f"}, "views": {"f": "z_f"}}]},
    "columns": ["sts_avg", "sts14"],
    "headline": {"row": "disc-f-tiny/f", "baseline": "fasttext-sif/ensemble"},
    "settings": {"batch_size": 16, "max_steps": 4, "checkpoint_every": 4, "postprocessing_sentences": 50},
    "analyses": {"sup": {"kind": "supervised", "models": [{"row": "disc-f-tiny", "views": ["f"]}], "tasks": ["mr"],
                         "baselines": ["avg"], "protocol": "fast"}},
}


def test_a_new_study_is_one_file_that_dvc_runs_analyses_and_keeps(tiny_data, toy_senteval, ray_join_env, tmp_path):
    corpus, wordvecs = tiny_data

    def add_files(repo):
        shutil.copytree(corpus, repo / "data" / "toy" / "prepared")
        shutil.copytree(wordvecs, repo / "data" / "toy" / "wordvecs")
        shutil.copytree(toy_senteval, repo / "data" / "senteval" / "downstream")
        write_toy_mr(repo / "data" / "senteval" / "downstream", np.random.default_rng(0))
        (repo / "studies" / "toy.yaml").write_text(yaml.safe_dump(STUDY, sort_keys=False))   # the one file

    # the stage's `skipview study run` joins this test process's Ray instead of starting one of its own (twice): what
    # is checked here is what the stages make, not how a command's Ray starts or stops
    repo, env = fresh_checkout(tmp_path, lambda params: None, add_files, ray_join_env)
    run(["skipview", "study", "index"], repo, env)              # generated: the index DVC's stages read
    stage = ["repro", "--single-item", "reports/dvc.yaml:study@toy"]
    first = run(DVC + stage, repo, env)
    assert "study toy: 2 runs done now, 0 already recorded" in first
    records = sorted(p.name for p in (repo / "reports" / "toy" / "runs").glob("*.json"))
    assert records == ["disc-f-tiny-seed0.json", "fasttext-sif-seed0.json"]
    summary = json.loads((repo / "reports" / "toy" / "ablation_summary.json").read_text())
    assert summary["cells"]["disc-f-tiny"]["f"]["sts14"]["n"] == 1
    # the study's row of `dvc metrics show`: its claims (none between these rows) measured and reproduced
    assert json.loads((repo / "metrics" / "summary" / "toy.json").read_text()) == {"claims": 0,
                                                                                                "reproduced": 0}
    assert "Running stage" not in run(DVC + stage, repo, env)            # nothing changed: nothing runs

    # the study's curves as DVC draws them: the stage's plots, STS14 per step and view through the study template
    shown = run(DVC + ["plots", "show", "--json", "reports/toy/sts14_curves.csv"], repo, env)
    plot = json.JSONDecoder().raw_decode(shown[shown.index("{"):])[0]["data"]["reports/toy/sts14_curves.csv"][0]
    assert plot["content"]["encoding"]["strokeDash"]["field"] == "view"
    rows = plot["content"]["data"]["values"]
    written = (repo / "reports" / "toy" / "sts14_curves.csv").read_text().splitlines()[1:]
    assert [",".join((r["step"], r["cell"], r["view"], r["sts14"])) for r in rows] == written
    assert {r["cell"] for r in rows} == {"disc-f-tiny"} and {int(r["step"]) for r in rows} == {0, 4}

    # the analysis the study declares, by the one analysis stage: the model's f and fastText avg on MR
    run(DVC + ["repro", "--single-item", "reports/dvc.yaml:study_analysis@toy.sup"], repo, env)
    table = json.loads((repo / "reports" / "toy" / "sup.json").read_text())
    assert [(r["encoder"], r["component_fit"]) for r in table["rows"]] == [("fastText avg", "none"),
                                                                             ("disc-f-tiny-seed0 f", "task")]
    assert all(50 <= r["scores"]["mr"] <= 100 and r["scores"]["sts14"] is not None for r in table["rows"])
    assert "| disc-f-tiny-seed0 f | task |" in (repo / "reports" / "toy" / "sup.md").read_text()

    # nothing but the study's own file was written by hand: every other change is the pipeline's output
    changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=repo,
                             capture_output=True, text=True, check=True).stdout.split("\n")
    paths = {line[3:] for line in changed if line}
    generated = ("reports/toy/", "runs/", "mlflow.db", "reports/INDEX.md", "studies/index.yaml", "reports/dvc.lock",
                 "dvc.lock", ".dvc/", "metrics/summary/toy.json")
    assert paths and all(path.startswith(generated) for path in paths), sorted(paths)

    (repo / "mlflow.db").unlink()                                    # another machine: no store, no checkpoints
    shutil.rmtree(repo / "runs")
    again = run(DVC + ["repro", "--force", "--single-item", "reports/dvc.yaml:study@toy"], repo, env)
    assert "study toy: 0 runs done now, 2 already recorded" in again
    assert json.loads((repo / "reports" / "toy" / "ablation_summary.json").read_text())["cells"] == summary["cells"]
