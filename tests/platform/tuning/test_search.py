"""A 2-trial search on the real engines at toy size: Ray Tune + Optuna TPE + ASHA around Ray Train trials,
a real MLflow SQLite store, the real disc objective. Then the same search name resumes instead of starting over."""

from __future__ import annotations

import math
import textwrap

import pytest
import yaml

from skipview.platform.tracking import store
from skipview.platform.training.config import TrainSettings, load_settings
from skipview.platform.tuning.search import (PARENT_TAG, STOPPED_TAG, SearchSettings, run_search, sentence_budget,
                                             trial_settings, trials_markdown, write_settings)
from skipview.platform.tuning.space import load_space

STEPS, EVERY = 6, 2


def test_trials_table_lists_best_first_with_how_each_trial_ended():
    trial = {"config": {"objective": {"context_window": 2}, "training": {"optimizer.lr": 0.001}}, "error": None}
    table = trials_markdown([
        {**trial, "trial_id": "a", "last_step": 2, "last_sentences": 32, "best_sts14": 40.0, "last_sts14": 40.0,
         "stopped_early": True},
        {**trial, "trial_id": "b", "last_step": 6, "last_sentences": 9600, "best_sts14": 55.5, "last_sts14": 50.25,
         "stopped_early": False},
        {**trial, "trial_id": "c", "last_step": None, "last_sentences": None, "best_sts14": None, "last_sts14": None,
         "stopped_early": False, "error": "RayTaskError"},
    ], budget=9600).splitlines()
    assert table[0] == ("| trial | objective.context_window | training.optimizer.lr | steps | sentences | best STS14 "
                        "| last STS14 | outcome |")
    assert table[2] == "| b | 2 | 0.001 | 6 | 9,600 | 55.50 | 50.25 | read the whole budget (9,600 sentences) |"
    assert table[3] == "| a | 2 | 0.001 | 2 | 32 | 40.00 | 40.00 | stopped by ASHA at step 2 |"
    assert table[4] == "| c | 2 | 0.001 | – | – | – | – | error: RayTaskError |"


def test_a_trial_with_another_batch_size_reads_the_same_sentences_at_the_same_checkpoints():
    base = TrainSettings(objective="disc", corpus="c", batch_size=512, max_steps=1000, checkpoint_every=250)
    for batch, steps, every in ((512, 1000, 250), (128, 4000, 1000), (256, 2000, 500), (1024, 500, 125)):
        settings = trial_settings(base, {"training": {"batch_size": batch, "optimizer.lr": 0.002}})
        assert (settings.batch_size, settings.max_steps, settings.checkpoint_every) == (batch, steps, every)
        assert settings.optimizer.lr == 0.002 and settings.max_steps * batch == 512_000
    search = SearchSettings(name="s", storage="runs", num_samples=1, workers_per_trial=2)
    assert sentence_budget(base, search) == 1000 * 512 * 2


def test_a_written_best_config_holds_repository_relative_data_paths(tmp_path):
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    corpus = tmp_path / "repo" / "data" / "novels" / "prepared"
    settings = TrainSettings(objective="disc", corpus=str(corpus), wordvecs=str(tmp_path / "elsewhere" / "wordvecs"))
    write_settings(settings, tmp_path / "best.yaml", "best of a search")
    written = yaml.safe_load((tmp_path / "best.yaml").read_text())
    assert written["corpus"] == "data/novels/prepared"                  # inside a repository: relative to it
    assert written["wordvecs"] == str(tmp_path / "elsewhere" / "wordvecs")  # outside any: as given


@pytest.mark.slow

