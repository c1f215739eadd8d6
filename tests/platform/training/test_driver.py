"""Driver bookkeeping: run names, --resume lookup, objective config with defaults in params and tags."""

import os
import time

import pytest

from skipview.platform.training import driver
from skipview.platform.training.config import RunSettings, TrainSettings


def test_new_run_name_and_latest_run(tmp_path):
    settings = TrainSettings(objective="disc", corpus=str(tmp_path / "gutenberg" / "prepared"))
    name = driver.new_run_name(settings)
    assert name.startswith("disc-gutenberg-")
    for i, run in enumerate(["disc-gutenberg-20260101-000000", "disc-gutenberg-20260102-000000", "gen-gutenberg-x"]):
        (tmp_path / "runs" / run).mkdir(parents=True)
        os.utime(tmp_path / "runs" / run, (time.time() + i, time.time() + i))
    assert driver.latest_run_name(str(tmp_path / "runs"), "disc-gutenberg-") == "disc-gutenberg-20260102-000000"
    assert driver.latest_run_name(str(tmp_path / "nowhere"), "disc-") is None
    run = RunSettings(name="r", storage="runs")
    assert driver.run_key(run) == f"{os.getcwd()}/runs/r"
    assert driver.run_key(RunSettings(name="r", storage="s3://bucket/runs/")) == "s3://bucket/runs/r"


def test_objective_defaults_reach_params_and_tags(tmp_path):
    (tmp_path / "meta.json").write_text("{}")
    settings = TrainSettings(objective="disc", objective_settings={"views": "gg"}, corpus=str(tmp_path))
    config = driver.loop_config(settings, RunSettings(name="r", storage=str(tmp_path)), "sqlite:///x.db")
    assert config["params"]["objective_settings"]["hidden_size"] == 1024        # default filled in
    assert config["tags"]["views"] == "gg" and config["tags"]["objective"] == "disc"
    gen = TrainSettings(objective="gen", corpus=str(tmp_path))
    assert driver.tags_for(gen)["invertible"] == "True"
    with pytest.raises(ValueError, match="unknown key 'hiden_size'"):
        driver.objective_config(TrainSettings(objective="gen", objective_settings={"hiden_size": 3},
                                              corpus=str(tmp_path)))
