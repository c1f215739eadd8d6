"""`dvc metrics show` prints the headline files, readable in 120 columns; the full records stay reachable."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from skipview.platform.tracking import headline

REPO = Path(__file__).resolve().parents[3]


def test_each_kind_picks_its_few_numbers(tmp_path):
    train = {"metrics": {"step": 300, "sts14": 31.0, "loss": 3.9}, "run_name": "r"}
    evaluation = {"metrics": {"sts14.pearson.mean": 32.5, "sts12.pearson.mean": 20.0}}
    (tmp_path / "train.json").write_text(json.dumps(train))
    (tmp_path / "eval.json").write_text(json.dumps(evaluation))
    assert headline.main(["model", str(tmp_path / "train.json"), str(tmp_path / "eval.json"),
                          str(tmp_path / "out" / "m.json")]) == 0
    assert json.loads((tmp_path / "out" / "m.json").read_text()) == {"steps": 300, "sts14": 32.5}
    assert headline.ablation({"claims_measured": 16, "claims_reproduced": 3, "cells": {}}) == {
        "claims": 16, "reproduced": 3}


def test_a_record_of_the_wrong_kind_is_one_error_line(tmp_path, capsys):
    (tmp_path / "a.json").write_text("{}")
    assert headline.main(["ablation", str(tmp_path / "a.json"), str(tmp_path / "out.json")]) == 1
    assert capsys.readouterr().err.count("\n") == 1 and not (tmp_path / "out.json").exists()


@pytest.mark.skipif(shutil.which("dvc", path=str(Path(sys.executable).parent)) is None, reason="dvc not installed")
def test_dvc_metrics_show_fits_120_columns_and_the_full_files_are_reachable():
    dvc = shutil.which("dvc", path=str(Path(sys.executable).parent))
    shown = subprocess.run([dvc, "metrics", "show"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    lines = shown.splitlines()
    assert max(len(line) for line in lines) <= 120, shown
    shown_files = {line.split()[0] for line in lines[1:]}
    committed = {str(p.relative_to(REPO)) for p in (REPO / "metrics" / "summary").glob("*.json")}
    # a study not yet run is a row with no file behind it until its stage writes one
    not_run = {f"metrics/summary/{p.parent.name}.json" for p in (REPO / "reports").glob("*/ablation_summary.json")}
    not_run = {f"metrics/summary/{p.stem}.json" for p in (REPO / "studies").glob("*.yaml")} - not_run
    assert committed <= shown_files and shown_files - committed <= not_run, shown
    full = subprocess.run([dvc, "metrics", "show", "--json", "metrics/eval/disc-gutenberg_novels.json"], cwd=REPO,
                          capture_output=True, text=True, check=True).stdout
    assert "sts12.pearson.mean" in full
