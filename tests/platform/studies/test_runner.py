"""The ablation study at toy size on the real engines: two cells (a generative and a single-view discriminative
model) and the fastText-average reference, trained through the training driver on Ray, evaluated per view,
recorded in MLflow with the compare-view tags; a second invocation skips what is done; the report reads it."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

import numpy as np
from study_matrices import table6

from skipview.platform.evaluation.encoding import CombinedEncoder, ModelEncoder
from skipview.platform.studies.matrix import Cell, Matrix
from skipview.platform.studies.report import build_report
from skipview.platform.studies.runner import StudySettings, run_study, share_objective_settings
from skipview.platform.tracking import store
from skipview.platform.training.config import TrainSettings

# the study's base objective settings, shared out to its rows: the toy study's and the disc-f studies' alike, so the
# toy study's disc-f is the shorter run a disc-f study of the same settings can warm-start from
SHARED = {"hidden_size": 8, "context_window": 2}


class Fixed:
    def __init__(self, table):
        self.table = table

    def encode(self, sentences, mode="unsupervised", view="ensemble", postprocessing="stored", components=1):
        return np.stack([self.table[view][s] for s in sentences])


def test_combined_encoder_averages_unsupervised_and_concatenates_supervised_or_concatenates_both():
    a = Fixed({"f": {"x": np.array([1.0, 0.0]), "y": np.array([0.0, 2.0])}})
    b = Fixed({"g": {"x": np.array([3.0, 4.0]), "y": np.array([1.0, 1.0])}})
    combined = CombinedEncoder([ModelEncoder(a, "f", "corpus"), ModelEncoder(b, "g", "corpus")])
    np.testing.assert_allclose(combined.encode(["x", "y"]), [[2.0, 2.0], [0.5, 1.5]])
    np.testing.assert_allclose(combined.encode(["x", "y"], mode="supervised"), [[1, 0, 3, 4], [0, 2, 1, 1]])
    weighted = CombinedEncoder([ModelEncoder(a, "f", "corpus"), ModelEncoder(b, "g", "corpus")], weights=[0.25, 0.75])
    np.testing.assert_allclose(weighted.encode(["x", "y"]), [[2.5, 3.0], [0.75, 1.25]])
    np.testing.assert_allclose(weighted.encode(["x", "y"], mode="supervised"), [[1, 0, 3, 4], [0, 2, 1, 1]])
    with pytest.raises(ValueError, match="1 weights for 2 ensemble parts"):
        CombinedEncoder([ModelEncoder(a, "f", "corpus"), ModelEncoder(b, "g", "corpus")], weights=[1.0])
    # combine-skip: two models trained apart, concatenated on unsupervised tasks too
    concatenated = CombinedEncoder([ModelEncoder(a, "f", "corpus"), ModelEncoder(b, "g", "corpus")], concatenate=True)
    for mode in ("unsupervised", "supervised"):
        np.testing.assert_allclose(concatenated.encode(["x", "y"], mode=mode), [[1, 0, 3, 4], [0, 2, 1, 1]])
    with pytest.raises(ValueError, match="a concatenation has none"):
        CombinedEncoder([ModelEncoder(a, "f", "corpus"), ModelEncoder(b, "g", "corpus")], weights=[0.5, 0.5],
                        concatenate=True)


@dataclass
class ToyStudy:
    matrix: Matrix
    base: TrainSettings
    study: StudySettings
    records: list[dict]                 # what its first run returned


@pytest.fixture(scope="module")
def toy_study(ray_session, tiny_data, toy_senteval, tmp_path_factory) -> ToyStudy:
    """The toy study, run once: its test examines it, and the warm-start test continues its disc-f model (4 steps)
    instead of training a shorter study of its own."""
    corpus, wordvecs = tiny_data
    root = tmp_path_factory.mktemp("study")
    full = table6()
    matrix = Matrix(cells=[c for c in full.cells if c.name in ("gen-invertible", "disc-f")],
                    combined=[Cell(name="gen+disc", combine=["gen-invertible/f", "disc-f/f"], tags={"views": "f+f"},
                                   views={"ensemble": "en(gen f, disc f)"})],
                    references=[r for r in full.references if r.name == "fasttext-avg"],
                    columns=full.columns,
                    claims=[c for c in full.claims if c.better == "gen-invertible/ensemble"
                            and c.worse == "gen-invertible/f"])
    # a study's base objective settings go to each trained row whose objective has them (gen has no context_window)
    matrix = share_objective_settings(matrix, SHARED, references=True)
    base = TrainSettings(objective="disc", corpus=str(corpus), wordvecs=str(wordvecs), senteval_dir=str(toy_senteval),
                         batch_size=16, max_steps=4, checkpoint_every=4, postprocessing_sentences=50)
    study = StudySettings(name="toy", storage=str(root / "runs"), experiment="ablation-test", seeds=1,
                          references=True, tasks=("sts14", "sickr_unsup", "mr"), protocol="fast",
                          tracking_uri=f"sqlite:///{root / 'mlflow.db'}")
    return ToyStudy(matrix, base, study, run_study(matrix, base, study))


@pytest.mark.slow
def test_toy_study_trains_evaluates_tags_resumes_and_reports(toy_study, tmp_path):
    matrix, base, study, uri = toy_study.matrix, toy_study.base, toy_study.study, toy_study.study.tracking_uri
    records = toy_study.records
    assert [r["skipped"] for r in records] == [False, False, False, False]

    client = store.client(uri)
    experiment = client.get_experiment_by_name("ablation-test").experiment_id
    runs = {r.data.tags["cell"]: r for r in client.search_runs([experiment])}
    assert set(runs) == {"gen-invertible", "disc-f", "gen+disc", "fasttext-avg"}
    gen, disc, avg, both = runs["gen-invertible"], runs["disc-f"], runs["fasttext-avg"], runs["gen+disc"]
    assert (gen.data.tags["objective"], gen.data.tags["invertible"], gen.data.tags["seed"]) == ("gen", "true", "0")
    assert (disc.data.tags["objective"], disc.data.tags["views"]) == ("disc", "f")
    # the shared hidden size reached both objectives; the disc-only window did not reach gen
    assert gen.data.params["train.objective_settings.hidden_size"] == "8"
    assert "train.objective_settings.context_window" not in gen.data.params
    assert disc.data.params["train.objective_settings.context_window"] == "2"
    for run, views in ((gen, ("f", "g", "ensemble")), (disc, ("f",)), (avg, ("ensemble",)), (both, ("ensemble",))):
        assert run.info.status == "FINISHED"
        assert run.data.tags["eval.tasks"] == "sts14"                   # the toy data has no SICK or MR files
        for view in views:
            assert -100 <= run.data.metrics[f"{view}/sts14.pearson.mean"] <= 100
    assert "g/sts14.pearson.mean" not in disc.data.metrics              # a single-view model has only its view
    # the matrix as compare-view axes: identity params, and the report's columns of the run's summary view
    assert {k: gen.data.params[f"matrix.{k}"] for k in ("cell", "views", "invertible", "seed")} == {
        "cell": "gen-invertible", "views": "fg", "invertible": "true", "seed": "0"}
    assert (disc.data.params["matrix.views"], disc.data.params["matrix.invertible"]) == ("f", "-")
    # the compare view plots the first three differing params by name: everything but the identity sorts later
    differing = sorted(k for k in set(gen.data.params) | set(avg.data.params) | set(both.data.params)
                       if len({r.data.params.get(k) for r in (gen, disc, avg, both)}) > 1)
    assert differing[:3] == ["matrix.cell", "matrix.invertible", "matrix.views"]
    assert gen.data.metrics["summary/sts_avg"] == gen.data.metrics["ensemble/sts14.pearson.mean"]
    assert disc.data.metrics["summary/sts_avg"] == disc.data.metrics["f/sts14.pearson.mean"]
    assert avg.data.params["matrix.cell"] == "fasttext-avg" and "summary/sts_avg" in avg.data.metrics
    assert avg.data.tags["eval.component_fit"] == "subset"
    assert "summary/binary_avg" not in gen.data.metrics                  # the toy data has no classification task
    assert gen.data.metrics["train/sentences_seen"] == 4 * 16
    assert gen.data.metrics["train/hours"] > 0 and avg.data.metrics["train/hours"] == 0
    assert both.data.metrics["train/hours"] == pytest.approx(gen.data.metrics["train/hours"]
                                                             + disc.data.metrics["train/hours"])
    assert len(client.get_metric_history(gen.info.run_id, "loss")) == 4    # the training loop logged into it too
    # the run was opened before training: the untrained model's STS14 still starts each curve (step 0)
    for curve in ("sts14", "sts14/f", "sts14/g"):
        assert [m.step for m in client.get_metric_history(gen.info.run_id, curve)] == [0, 4]

    again = run_study(matrix, base, study)                              # a finished study is not redone
    assert [r["skipped"] for r in again] == [True, True, True, True]
    assert len(client.search_runs([experiment])) == 4

    paths = build_report(client, "ablation-test", matrix, tmp_path / "reports")
    summary = json.loads(paths["summary"].read_text())
    assert summary["cells"]["gen-invertible"]["ensemble"]["sts_avg"]["mean"] == pytest.approx(
        gen.data.metrics["ensemble/sts14.pearson.mean"])
    assert summary["claims_measured"] == 1
    assert "fasttext-avg" in paths["markdown"].read_text()


def _disc_f_study(toy: ToyStudy, name, max_steps, **study):
    """A study of disc-f alone on the toy study's settings, storage and store (where it finds a run to continue)."""
    full = table6()
    matrix = share_objective_settings(Matrix(cells=[c for c in full.cells if c.name == "disc-f"], columns=full.columns),
                                      SHARED, references=False)
    base = toy.base.model_copy(update={"max_steps": max_steps})
    settings = StudySettings(name=name, storage=toy.study.storage, experiment=name, seeds=1, tasks=("sts14",),
                             protocol="fast", tracking_uri=toy.study.tracking_uri, **study)
    run_study(matrix, base, settings)
    client = store.client(settings.tracking_uri)
    (run,) = client.search_runs([client.get_experiment_by_name(name).experiment_id])
    return client, run


