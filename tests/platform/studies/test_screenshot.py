"""The MLflow UI as the study's comparison view, checked by what a real browser shows: a toy study run through the
study runner (interrupted once, resumed, rerun), ``mlflow server`` on its store and Debian's headless Chromium
(``apt-get install -y chromium``; .ci/run installs it). The page's text is read from the DOM the app has drawn."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass

import pytest
from study_matrices import table6

from skipview.platform.studies import mlflow_view, runner
from skipview.platform.studies.matrix import Matrix
from skipview.platform.studies.report import RunRecord, write_records
from skipview.platform.studies.runner import StudySettings, run_study, share_objective_settings
from skipview.platform.studies.screenshot import (RECORD_TAG, capture_experiment, chromium_binary, mlflow_server,
                                                  rendered, store_from_records)
from skipview.platform.tracking import datasets, store, ui
from skipview.platform.training.config import TrainSettings

HEADLINE = "summary/sts_avg"             # the toy study's first column: what its runs page sorts by


def toy_matrix() -> Matrix:
    full = table6()
    return Matrix(cells=[c for c in full.cells if c.name == "disc-f"],
                  references=[r for r in full.references if r.name == "fasttext-avg"],
                  columns=[c for c in full.columns if c.name in ("sts_avg", "sts14")])


class Interrupted(Exception):
    """Stands for a study stopped halfway (a killed session): raised in one run's evaluation."""


@dataclass
class ToyStudy:
    uri: str
    experiment_id: str
    runs: dict                          # (cell, seed) -> the MLflow run as the store has it
    corpus: str


@pytest.fixture(scope="module")
def toy_study(ray_session, tiny_data, toy_senteval, tmp_path_factory) -> ToyStudy:
    """disc-f at seeds 0 and 1 and the fastText average: the first attempt stops while disc-f seed 1 is evaluated,
    the second resumes it, the third finds everything done."""
    corpus, wordvecs = tiny_data
    root = tmp_path_factory.mktemp("ui")
    matrix = share_objective_settings(toy_matrix(), {"hidden_size": 8, "context_window": 2}, references=True)
    base = TrainSettings(objective="disc", corpus=str(corpus), wordvecs=str(wordvecs), senteval_dir=str(toy_senteval),
                         batch_size=16, max_steps=4, checkpoint_every=4, postprocessing_sentences=50)
    study = StudySettings(name="toy", storage=str(root / "runs"), experiment="toy", seeds=2, references=True,
                          tasks=("sts14",), protocol="fast", tracking_uri=f"sqlite:///{root / 'mlflow.db'}")
    evaluate, evaluated = runner.evaluate_views, []

    def stopping_at_the_third(*args, **kwargs):      # the plan is seed-major: disc-f 0, fasttext-avg 0, disc-f 1
        evaluated.append(args)
        if len(evaluated) == 3:
            raise Interrupted()
        return evaluate(*args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runner, "evaluate_views", stopping_at_the_third)
        with pytest.raises(Interrupted):
            run_study(matrix, base, study)
    client = store.client(study.tracking_uri)
    experiment_id = client.get_experiment_by_name("toy").experiment_id
    (stopped,) = [r.info.run_id for r in client.search_runs([experiment_id]) if r.data.tags["cell"] == "disc-f"
                  and r.data.tags["seed"] == "1"]
    assert [r["skipped"] for r in run_study(matrix, base, study)] == [True, True, False]      # the resume
    assert [r["skipped"] for r in run_study(matrix, base, study)] == [True, True, True]       # a rerun
    runs = {(r.data.tags["cell"], int(r.data.tags["seed"])): r for r in client.search_runs([experiment_id])}
    assert runs[("disc-f", 1)].info.run_id == stopped          # the resumed run is the interrupted one, continued
    return ToyStudy(study.tracking_uri, experiment_id, runs, str(corpus))


@pytest.fixture(scope="module")
def browser() -> str:
    """Debian's Chromium, a system package the README's test command does not install: without it these tests are
    skipped with one line saying how to get it, except under CI, whose .ci/run installs it (there a missing browser
    is a failure, so CI can never pass without the pages being read)."""
    try:
        return chromium_binary()
    except FileNotFoundError:
        message = "needs Debian's chromium for the MLflow UI pages: apt-get install -y chromium"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{message} (.ci/run installs it; CI=true never skips it)")
        pytest.skip(message)


@pytest.fixture(scope="module")
def server(toy_study, browser):
    with mlflow_server(toy_study.uri) as url:
        yield url


@pytest.mark.slow
def test_a_rerun_and_a_resume_leave_one_finished_run_per_cell_and_seed(toy_study):
    client = store.client(toy_study.uri)
    found = client.search_runs([toy_study.experiment_id])
    assert sorted((r.data.tags["cell"], r.data.tags["seed"]) for r in found) == [
        ("disc-f", "0"), ("disc-f", "1"), ("fasttext-avg", "0")]
    assert {r.info.run_name for r in found} == {"disc-f-seed0", "disc-f-seed1", "fasttext-avg-seed0"}
    assert {r.info.status for r in found} == {"FINISHED"}
    view = json.loads(client.get_experiment(toy_study.experiment_id).tags[ui.VIEW_TAG_PREFIX + mlflow_view.VIEW_KEY])
    assert view == mlflow_view.study_view(toy_matrix())


