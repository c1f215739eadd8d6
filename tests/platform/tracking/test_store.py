"""Tracking store default, params flattening, one MLflow run per run key, and DVC lineage lookup."""

import json

import pytest
import yaml

from skipview.platform.tracking import lineage, store


def test_default_store_is_sqlite_in_cwd_unless_overridden(tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.chdir(tmp_path)
    assert store.tracking_uri() == f"sqlite:///{tmp_path.resolve()}/mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://tracking:5000")
    assert store.tracking_uri() == "http://tracking:5000"


def test_flatten_nested_settings():
    assert store.flatten({"a": 1, "opt": {"lr": 0.1, "betas": [0.9, 0.99], "deep": {"x": None}}, "empty": {}}) == {
        "a": 1, "opt.lr": 0.1, "opt.betas": [0.9, 0.99], "opt.deep.x": None, "empty": {}}


def test_open_run_continues_the_run_of_a_key(tmp_path):
    client = store.client(f"sqlite:///{tmp_path}/m.db")
    first, resumed = store.open_run(client, "study", "runs/a", "a", params={"opt": {"lr": 1}}, tags={"seed": "0"})
    assert not resumed
    again, resumed = store.open_run(client, "study", "runs/a", "a", params={"opt": {"lr": 1}})
    assert (again, resumed) == (first, True)
    other, _ = store.open_run(client, "study", "runs/b", "b")
    assert other != first
    run = client.get_run(first)
    assert run.data.params == {"opt.lr": "1"} and run.data.tags["seed"] == "0"
    assert client.get_experiment_by_name("study").artifact_location == (tmp_path / "mlartifacts" / "study").as_uri()
    store.log_metrics(client, first, {"loss": 2.0}, step=3)
    assert [(m.step, m.value) for m in client.get_metric_history(first, "loss")] == [(3, 2.0)]


def test_many_steps_go_in_chunks_mlflow_accepts(tmp_path):
    client = store.client(f"sqlite:///{tmp_path}/m.db")
    run_id, _ = store.open_run(client, "study", "runs/a", "a")
    steps = store.METRICS_PER_BATCH // 2 + 1             # two metrics a step: more than one log_batch call
    store.log_metric_steps(client, run_id, [(step, {"loss": step / 2, "grad_norm": 1.0}) for step in range(steps)])
    assert [(m.step, m.value) for m in client.get_metric_history(run_id, "loss")] == [
        (step, step / 2) for step in range(steps)]
    assert len(client.get_metric_history(run_id, "grad_norm")) == steps


def test_dvc_hash_from_lock_and_fallback(tmp_path):
    data = tmp_path / "artifacts" / "prepared"
    data.mkdir(parents=True)
    (data / "meta.json").write_text("{}")
    assert lineage.data_fingerprint(data).startswith("meta-sha256:")
    vectors = tmp_path / "artifacts" / "wordvecs"          # two fastText runs differ only in their matrix's hash
    vectors.mkdir()
    (vectors / "meta.json").write_text(json.dumps({"dim": 3, "vectors_sha256": "ab12"}))
    assert lineage.data_fingerprint(vectors) == "vectors-sha256:ab12"
    (tmp_path / "dvc.lock").write_text(yaml.safe_dump({"schema": "2.0", "stages": {"prepare": {
        "outs": [{"path": "artifacts/prepared", "md5": "0123abcd.dir"}]}}}))
    assert lineage.data_fingerprint(data) == "dvc:0123abcd.dir"
    # a stage of another pipeline file of the project (reports/dvc.yaml, wdir ..) keeps its output's hash
    (tmp_path / ".dvc").mkdir()
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "dvc.lock").write_text(yaml.safe_dump({"schema": "2.0", "stages": {"vectors": {
        "outs": [{"path": "artifacts/wordvecs", "md5": "4567cdef.dir"}]}}}))
    assert lineage.data_fingerprint(vectors) == "dvc:4567cdef.dir"
    assert lineage.git_commit() != ""


def test_recorded_paths_are_relative_to_their_repository(tmp_path, monkeypatch):
    repo = tmp_path / "clone"
    (repo / ".dvc").mkdir(parents=True)
    checkpoint = repo / "runs" / "disc-x" / "checkpoint_1"
    checkpoint.mkdir(parents=True)
    assert lineage.portable_path(checkpoint) == "runs/disc-x/checkpoint_1"
    monkeypatch.chdir(repo)
    assert lineage.portable_path("runs/disc-x/checkpoint_1") == "runs/disc-x/checkpoint_1"
    assert lineage.portable_path("s3://bucket/runs/disc-x") == "s3://bucket/runs/disc-x"
    outside = tmp_path / "elsewhere"
    assert lineage.portable_path(outside) == str(outside)


