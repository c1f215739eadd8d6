"""A study's rows trained outside it (issue 57's hours-long `skipview train` runs), on the small skip-thought run of
tests/skipthought_run.py, without Ray: the study evaluates the run's model like a trained cell's, records the hours
and sentences of the run's own record and its training curves, combines two such rows by concatenation at the seeds
both have, reports where each row comes from, and refuses in one line, recording nothing, a model directory or run
folder that is not there, a run that has not finished and a model exported before the run's end."""

from __future__ import annotations

import json

import pytest

from skipview.platform.export.checkpoint import export_checkpoint
from skipview.platform.studies.matrix import Cell, Matrix, plan
from skipview.platform.studies.report import build_report, read_records
from skipview.platform.studies.runner import StudySettings, run_study
from skipview.platform.tracking import store
from skipview.platform.training.config import TrainSettings
from skipview.platform.training.recorded_run import RecordedRun
from study_matrices import table6

SETTINGS = {"encoder": "uni", "hidden_size": 8, "embedding_dim": 6, "vocab_size": 40, "reset_gate": "fused"}


def external(name: str, tmp_path, model: str, **fields) -> Cell:
    return Cell(name=name, objective="skipthought", settings=SETTINGS, run=str(tmp_path / "runs" / "st-tiny-s{seed}"),
                model=str(tmp_path / "models" / model), seeds=[0], views={"uni": name}, **fields)


def study(tmp_path, skipthought_run, rows: list[Cell], combined: list[Cell] = ()) -> tuple[Matrix, TrainSettings,
                                                                                            StudySettings]:
    full = table6()
    matrix = Matrix(cells=rows, combined=list(combined), columns=full.columns,
                    references=[r for r in full.references if r.name == "fasttext-avg"])
    base = TrainSettings(objective="skipthought", corpus=skipthought_run.settings.corpus,
                         wordvecs=skipthought_run.settings.wordvecs, senteval_dir=str(tmp_path / "senteval"))
    settings = StudySettings(name="st", storage=str(tmp_path / "study-runs"), experiment="st", seeds=2,
                             tasks=("sts14",), protocol="fast", tracking_uri=skipthought_run.uri)
    return matrix, base, settings


@pytest.fixture()
def layout(skipthought_run, toy_senteval, tmp_path):
    """The run under a seeded name, its senteval data, and its latest checkpoint exported with and without
    vocabulary expansion."""
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "st-tiny-s0").symlink_to(skipthought_run.folder)
    (tmp_path / "senteval").symlink_to(toy_senteval)
    run = RecordedRun.open(skipthought_run.folder, skipthought_run.uri)
    export_checkpoint(run, tmp_path / "models" / "st-tiny-s0")
    export_checkpoint(run, tmp_path / "models" / "st-tiny-s0-vx", wordvecs=skipthought_run.settings.wordvecs)
    return tmp_path


