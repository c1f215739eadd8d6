"""A learning curve: a study whose `sizes` run every row on each nested cut of its corpus (one part per size, rows
named <row>.<size>), and its report, generated from whatever run records have landed."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from skipview.platform.cli import run
from skipview.platform.studies import learning_curve
from skipview.platform.studies.matrix import Define, load_catalogue, pick
from skipview.platform.studies.report import RunRecord
from skipview.platform.studies.runner import cell_settings
from skipview.platform.studies.study import StudyError, load_study

REPO = Path(__file__).parents[3]
CURVE = """\
question: Does the margin grow?
corpus: toy_curve
sizes: [small, medium, large, all]
config: reports/tune_sif_claim/best_config.yaml
settings: {epochs: 3, max_steps: null}
cells: [disc-fg, gen-invertible, fasttext-usif, fasttext-sif]
cell_settings:
  gen-invertible: {batch_size: 256}
seeds: 3
"""


@pytest.fixture()
def repo(monkeypatch):
    monkeypatch.chdir(REPO)


def test_every_row_runs_on_each_cut_with_the_same_settings(repo, tmp_path):
    (tmp_path / "curve.yaml").write_text(CURVE)
    study = load_study(tmp_path / "curve.yaml")
    assert [part.size for part in study.parts] == ["small", "medium", "large", "all"]
    for part in study.parts:
        assert [c.name for c in part.matrix.rows(True)] == [f"{row}.{part.size}" for row in (
            "gen-invertible", "disc-fg", "fasttext-sif", "fasttext-usif")]
        assert all(c.tags["size"] == part.size for c in part.matrix.rows(True))
        assert part.base.corpus == str(Path(f"data/toy_curve/prepared/{part.size}").resolve())
        assert part.base.wordvecs == str(Path(f"data/toy_curve/wordvecs/{part.size}").resolve())
    # the whole study's matrix is every size's rows; its base is the largest size's
    assert len(study.matrix.cells) == 8 and len(study.matrix.references) == 8
    assert study.base == study.parts[-1].base
    trained = [{c.name.split(".")[0]: cell_settings(part.base, c, 1) for c in part.matrix.cells}
               for part in study.parts]
    for size in trained:       # the same settings at every size but the data it reads
        for row, settings in size.items():
            assert settings.model_dump(exclude={"corpus", "wordvecs"}) == trained[0][row].model_dump(
                exclude={"corpus", "wordvecs"})
    assert (trained[0]["gen-invertible"].batch_size, trained[0]["disc-fg"].batch_size) == (256, 512)


def test_a_size_renames_combined_parts_and_claims_alike(repo):
    catalogue = load_catalogue()
    matrix = pick(catalogue, Define(), ["disc-f", "disc-g", "disc-fg", "disc-f+disc-g"], ["eq3_self_pairs"],
                  ["sts_avg"]).at_size("1k")
    assert matrix.combined[0].name == "disc-f+disc-g.1k"
    assert matrix.combined[0].combine == ["disc-f.1k/f", "disc-g.1k/g"]
    assert all(c.better.split("/")[0].endswith(".1k") and c.worse.split("/")[0].endswith(".1k")
               for c in matrix.claims) and matrix.claims


def test_an_unknown_size_is_one_line(repo, capsys):
    assert run(["study", "run", "learning_curve", "--sizes", "5M"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == ("error: skipview study run: Invalid value: 5M: not a size of studies/learning_curve.yaml "
                    "(sizes: 100k, 300k, 600k, all) (see skipview study run --help)")


def _repo_with_curve(tmp_path: Path) -> Path:
    (tmp_path / "studies").mkdir()
    shutil.copy(REPO / "studies" / "catalogue.yaml", tmp_path / "studies")
    (tmp_path / "reports" / "tune_sif_claim").mkdir(parents=True)
    shutil.copy(REPO / "reports" / "tune_sif_claim" / "best_config.yaml", tmp_path / "reports" / "tune_sif_claim")
    (tmp_path / "studies" / "curve.yaml").write_text(CURVE)
    return tmp_path


def _record(folder: Path, cell: str, seed: int, sts: float, hours: float = 0.0, seen: float = 0.0,
            vectors: str = "vectors-sha256:a", params: dict | None = None, hardware: str | None = None) -> None:
    metrics = {f"ensemble/{task}.pearson.mean": sts for task in ("sts12", "sts13", "sts14", "sickr_unsup")}
    metrics.update({"ensemble/stsb_unsup.pearson.mean": sts - 1, "train/hours": hours, "train/sentences_seen": seen})
    params = {"train.precision": "fp32", "train.corpus": f"data/{cell}", "matrix.cell": cell, **(params or {})}
    lineage = {"wordvecs.hash": vectors, **({"hardware": hardware} if hardware else {})}
    record = RunRecord(f"id-{cell}-{seed}", cell, seed, 0, metrics, params, {}, lineage)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / record.file_name).write_text(json.dumps(record.as_json()))


def test_the_report_fits_the_margin_in_log_sentences_from_what_has_landed(tmp_path, monkeypatch):
    monkeypatch.chdir(_repo_with_curve(tmp_path))
    sentences = {"small": 10_000, "medium": 100_000, "large": 1_000_000}
    for size, n in sentences.items():
        (tmp_path / "metrics" / "toy_curve" / size).mkdir(parents=True)
        (tmp_path / "metrics" / "toy_curve" / size / "cut.json").write_text(json.dumps({"sentences": n}))
    runs = tmp_path / "reports" / "curve" / "runs"
    for size, n in sentences.items():
        _record(runs, f"fasttext-usif.{size}", 0, 60.0)
        _record(runs, f"fasttext-sif.{size}", 0, 58.0)
        # disc-fg's margin is -3 + 0.5 ln(n) exactly on average, seeds +-0.1 around it
        for seed, noise in enumerate((-0.1, 0.0, 0.1)):
            _record(runs, f"disc-fg.{size}", seed, 60.0 - 3 + 0.5 * math.log(n) + noise, hours=n / 1e6, seen=3 * n,
                    hardware="1 × Test CPU, 2 cores, native bf16: yes" if size == "large" else None)
    # gen-invertible landed at two sizes only, one seed at the second
    for seed in range(3):
        _record(runs, f"gen-invertible.small", seed, 59.0 + 0.2 * seed)
    _record(runs, f"gen-invertible.medium", 0, 61.0, vectors="vectors-sha256:b")     # continued elsewhere

    assert learning_curve.main(["curve"]) == 0
    out = tmp_path / "reports" / "curve"
    data = json.loads((out / "curve.json").read_text())
    trend = data["trends"]["disc-fg"]
    assert (trend["slope_per_e"], trend["intercept"]) == (pytest.approx(0.5), pytest.approx(-3))
    book = trend["predictions"]["BookCorpus"]
    assert book["margin"] == pytest.approx(-3 + 0.5 * math.log(74e6))
    assert book["low"] < book["margin"] < book["high"]
    assert data["trends"]["gen-invertible"] is None                     # two sizes: no trend
    assert trend["falls"] == []                                          # it rises at every size
    # margins and verdicts: disc-fg at 10k is 1.6 above uSIF with a 0.1 spread; gen one seed at medium
    small = data["sizes"]["small"]["rows"]
    assert small["disc-fg"]["margin"]["mean"] == pytest.approx(-3 + 0.5 * math.log(1e4))
    assert small["disc-fg"]["verdict"] == "above beyond its seed spread"
    assert small["gen-invertible"]["verdict"] == "below beyond its seed spread"      # -0.8 +- 0.2
    # its vectors have no uSIF: no margin, rather than one over a uSIF of other vectors
    assert data["sizes"]["medium"]["rows"]["gen-invertible"]["verdict"] == "not measured"
    assert data["unpaired"] == {"medium": ["`gen-invertible` seed 0"]}
    assert small["disc-fg"]["sentences_per_s"]["mean"] == pytest.approx(3 * 1e4 / (1e4 / 1e6 * 3600))
    # what the trained runs computed on, from their records (the baselines' evaluations are not counted)
    assert data["hardware"] == {"small": {"not recorded": 6}, "medium": {"not recorded": 4},
                                "large": {"1 × Test CPU, 2 cores, native bf16: yes": 3}, "all": {}}
    text = (out / "curve.md").read_text()
    assert "`gen-invertible`: no trend: fewer than 3 sizes measured (1 so far)" in text
    assert "**Not measured yet**" in text and "`disc-fg` at all" in text and "`gen-invertible` at large" in text
    assert "- small: `disc-fg` above uSIF beyond its seed spread" in text
    assert "- all: no trained row measured yet" in text
    assert "A prediction, not a measurement." in text
    assert "large: 1 × Test CPU, 2 cores, native bf16: yes (3 runs)." in text
    assert "**No uSIF on the same vectors** at medium: `gen-invertible` seed 0" in text
    assert (out / "curve.png").stat().st_size > 0 and (out / "margin.png").stat().st_size > 0
    lines = (out / "margin.csv").read_text().splitlines()
    assert lines[0] == "sentences,size,row,seed,margin" and len(lines) == 1 + 9 + 3


def test_a_margin_that_falls_with_more_data_is_said_to_break_the_trend(tmp_path, monkeypatch):
    monkeypatch.chdir(_repo_with_curve(tmp_path))
    runs = tmp_path / "reports" / "curve" / "runs"
    for size, n, margin in (("small", 10_000, 2.0), ("medium", 100_000, 3.0), ("large", 1_000_000, 1.0)):
        (tmp_path / "metrics" / "toy_curve" / size).mkdir(parents=True)
        (tmp_path / "metrics" / "toy_curve" / size / "cut.json").write_text(json.dumps({"sentences": n}))
        _record(runs, f"fasttext-usif.{size}", 0, 60.0)
        for seed, noise in enumerate((-0.1, 0.0, 0.1)):
            _record(runs, f"disc-fg.{size}", seed, 60.0 + margin + noise)

    assert learning_curve.main(["curve"]) == 0
    falls = json.loads((tmp_path / "reports" / "curve" / "curve.json").read_text())["trends"]["disc-fg"]["falls"]
    assert [(f["from"], f["to"]) for f in falls] == [("medium", "large")]      # 3.0 +- 0.1 down to 1.0 +- 0.1
    assert falls[0]["to_margin"]["mean"] == pytest.approx(1.0)
    text = (tmp_path / "reports" / "curve" / "curve.md").read_text()
    assert "**Not monotone**: its margin falls from 3.00 ± 0.10 at medium to 1.00 ± 0.10 at large" in text
    study = load_study(tmp_path / "studies" / "curve.yaml")
    assert "the margin is not monotone in size" in "".join(learning_curve.readme_tables([study]))


def test_a_borrowed_size_reads_other_studies_records_pairs_each_run_with_usif_on_its_vectors_and_is_never_trained(
        tmp_path, monkeypatch, capsys):
    root = _repo_with_curve(tmp_path)
    monkeypatch.chdir(root)
    curve = root / "studies" / "curve.yaml"
    curve.write_text(CURVE + "borrow:\n  all: [full, full_gg]\n")
    for name in ("full", "full_gg"):
        (root / "studies" / f"{name}.yaml").write_text(CURVE.replace("sizes: [small, medium, large, all]\n", ""))
    (root / "metrics" / "toy_curve" / "small").mkdir(parents=True)
    (root / "metrics" / "toy_curve" / "small" / "cut.json").write_text(
        json.dumps({"sentences": 10_000, "source_sentences": 1_000_000}))
    runs = root / "reports" / "curve" / "runs"
    _record(runs, "fasttext-usif.small", 0, 50.0)
    _record(runs, "disc-fg.small", 0, 49.0)
    # two studies of the full corpus, each with its own vectors and its own uSIF on them
    for seed in range(3):
        _record(root / "reports" / "full" / "runs", "disc-fg", seed, 61.0 + seed, vectors="c",
                params={"train.precision": "bf16"})
        _record(root / "reports" / "full_gg" / "runs", "gen-invertible", seed, 63.0, vectors="d")
    _record(root / "reports" / "full" / "runs", "fasttext-usif", 0, 62.0, vectors="c")
    _record(root / "reports" / "full" / "runs", "disc-ff", 0, 99.0, vectors="c")          # not a row of the curve
    _record(root / "reports" / "full_gg" / "runs", "fasttext-usif", 0, 62.5, vectors="d")

    study = load_study(curve)
    assert [part.size for part in study.own_parts] == ["small", "medium", "large"]
    borrowed = study.borrowed_records()
    assert sorted({r.cell for r in borrowed}) == ["disc-fg.all", "fasttext-usif.all", "gen-invertible.all"]
    assert {r.lineage["borrowed_from"] for r in borrowed if r.cell == "gen-invertible.all"} == {"full_gg"}

    assert learning_curve.main(["curve"]) == 0
    data = json.loads((root / "reports" / "curve" / "curve.json").read_text())
    at_all = data["sizes"]["all"]
    assert at_all["sentences"] == 1_000_000 and at_all["usif"] == {"c": 62.0, "d": 62.5}
    assert at_all["rows"]["disc-fg"]["margin"]["values"] == [-1.0, 0.0, 1.0]          # over uSIF on c
    assert at_all["rows"]["gen-invertible"]["margin"]["values"] == [0.5, 0.5, 0.5]     # over uSIF on d
    assert data["borrowed"]["all"] == {"full": ["train.precision (bf16 there, fp32 here)"], "full_gg": []}
    text = (root / "reports" / "curve" / "curve.md").read_text()
    assert "**all is borrowed** from `full`" in text and "| all | 1,000,000 sentences | 62.00 / 62.50 |" in text
    # the README's lines: the sizes measured, each row's margin, the prediction (none: two sizes only)
    readme = learning_curve.readme_table(study).splitlines()
    assert readme[2] == ("| trained row: margin over uSIF, ×100 | 0.01M sentences | 1.00M sentences | predicted at "
                         "BookCorpus size (74M), 95% | paper at BookCorpus |")
    assert readme[4] == "| `disc-fg` | -1.00 (n=1) | +0.00 ± 1.00 | no trend yet (fewer than 3 sizes) | D1: +2.1 over " \
                        "fastText + WR |"

    assert run(["study", "run", str(curve), "--sizes", "all"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("error: skipview study run: Invalid value: all: borrowed from full, full_gg, never "
                           "trained by ")


def test_a_borrowed_size_must_be_a_size_and_name_another_study(tmp_path, monkeypatch):
    root = _repo_with_curve(tmp_path)
    monkeypatch.chdir(root)
    curve = root / "studies" / "curve.yaml"
    for borrow, why in (("{huge: [curve]}", "borrow.huge: not one of the study's sizes"),
                        ("{all: [curve]}", "curve: no other study file curve.yaml beside this one"),
                        ("{all: [missing]}", "missing: no other study file missing.yaml beside this one")):
        curve.write_text(CURVE + f"borrow: {borrow}\n")
        with pytest.raises(StudyError, match=why.split(": ", 1)[-1].replace(".", r"\.")):
            load_study(curve)
