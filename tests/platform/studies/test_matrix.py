"""The catalogue of rows (studies/catalogue.yaml) and the matrix a study picks from it: Table 6 is there, the eq. 3
rows pair both readings; a bad catalogue or pick fails naming the file, line and key."""

from __future__ import annotations

import textwrap

import pytest

from skipview.models import registry
from study_matrices import CATALOGUE, table6

from skipview.platform.studies.matrix import (Catalogue, Cell, Define, Matrix, MatrixError, load_catalogue, metric_key,
                                             pick, plan)


def test_the_catalogue_holds_table_6():
    matrix = table6()
    cells = {c.name: c for c in matrix.cells}
    assert {c.settings.get("invertible") for c in cells.values() if c.objective == "gen"} == {True, False}
    assert sorted(c.settings["views"] for c in cells.values() if c.objective == "disc") == ["f", "ff", "fg", "g", "gg"]
    # single-view models only have their one view; every tagged cell carries the compare-view tags
    assert set(cells["disc-f"].views) == {"f"} and set(cells["disc-g"].views) == {"g"}
    assert set(cells["disc-ff"].views) == {"f1", "f2", "ensemble"}     # the encoder's own view names
    assert all({"objective", "views"} <= set(c.tags) for c in matrix.cells)
    assert {r.baseline for r in matrix.references} == {None, "avg", "wr", "sif", "usif"}
    combined = {c.name: c.combine for c in matrix.combined}
    assert combined == {"disc-f+disc-g": ["disc-f/f", "disc-g/g"], "disc-ff+disc-gg": ["disc-ff/f1", "disc-gg/g1"]}


def test_eq3_rows_pair_each_reading_of_the_positives_with_the_other():
    rows = ["disc-fg", "disc-f", "disc-g", "disc-fg-noself", "disc-f-noself", "disc-g-noself"]
    matrix = pick(load_catalogue(CATALOGUE), Define(), rows, ["eq3_self_pairs"], ["sts_avg"])
    cells = {c.name: c for c in matrix.cells}
    for name, cell in cells.items():
        config = registry.parse_config(cell.objective, cell.settings)        # every key is a real disc setting
        if config.self_pairs:
            twin = registry.parse_config("disc", cells[f"{name}-noself"].settings)
            assert twin.model_dump() == {**config.model_dump(), "self_pairs": False}
    assert sorted(c.settings["views"] for c in cells.values()) == ["f", "f", "fg", "fg", "g", "g"]
    # each Table 6 direction is checked under both readings
    assert len(matrix.claims) == 6 and {c.better.split("/")[0] for c in matrix.claims} == {"disc-fg", "disc-fg-noself"}


def test_plan_runs_every_cell_per_seed_and_baselines_once():
    matrix = table6()
    runs = plan(matrix, seeds=3)
    assert len(runs) == (7 + 2) * 3                         # 7 trained cells and 2 cross-model ensembles per seed
    assert [r.seed for r in runs[:9]] == [0] * 9            # seed-major: an interrupted study covers every cell
    names = [r.cell.name for r in runs[:9]]
    assert names.index("disc-f+disc-g") > max(names.index("disc-f"), names.index("disc-g"))   # parts first
    assert len({r.run_name for r in runs}) == len(runs)
    with_refs = plan(matrix, seeds=3, references=True)
    assert len(with_refs) == 9 * 3 + 3 + 4                  # skip-thought per seed, avg, WR, SIF and uSIF once
    first = with_refs[0]
    assert first.tags["skipview.study"] == "ablation" and first.tags["cell"] == first.cell.name
    assert first.tags["seed"] == "0"
    # a study split in two (--first-seed) plans exactly the runs of the whole study, each once
    split = plan(matrix, seeds=2) + plan(matrix, seeds=1, first_seed=2)
    assert [r.run_name for r in split] == [r.run_name for r in runs]
    with pytest.raises(ValueError, match="at least 1"):
        plan(matrix, seeds=0)


