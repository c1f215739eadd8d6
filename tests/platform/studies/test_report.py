"""The ablation report built from a real MLflow SQLite store filled with runs whose numbers are known."""

from __future__ import annotations

import csv
import json
import statistics
import zlib
from pathlib import Path

import pytest

from study_matrices import table6

from skipview.platform.studies.matrix import HOURS, SENTENCES_SEEN, metric_key
from skipview.platform.studies.report import build_report

EXPERIMENT = "ablation-test"
# A store whose evaluation had no STS15/16 and no MPQA (as with ../shared/data): those are left out of averages.
STS = ["sts12.pearson.mean", "sts13.pearson.mean", "sts14.pearson.mean", "sickr_unsup.pearson.mean"]
BINARY = ["mr.acc", "cr.acc", "subj.acc", "sst2.acc"]


def value(cell: str, view: str, metric: str, seed: int) -> float:
    """A deterministic, distinct number per (cell, view, metric, seed)."""
    base = {"disc-fg": 60.0, "gen-invertible": 50.0, "disc-f": 40.0}[cell]
    shift = {"f": 0.0, "g": 3.0, "ensemble": 6.0}[view]
    return base + shift + (zlib.crc32(metric.encode()) % 7) * 0.5 + seed * 1.25


def curve(key: str, step: int, seed: int) -> float:
    return {"sts14": 20.0, "sts14/f": 10.0, "temperature": 1.0}[key] + step * 0.5 + seed


@pytest.fixture()
def store(tmp_path):
    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment = client.create_experiment(EXPERIMENT, artifact_location=str(tmp_path / "artifacts"))
    matrix = table6()
    cells = {c.name: c for c in matrix.rows(references=True)}

    def log(cell: str, seed: int, status: str = "FINISHED", offset: float = 0.0, params=None) -> None:
        tags = {"skipview.study": "ablation", "cell": cell, "seed": str(seed), **cells[cell].tags,
                "skipview.ablation.evaluated": "true"}
        run = client.create_run(experiment, run_name=f"{cell}-seed{seed}", tags=tags)
        metrics = [Metric(metric_key(view, m), value(cell, view, m, seed) + offset, 0, 0)
                   for view in cells[cell].views for m in STS + BINARY]
        metrics += [Metric(HOURS, 0.5 + seed * 0.1, 0, 0), Metric(SENTENCES_SEEN, 1000.0 * (seed + 1), 0, 0)]
        if cell == "disc-fg":                                        # training curves: known values per step
            metrics += [Metric(key, curve(key, step, seed) + offset, 0, step)
                        for key in ("sts14", "sts14/f", "temperature") for step in (0, 5, 10)]
        client.log_batch(run.info.run_id, metrics=metrics)
        for key, val in (params or {"train.objective_settings.hidden_size": "64", "train.max_steps": "200",
                                    "train.corpus": str(Path.cwd() / "data/novels/prepared"),
                                    "matrix.cell": cell}).items():
            client.log_param(run.info.run_id, key, val)
        client.set_terminated(run.info.run_id, status)

    for seed in range(3):
        log("disc-fg", seed, offset=-100.0 if seed == 0 else 0.0)   # seed 0 is superseded by a rerun below
        log("gen-invertible", seed)
    log("disc-fg", 0)                                                # the rerun: the latest run counts
    log("disc-f", 0)
    log("disc-f", 1, status="FAILED", offset=+500.0)                 # failed runs never enter the report
    unevaluated = client.create_run(experiment, tags={"skipview.study": "ablation", "cell": "disc-g", "seed": "0"})
    client.set_terminated(unevaluated.info.run_id, "FINISHED")        # trained but never evaluated: left out
    return client, matrix


