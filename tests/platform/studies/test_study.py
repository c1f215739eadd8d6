"""Study files: every shipped one validates; a bad one fails at load naming its file, line and key; the index is
generated from the studies' summaries."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from skipview.platform.studies.study import (PAPER_ROWS, RESULTS_BEGIN, RESULTS_END, StudyError, headline, load_study,
                                             render_dvc_index, render_index, render_readme_results, resolve,
                                             study_paths, with_readme_results)

REPO = Path(__file__).parents[3]
GOOD = """\
question: Does the multi-view f beat the single-view f?
corpus: novels_news
config: reports/tune_sif_claim/best_config.yaml
settings: {epochs: 3, max_steps: null}
cells: [disc-fg, disc-f, gen-invertible, fasttext-sif]
cell_settings:
  gen-invertible: {batch_size: 256, objective_settings.negatives: 2}
seeds: 2
headline: {row: disc-fg/f, baseline: disc-f/f}
"""


@pytest.fixture()
def repo(monkeypatch):
    monkeypatch.chdir(REPO)            # study files name the repository's config and matrix files


@pytest.mark.parametrize("path", study_paths(REPO), ids=lambda p: p.stem)
def test_every_shipped_study_validates(repo, path):
    study = load_study(path)
    assert study.name == path.stem and study.settings().experiment == path.stem
    assert study.matrix.cells and study.spec.question


def test_a_study_types_its_cells_settings(repo, tmp_path):
    path = tmp_path / "example.yaml"
    path.write_text(GOOD)
    study = load_study(path)
    assert [c.name for c in study.matrix.cells] == ["gen-invertible", "disc-fg", "disc-f"]
    assert [r.name for r in study.matrix.references] == ["fasttext-sif"]
    from skipview.platform.studies.runner import cell_settings

    cells = {c.name: c for c in study.matrix.cells}
    gen = cell_settings(study.base, cells["gen-invertible"], 1)
    disc = cell_settings(study.base, cells["disc-fg"], 1)
    assert (gen.batch_size, gen.objective_settings.negatives, gen.epochs, gen.seed) == (256, 2, 3, 1)
    assert (disc.batch_size, disc.epochs, disc.optimizer.lr) == (512, 3, pytest.approx(0.0017105267238723216))
    # data/<corpus>/..., made absolute on the driver (Ray's workers run in their own working directories)
    assert gen.corpus == str(Path("data/novels_news/prepared").resolve())
    assert gen.wordvecs == str(Path("data/novels_news/wordvecs").resolve())
    settings = study.settings(seeds=1, first_seed=2)
    assert (settings.name, settings.seeds, settings.first_seed, settings.component_fit) == ("example", 1, 2, "subset")


@pytest.mark.parametrize("change, line, message", [
    (("seeds: 2", "seeds: 2\nseed: 3"), 9, "seed: Extra inputs are not permitted"),
    (("settings: {epochs: 3, max_steps: null}", "settings: {epochs: 3, objective_settings.hidden_sise: 8}"), 4,
     "hidden_sise is a setting of none"),
    (("settings: {epochs: 3, max_steps: null}", "settings: {epochs: three}"), 4, "settings: epochs"),
    (("  gen-invertible: {", "  gen-invertibl: {"), 7, "not a trained cell of this study"),
    (("objective_settings.negatives: 2", "objective_settings.negatives: -1"), 7, "gen-invertible: objective_settings.negatives: Input should be greater than 0"),
    (("cells: [disc-fg,", "cells: [disc-fx,"), 5, "no row named disc-fx"),
    (("seeds: 2", "seeds: 2\nwarm_start: example_e0"), 9, "warm_start: no study file example_e0.yaml"),
    (("protocol", "protocol"), None, None),
])
def test_a_bad_study_is_one_error_naming_file_line_and_key(repo, tmp_path, change, line, message):
    path = tmp_path / "bad.yaml"
    path.write_text(GOOD.replace(*change))
    if line is None:                                   # the unchanged file is the control
        load_study(path)
        return
    with pytest.raises(StudyError) as error:
        load_study(path)
    text = str(error.value)
    assert text.startswith(f"{path}:{line}: ") and message in text and "\n" not in text


def test_a_study_continues_a_study_file_beside_it_and_follows_its_report(repo, tmp_path):
    (tmp_path / "short.yaml").write_text(GOOD)
    (tmp_path / "long.yaml").write_text(GOOD.replace("seeds: 2", "seeds: 2\nwarm_start: short"))
    assert load_study(tmp_path / "long.yaml").upstream == Path("reports/short/ablation_summary.json")
    assert load_study(tmp_path / "short.yaml").upstream == Path("reports/tune_sif_claim/best_config.yaml")
    (tmp_path / "plain.yaml").write_text(GOOD.replace("config: reports/tune_sif_claim/best_config.yaml\n", ""))
    assert load_study(tmp_path / "plain.yaml").upstream == Path("studies/catalogue.yaml")


def test_resolve_finds_a_study_by_name_and_lists_the_known_ones(tmp_path):
    (tmp_path / "studies").mkdir()
    (tmp_path / "studies" / "one.yaml").write_text(GOOD)
    assert resolve("one", tmp_path) == tmp_path / "studies" / "one.yaml"
    with pytest.raises(StudyError, match=r"no such study file \(studies: one\)"):
        resolve("two", tmp_path)


def test_the_index_quotes_each_studys_headline_from_its_summary(repo, tmp_path, monkeypatch):
    path = tmp_path / "example.yaml"
    path.write_text(GOOD)
    study = load_study(path)
    assert "| [example](example/ablation.md) | Does the multi-view f beat the single-view f? | not run yet |" in \
        render_index([study])
    monkeypatch.chdir(tmp_path)                        # the study's report folder: reports/example/ from here
    (tmp_path / "reports" / "example").mkdir(parents=True)
    summary = {"cells": {"disc-fg": {"seeds": 2, "f": {"sts_avg": {"mean": 58.31, "std": 0.52, "n": 2}}},
                         "disc-f": {"seeds": 1, "f": {"sts_avg": {"mean": 55.0, "std": None, "n": 1}}}}}
    summary_path = tmp_path / "reports" / "example" / "ablation_summary.json"
    summary_path.write_text(json.dumps(summary))
    row = render_index([study]).splitlines()[-1]
    assert row == ("| [example](example/ablation.md) | Does the multi-view f beat the single-view f? | disc-fg/f | 58.3 ± 0.5 | disc-f/f | "
                   "55.0 (n=1) | – | 2 | `skipview study run example` |")
    summary["cells"]["fasttext-usif"] = {"seeds": 1, "ensemble": {"sts_avg": {"mean": 62.52, "std": None, "n": 1}}}
    summary_path.write_text(json.dumps(summary))
    assert "| 55.0 (n=1) | 62.5 (n=1) | 2 |" in render_index([study]).splitlines()[-1]


def test_the_committed_indexes_are_what_the_studies_give(repo):
    """reports/INDEX.md, README.md's results table and studies/index.yaml (what DVC's study stages iterate over)
    cannot go stale: they must equal what `skipview study index` writes from the study files."""
    from skipview.platform.studies.learning_curve import readme_tables
    from skipview.platform.studies.study import DVC_INDEX, INDEX, README

    studies = [load_study(path) for path in study_paths()]
    assert INDEX.read_text() == render_index(studies), "run `skipview study index` and commit reports/INDEX.md"
    readme = README.read_text()
    assert readme == with_readme_results(readme, render_readme_results(studies, readme_tables(studies))), \
        "run `skipview study index` and commit README.md"
    assert DVC_INDEX.read_text() == render_dvc_index(studies), "run `skipview study index`"


def test_the_readme_results_are_the_paper_models_and_the_best_headline_over_seeds(repo):
    """The README's rows: the paper's two models, then the study headline with the highest mean over seeds, each
    beside its own study's uSIF and SIF; text outside the markers is kept, and a README without them is refused."""
    studies = [load_study(path) for path in study_paths()]
    rows = [line for line in render_readme_results(studies).splitlines() if line.startswith("| the ")]
    assert [row.split("`")[1] for row in rows[:2]] == list(PAPER_ROWS)
    best = max((row["value"]["mean"], study.name) for study in studies if (row := headline(study))
               and row["value"] and row["value"].get("std") is not None)
    assert f"[{best[1]}](reports/{best[1]}/" in rows[2] and f"| {best[0]:.1f} ± " in rows[2]
    written = with_readme_results(f"intro\n{RESULTS_BEGIN}\nold\n{RESULTS_END}\nafter\n", "| new |\n")
    assert written == f"intro\n{RESULTS_BEGIN}\n| new |\n{RESULTS_END}\nafter\n"
    with pytest.raises(StudyError, match="no results markers"):
        with_readme_results("a README without markers\n", "| new |\n")