def test_a_row_trained_outside_the_study_runs_at_its_seeds_and_a_combined_row_at_those_both_parts_have():
    def outside(name: str, seeds: list[int]) -> Cell:
        return Cell(name=name, objective="skipthought", run=f"runs/{name}-s{{seed}}", model=f"models/{name}-s{{seed}}",
                    seeds=seeds, views={name: name})

    table = table6()
    matrix = Matrix(cells=[outside("uni", [0, 1]), outside("bi", [0])], columns=table.columns,
                    combined=[Cell(name="combine", combine=["uni/uni", "bi/bi"], ensemble="concatenation",
                                   views={"ensemble": "[uni; bi]"})])
    assert [r.run_name for r in plan(matrix, seeds=2)] == ["uni-seed0", "bi-seed0", "combine-seed0", "uni-seed1"]


@pytest.mark.parametrize("fields, message", [
    ({"objective": "skipthought", "run": "runs/st-s{seed}"}, "gives its objective, run .* and model"),
    ({"objective": "skipthought", "run": "runs/st", "model": "models/st"}, "String should match pattern"),
    ({"objective": "skipthought", "seeds": [0]}, "seeds: only a row trained outside the study"),
    ({"objective": "disc", "ensemble": "concatenation"}, "ensemble: only a combined row"),
    ({"objective": "skipthought", "run": "runs/st-s{seed}", "model": "models/st-s{seed}", "train": {"epochs": 5}},
     "has no training settings"),
])
def test_a_bad_row_kind_is_refused(fields, message):
    with pytest.raises(ValueError, match=message):
        Cell(name="row", views={"uni": "uni"}, **fields)


def test_a_subset_keeps_the_named_rows_and_the_claims_between_them():
    matrix = table6()
    claims_cells = ["gen-invertible", "gen-no-invertible", "disc-fg", "disc-f", "disc-g", "disc-f+disc-g",
                    "fasttext-sif"]
    subset = matrix.subset(claims_cells)
    assert [c.name for c in subset.rows(references=True)] == claims_cells
    assert len(plan(subset, seeds=3, references=True)) == 6 * 3 + 1
    kept = {name.split("/")[0] for c in subset.claims for name in (c.better, c.worse)}
    assert kept <= set(claims_cells) and len(subset.claims) == 23     # those of Table 6 among these cells
    with pytest.raises(ValueError, match="no row named disc-fgh"):
        matrix.subset(["disc-fg", "disc-fgh"])
    with pytest.raises(ValueError, match="disc-g/g"):                  # a combined row without one of its parts
        matrix.subset(["disc-f", "disc-f+disc-g"])


def test_metric_key_names_view_and_metric():
    assert metric_key("ensemble", "sts14.pearson.mean") == "ensemble/sts14.pearson.mean"
    with pytest.raises(ValueError, match="view"):
        metric_key("f/g", "sts14.pearson.mean")


@pytest.mark.parametrize("body, where, reason", [
    ("""
        cells:
          - {name: a, objective: gen, views: {f: z_f}}
          - {name: a, objective: disc, views: {f: z_f}}
        columns: [{name: sts, title: STS, metrics: [sts14.pearson.mean]}]
     """, ":2: (top level)", "repeated: a"),
    ("""
        cells:
          - name: a
            objective: gen
            views: {f/g: z_h}
        columns: [{name: sts, title: STS, metrics: [sts14.pearson.mean]}]
     """, ":5: cells.0.views.f/g", "should match pattern"),
    ("""
        cells:
          - {name: a, objective: gen, baseline: avg, views: {f: z_f}}
        columns: [{name: sts, title: STS, metrics: [sts14.pearson.mean]}]
     """, ":3: cells.0", "exactly one of objective"),
    ("""
        cells:
          - {name: a, objective: gen, views: {f: z_f}}
        combined:
          - {name: b, combine: [a/f, a/g], views: {ensemble: en}}
        columns: [{name: sts, title: STS, metrics: [sts14.pearson.mean]}]
     """, ":2: (top level)", "combine part 'a/g' is not a view of a trained cell"),
    ("""
        cells:
          - {name: a, objective: gen, views: {f: z_f}}
        columns: [{name: sts, title: STS, metrics: [sts14.pearson.mean]}]
        claims:
          some: [{better: a/g, worse: a/f, column: sts}]
     """, ":2: (top level)", "no cell 'a' with view 'g'"),
    ("""
        cells:
          - {name: a, objective: disk, views: {f: z_f}}
        columns: [{name: sts, title: STS, metrics: [sts14.pearson.mean]}]
     """, ":3: cells.0.objective", "unknown objective 'disk'; known objectives: disc, gen, skipthought"),
])
def test_bad_catalogues_name_file_line_and_key(tmp_path, body, where, reason):
    path = tmp_path / "catalogue.yaml"
    path.write_text(textwrap.dedent(body))
    with pytest.raises(MatrixError) as caught:
        load_catalogue(path)
    assert f"{path}{where}: " in str(caught.value), str(caught.value)
    assert reason in str(caught.value)