@pytest.mark.slow
def test_the_runs_page_shows_the_study_as_a_matrix_of_cells_and_seeds(toy_study, server):
    page = rendered(ui.runs_page(server, toy_study.experiment_id, mlflow_view.VIEW_KEY), width=2400)
    # a run's row in its cell's group has the id tag.cell.<cell>.<run id>; the group's own, tag.cell.<cell>
    shown = {run.group(1): texts for row_id, texts in page.rows.items()
             if (run := re.fullmatch(r"tag\.cell\..+\.([0-9a-f]{32})", row_id))}
    # exactly the study's runs, each once: the interrupted attempt, the resume and the rerun made no second run
    assert sorted(shown) == sorted(run.info.run_id for run in toy_study.runs.values())
    corpus = datasets.dataset_name(toy_study.corpus)
    for (cell, seed), run in toy_study.runs.items():
        texts = shown[run.info.run_id]
        assert f"{cell}-seed{seed}" in texts
        assert str(seed) in texts                                          # the seed column
        assert repr(run.data.metrics[HEADLINE]) in texts                   # the headline, as the page prints it
        assert any(corpus in text for text in texts), texts                # the Dataset column names the data
        assert f"Group: {cell}" in " ".join(page.rows[f"tag.cell.{cell}"])
    assert HEADLINE in page.text and "Group by: cell" in page.text


@pytest.mark.slow
def test_the_compare_page_holds_every_cell_and_seed(toy_study, server):
    client = store.client(toy_study.uri)
    finished = mlflow_view.finished_runs(client, toy_study.experiment_id)
    assert sorted(finished) == sorted(run.info.run_id for run in toy_study.runs.values())
    page = rendered(ui.compare_page(server, toy_study.experiment_id, finished))
    for cell, seed in toy_study.runs:
        assert f"{cell}-seed{seed}" in page.text
        assert cell in page.text.split()                               # the matrix.cell param and the cell tag


@pytest.mark.slow
def test_the_links_open_the_view_and_a_screenshot_is_the_window(toy_study, browser, tmp_path):
    client = store.client(toy_study.uri)
    lines = mlflow_view.links(client, "toy", toy_matrix())
    assert lines[0] == f"MLflow UI (mlflow ui --backend-store-uri {toy_study.uri}):"
    assert lines[1].endswith(f"{ui.LOCAL_UI}/#/experiments/{toy_study.experiment_id}/runs?viewStateShareKey="
                             f"{mlflow_view.VIEW_KEY}")
    assert all(run.info.run_id in lines[2] for run in toy_study.runs.values())
    assert mlflow_view.links(client, "absent", toy_matrix()) == []
    out = capture_experiment(toy_study.uri, "toy", tmp_path / "shot.png", width=1200, height=700)
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(data[16:20]) == 1200
    with pytest.raises(LookupError, match="no MLflow experiment named 'absent'"):
        capture_experiment(toy_study.uri, "absent", tmp_path / "none.png")


def test_committed_records_become_one_finished_run_each_with_their_data(tmp_path):
    """A study's records as MLflow runs, for a machine whose store does not hold the study (its screenshot)."""
    report = tmp_path / "reports" / "toy"
    lineage = {"corpus.hash": "meta-sha256:" + "c" * 64, "wordvecs.hash": "dvc:" + "d" * 32 + ".dir"}
    records = [RunRecord(f"id{seed}", "disc-f", seed, 1_700_000_000_000 + seed, {HEADLINE: 60.0 + seed,
                         "sts14": 61.5, "train/hours": 0.5}, {"matrix.cell": "disc-f"},
                         {"sts14": [(0, 10.0), (4, 61.5)]}, lineage) for seed in (0, 1)]
    write_records(records, report)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    data = {"corpus.path": "data/books/prepared", "wordvecs.path": "data/books/wordvecs"}
    run_ids = store_from_records(uri, "toy", toy_matrix(), report, data)
    client = store.client(uri)
    runs = [client.get_run(run_id) for run_id in run_ids]
    assert [r.info.run_name for r in runs] == ["disc-f-seed0", "disc-f-seed1"]
    for run, record in zip(runs, records):
        assert run.info.status == "FINISHED" and run.info.start_time == record.start_time
        assert run.info.end_time - run.info.start_time == 1_800_000                # its train/hours
        assert run.data.metrics == record.metrics and run.data.params == record.params
        assert [(m.step, m.value) for m in client.get_metric_history(run.info.run_id, "sts14")] == [(0, 10.0),
                                                                                                     (4, 61.5)]
        assert (run.data.tags["cell"], run.data.tags["seed"]) == ("disc-f", str(record.seed))
        assert run.data.tags["corpus.hash"] == lineage["corpus.hash"]
        assert run.data.tags[RECORD_TAG].endswith(f"reports/toy/runs/disc-f-seed{record.seed}.json")
        assert {(i.dataset.name, i.dataset.digest) for i in run.inputs.dataset_inputs} == {
            ("books/prepared", "c" * 32), ("books/wordvecs", "d" * 32)}
    assert mlflow_view.finished_runs(client, runs[0].info.experiment_id) == run_ids
    with pytest.raises(ValueError, match="already holds an experiment 'toy'"):
        store_from_records(uri, "toy", toy_matrix(), report, data)
