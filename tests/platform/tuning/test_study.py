"""Study files: every shipped one validates; a bad one fails at load naming its file, line and key; the index is
generated from the studies' summaries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skipview.platform.tuning.study import StudyError, load_study, render_index, resolve

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


@pytest.mark.parametrize("path", sorted((REPO / "studies").glob("*.yaml")), ids=lambda p: p.stem)
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
    from skipview.platform.tuning.ablation import cell_settings

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
    assert load_study(tmp_path / "plain.yaml").upstream == Path("platform/tuning/ablation.yaml")


def test_params_yaml_gives_each_study_stage_its_study_files_corpus_and_upstream(repo):
    """DVC cannot read a study file: `studies` in params.yaml restates each study's corpus and the input it follows
    (`after`) for the study@<name> stage. They must be the study file's, and every study file must have its stage."""
    import yaml

    params = yaml.safe_load((REPO / "params.yaml").read_text())["studies"]
    studies = {p.stem: load_study(p) for p in sorted((REPO / "studies").glob("*.yaml"))}
    assert params == {name: {"corpus": s.spec.corpus, "after": s.upstream.as_posix()} for name, s in studies.items()}


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
    assert row == (f"| [example](example/ablation.md) | Does the multi-view f beat the single-view f? | disc-fg/f | 58.3 ± 0.5 | disc-f/f | "
                   "55.0 (n=1) | – | 2 | `skipview study run example` |")
    summary["cells"]["fasttext-usif"] = {"seeds": 1, "ensemble": {"sts_avg": {"mean": 62.52, "std": None, "n": 1}}}
    summary_path.write_text(json.dumps(summary))
    assert "| 55.0 (n=1) | 62.5 (n=1) | 2 |" in render_index([study]).splitlines()[-1]


def test_the_committed_index_is_what_the_studies_give(repo):
    """reports/INDEX.md cannot go stale: it must equal what `skipview study index` writes from the studies."""
    from skipview.platform.tuning.study import INDEX, STUDIES_DIR

    studies = [load_study(path) for path in sorted(STUDIES_DIR.glob("*.yaml"))]
    assert INDEX.read_text() == render_index(studies), "run `skipview study index` and commit reports/INDEX.md"
