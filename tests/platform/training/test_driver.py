"""Driver bookkeeping: run names, --resume lookup, objective config with defaults in params and tags."""

import os
import stat
import time
from pathlib import Path

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


def test_local_ray_answers_the_state_api_inside_its_processes(ray_session):
    """Ray Train's PlacementGroupCleaner frees the placement group of a dead controller (a trial stopped by ASHA,
    a killed run) only if Ray's state API answers inside Ray's processes; driver.connect starts the local Ray so
    that it does (and leaves the caller's environment as it was)."""
    import ray
    from ray.util.state import get_actor

    assert driver.STATE_API_ENV not in os.environ

    @ray.remote(num_cpus=0)
    class Idle:
        def ping(self) -> bool:
            return True

    @ray.remote(num_cpus=0)
    def state_of(actor_id: str) -> str:
        return get_actor(actor_id, timeout=10).state

    actor = Idle.remote()
    assert ray.get(actor.ping.remote())
    actor_id = actor._actor_id.hex()
    assert ray.get(state_of.remote(actor_id)) == "ALIVE"
    ray.kill(actor)
    deadline = time.monotonic() + 30
    while ray.get(state_of.remote(actor_id)) != "DEAD":
        assert time.monotonic() < deadline, "the killed actor never showed as DEAD in the state API"
        time.sleep(0.5)


def test_local_ray_keeps_its_generated_auth_token_private(ray_session):
    token = Path.home() / ".ray" / "auth_token"
    assert token.is_file(), "Ray 2.60 writes a token for a local cluster; did it change where?"
    assert stat.S_IMODE(token.stat().st_mode) == 0o600
