"""Driver bookkeeping: run names, --resume lookup, objective config with defaults in params and tags."""

import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from skipview.platform.cluster.auth import ensure_private_token
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


@pytest.mark.slow
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


def in_fresh_home(script: str, home: Path) -> subprocess.CompletedProcess:
    """``script`` run by Python with ``home`` as HOME and no RAY_ variable of the test process: a new user's local
    Ray, started by ``driver.connect``; it must exit 0."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env["HOME"] = str(home)
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


@pytest.mark.slow
def test_local_ray_runs_with_a_token_that_was_private_from_the_start(tmp_path):
    """A fresh home: the token is created 0600 before Ray starts, and the cluster authenticates with it."""
    script = ("import ray, stat\n"
              "from skipview.platform.training import driver\n"
              "from skipview.platform.cluster.auth import token_path\n"
              "driver.connect('local', cpus=1, log_to_driver=False)\n"
              "print(ray.get(ray.remote(lambda: 'answered').remote()), oct(stat.S_IMODE(token_path().stat().st_mode)),"
              " len(token_path().read_text()))\n")
    done = in_fresh_home(script, tmp_path)
    assert done.stdout.split() == ["answered", "0o600", "64"]
    assert stat.S_IMODE((tmp_path / ".ray").stat().st_mode) == 0o700


@pytest.mark.slow
def test_a_local_ray_that_times_out_starting_is_ended_and_started_again_and_ends_before_its_driver(tmp_path):
    """Ray's fixed waits for its raylet (30 s) and its dashboard (60 s) fail starts on a machine busy starting other
    Rays that a later try passes: each failed try's processes are ended, not left beside the next's. The timeouts are
    injected, the raylet's then the dashboard's, after each node has really started, as Ray raises them once its
    processes run; the error text is Ray's own. And the Ray that started is gone when its driver has exited, agents
    included, with its runtime-env agent stopped (SIGSTOP) as one on a busy machine is slow to leave: no process of it
    is left for the watchdog to end later."""
    script = ("import os, ray, signal\n"
              "from ray._private import node\n"
              "from skipview.platform.training import driver, watchdog\n"
              "real, tries = node.Node.__init__, []\n"
              "timeouts = ['The current node timed out during startup. This could happen because ...',\n"
              "            '\\nThe last 20 lines of /tmp/ray/session_x/logs/dashboard.log (it contains the error message'\n"
              "            ' from the dashboard): \\n...']\n"
              "def times_out_twice(self, *args, **kwargs):\n"
              "    tries.append(self)\n"
              "    real(self, *args, **kwargs)\n"
              "    if len(tries) <= len(timeouts):\n"
              "        raise Exception(timeouts[len(tries) - 1])\n"
              "node.Node.__init__ = times_out_twice\n"
              "driver.connect('local', cpus=1, log_to_driver=False)\n"
              "ours = watchdog.local_ray(watchdog.marked(os.getpid())[watchdog.MARK])\n"
              "print(len(tries), ray.get(ray.remote(lambda: 'answered').remote()),"
              " sorted(p.name() for p in ours).count('gcs_server'))\n"
              "print(*(f'{p.pid}@{p.create_time()}' for p in ours))\n"
              "agent = next(p for p in ours if p.name() == 'ray::RuntimeEnvAgent')\n"
              "os.kill(agent.pid, signal.SIGSTOP)\n")
    done = in_fresh_home(script, tmp_path)
    outcome, processes = done.stdout.splitlines()[-2:]
    assert outcome.split() == ["3", "answered", "1"], done.stdout + done.stderr[-3000:]
    assert ("the local Ray did not start: its raylet did not register within Ray's 30 s; starting it again "
            "(try 2 of 3)") in done.stderr
    assert ("the local Ray did not start: its dashboard did not come up within Ray's 60 s; starting it again "
            "(try 3 of 3)") in done.stderr
    left = []
    for process in processes.split():
        pid, started = process.split("@")
        try:
            found = psutil.Process(int(pid))
            if abs(found.create_time() - float(started)) < 0.01 and found.status() != psutil.STATUS_ZOMBIE:
                left.append(f"{pid} {found.name()}")
        except psutil.NoSuchProcess:
            continue
    assert len(processes.split()) >= 5 and not left, f"alive when the driver had exited: {left}"


def test_an_existing_token_is_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_AUTH_MODE"):
        monkeypatch.delenv(name, raising=False)
    created = ensure_private_token()
    assert created == tmp_path / ".ray" / "auth_token"
    first = created.read_text()
    assert ensure_private_token() is None and created.read_text() == first


def test_inputs_every_worker_would_fail_on_fail_on_the_driver_first(tiny_data, tmp_path):
    corpus, wordvecs = tiny_data
    settings = TrainSettings(objective="disc", corpus=str(corpus), wordvecs=str(wordvecs), max_steps=1)
    driver.check_inputs(settings)
    empty = tmp_path / "wordvecs"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match=f"{empty / 'vectors.npy'}: missing"):
        driver.check_inputs(settings.model_copy(update={"wordvecs": str(empty)}))
    # vectors of another vocabulary: a word changed, a word missing, a word more
    words = (wordvecs / "vocab.tsv").read_text().splitlines(keepends=True)
    for changed in (words[:5] + ["other\t1\n"] + words[6:], words[:-1], words + ["extra\t1\n"]):
        other = shutil.copytree(wordvecs, tmp_path / f"other{len(changed)}{changed[5][:5]}")
        (other / "vocab.tsv").write_text("".join(changed))
        with pytest.raises(ValueError, match=f"vocab.tsv of {len(changed)} words\\) are not aligned"):
            driver.check_inputs(settings.model_copy(update={"wordvecs": str(other)}))


def test_a_worker_group_larger_than_the_local_ray_is_refused_before_ray_starts(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    cores = len(os.sched_getaffinity(0))
    driver.check_local_resources(cores, 1, 0, None)
    with pytest.raises(ValueError, match=f"needs {cores + 1} CPUs; the local Ray has {cores} "
                                         f"\\(use --workers {cores} or fewer"):
        driver.check_local_resources(cores + 1, 1, 0, None)
    import torch

    gpus = torch.cuda.device_count()
    with pytest.raises(ValueError, match=f"GPUs; this machine has {gpus}"):
        driver.check_local_resources(1, 1, gpus + 1, "local")
    driver.check_local_resources(cores + 1, 1, 0, "ray://head:10001")      # a cluster may autoscale: not judged