def test_a_combined_row_still_to_make_retrains_parts_that_only_a_record_stands_for():
    from skipview.platform.studies.runner import standing_records

    planned = plan(table6().subset(["disc-ff", "disc-gg", "disc-ff+disc-gg"]), seeds=2)
    # seed 0: ff and gg trained elsewhere, the ensemble not yet made -> both parts train again here;
    # seed 1: the ensemble's own record stands, so its parts' records stand too
    recorded = {("disc-ff", 0), ("disc-gg", 0), ("disc-gg", 1), ("disc-ff+disc-gg", 1)}
    assert standing_records(planned, recorded) == {("disc-gg", 1), ("disc-ff+disc-gg", 1)}


@pytest.mark.parametrize("own, names, claims, columns, message", [
    ({"cells": [{"name": "disc-fg", "objective": "disc", "views": {"f": "z_f"}}]}, ["disc-fg"], [], ["sts_avg"],
     "define: disc-fg is a row of the catalogue"),
    ({}, ["disc-fg"], ["tabel6"], ["sts_avg"], "claims: no claim set tabel6"),
    ({}, ["disc-fg"], [], ["sts_average"], "columns: no column sts_average"),
    ({}, ["disc-fg", "disc-f"], ["table6"], ["sts12"], "columns: claim disc-fg/ensemble > disc-fg/f is on column "
                                                        "sts_avg, which the study does not report"),
    ({}, ["disc-fgh"], [], ["sts_avg"], "cells: no row named disc-fgh"),
    ({"claims": [{"better": "disc-fg/ensemble", "worse": "disc-f/f", "column": "sts_avg"}]}, ["disc-fg"], [],
     ["sts_avg"], "define: claim disc-fg/ensemble > disc-f/f: disc-f/f is not a row of the study"),
])
def test_a_bad_pick_names_the_study_key_at_fault(own, names, claims, columns, message):
    with pytest.raises(ValueError, match=message.replace(">", ".")):
        pick(load_catalogue(CATALOGUE), Define.model_validate(own), names, claims, columns)


def test_a_studys_own_row_joins_the_catalogues_after_them():
    own = Define.model_validate({"references": [{"name": "my-sif", "baseline": "sif", "views": {"ensemble": "SIF"}}],
                               "cells": [{"name": "disc-fg-c3", "objective": "disc",
                                          "settings": {"views": "fg", "context_window": 3},
                                          "views": {"f": "z_f", "g": "z_g", "ensemble": "en"}}]})
    matrix = pick(load_catalogue(CATALOGUE), own, ["my-sif", "disc-fg-c3", "disc-fg"], ["table6"], ["sts_avg"])
    assert [c.name for c in matrix.rows(references=True)] == ["disc-fg", "disc-fg-c3", "my-sif"]
    assert [c.name for c in matrix.columns] == ["sts_avg"] and len(matrix.claims) == 3
    assert isinstance(load_catalogue(CATALOGUE), Catalogue)