ANALYSES = """\
analyses:
  sup:
    kind: supervised
    models: [{row: disc-fg, views: [f, g]}, {row: disc-f}, {name: other, path: data/models/other}]
    tasks: [sickr, mr]
    baselines: [sif]
    seeds: 1
  levers:
    kind: usif_levers
    models: {fg: disc-fg}
"""


def test_a_studys_analyses_are_the_commands_it_declares(repo, tmp_path):
    path = tmp_path / "example.yaml"
    path.write_text(GOOD + ANALYSES)
    sup, levers = load_study(path).analysis_steps(storage=str(tmp_path / "runs"))
    assert (sup.name, sup.module, sup.inputs, sup.out) == ("sup", "compare_encoders", ["data/models/other"],
                                                           "reports/example/sup")
    models = [sup.argv[i + 1] for i, word in enumerate(sup.argv) if word == "--model"]
    assert models == [f"disc-fg-seed0={tmp_path}/runs/example/models/disc-fg-seed0@f,g",
                      f"disc-f-seed0={tmp_path}/runs/example/models/disc-f-seed0@ensemble",
                      "other=data/models/other@ensemble"]
    assert sup.argv[sup.argv.index("--supervised") + 1] == "sickr,mr" and "--baselines" in sup.argv
    assert sup.argv[-1] == "--resume"              # rows of models not on this machine, or unchanged, are kept
    assert levers.module == "usif_levers" and levers.argv.count("--model") == 2            # the study's two seeds
    assert levers.command().startswith("python -m skipview.platform.studies.analyses.usif_levers --wordvecs "
                                       "data/novels_news/wordvecs")