def test_report_from_mlflow_runs(store, tmp_path):
    client, matrix = store
    paths = build_report(client, EXPERIMENT, matrix, tmp_path / "reports")
    summary = json.loads(paths["summary"].read_text())

    for cell, view, seeds in [("disc-fg", "ensemble", 3), ("disc-fg", "f", 3), ("gen-invertible", "g", 3),
                              ("disc-f", "f", 1)]:
        per_seed = [statistics.fmean(value(cell, view, m, s) for m in STS) for s in range(seeds)]
        got = summary["cells"][cell][view]["sts_avg"]
        assert got["n"] == seeds
        assert got["mean"] == pytest.approx(statistics.fmean(per_seed))
        assert got["std"] == (pytest.approx(statistics.stdev(per_seed)) if seeds > 1 else None)
        per_seed = [statistics.fmean(value(cell, view, m, s) for m in BINARY) for s in range(seeds)]
        assert summary["cells"][cell][view]["binary_avg"]["mean"] == pytest.approx(statistics.fmean(per_seed))
    assert summary["cells"]["disc-fg"]["hours"]["mean"] == pytest.approx(0.6)
    assert summary["cells"]["disc-fg"]["sentences_seen"]["mean"] == pytest.approx(2000.0)
    assert summary["cells"]["disc-fg"]["f"]["mrpc_acc"]["n"] == 0          # MRPC absent: no number invented

    claims = {(c["better"], c["worse"], c["column"]): c for c in summary["claims"]}
    assert claims["disc-fg/ensemble", "disc-fg/f", "sts_avg"]["verdict"] == "reproduced"      # +6 over std ~1.25
    assert claims["disc-fg/f", "disc-f/f", "sts_avg"]["difference"] == pytest.approx(
        summary["cells"]["disc-fg"]["f"]["sts_avg"]["mean"] - summary["cells"]["disc-f"]["f"]["sts_avg"]["mean"])
    assert claims["disc-fg/f", "disc-ff/f1", "sts_avg"]["verdict"] == "not measured"
    worse_first = claims["gen-invertible/g", "gen-invertible/f", "sts_avg"]
    assert worse_first["verdict"] == "reproduced"                                              # g = f + 3
    assert worse_first["seeds"] == [3, 3] and worse_first["noise"] == pytest.approx(1.25)
    assert summary["claims_reproduced"] + summary["claims_tied"] + summary["claims_reversed"] == (
        summary["claims_measured"])

    text = paths["markdown"].read_text()
    assert "| disc-fg | z_f | 3 |" in text
    # beside the paper: the catalogue's numbers next to the measured ones; a quoted row with no run says so
    fg_ensemble = summary["cells"]["disc-fg"]["ensemble"]["sts_avg"]
    assert (f"| disc-fg | en(z_f, z_g) | 71.4 | {fg_ensemble['mean']:.1f} ± {fg_ensemble['std']:.1f} (n=3) |"
            in text)
    assert "| disc-ff | z_f1 | 49.7 | not measured |" in text
    assert "en(z_f, z_g)" in text
    assert ("No finished run for: gen-no-invertible, disc-ff, disc-gg, disc-g, disc-f+disc-g, disc-ff+disc-gg, "
            "skipthought." in text)
    assert "not in any run: sts15.pearson.mean, sts16.pearson.mean" in text
    assert "| `max_steps` | `200` |" in text                             # the shared settings state dims and steps
    assert "| `corpus` | `data/novels/prepared` |" in text                # relative to the working directory
    assert "matrix.cell" not in text                                     # the identity is not a setting
    assert "fasttext-avg" not in text                                    # baselines appear only when they ran
    assert paths["chart"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # curves: the mean over the cell's latest run per seed (seed 0's superseded run, 100 lower, is not in it)
    curves = json.loads(paths["curves"].read_text())
    assert set(curves) == {"disc-fg"}                                    # no other cell logged a curve
    for key in ("sts14", "sts14/f", "temperature"):
        assert curves["disc-fg"][key]["steps"] == [0, 5, 10] and curves["disc-fg"][key]["seeds"] == 3
        assert curves["disc-fg"][key]["mean"] == pytest.approx([curve(key, step, 1) for step in (0, 5, 10)])
    assert paths["curves_chart"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "![training curves](ablation_curves.png)" in text
    # the table DVC's plots draw: STS14 per step, cell and view (the ensemble and f here; not the temperature)
    table = list(csv.DictReader(paths["curves_table"].read_text().splitlines()))
    assert [(r["step"], r["cell"], r["view"]) for r in table] == [
        (str(step), "disc-fg", view) for view in ("ensemble", "f") for step in (0, 5, 10)]
    assert [float(r["sts14"]) for r in table] == pytest.approx(
        [curve(key, step, 1) for key in ("sts14", "sts14/f") for step in (0, 5, 10)], abs=1e-4)
    assert not list((tmp_path / "reports").glob(".*.partial*"))


@pytest.mark.parametrize("better, worse, verdict", [
    ([62.0, 63.0, 64.0], [58.0, 59.0, 60.0], "reproduced"),                  # +4 over a spread of 1
    ([60.0, 61.0, 62.0], [60.5, 61.0, 61.5], "tie (within seed noise)"),      # 0 inside 1
    ([59.0, 59.5, 60.0], [60.0, 61.0, 62.0], "reversed"),                    # -1.5 below -1
    ([60.0], [59.0], "reproduced (one seed: no noise estimate)"),
    ([59.0], [60.0], "reversed (one seed: no noise estimate)"),
])
def test_a_direction_holds_ties_or_reverses_against_the_seed_spread(better, worse, verdict):
    from skipview.platform.studies.matrix import Claim
    from skipview.platform.studies.report import Stat, _check

    claim = Claim(better="a/f", worse="b/f", column="sts_avg", paper="70.0 vs 60.0")
    stats = {("a", "f"): {"sts_avg": Stat(better)}, ("b", "f"): {"sts_avg": Stat(worse)}}
    assert _check(claim, stats)["verdict"] == verdict


def test_paper_values_are_read_from_the_claims_and_a_contradiction_is_named():
    from skipview.platform.studies.matrix import Claim
    from skipview.platform.studies.report import paper_values

    claims = [Claim(better="a/f", worse="b/f", column="sts_avg", paper="70.1 vs 60"),
              Claim(better="a/f", worse="c/g", column="sts_avg", paper="Table 3: above by 2-4")]
    assert paper_values(claims) == {("a/f", "sts_avg"): 70.1, ("b/f", "sts_avg"): 60.0}
    with pytest.raises(ValueError, match=r"a/f \(sts_avg\) as both 70.1 and 71.0"):
        paper_values(claims + [Claim(better="a/f", worse="d/f", column="sts_avg", paper="71.0 vs 50.0")])
    assert len(paper_values(table6().claims)) > 40          # the catalogue's Table 6 quotes itself consistently


def test_report_refuses_an_experiment_without_study_runs(store, tmp_path):
    client, matrix = store
    client.create_experiment("empty")
    with pytest.raises(LookupError, match="no finished run"):
        build_report(client, "empty", matrix, tmp_path / "reports")
    with pytest.raises(LookupError, match="no MLflow experiment named 'absent'"):
        build_report(client, "absent", matrix, tmp_path / "reports")
    assert not (tmp_path / "reports").exists()


def test_settings_table_lists_the_shared_train_settings_with_repository_paths():
    from skipview.platform.studies.report import RunRecord, _common_params

    corpus = str(Path.cwd() / "data/novels/prepared")
    identity = {"matrix.seed": "0", "matrix.invertible": "-"}          # shared by every run of a 1-seed disc study
    runs = [RunRecord("a", "disc-fg", 0, 0, {}, {**identity, "matrix.cell": "disc-fg", "train.max_steps": "200",
                                                 "train.corpus": corpus, "train.seed": "0"}),
            RunRecord("b", "disc-f", 0, 1, {}, {**identity, "matrix.cell": "disc-f", "train.max_steps": "200",
                                                "train.corpus": corpus, "train.seed": "1"})]
    assert _common_params(runs) == {"corpus": "data/novels/prepared", "max_steps": "200"}


def test_a_study_report_keeps_every_run_in_committed_records_and_rebuilds_from_them_alone(store, tmp_path):
    """A study spread over machines: MLflow's store is local, the run records are committed beside the report."""
    client, matrix = store
    out = tmp_path / "reports"
    first = json.loads(build_report(client, EXPERIMENT, matrix, out, records=True)["summary"].read_text())
    records = sorted(p.name for p in (out / "runs").glob("*.json"))
    assert records == ["disc-f-seed0.json", "disc-fg-seed0.json", "disc-fg-seed1.json", "disc-fg-seed2.json",
                       "gen-invertible-seed0.json", "gen-invertible-seed1.json", "gen-invertible-seed2.json"]
    record = json.loads((out / "runs" / "disc-fg-seed1.json").read_text())
    assert record["curves"]["sts14"] == [[step, curve("sts14", step, 1)] for step in (0, 5, 10)]
    assert record["params"]["train.corpus"] == "data/novels/prepared"      # not the machine's absolute path
    (out / "ablation_summary.json").unlink()
    # another machine: an MLflow store with none of these runs; the report comes back whole from the records
    from mlflow.tracking import MlflowClient

    elsewhere = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'other.db'}")
    again = json.loads(build_report(elsewhere, EXPERIMENT, matrix, out, records=True)["summary"].read_text())
    assert again == first
    assert json.loads((out / "ablation_curves.json").read_text())["disc-fg"]["sts14"]["seeds"] == 3
    assert "word vectors" not in (out / "ablation.md").read_text()        # none recorded: nothing to compare
    # a seed trained elsewhere on other vectors: the report says which rows read which vectors
    record = json.loads((out / "runs" / "disc-f-seed0.json").read_text())
    (out / "runs" / "disc-f-seed0.json").write_text(json.dumps({**record, "lineage": {"wordvecs.hash": "dvc:b"}}))
    build_report(elsewhere, EXPERIMENT, matrix, out, records=True)
    text = (out / "ablation.md").read_text()
    assert "**The rows read different word vectors**" in text and "- `dvc:b`: disc-f-seed0" in text
    (out / "runs" / "disc-f-seed0.json").write_text("{not json")
    with pytest.raises(ValueError, match="disc-f-seed0.json: not a run record"):
        build_report(elsewhere, EXPERIMENT, matrix, out, records=True)