@pytest.mark.slow
def test_warm_start_continues_a_shorter_study_into_exactly_the_longer_run(toy_study):
    # the shorter study is the toy study: its disc-f trained 4 steps of the settings the disc-f studies train 8 of
    client = store.client(toy_study.study.tracking_uri)
    toy_runs = client.search_runs([client.get_experiment_by_name(toy_study.study.experiment).experiment_id])
    (short,) = [run for run in toy_runs if run.data.tags["cell"] == "disc-f"]
    _, scratch = _disc_f_study(toy_study, "scratch", 8)
    _, longer = _disc_f_study(toy_study, "longer", 8, warm_start=toy_study.study.name)

    def losses(run):
        return [m.value for m in sorted(client.get_metric_history(run.info.run_id, "loss"), key=lambda m: m.step)]

    assert len(losses(short)) == 4 and len(losses(longer)) == 8
    assert losses(longer)[:4] == losses(short)                        # the curve carried over
    # weights, optimiser, data position and RNG came with the checkpoint: steps 5-8 are those of a run of 8
    np.testing.assert_allclose(losses(longer), losses(scratch), rtol=1e-5)
    assert longer.data.metrics["f/sts14.pearson.mean"] == pytest.approx(scratch.data.metrics["f/sts14.pearson.mean"],
                                                                        abs=1e-4)
    assert longer.data.tags["skipview.warm_start_from"] == short.info.run_id
    assert longer.data.metrics["train/sentences_seen"] == 8 * 16
    assert longer.data.metrics["train/hours"] > short.data.metrics["train/hours"]
    # the short model's own evaluation stays with it: the longer run's is one record, its own
    assert len(client.get_metric_history(longer.info.run_id, "f/sts14.pearson.mean")) == 1