def test_two_trial_search_records_trials_and_writes_the_best_config(ray_session, tiny_data, toy_senteval, tmp_path,
                                                                    monkeypatch):
    corpus, wordvecs = tiny_data
    space_file = tmp_path / "disc.yaml"
    space_file.write_text(textwrap.dedent("""
        objective: disc
        space:
          objective:
            context_window: {distribution: randint, low: 1, high: 3}
            hidden_size: 8
          training:
            optimizer.lr: {distribution: loguniform, low: 1e-3, high: 1e-2}
            batch_size: {distribution: choice, choices: [8, 16]}
    """))
    space = load_space(space_file)
    base = TrainSettings(objective="disc", corpus=str(corpus), wordvecs=str(wordvecs), senteval_dir=str(toy_senteval),
                         batch_size=16, max_steps=STEPS, checkpoint_every=EVERY, postprocessing_sentences=50)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.chdir(tmp_path)          # a relative storage must mean the same folder inside every trial
    search = SearchSettings(name="toy", storage="runs", num_samples=2, max_concurrent=2, seed=5,
                            grace_period=EVERY, tracking_uri=uri, experiment="tune-test")
    outcome = run_search(space, base, search)

    assert len(outcome.trials) == 2
    assert all(t.error is None and math.isfinite(t.best_sts14) for t in outcome.trials)
    budget = STEPS * 16                                                 # base steps x base batch: ASHA's clock
    assert max(t.last_sentences for t in outcome.trials) == budget     # ASHA lets the leader run to the end
    for trial in outcome.trials:                                        # a half batch runs twice the steps
        assert trial.last_sentences == trial.last_step * trial.config["training"]["batch_size"]
    for trial in outcome.trials:                                        # each trial's Train run, where resume looks
        assert list((tmp_path / "runs" / trial.run_name).glob("checkpoint_*")), trial.run_name
    client = store.client(uri)
    parent = client.get_run(outcome.parent_run_id)
    assert parent.info.status == "FINISHED"
    assert parent.data.metrics["best_sts14"] == pytest.approx(outcome.best_sts14)
    children = client.search_runs([parent.info.experiment_id],
                                  filter_string=f"tags.`{PARENT_TAG}` = '{outcome.parent_run_id}'")
    assert len(children) == 2
    for trial in outcome.trials:
        child = next(c for c in children if c.info.run_name == trial.run_name)
        params = child.data.params
        assert params["objective_settings.context_window"] == str(trial.config["objective"]["context_window"])
        assert float(params["optimizer.lr"]) == pytest.approx(trial.config["training"]["optimizer.lr"])
        scale = 16 // trial.config["training"]["batch_size"]
        assert (params["max_steps"], params["checkpoint_every"]) == (str(STEPS * scale), str(EVERY * scale))
        # The STS14 curve: the untrained model (step 0), then every checkpoint Tune saw; a stopped trial may log one
        # more before its kill lands.
        steps = sorted(m.step for m in client.get_metric_history(child.info.run_id, "sts14"))
        assert steps == list(range(0, steps[-1] + 1, EVERY * scale)) and steps[-1] >= trial.last_step
        if trial.stopped_early:
            assert child.data.tags[STOPPED_TAG] == f"step {trial.last_step}"
            assert child.info.status in ("KILLED", "FINISHED")     # FINISHED only if it ended before the kill
        else:
            assert child.info.status == "FINISHED" and steps[-1] == STEPS * scale

    table = outcome.best_config_path.with_name("best_config_trials.md").read_text().splitlines()
    assert len(table) == 2 + 2 and f"| {outcome.best_trial} |" in table[2]
    best = load_settings(outcome.best_config_path, {}, [])            # what `skipview train --config` reads
    best_trial = next(t for t in outcome.trials if t.trial_id == outcome.best_trial)
    assert best.objective_settings.context_window == best_trial.config["objective"]["context_window"]
    assert best.optimizer.lr == pytest.approx(best_trial.config["training"]["optimizer.lr"])
    assert best.batch_size == best_trial.config["training"]["batch_size"]
    assert best.max_steps == STEPS * 16 // best.batch_size            # the steps the best trial trained for
    assert best.objective_settings.hidden_size == 8 and best.seed == 5

    again = run_search(space, base, search)                          # same name: restored, not re-run
    assert again.parent_run_id == outcome.parent_run_id
    assert sorted(t.trial_id for t in again.trials) == sorted(t.trial_id for t in outcome.trials)
    assert again.best_sts14 == pytest.approx(outcome.best_sts14)
