"""benchmarks/cost.py reads its rates from the measurement files: a changed measurement changes the table."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BENCHMARKS = REPO / "reports" / "benchmarks"


def cost(tmp_path: Path, *options: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "benchmarks" / "cost.py"), "--out", str(tmp_path / "cost.json"),
                           "--markdown", str(tmp_path / "cost.md"), *options],
                          capture_output=True, text=True, timeout=120)


def rows_by_key(document: dict) -> dict:
    return {(r["model"], r["corpus"], r["gpus"]): r for r in document["training"]}


def test_the_table_follows_the_gpu_measurements(tmp_path):
    done = cost(tmp_path)
    assert done.returncode == 0, done.stderr
    before = rows_by_key(json.loads((tmp_path / "cost.json").read_text()))
    assert {gpus for _, _, gpus in before} == {1, 8, 64} and len(before) == 18
    for (model, corpus, gpus), row in before.items():
        assert row["gpu_hours"] >= row["hours"] > 0
        if gpus > 1:
            assert row["train_hours"] < before[(model, corpus, 1)]["train_hours"]
    assert "disc on bookcorpus" in (tmp_path / "cost.md").read_text()

    measured = tmp_path / "gpu"
    measured.mkdir()
    for path in BENCHMARKS.glob("gpu_*.json"):
        document = json.loads(path.read_text())
        for row in document.get("results", []):
            if row["objective"] == "disc":                     # a GPU twice as fast for disc, the same step time
                row["sentences_per_second"] *= 2
                row["tokens_per_second"] *= 2
        (measured / path.name).write_text(json.dumps(document))
    done = cost(tmp_path, "--gpu-glob", str(measured / "gpu_*.json"))
    assert done.returncode == 0, done.stderr
    after = rows_by_key(json.loads((tmp_path / "cost.json").read_text()))
    for key, row in after.items():
        ratio = row["train_hours"] / before[key]["train_hours"]
        assert abs(ratio - (0.5 if key[0] == "disc" else 1.0)) < 0.01, (key, ratio)


def test_a_scale_curve_replaces_the_data_path_figures_and_a_bad_one_is_named(tmp_path):
    scale = tmp_path / "scale.json"
    def point(copies: int, prepare_s: float, fasttext: dict, startup_s: float) -> dict:
        return {"label": "after", "copies": copies, "sentences": copies * 1_000_000, "tokens": copies * 20_000_000,
                "stages": {"prepare": {"cpu_s": prepare_s}, "wordvecs": {"fasttext_train_s": fasttext},
                           "train": {"phases": {"per_rank": {"rank0": {"startup_s": startup_s},
                                                             "rank1": {"startup_s": startup_s - 1}}}}}}
    scale.write_text(json.dumps({"machine": {"cpus": 2}, "points": {
        "after/1": point(1, 20.0, {"extrapolated_cpu_s": 200.0}, 10.0),
        "after/30": point(30, 1200.0, {"extrapolated_cpu_s": 6000.0}, 39.0),
        "after-rerun/30": {"label": "after", "stages": {}},                    # a rerun of one stage: no corpus
        "before/30": {**point(30, 12000.0, {"extrapolated_cpu_s": 6000.0}, 500.0), "label": "before"}}}))
    done = cost(tmp_path, "--scale", str(scale), "--prep-cores", "2")
    assert done.returncode == 0, done.stderr
    document = json.loads((tmp_path / "cost.json").read_text())
    rates = document["data_rates"]
    assert rates["prepare_s_per_token"] == 600.0 / 600_000_000 and rates["fasttext_s_per_token"] == 5e-6
    assert abs(rates["startup_s_per_sentence"] - 1e-6) < 1e-12                 # (39 - 10) s over 29M sentences
    bookcorpus = next(r for r in document["data_path"] if r["corpus"] == "bookcorpus")
    assert abs(bookcorpus["prepare_hours"] - bookcorpus["tokens"] * 1e-6 / 3600) < 1e-3

    scale.write_text(json.dumps({"points": [{"sentences": 1, "stages": {}}]}))
    done = cost(tmp_path, "--scale", str(scale))
    assert done.returncode != 0
    assert done.stderr.strip().startswith(f"error: {scale}:") and len(done.stderr.strip().splitlines()) == 1


def test_the_committed_table_is_the_one_the_measurements_give(tmp_path):
    """reports/benchmarks/cost.{json,md} are regenerated whenever a measurement they read changes (the command in
    reports/README.md)."""
    done = cost(tmp_path)
    assert done.returncode == 0, done.stderr
    fresh = json.loads((tmp_path / "cost.json").read_text())
    committed = json.loads((BENCHMARKS / "cost.json").read_text())
    for key in ("training", "data_path", "assumptions", "inputs"):
        assert fresh[key] == committed[key], f"rerun: {committed['command']}"