def test_a_recorded_run_continues_only_with_its_own_settings(tmp_path):
    """Restarting a run under the same name with other settings would log its curves under the old params (MLflow
    keeps a run's first params): refused, naming the key. A longer budget is the same run continued."""
    client = store.client(f"sqlite:///{tmp_path}/m.db")
    settings = {"max_steps": 3000, "objective_settings": {"vocab_size": 10000, "encoder": "uni"}}
    store.open_run(client, "study", "runs/a", "a", params=settings)
    store.check_same_params(client, "study", "runs/a", settings)
    store.check_same_params(client, "study", "runs/a", {**settings, "max_steps": 6000}, may_differ=["max_steps"])
    store.check_same_params(client, "study", "runs/b", {"max_steps": 1}, what="run b")     # not recorded: nothing to keep
    changed = {"max_steps": 2000, "objective_settings": {"vocab_size": 5000, "encoder": "uni"}}
    with pytest.raises(ValueError, match=r"^run a: MLflow run \w+ in experiment 'study' .*"
                                         r"\(objective_settings.vocab_size: 10000 -> 5000\)"):
        store.check_same_params(client, "study", "runs/a", changed, may_differ=["max_steps"], what="run a")


def test_a_continued_run_is_compared_over_the_settings_either_side_has(tmp_path):
    """A setting added to skipview after a run was recorded had its default for that run; a setting the recorded run
    has and the continuation drops (a per-module learning rate) is a change, not a key to skip."""
    client = store.client(f"sqlite:///{tmp_path}/m.db")
    recorded = {"max_steps": 3000, "optimizer": {"lr": 0.001, "lr_by_module": {"encoders.f": 0.0004}}}
    store.open_run(client, "study", "runs/a", "a", params=recorded)
    defaults = {"optimizer": {"lr": 0.001, "lr_by_module": {}, "warmup_steps": 0}}
    newer = {"optimizer": {**recorded["optimizer"], "warmup_steps": 0}}        # today's code has warmup_steps
    store.check_same_params(client, "study", "runs/a", {"max_steps": 6000, **newer}, defaults=defaults,
                            may_differ=["max_steps"])
    with pytest.raises(ValueError, match=r"optimizer\.warmup_steps: 0 -> 100"):
        store.check_same_params(client, "study", "runs/a", {"optimizer": {**newer["optimizer"], "warmup_steps": 100}},
                                defaults=defaults, may_differ=["max_steps"])
    dropped = {"max_steps": 3000, "optimizer": {"lr": 0.001, "lr_by_module": {}, "warmup_steps": 0}}
    with pytest.raises(ValueError, match=r"optimizer\.lr_by_module\.encoders\.f: 0\.0004 -> None"):
        store.check_same_params(client, "study", "runs/a", dropped, defaults=defaults, what="run a")


def test_trained_hours_counts_the_loop_s_windows_not_the_pause_between_a_stopped_run_s_attempts(tmp_path):
    from mlflow import MlflowClient
    from mlflow.entities import Metric

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment = client.create_experiment("curve")
    run_id = client.create_run(experiment).info.run_id
    # batch 64 on 2 workers: 128 sentences a step; windows of 10 steps at 320 sentences/s take 4 s each, except the
    # second attempt's first (steps 21-25, a stop checkpoint at 20 then 5 steps at 160/s: 4 s). The stop at step 20
    # and the resume three hours later are a pause in the timestamps that no window holds.
    hour_ms = 3_600_000
    windows = [(10, 320.0, 0), (20, 320.0, 4_000), (25, 160.0, 3 * hour_ms + 60_000), (35, 320.0, 3 * hour_ms + 64_000)]
    client.log_batch(run_id, metrics=[Metric("sentences_per_s", rate, stamp, step) for step, rate, stamp in windows])
    hours = store.trained_hours(client, run_id, sentences_per_step=128)
    assert {step: value * 3600 for step, value in hours.items()} == pytest.approx({10: 4, 20: 8, 25: 12, 35: 16})
    span = (windows[-1][2] - windows[0][2]) / hour_ms
    assert span > 3 and hours[35] < span / 500
    # a run that never read a window (fewer steps than log_every) has no measured training time
    assert store.trained_hours(client, client.create_run(experiment).info.run_id, 128) == {}