def test_an_analysis_of_a_combined_row_ensembles_one_view_of_each_of_its_models(repo, tmp_path):
    path = tmp_path / "example.yaml"
    study = GOOD.replace("cells: [disc-fg, disc-f,", "cells: [disc-fg, disc-f, disc-g, disc-f+disc-g,")
    path.write_text(study + "analyses:\n  sup: {kind: supervised, models: [{row: disc-f+disc-g}], tasks: [mr]}\n")
    sup, = load_study(path).analysis_steps(storage=str(tmp_path / "runs"))
    models = [sup.argv[i + 1] for i, word in enumerate(sup.argv) if word == "--model"]
    where = f"{tmp_path}/runs/example/models"
    assert models == [f"disc-f+disc-g-seed{s}={where}/disc-f-seed{s}@f+{where}/disc-g-seed{s}@g" for s in (0, 1)]
    path.write_text(study + "analyses:\n  sup: {kind: supervised, models: [{row: disc-f+disc-g, views: [f]}], "
                            "tasks: [mr]}\n")
    with pytest.raises(StudyError, match="disc-f\\+disc-g has no view f"):
        load_study(path)


@pytest.mark.parametrize("change, line, message", [
    (("{row: disc-f}", "{row: disc-g}"), 11, "analyses.sup: disc-g is not a trained or combined row"),
    (("views: [f, g]", "views: [f, h]"), 11, "disc-fg has no view h"),
    (("kind: usif_levers", "kind: usif_lever"), 17, "does not match any of the expected tags"),
    (("baselines: [sif]", "baselines: [sif2]"), 15, "baselines.0"),
])
def test_a_bad_analysis_is_one_error_naming_file_line_and_key(repo, tmp_path, change, line, message):
    path = tmp_path / "bad.yaml"
    path.write_text((GOOD + ANALYSES).replace(*change))
    with pytest.raises(StudyError) as error:
        load_study(path)
    text = str(error.value)
    assert text.startswith(f"{path}:{line}: ") and message in text and "\n" not in text, text


def test_the_report_reads_the_supervised_tasks_its_analyses_measured_of_its_own_rows(repo, tmp_path):
    from skipview.platform.studies.analyses import supervised_metrics

    path = tmp_path / "example.yaml"
    path.write_text(GOOD + ANALYSES)
    study = load_study(path)
    rows = [{"encoder": "disc-fg-seed1 g", "component_fit": "task",
             "metrics": {"mr.acc": 77.0, "sickr.pearson": 80.0, "sts14.pearson.mean": 60.0}},
            {"encoder": "disc-fg-seed1 g", "component_fit": "subset", "metrics": {"mr.acc": 1.0}},   # another fit
            {"encoder": "other ensemble", "component_fit": "task", "metrics": {"mr.acc": 2.0}},     # not a row
            {"encoder": "fastText sif", "component_fit": "task", "metrics": {"mr.acc": 3.0}}]
    (tmp_path / "sup.json").write_text(json.dumps({"rows": rows, "protocol": "full"}))
    # the supervised tasks only (an analysis's STS14 is not the run's evaluation), keyed as the run's metrics
    measured = supervised_metrics(tmp_path, study.spec.analyses)
    assert list(measured) == [("disc-fg", 1)]
    assert measured["disc-fg", 1].metrics == {"g/mr.acc": 77.0, "g/sickr.pearson": 80.0}
    assert measured["disc-fg", 1].measured_at is None        # a row written before analyses recorded when