def test_a_row_trained_outside_the_study_is_evaluated_and_recorded_with_the_run_s_cost(skipthought_run, layout):
    tmp_path, client = layout, store.client(skipthought_run.uri)
    rows = [external("uni", tmp_path, "st-tiny-s{seed}"), external("uni-vx", tmp_path, "st-tiny-s{seed}-vx")]
    both = Cell(name="uni+uni-vx", combine=["uni/uni", "uni-vx/uni"], ensemble="concatenation",
                views={"ensemble": "concat"})
    matrix, base, settings = study(tmp_path, skipthought_run, rows, [both])
    # the rows of one seed, at the study's first of two; the baseline once
    assert [r.run_name for r in plan(matrix, 2, references=True)] == [
        "uni-seed0", "uni-vx-seed0", "uni+uni-vx-seed0", "fasttext-avg-seed0"]

    client.set_terminated(skipthought_run.run_id, "RUNNING")         # still training: refused, nothing recorded
    with pytest.raises(ValueError) as error:
        run_study(matrix, base, settings)
    assert str(error.value) == (f"uni, seed 0: run {tmp_path}/runs/st-tiny-s0 (MLflow run {skipthought_run.run_id}) "
                                "has not finished: RUNNING, its latest checkpoint at step 32; `skipview train` ends "
                                "it (the same command resumes it)")
    experiment = client.get_experiment_by_name("st").experiment_id
    assert client.search_runs([experiment]) == []

    client.set_terminated(skipthought_run.run_id, "FINISHED")
    assert [r["skipped"] for r in run_study(matrix, base, settings)] == [False] * 4
    runs = {r.data.tags["cell"]: r for r in client.search_runs([experiment])}
    uni, vx, combined = runs["uni"], runs["uni-vx"], runs["uni+uni-vx"]
    # the run's own record: its windows add up to 11 s at its last step, 32 steps of 8 sentences on one worker
    assert uni.data.metrics["train/hours"] == pytest.approx(11 / 3600)
    assert uni.data.metrics["train/sentences_seen"] == 32 * 8
    assert combined.data.metrics["train/hours"] == pytest.approx(22 / 3600)
    assert uni.data.params["external.run"].endswith("runs/st-tiny-s0")
    assert uni.data.params["external.mlflow_run_id"] == skipthought_run.run_id
    assert uni.data.params["train.objective_settings.hidden_size"] == "8"       # the run's settings, as recorded
    assert "wordvecs.hash" in vx.data.tags and "wordvecs.hash" not in uni.data.tags     # expansion's vectors
    assert combined.data.params["train.ensemble"] == "concatenation"
    for run in (uni, vx):
        assert -100 <= run.data.metrics["uni/sts14.pearson.mean"] <= 100
        # its STS14 during training, as the loop logged it into the training run
        assert [(m.step, m.value) for m in client.get_metric_history(run.info.run_id, "sts14")] == [
            (0, 1.0), (16, 20.0), (32, 30.0)]
    assert uni.data.metrics["uni/sts14.pearson.mean"] != vx.data.metrics["uni/sts14.pearson.mean"]
    assert -100 <= combined.data.metrics["ensemble/sts14.pearson.mean"] <= 100

    paths = build_report(client, "st", matrix, tmp_path / "report", records=True)
    record = {r.cell: r for r in read_records(tmp_path / "report")}["uni"]
    assert record.metrics["train/sentences_seen"] == 256 and record.curves["sts14"][-1] == (32, 30.0)
    text = paths["markdown"].read_text()
    assert (f"- `uni`: trained outside the study (`skipview train`): run `{tmp_path}/runs/st-tiny-s{{seed}}`, model "
            f"`{tmp_path}/models/st-tiny-s{{seed}}`, evaluated here" in text)
    assert "- `uni+uni-vx`: `uni/uni` and `uni-vx/uni` of the same seed, concatenated" in text
    summary = json.loads(paths["summary"].read_text())
    assert summary["cells"]["uni"]["seeds"] == 1 and summary["cells"]["uni"]["uni"]["sts14"]["n"] == 1
    assert run_study(matrix, base, settings)[0]["skipped"]                # evaluated once, never again


@pytest.mark.parametrize("change, message", [
    ({"model": "models/gone-s{seed}"}, "uni, seed 0: no model directory {tmp}/models/gone-s0 (the run's --output, "
                                       "or `skipview export checkpoint {tmp}/runs/st-tiny-s0 {tmp}/models/gone-s0`)"),
    ({"run": "runs/gone-s{seed}"}, "uni, seed 0: no run folder {tmp}/runs/gone-s0 (the `skipview train` run the row "
                                   "names)"),
    ({"model": "models/half-s{seed}"}, "uni, seed 0: {tmp}/models/half-s0 was exported from step 16 of MLflow run "
                                       "{id}, not from the end of {tmp}/runs/st-tiny-s0 (step 32 of {id}): export its "
                                       "latest checkpoint again"),
    ({"settings": {**SETTINGS, "encoder": "bi"}}, "uni: run {tmp}/runs/st-tiny-s0 trained with encoder 'uni', the "
                                                  "row's 'bi'"),
])
def test_a_row_whose_run_or_model_is_not_the_finished_one_is_refused_in_one_line(skipthought_run, layout, change,
                                                                                   message):
    tmp_path, client = layout, store.client(skipthought_run.uri)
    client.set_terminated(skipthought_run.run_id, "FINISHED")
    export_checkpoint(RecordedRun.open(skipthought_run.folder, skipthought_run.uri), tmp_path / "models" / "half-s0",
                      step=skipthought_run.settings.checkpoint_every)
    fields = {key: str(tmp_path / value) if key in ("model", "run") else value for key, value in change.items()}
    row = external("uni", tmp_path, "st-tiny-s{seed}").model_copy(update=fields)
    matrix, base, settings = study(tmp_path, skipthought_run, [row])
    with pytest.raises((FileNotFoundError, ValueError)) as error:
        run_study(matrix, base, settings.model_copy(update={"experiment": "refused"}))
    assert str(error.value) == message.format(tmp=tmp_path, id=skipthought_run.run_id)
    assert client.search_runs([client.get_experiment_by_name("refused").experiment_id]) == []