def test_warm_start_refuses_a_run_that_is_not_the_longer_one(tmp_path):
    from skipview.platform.studies.runner import _check_longer

    base = TrainSettings(objective="disc", corpus="c", max_steps=8)
    source = {k: store.param_value(v) for k, v in store.flatten({"train": base.model_dump(mode="json")}).items()}
    _check_longer(base, {**source, "train.max_steps": "4"}, "short-disc-f-seed0", "short")      # longer: fine
    with pytest.raises(ValueError, match=r"optimizer\.lr: 0\.1 -> 0\.001"):
        _check_longer(base, {**source, "train.optimizer.lr": "0.1"}, "short-disc-f-seed0", "short")
    with pytest.raises(ValueError, match="max_steps 8 does not extend short-disc-f-seed0's 16"):
        _check_longer(base, {**source, "train.max_steps": "16"}, "short-disc-f-seed0", "short")
    # a setting added after the source was recorded (per-module learning rates): the source had its default
    older = {k: v for k, v in source.items() if "lr_by_module" not in k}
    _check_longer(base, older, "short-disc-f-seed0", "short")
    gentler_f = base.model_copy(update={"optimizer": base.optimizer.model_copy(
        update={"lr_by_module": {"encoders.f": 1e-4}})})
    with pytest.raises(ValueError, match=r"lr_by_module\.encoders\.f: None -> 0\.0001"):
        _check_longer(gentler_f, older, "short-disc-f-seed0", "short")
    with_rate = {k: store.param_value(v) for k, v in store.flatten({"train": gentler_f.model_dump(mode="json")}).items()}
    with pytest.raises(ValueError, match=r"lr_by_module\.encoders\.f: 0\.0001 -> None"):
        _check_longer(base, with_rate, "short-disc-f-seed0", "short")             # dropping the rate is a change
    with pytest.raises(ValueError, match="constant schedule"):
        _check_longer(base.model_copy(update={"optimizer": base.optimizer.model_copy(update={"schedule": "linear"})}),
                      source, "short-disc-f-seed0", "short")