def test_a_run_trained_again_after_its_analysis_does_not_take_the_old_models_numbers():
    from skipview.platform.studies.report import Measured, RunRecord, _with_measured

    run = RunRecord("id", "disc-fg", 1, start_time=2_000_000, metrics={"g/sts14": 60.0}, params={})
    older, newer = Measured({"g/mr.acc": 77.0}, measured_at=1_000.0), Measured({"g/mr.acc": 77.0}, 3_000.0)
    assert _with_measured(run, older).metrics == {"g/sts14": 60.0}            # measured the model trained before
    assert _with_measured(run, newer).metrics == {"g/sts14": 60.0, "g/mr.acc": 77.0}
    assert _with_measured(run, Measured({"g/mr.acc": 77.0})).metrics["g/mr.acc"] == 77.0     # when unknown: kept


def test_borrowed_rows_are_the_other_study_s_analysis_numbers_and_its_records_cost_and_say_so(repo, tmp_path):
    """studies/skipthought.yaml reports four rows of table6_trained beside its own: their numbers are
    table6_trained's classification analysis's (the fit and protocol skipthought evaluates with), their hours its
    run records', and the report names both files."""
    from skipview.platform.studies.report import build_report
    from skipview.platform.tracking import store

    study = load_study("studies/skipthought.yaml")
    assert [row.name for row in study.matrix.borrowed] == ["disc-fg", "gen-invertible", "gen-no-invertible",
                                                          "disc-f+disc-g"]
    assert study.upstream == Path("reports/table6_trained/classification.json")     # DVC reruns it when it changes
    borrowed = study.borrowed_records()
    paths = build_report(store.client(f"sqlite:///{tmp_path / 'mlflow.db'}"), "skipthought", study.matrix,
                         tmp_path / "report", references=True, records=True, borrowed=borrowed)
    classification = json.loads(Path("reports/table6_trained/classification.json").read_text())["rows"]
    sickr = [row["metrics"]["sickr.pearson"] for row in classification
             if row["encoder"].startswith("disc-fg-seed") and row["component_fit"] == "task"]
    summary = json.loads(paths["summary"].read_text())
    assert summary["cells"]["disc-fg"]["ensemble"]["sickr"] == {"mean": pytest.approx(sum(sickr) / 3),
                                                                "std": pytest.approx(statistics.stdev(sickr)), "n": 3}
    hours = [json.loads(Path(f"reports/table6_trained/runs/disc-fg-seed{seed}.json").read_text())["metrics"]
             ["train/hours"] for seed in range(3)]
    assert summary["cells"]["disc-fg"]["hours"]["mean"] == pytest.approx(sum(hours) / 3)
    assert summary["cells"]["disc-f+disc-g"]["seeds"] == 1          # the analysis measured its first seed only
    text = paths["markdown"].read_text()
    assert ("- `disc-fg`: borrowed from the study table6_trained, never run here: numbers from "
            "`reports/table6_trained/classification.json`, hours and sentences from `reports/table6_trained/runs/`"
            in text)
    assert not (tmp_path / "report" / "runs").exists() or not list((tmp_path / "report" / "runs").iterdir())


BORROWS = """\
question: Does the trained model beat the borrowed one?
corpus: novels_news
cells: [disc-f, fasttext-sif]
borrow_rows:
  table6_trained:
    rows: [disc-fg]
    analysis: classification
protocol: full
component_fit: task
"""


@pytest.mark.parametrize("change, line, message", [
    (("component_fit: task", "component_fit: subset"), 7,
     "classification measured protocol full, component fits task; this study's are full, subset"),
    (("analysis: classification", "analysis: usif_levers"), 7, "usif_levers: not a supervised analysis"),
    (("rows: [disc-fg]", "rows: [disc-ff]"), 6, "disc-ff: not measured by table6_trained's analysis classification"),
    (("rows: [disc-fg]", "rows: [disc-fgh]"), 6, "disc-fgh: not a trained or combined row of table6_trained"),
    (("    analysis: classification\n", ""), 6,
     "table6_trained measured protocol fast, component fit subset; this study's are full, task"),
    (("  table6_trained:", "  table6_train:"), 6, "no other study file table6_train.yaml beside this one"),
    (("protocol", "protocol"), None, None),
])
def test_a_borrowed_row_that_would_not_compare_is_refused_naming_the_line(repo, tmp_path, change, line, message):
    (tmp_path / "table6_trained.yaml").write_text(Path("studies/table6_trained.yaml").read_text())
    path = tmp_path / "borrows.yaml"
    path.write_text(BORROWS.replace(*change))
    if line is None:                                    # the unchanged file is the control: it compares
        assert [row.name for row in load_study(path).matrix.borrowed] == ["disc-fg"]
        return
    with pytest.raises(StudyError) as error:
        load_study(path)
    text = str(error.value)
    assert text.startswith(f"{path}:{line}: ") and message in text and "\n" not in text, text
